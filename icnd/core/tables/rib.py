"""Routing Information Base: who wants which prefix routed where, and at what cost.

Routes come from several origins: an operator or the configuration
(``static``), a local application registering its prefix (``app``), the
routing protocol (``routing``).  Each is kept apart, keyed by
``(prefix, face, origin)``, so that one origin replacing or withdrawing its
routes never disturbs another's.  The FIB is what forwarding reads; the RIB
is the only thing that writes it.  As in NFD's RIB (without child
inheritance: every route captures its prefix), the FIB's next hop for
``(prefix, face)`` is the cheapest route over that face's origins.

Invariants:
- for every ``(prefix, face)`` with at least one route, the FIB has a next hop
  through `face` with the lowest cost among them; no other FIB next hops are
  written by the RIB (so a FIB holds exactly the RIB's min-cost view when
  nothing else writes it);
- a refused change (`TableFull`: the RIB's bounds in routes and bytes, or the
  FIB's in entries and next hops) leaves RIB and FIB exactly as they were and
  counts one in `refused`;
- `routes(prefix)` is sorted cheapest first; equal costs by origin
  (app, static, routing) then face id, so the origin reported for a prefix's
  or a face's cheapest route is deterministic;
- a route with an ``expires`` time (NDN registrations with an
  ExpirationPeriod) is removed by the first `expire(now)` with
  ``now >= expires``; `schedule` (when set) is told each such time, so the
  owner can call `expire` then;
- every listener in `on_change` is called once, after the fact, with each
  prefix whose routes changed (a cost change counts; re-adding an identical
  route does not).

Sans-IO: no clock of its own; times are whatever clock the owner passes.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from icnd.core.tables.fib import Fib, TableFull
from icnd.name import T_RNP, Name

ORIGIN_APP = "app"
ORIGIN_STATIC = "static"
ORIGIN_ROUTING = "routing"
# tie-break order between origins of equal cost: the lower rank is reported first
ORIGIN_RANK = {ORIGIN_APP: 0, ORIGIN_STATIC: 1, ORIGIN_ROUTING: 2}
ORIGINS = tuple(ORIGIN_RANK)
# Estimated bytes a route holds besides its prefix's components: the Route
# object, its keys in three dicts and its share of the FIB next hop.
ROUTE_OVERHEAD_BYTES = 160


@dataclass(slots=True)
class Route:
    prefix: Name
    face: int
    origin: str
    cost: int
    expires: float | None = None  # absolute time (the owner's clock); None: until removed

    def sort_key(self) -> tuple[int, int, int]:
        return (self.cost, ORIGIN_RANK[self.origin], self.face)


def route_bytes(prefix: Name) -> int:
    """The bytes one route of `prefix` is counted for against `Rib.max_bytes`."""
    return ROUTE_OVERHEAD_BYTES + sum(len(c) + 2 for c in prefix.comps)


def check_origin(origin: str) -> str:
    if origin not in ORIGIN_RANK:
        raise ValueError(f"unknown route origin {origin!r} (expected one of {', '.join(ORIGINS)})")
    return origin


def _check_route(prefix: Name, cost: int) -> None:
    if type(cost) is not int or cost < 0:
        raise ValueError(f"route cost must be an integer >= 0, got {cost!r}")
    if any(c[0] == T_RNP for c in prefix.comps):
        raise ValueError(f"{prefix}: a route may not contain an rnp= component "
                         "(reflexive names are never routed)")


class Rib:
    def __init__(self, fib: Fib, *, max_routes: int = 1_000_000, max_bytes: int = 256 * 1024 * 1024,
                 schedule: Callable[[float], None] | None = None) -> None:
        """`fib`: the FIB this RIB writes (and alone writes).  `schedule(at)`:
        called with the expiry time of each route added with one."""
        self.fib = fib
        self.max_routes = max_routes
        self.max_bytes = max_bytes
        self.schedule = schedule
        self.on_change: list[Callable[[Name], None]] = []
        self.refused = 0  # changes refused with TableFull
        self.bytes_used = 0
        self._count = 0
        # prefix components -> (face, origin) -> route
        self._table: dict[tuple[bytes, ...], dict[tuple[int, str], Route]] = {}
        # face -> the prefixes (components) with a route through it
        self._by_face: dict[int, set[tuple[bytes, ...]]] = {}
        # (expires, tie, prefix components, face, origin); stale items are skipped
        self._expiries: list[tuple[float, int, tuple[bytes, ...], int, str]] = []
        self._expiry_seq = 0

    # --- reading --------------------------------------------------------------------
    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Route]:
        for entry in self._table.values():
            yield from entry.values()

    def prefixes(self) -> list[Name]:
        """Every prefix with at least one route, in name order."""
        return sorted(next(iter(entry.values())).prefix for entry in self._table.values())

    def routes(self, prefix: Name) -> list[Route]:
        """The routes of exactly `prefix`, cheapest first (see the module's tie-break)."""
        entry = self._table.get(prefix.comps)
        return sorted(entry.values(), key=Route.sort_key) if entry else []

    def get(self, prefix: Name, face: int, origin: str) -> Route | None:
        entry = self._table.get(prefix.comps)
        return entry.get((face, origin)) if entry else None

    def next_expiry(self) -> float | None:
        """The earliest time a route may expire (possibly a stale one: `expire` then does nothing)."""
        return self._expiries[0][0] if self._expiries else None

    # --- changing -------------------------------------------------------------------
    def add(self, prefix: Name, face: int, cost: int, origin: str, *, expires: float | None = None) -> Route:
        """Add the route, or update its cost and expiry.  Raises ValueError
        (bad origin, cost or prefix) or `TableFull` (nothing changed then)."""
        check_origin(origin)
        _check_route(prefix, cost)
        key = prefix.comps
        entry = self._table.get(key)
        route = entry.get((face, origin)) if entry is not None else None
        if route is None:
            self._check_room(1, route_bytes(prefix))
            route = Route(prefix, face, origin, cost, expires)
            self._insert(route)
            try:
                self._sync(key, prefix, face)
            except TableFull:
                self._delete(route)
                self.refused += 1
                raise
            changed = True
        else:
            changed = route.cost != cost
            old_cost, old_expires = route.cost, route.expires
            route.cost = cost
            route.expires = expires
            try:
                self._sync(key, prefix, face)
            except TableFull:  # not expected: the face already has its FIB next hop
                route.cost, route.expires = old_cost, old_expires
                self.refused += 1
                raise
        if expires is not None:
            self._push_expiry(route)
        if changed:
            self._notify(prefix)
        return route

    def remove(self, prefix: Name, face: int, origin: str) -> bool:
        """Remove one route; False if there was none."""
        entry = self._table.get(prefix.comps)
        route = entry.get((face, origin)) if entry is not None else None
        if route is None:
            return False
        self._delete(route)
        self._sync(prefix.comps, prefix, face)
        self._notify(prefix)
        return True

    def remove_face(self, face: int) -> int:
        """Remove every route through `face` (it went down); returns how many."""
        keys = self._by_face.get(face)
        if not keys:
            return 0
        removed = 0
        for key in list(keys):
            entry = self._table[key]
            gone = [r for (f, _), r in entry.items() if f == face]
            prefix = gone[0].prefix
            for route in gone:
                self._delete(route)
            removed += len(gone)
            self._sync(key, prefix, face)
            self._notify(prefix)
        return removed

    def remove_origin(self, origin: str) -> int:
        """Remove every route of `origin`; returns how many."""
        check_origin(origin)
        removed = 0
        for key in list(self._table):
            gone = [r for (_, o), r in self._table[key].items() if o == origin]
            if not gone:
                continue
            for route in gone:
                self._delete(route)
                self._sync(key, route.prefix, route.face)
            removed += len(gone)
            self._notify(gone[0].prefix)
        return removed

    def set_routes(self, prefix: Name, origin: str, nexthops: Mapping[int, int]) -> None:
        """Make `nexthops` (face -> cost) the routes of `origin` for `prefix`,
        replacing all of that origin's routes there (an empty mapping removes
        them): how the routing protocol installs one prefix's computed routes.
        All or nothing: on `TableFull` the previous routes stay."""
        check_origin(origin)
        for cost in nexthops.values():
            _check_route(prefix, cost)
        key = prefix.comps
        entry = self._table.get(key, {})
        old = {f: r for (f, o), r in entry.items() if o == origin}
        if len(old) == len(nexthops) and all(f in old and old[f].cost == c for f, c in nexthops.items()):
            return
        grow = sum(1 for f in nexthops if f not in old) - sum(1 for f in old if f not in nexthops)
        if grow > 0:
            self._check_room(grow, grow * route_bytes(prefix))
        saved = {f: Route(r.prefix, r.face, r.origin, r.cost, r.expires) for f, r in old.items()}
        try:
            self._replace(prefix, origin, {f: Route(prefix, f, origin, c) for f, c in nexthops.items()})
        except TableFull:
            self._replace(prefix, origin, saved)  # fits: it is what the FIB held before
            self.refused += 1
            raise
        self._notify(prefix)

    def expire(self, now: float) -> int:
        """Remove the routes whose expiry time is at or before `now`; returns how many."""
        heap = self._expiries
        removed = 0
        while heap and heap[0][0] <= now:
            at, _, key, face, origin = heapq.heappop(heap)
            entry = self._table.get(key)
            route = entry.get((face, origin)) if entry is not None else None
            if route is not None and route.expires is not None and route.expires <= now:
                self.remove(route.prefix, face, origin)
                removed += 1
        return removed

    # --- internals ------------------------------------------------------------------
    def _check_room(self, routes: int, size: int) -> None:
        if self._count + routes > self.max_routes:
            self.refused += 1
            raise TableFull(f"RIB is full ({self.max_routes} routes)")
        if self.bytes_used + size > self.max_bytes:
            self.refused += 1
            raise TableFull(f"RIB is full ({self.max_bytes} bytes of routes)")

    def _insert(self, route: Route) -> None:
        key = route.prefix.comps
        self._table.setdefault(key, {})[(route.face, route.origin)] = route
        self._by_face.setdefault(route.face, set()).add(key)
        self._count += 1
        self.bytes_used += route_bytes(route.prefix)

    def _delete(self, route: Route) -> None:
        key = route.prefix.comps
        entry = self._table[key]
        del entry[(route.face, route.origin)]
        if not entry:
            del self._table[key]
        if not any(f == route.face for f, _ in entry):
            keys = self._by_face[route.face]
            keys.discard(key)
            if not keys:
                del self._by_face[route.face]
        self._count -= 1
        self.bytes_used -= route_bytes(route.prefix)

    def _replace(self, prefix: Name, origin: str, routes: dict[int, Route]) -> None:
        """Set `origin`'s routes of `prefix` to `routes` (face -> route), FIB
        included; removals first, so the FIB never holds more next hops than
        before and after.  May raise `TableFull` part way (from the FIB)."""
        key = prefix.comps
        entry = self._table.get(key, {})
        for (f, o), route in list(entry.items()):
            if o == origin and f not in routes:
                self._delete(route)
                self._sync(key, prefix, f)
        for f, new in routes.items():
            current = self._table.get(key, {}).get((f, origin))
            if current is None:
                self._insert(new)
            else:
                current.cost, current.expires = new.cost, new.expires
            self._sync(key, prefix, f)
            if new.expires is not None:
                self._push_expiry(new)

    def _sync(self, key: tuple[bytes, ...], prefix: Name, face: int) -> None:
        """Make the FIB's next hop for (prefix, face) the cheapest of its routes, or none."""
        entry = self._table.get(key)
        best: int | None = None
        if entry:
            for (f, _), route in entry.items():
                if f == face and (best is None or route.cost < best):
                    best = route.cost
        if best is None:
            self.fib.remove(prefix, face)
            return
        fib_entry = self.fib.get(prefix)
        if fib_entry is None or fib_entry.costs.get(face) != best:
            self.fib.add(prefix, face, best)

    def _push_expiry(self, route: Route) -> None:
        assert route.expires is not None
        heap = self._expiries
        if len(heap) > 2 * self._count + 64:  # refreshed registrations left stale items: compact
            heap[:] = [item for item in heap if self._live_expiry(item)]
            heapq.heapify(heap)
        self._expiry_seq += 1
        heapq.heappush(heap, (route.expires, self._expiry_seq, route.prefix.comps, route.face, route.origin))
        if self.schedule is not None:
            self.schedule(route.expires)

    def _live_expiry(self, item: tuple[float, int, tuple[bytes, ...], int, str]) -> bool:
        at, _, key, face, origin = item
        entry = self._table.get(key)
        route = entry.get((face, origin)) if entry is not None else None
        return route is not None and route.expires == at

    def _notify(self, prefix: Name) -> None:
        for listener in self.on_change:
            listener(prefix)
