"""``group/*`` and ``reduce/contribute``: groups and contributions (`icnd.reduction.service`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from icnd.codec import encode
from icnd.daemon.mgmt.args import arg, data_packets
from icnd.daemon.mgmt.dispatcher import Commands
from icnd.errors import CommandError
from icnd.faces import Face
from icnd.packet import Data
from icnd.reduction.contrib import ReductionError
from icnd.reduction.group import GroupDescriptor
from icnd.reduction.service import ReductionService


class GroupManager:
    def __init__(self, service: ReductionService) -> None:
        self.service = service

    def commands(self) -> Commands:
        return {
            ("group", "create"): self.create,
            ("group", "show"): self.show,
            ("group", "list"): self.list,
            ("reduce", "contribute"): self.contribute,
        }

    async def create(self, face: Face, args: dict[str, Any]) -> Any:
        """A new version of a group (the same contents again: the current version)."""
        service = self.service
        groups = service.groups
        name = arg(args, "name", str)
        members = arg(args, "members", list)
        try:
            desc = GroupDescriptor.create(
                name, members, version=groups.next_version(name), rendezvous=arg(args, "rendezvous", list, None),
                ops=arg(args, "ops", list, None), seg_bytes=arg(args, "segment_bytes", int, None),
                deadline_ms=arg(args, "deadline_ms", int, None),
            )
        except ValueError as exc:
            raise CommandError(400, str(exc)) from None
        latest = groups.latest(name)
        if latest is not None and latest[0] == replace(desc, version=latest[0].version):
            desc, data = latest  # the same contents: the current version
        else:
            try:
                data = service.create_group(desc)
            except ReductionError as exc:
                raise CommandError(exc.code, str(exc)) from None
        info = _group_info(desc, data)
        key = service.key
        if data.key_locator == key.name:  # signed here: the client announces it (again)
            info["key"] = key.public_bytes()
        return info

    async def show(self, face: Face, args: dict[str, Any]) -> Any:
        try:
            desc, data = self.service.groups.get(arg(args, "name", str), arg(args, "version", int, None))
        except ReductionError as exc:
            raise CommandError(exc.code, str(exc)) from None
        return _group_info(desc, data)

    async def list(self, face: Face, args: dict[str, Any]) -> Any:
        return [desc.info() for desc in self.service.groups.groups()]

    async def contribute(self, face: Face, args: dict[str, Any]) -> Any:
        """Contribution segments (encoded Data named /node/<this>/member/<m>/contrib/...)."""
        added = 0
        for data in data_packets(arg(args, "packets", list)):
            try:
                added += self.service.contribute(data)
            except ReductionError as exc:
                raise CommandError(exc.code, str(exc)) from None
        return {"added": added}


def _group_info(desc: GroupDescriptor, data: Data) -> dict[str, Any]:
    return {**desc.info(), "descriptor": encode(data)}
