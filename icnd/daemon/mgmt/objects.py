"""``repo/*`` and ``object/*``: the node's published data (`icnd.objects.service`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from icnd.core.tables.fib import TableFull
from icnd.daemon.mgmt.args import arg, data_packets, name_arg
from icnd.daemon.mgmt.dispatcher import Commands
from icnd.codec import decode
from icnd.errors import CommandError, DecodeError
from icnd.faces import Face
from icnd.name import T_RNP
from icnd.objects.manifest import Manifest
from icnd.objects.service import ObjectService
from icnd.objects.store import ObjectStoreError
from icnd.packet import Data


class ObjectManager:
    def __init__(self, service: ObjectService, on_published: Callable[[Data], object] | None = None) -> None:
        self.service = service
        self.on_published = on_published  # told of each Data published (the node serves certificates by key)

    def commands(self) -> Commands:
        return {
            ("repo", "publish"): self.publish,
            ("repo", "unpublish"): self.unpublish,
            ("object", "begin"): self.begin,
            ("object", "append"): self.append,
            ("object", "commit"): self.commit,
            ("object", "abort"): self.abort,
            ("object", "list"): self.list,
            ("object", "remove"): self.remove,
        }

    # --- single Data ---------------------------------------------------------------------
    async def publish(self, face: Face, args: dict[str, Any]) -> Any:
        packets = arg(args, "packets", list)
        sign = arg(args, "sign", bool, False)
        service = self.service
        names = []
        for data in data_packets(packets):
            if any(c[0] == T_RNP for c in data.name.comps):
                raise CommandError(400, f"{data.name}: a published name may not contain an rnp= component")
            if sign:
                data = service.key.sign(Data(data.name, data.content, data.content_type, data.freshness_ms,
                                             data.final_block_id))
            try:
                service.publish(data)
            except (ValueError, TableFull) as exc:
                raise CommandError(409, str(exc)) from None
            if self.on_published is not None:
                self.on_published(data)
            names.append(data.name.to_uri())
        return {"published": len(names), "names": names}

    async def unpublish(self, face: Face, args: dict[str, Any]) -> Any:
        name = name_arg(arg(args, "name", str), "name")
        if not self.service.unpublish(name):
            raise CommandError(404, f"{name} is not published here")
        return {"name": name.to_uri()}

    # --- large objects (see icnd.objects.store) -----------------------------------------------
    async def begin(self, face: Face, args: dict[str, Any]) -> Any:
        name = name_arg(arg(args, "name", str), "name")
        if any(c[0] == T_RNP for c in name.comps):
            raise CommandError(400, f"{name}: an object name may not contain an rnp= component")
        try:
            upload = self.service.objects.begin(
                name, arg(args, "size", int), arg(args, "segment_size", int),
                arg(args, "freshness_ms", int, 3_600_000),
            )
        except ObjectStoreError as exc:
            raise CommandError(409, str(exc)) from None
        return {"upload": upload, "version": self.service.objects.version_of(upload)}

    async def append(self, face: Face, args: dict[str, Any]) -> Any:
        try:
            received = self.service.objects.append(arg(args, "upload", str), arg(args, "offset", int),
                                                   arg(args, "data", bytes))
        except ObjectStoreError as exc:
            raise CommandError(409, str(exc)) from None
        return {"received": received}

    async def commit(self, face: Face, args: dict[str, Any]) -> Any:
        signed = None
        wire = arg(args, "manifest", bytes, b"")  # a manifest Data the publisher signed (optional)
        if wire:
            try:
                packet = decode(wire)
            except DecodeError as exc:
                raise CommandError(400, f"manifest: {exc}") from None
            if type(packet) is not Data:
                raise CommandError(400, "manifest: not a Data")
            signed = packet
        try:
            manifest = self.service.commit(arg(args, "upload", str), signed)
        except (ObjectStoreError, TableFull) as exc:
            raise CommandError(409, str(exc)) from None
        return _manifest_info(manifest)

    async def abort(self, face: Face, args: dict[str, Any]) -> Any:
        upload = arg(args, "upload", str)
        try:
            self.service.objects.abort(upload)
        except ObjectStoreError as exc:
            raise CommandError(404, str(exc)) from None
        return {"upload": upload}

    async def list(self, face: Face, args: dict[str, Any]) -> Any:
        return [_manifest_info(m) for m in self.service.objects.objects()]

    async def remove(self, face: Face, args: dict[str, Any]) -> Any:
        name = name_arg(arg(args, "name", str), "name")
        removed = self.service.remove(name)
        if not removed:
            raise CommandError(404, f"{name} is not a published object here")
        return {"name": name.to_uri(), "versions": [m.version for m in removed]}


def _manifest_info(manifest: Manifest) -> dict[str, Any]:
    return {
        "name": manifest.name.to_uri(), "version": manifest.version, "size": manifest.size,
        "segment_size": manifest.segment_size, "segments": manifest.segments,
        "manifest": manifest.manifest_name().to_uri(),
    }
