"""``route/*``: the RIB (and the face table, to name the faces of next hops).

Routes are kept by origin (`icnd.core.tables.rib`); the FIB follows the RIB.
``route add`` makes a ``static`` route, or an ``app`` one when the face is
``"self"`` (a local application registering its own prefix: `Client.serve`,
`Client.host`); ``routing`` routes belong to the routing protocol and are not
added by hand.  ``route remove`` without an origin removes the route's
``static`` and ``app`` origins, never the routing protocol's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from icnd.core.tables.fib import TableFull
from icnd.core.tables.rib import ORIGIN_APP, ORIGIN_ROUTING, ORIGIN_STATIC, ORIGINS, Rib, Route
from icnd.daemon.faces import FaceTable
from icnd.daemon.mgmt.args import arg, name_arg
from icnd.daemon.mgmt.dispatcher import Commands
from icnd.daemon.mgmt.faces import resolve_face
from icnd.errors import CommandError
from icnd.faces import Face
from icnd.name import T_RNP

ADDABLE_ORIGINS = (ORIGIN_STATIC, ORIGIN_APP)
RouteTable = list[dict[str, Any]]  # what route/list answers
REMOVED_BY_DEFAULT = (ORIGIN_APP, ORIGIN_STATIC)


class RouteManager:
    def __init__(self, rib: Rib, faces: FaceTable) -> None:
        self.rib = rib
        self.faces = faces

    def commands(self) -> Commands:
        return {
            ("route", "list"): self.list,
            ("route", "add"): self.add,
            ("route", "remove"): self.remove,
        }

    async def list(self, face: Face, args: dict[str, Any]) -> Any:
        return self.table()

    def table(self) -> RouteTable:
        """One entry per prefix (`row`), in name order."""
        return [self.row(self.rib.routes(prefix)) for prefix in self.rib.prefixes()]

    def row(self, routes: Sequence[Route]) -> dict[str, Any]:
        """The entry of one prefix from its routes (`Rib.routes`, cheapest
        first): its cheapest route's origin and cost, and every route
        (``nexthops``).  Also what the status page shows of it (`icnd.daemon.http`)."""
        faces = self.faces
        nexthops = []
        for route in routes:
            hop = faces.get(route.face)
            nexthops.append({"face": route.face, "uri": hop.remote_uri if hop is not None else "internal://",
                             "cost": route.cost, "origin": route.origin})
        return {"prefix": routes[0].prefix.to_uri(), "origin": routes[0].origin, "cost": routes[0].cost,
                "nexthops": nexthops}

    async def add(self, face: Face, args: dict[str, Any]) -> Any:
        prefix = name_arg(arg(args, "prefix", str))
        if any(c[0] == T_RNP for c in prefix.comps):
            raise CommandError(400, f"{prefix}: a route may not contain an rnp= component")
        cost = arg(args, "cost", int, 0)
        if cost < 0:
            raise CommandError(400, "cost must be >= 0")
        spec = arg(args, "face", (int, str))
        origin = arg(args, "origin", str, ORIGIN_APP if spec == "self" else ORIGIN_STATIC)
        if origin not in ADDABLE_ORIGINS:
            hint = (" (routing routes are installed by the routing protocol: use 'icnd announce')"
                    if origin == ORIGIN_ROUTING else "")
            raise CommandError(400, f"route origin must be one of {', '.join(ADDABLE_ORIGINS)}, "
                                    f"not {origin!r}{hint}")
        target = await resolve_face(self.faces, face, spec)
        try:
            self.rib.add(prefix, target.id, cost, origin)
        except TableFull as exc:
            raise CommandError(409, str(exc)) from None
        return {"prefix": prefix.to_uri(), "face": target.id, "cost": cost, "origin": origin}

    async def remove(self, face: Face, args: dict[str, Any]) -> Any:
        prefix = name_arg(arg(args, "prefix", str))
        spec = arg(args, "face", (int, str))
        origin = arg(args, "origin", str, None)
        if origin is not None and origin not in ORIGINS:
            raise CommandError(400, f"route origin must be one of {', '.join(ORIGINS)}, not {origin!r}")
        if spec == "self":
            target_id = face.id
        elif isinstance(spec, int) or spec.isdigit():
            target_id = int(spec)
        else:
            found = self.faces.find(spec)
            if found is None:
                raise CommandError(404, f"no face {spec}")
            target_id = found.id
        origins = REMOVED_BY_DEFAULT if origin is None else (origin,)
        removed = [o for o in origins if self.rib.remove(prefix, target_id, o)]
        if not removed:
            raise CommandError(404, f"no {' or '.join(origins)} route {prefix} via face {target_id}")
        return {"prefix": prefix.to_uri(), "face": target_id, "origins": removed}
