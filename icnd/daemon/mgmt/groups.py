"""``group/*`` and ``reduce/contribute``: groups and contributions (`icnd.reduction.service`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from icnd.codec import encode
from icnd.daemon.mgmt.args import arg, data_packets, sealed_view
from icnd.daemon.mgmt.dispatcher import Commands, PassedFd, takes_fd
from icnd.errors import CommandError
from icnd.faces import Face
from icnd.packet import Data, SigType
from icnd.reduction.contrib import ReductionError
from icnd.reduction.group import GroupDescriptor, contribution_data
from icnd.reduction.service import ReductionService


MAX_SEGMENTS = 1 << 20  # segment indices are < 2^20 (icnd.reduction.group)


class GroupManager:
    def __init__(self, service: ReductionService) -> None:
        self.service = service

    def commands(self) -> Commands:
        return {
            ("group", "create"): self.create,
            ("group", "show"): self.show,
            ("group", "list"): self.list,
            ("reduce", "contribute"): self.contribute,
            ("reduce", "contribute-shm"): self.contribute_shm,
            ("reduce", "rounds"): self.rounds,
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

    async def rounds(self, face: Face, args: dict[str, Any]) -> Any:
        """``{newest}``: the highest round of ``member`` in ``group`` held or evicted here (null: none)."""
        return {"newest": self.service.contrib.newest(arg(args, "group", str), arg(args, "member", str))}

    async def contribute(self, face: Face, args: dict[str, Any]) -> Any:
        """Contribution segments (encoded Data named /node/<this>/member/<m>/contrib/...);
        ``sign``: the node signs each with its key, for consumers that fetch the
        contribution itself (`icnd.collective`: bcast, gather, ...), not only its aggregate."""
        added = 0
        sign = arg(args, "sign", bool, False)
        for data in data_packets(arg(args, "packets", list)):
            try:
                added += self.service.contribute(data, sign=sign)
            except ReductionError as exc:
                raise CommandError(exc.code, str(exc)) from None
        return {"added": added, **self._version(arg(args, "group", str, None))}

    def _version(self, group: str | None) -> dict[str, int]:
        """``{version}``: the newest version of `group` this node knows, for a
        client that caches the descriptor (`icnd.reduction.consumer.DescriptorCache`);
        nothing when no group was named or it is unknown here."""
        latest = self.service.groups.latest(group) if group is not None else None
        return {} if latest is None else {"version": latest[0].version}


    @takes_fd
    async def contribute_shm(self, face: Face, args: dict[str, Any], passed: PassedFd) -> Any:
        """A whole contribution in one sealed shared-memory segment, whose
        descriptor came with this command (`icnd.faces.shm`):
        ``segments`` = ``[[offset, length], ...]``, segment s's content
        (`icnd.reduction.segment` format) at ``offset``, back to back from 0
        to ``size`` (the memory file's size), so the store accounts for all
        of the memory it keeps mapped.  Each segment is stored as a view of
        the mapping, checked like any contribution (`ContributionStore.add`),
        and every segment's header first, read from the file before it is
        mapped (`ContributionStore.check_layout`): a file with a bad layout
        costs the node a few small reads, not its size."""
        contrib = self.service.contrib
        try:
            group, member = arg(args, "group", str), arg(args, "member", str)
            rnd, size = arg(args, "round", int), arg(args, "size", int)
            sign = arg(args, "sign", bool, False)
            spans = arg(args, "segments", list)
            if not 0 <= rnd < 1 << 63:
                raise CommandError(400, f"round {rnd} is outside 0..2^63-1")
            if not _tiles(spans, size):
                raise CommandError(400, "segments must be 1..%d [offset, length] pairs that tile the memory "
                                        "file from 0 to its size, in order" % MAX_SEGMENTS)
            try:
                view = sealed_view(passed.take(), size, contrib.max_bytes,
                                   check=lambda read: contrib.check_layout(group, member, rnd, spans, read))
            except ReductionError as exc:
                raise CommandError(exc.code, str(exc)) from None
        except CommandError:
            contrib.counters["contrib_shm_refused"] += 1
            raise
        node = self.service.node_id
        added = 0
        for s, (offset, length) in enumerate(spans):
            data = contribution_data(node, member, group, rnd, s, view[offset:offset + length],
                                     sig_type=SigType.PER_HOP)
            try:
                added += self.service.contribute(data, sign=sign)
            except ReductionError as exc:  # (segments before this one stay, as with `contribute`)
                contrib.counters["contrib_shm_refused"] += 1
                raise CommandError(exc.code, str(exc)) from None
        contrib.counters["contrib_shm"] += 1
        return {"added": added, **self._version(group)}


def _tiles(spans: list[object], size: int) -> bool:
    """`spans` are 1..MAX_SEGMENTS [offset, length] pairs, each non-empty, back to back from 0 to `size`."""
    if not 0 < len(spans) <= MAX_SEGMENTS:
        return False
    at = 0
    for sp in spans:
        if not (isinstance(sp, list) and len(sp) == 2 and type(sp[0]) is int and type(sp[1]) is int
                and sp[0] == at and sp[1] > 0):
            return False
        at += sp[1]
    return at == size


def _group_info(desc: GroupDescriptor, data: Data) -> dict[str, Any]:
    return {**desc.info(), "descriptor": encode(data)}
