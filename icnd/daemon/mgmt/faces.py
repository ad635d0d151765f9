"""``face/*``: list, create, destroy faces, and emulate links on them (the face table)."""

from __future__ import annotations

from typing import Any

import trio

from icnd.daemon.faces import FaceTable
from icnd.daemon.mgmt.args import arg
from icnd.daemon.mgmt.dispatcher import Commands
from icnd.errors import CommandError
from icnd.faces import Face, PermanentFace
from icnd.faces.link import LinkParams


class FaceManager:
    def __init__(self, faces: FaceTable) -> None:
        self.faces = faces

    def commands(self) -> Commands:
        return {
            ("face", "list"): self.list,
            ("face", "create"): self.create,
            ("face", "destroy"): self.destroy,
            ("face", "link"): self.link,
        }

    def info(self, face: Face) -> dict[str, Any]:
        info: dict[str, Any] = {
            "id": face.id,
            "remote_uri": face.remote_uri,
            "local_uri": face.local_uri,
            "local": face.local,
            "persistent": face.persistent,
            "wire_format": face.wire_format,
            "permanent": isinstance(face, PermanentFace),
            "state": face.state if isinstance(face, PermanentFace) else "up",
            "counters": face.counters.as_dict(),
        }
        if isinstance(face, PermanentFace):
            info["reconnect"] = {"connects": face.connects, "connect_failures": face.connect_failures,
                                 "last_error": face.last_error}
        sender = self.faces.shaper(face.id)
        if sender is not None:
            params = sender.model.params
            info["link"] = {
                "delay_ms": params.delay_ms, "loss": params.loss, "bandwidth_mbps": params.bandwidth_mbps,
                "queue_bytes": params.queue_bytes, "up": params.up,
                "stats": {**sender.model.stats(), "dropped_in_flight": sender.dropped_in_flight},
            }
        return info

    async def list(self, face: Face, args: dict[str, Any]) -> Any:
        return [self.info(f) for f in self.faces]

    async def create(self, face: Face, args: dict[str, Any]) -> Any:
        uri = arg(args, "uri", str)
        try:
            with trio.fail_after(10):
                created = await self.faces.open(uri)
        except ValueError as exc:
            raise CommandError(400, str(exc)) from None
        except (OSError, trio.TooSlowError) as exc:
            raise CommandError(409, f"cannot create face {uri}: {exc}") from None
        return self.info(created)

    async def destroy(self, face: Face, args: dict[str, Any]) -> Any:
        face_id = arg(args, "id", int)
        if not await self.faces.destroy(face_id):
            raise CommandError(404, f"no face {face_id}")
        return {"id": face_id}

    async def link(self, face: Face, args: dict[str, Any]) -> Any:
        """Emulated link parameters on a face's outgoing traffic (see faces/link.py)."""
        target = await resolve_face(self.faces, face, arg(args, "face", (int, str)))
        current = self.faces.shaper(target.id)
        base = current.model.params if current is not None else LinkParams()
        try:
            params = LinkParams(
                delay_ms=arg(args, "delay_ms", (int, float), base.delay_ms),
                loss=arg(args, "loss", (int, float), base.loss),
                bandwidth_mbps=arg(args, "bandwidth_mbps", (int, float), base.bandwidth_mbps),
                queue_bytes=arg(args, "queue_bytes", int, base.queue_bytes),
                up=arg(args, "up", bool, base.up),
            )
        except (TypeError, ValueError) as exc:
            raise CommandError(400, str(exc)) from None
        self.faces.set_link(target.id, params, arg(args, "seed", int, None))
        return self.info(target)


async def resolve_face(faces: FaceTable, requester: Face, spec: Any) -> Face:
    """The face a command argument names: ``"self"`` (the requesting face), an id,
    or a URI (the face is created if it does not exist)."""
    if spec == "self":
        return requester
    if isinstance(spec, int) and not isinstance(spec, bool):
        found = faces.get(spec)
        if found is None:
            raise CommandError(404, f"no face {spec}")
        return found
    if isinstance(spec, str):
        if spec.isdigit():
            return await resolve_face(faces, requester, int(spec))
        try:
            with trio.fail_after(10):
                return await faces.open(spec)
        except ValueError as exc:
            raise CommandError(400, str(exc)) from None
        except (OSError, trio.TooSlowError) as exc:
            raise CommandError(409, f"cannot create face {spec}: {exc}") from None
    raise CommandError(400, "face must be an id, a URI or 'self'")
