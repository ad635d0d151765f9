"""``repo/*`` and ``object/*``: the node's published data (`icnd.objects.service`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import trio

from icnd.core.tables.fib import TableFull
from icnd.daemon.mgmt.args import arg, data_packets, name_arg, sealed_view
from icnd.daemon.mgmt.dispatcher import Commands, PassedFd, WithFds, takes_fd
from icnd.codec import decode
from icnd.errors import CommandError, DecodeError
from icnd.faces import Face
from icnd.name import T_RNP
from icnd.objects.manifest import Manifest
from icnd.objects.service import ObjectService
from icnd.objects.store import ObjectStoreError
from icnd.packet import Data


SHM_APPEND_CHUNK = 4 * 1024 * 1024  # bytes stored between checkpoints by append-shm


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
            ("object", "read-shm"): self.read_shm,
            ("object", "append-shm"): self.append_shm,
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
                arg(args, "freshness_ms", int, 3_600_000), arg(args, "kind", str, "bytes"),
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
        if signed is not None and self.on_published is not None:
            self.on_published(signed)
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


    @takes_fd
    async def append_shm(self, face: Face, args: dict[str, Any], passed: PassedFd) -> Any:
        """All of an upload's bytes at once, in a sealed memory file whose
        descriptor came with this command (`icnd.faces.shm`):
        stored and hashed as `append` would, a chunk at a time with a
        checkpoint between chunks (so forwarding goes on meanwhile).  The
        upload and the size are checked before the file is mapped; refusals
        are counted in ``object_shm_refused``."""
        objects = self.service.objects
        try:
            upload, size = arg(args, "upload", str), arg(args, "size", int)
            try:
                view = sealed_view(passed.take(), size, objects.capacity_bytes,
                                   check=lambda read: objects.check_append(upload, 0, size))
            except ObjectStoreError as exc:
                raise CommandError(409, str(exc)) from None
        except CommandError:
            objects.counters["object_shm_refused"] += 1
            raise
        received = 0
        try:
            for offset in range(0, size, SHM_APPEND_CHUNK):
                chunk = view[offset:offset + SHM_APPEND_CHUNK]
                try:
                    received = objects.append(upload, offset, chunk)
                except ObjectStoreError as exc:
                    raise CommandError(409, str(exc)) from None
                finally:
                    chunk.release()
                await trio.lowlevel.checkpoint()
        finally:
            view.release()
        objects.counters["object_shm_appends"] += 1
        return {"received": received}

    async def read_shm(self, face: Face, args: dict[str, Any]) -> Any:
        """A committed object stored here, handed to a local client without
        crossing the socket (`icnd.faces.shm`): the reply carries a read-only
        descriptor of the object's file, which the store never changes once
        committed; the client maps it, copies it out and checks every
        segment against the manifest it verified, as on the network path.
        ``prefix``: the object's versioned name.  404 when it is not stored
        here (the client then fetches it over the network)."""
        objects = self.service.objects
        prefix = name_arg(arg(args, "prefix", str), "prefix")
        obj = objects.stored(prefix)
        if obj is None or obj.manifest.size == 0:
            raise CommandError(404, f"{prefix} is not an object stored here")
        if not getattr(face, "can_pass_fds", False):
            raise CommandError(400, "this connection cannot pass descriptors (not a local Unix socket)")
        try:
            fd = os.open(obj.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise CommandError(404, f"{prefix}: its file is gone ({exc.strerror})") from None
        objects.counters["object_shm_reads"] += 1
        return WithFds({"prefix": prefix.to_uri(), "size": obj.manifest.size}, [fd])


def _manifest_info(manifest: Manifest) -> dict[str, Any]:
    return {
        "name": manifest.name.to_uri(), "version": manifest.version, "size": manifest.size,
        "segment_size": manifest.segment_size, "segments": manifest.segments,
        "manifest": manifest.manifest_name().to_uri(),
    }
