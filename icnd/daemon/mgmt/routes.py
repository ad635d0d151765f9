"""``route/*``: the FIB (and the face table, to name the faces of next hops)."""

from __future__ import annotations

from typing import Any

from icnd.core.tables.fib import Fib, TableFull
from icnd.daemon.faces import FaceTable
from icnd.daemon.mgmt.args import arg, name_arg
from icnd.daemon.mgmt.dispatcher import Commands
from icnd.daemon.mgmt.faces import resolve_face
from icnd.errors import CommandError
from icnd.faces import Face
from icnd.name import T_RNP


class RouteManager:
    def __init__(self, fib: Fib, faces: FaceTable) -> None:
        self.fib = fib
        self.faces = faces

    def commands(self) -> Commands:
        return {
            ("route", "list"): self.list,
            ("route", "add"): self.add,
            ("route", "remove"): self.remove,
        }

    async def list(self, face: Face, args: dict[str, Any]) -> Any:
        faces = self.faces
        out = []
        for entry in sorted(self.fib, key=lambda e: e.prefix):
            nexthops = []
            for f, c in entry.nexthops:
                hop = faces.get(f)
                nexthops.append({"face": f, "cost": c, "uri": hop.remote_uri if hop is not None else "internal://"})
            out.append({"prefix": entry.prefix.to_uri(), "nexthops": nexthops})
        return out

    async def add(self, face: Face, args: dict[str, Any]) -> Any:
        prefix = name_arg(arg(args, "prefix", str))
        if any(c[0] == T_RNP for c in prefix.comps):
            raise CommandError(400, f"{prefix}: a route may not contain an rnp= component")
        cost = arg(args, "cost", int, 0)
        if cost < 0:
            raise CommandError(400, "cost must be >= 0")
        target = await resolve_face(self.faces, face, arg(args, "face", (int, str)))
        try:
            self.fib.add(prefix, target.id, cost)
        except TableFull as exc:
            raise CommandError(409, str(exc)) from None
        return {"prefix": prefix.to_uri(), "face": target.id, "cost": cost}

    async def remove(self, face: Face, args: dict[str, Any]) -> Any:
        prefix = name_arg(arg(args, "prefix", str))
        spec = arg(args, "face", (int, str))
        if spec == "self":
            target_id = face.id
        elif isinstance(spec, int) or spec.isdigit():
            target_id = int(spec)
        else:
            found = self.faces.find(spec)
            if found is None:
                raise CommandError(404, f"no face {spec}")
            target_id = found.id
        if not self.fib.remove(prefix, target_id):
            raise CommandError(404, f"no route {prefix} via face {target_id}")
        return {"prefix": prefix.to_uri(), "face": target_id}
