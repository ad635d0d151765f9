"""The link-state router: adjacencies, link-state sync and routes, sans-IO.

Packets and time in, packets to send on given faces and route changes out,
like the forwarder: ``on_interest(face, interest, now)``, ``on_data(face,
data, now)``, ``on_timer(now)`` and the configuration calls each return a
list of actions (`Transmit`, `RouteUpdate`); ``next_deadline()`` says when
``on_timer`` is due.  The node (`icnd.daemon.routing`) and the simulator
(`icnd.sim.routing`) run this same object.  Routing messages travel on
neighbour faces directly, under ``/localhop/icnd/routing`` (never through the
FIB: they are what makes it), and only its own shell passes them in.

Rules (the methods cite them):

1. **Hello.** Every ``hello_interval`` a hello Interest (``.../hello``,
   parameters ``{n: own name, d: database digest}``) goes on every neighbour
   face whose link is up; every hello Interest, on any face, is answered by a
   hello Data with the same fields.  A hello (either kind) on a neighbour
   face makes that neighbour *heard* and tells its name.  A neighbour is
   **up** while heard within ``dead_interval``; it is down otherwise, and at
   once when its link goes down.
2. **Own record.** A new version of the node's record is originated when
   its up neighbours (name, cost) or its announced prefixes change (a change
   of announced load alone: at most every ``load_interval``), and every
   ``refresh``.  Versions only grow: they start at the clock in milliseconds
   (``max(version_base, now * 1000)``), and a record or sync entry of the
   node's own name with a higher version (its previous life) makes the next
   version higher still.
3. **Notify.** When a record is stored (own or learnt) its (origin,
   version) is notified to every neighbour but the one it came from: one
   sync Interest (``.../sync``, ``{n, v: [[origin, version], ...]}``) per
   neighbour per pass.  A sync on a face that is not a neighbour's counts
   as the up neighbour's it names (over TCP, each end hears the other on
   the connection the other opened).  Syncs to one neighbour are paced, at
   most one per ``pace`` (10 ms): notifications made meanwhile go out
   together, so a burst of changes costs one message, not one each.  Entries newer than what is held become *wanted*
   from the neighbour that notified them.  Sync Interests are not answered.
4. **Fetch.** At most one fetch Interest (``.../ls``, ``{n, w: wanted}``)
   per neighbour in flight; its answer carries the neighbour's current
   records of those origins (as many as fit in ``max_reply_bytes``).  Still
   wanted entries are asked again, at most once per ``pace``; an unanswered
   fetch again after ``fetch_timeout``, while the neighbour is up.
5. **Repair.** A hello whose digest differs from the node's own makes it
   send that neighbour its whole vector (a sync with ``full``), at most once
   per ``repair_interval`` and only after a quiet ``repair_interval`` of
   sync traffic with it (so the fast path of 3-4 is not doubled); a whole
   vector is answered with the entries its sender lacks or holds older.
6. **Acceptance.** A record whose name shows a version not newer than the
   one held is dropped as stale before it is decoded; otherwise it is stored only if it decodes, stays within the
   bounds (adjacencies, prefixes, bytes), is newer than the one held,
   ``verify`` (the shell's one validator) accepts it, and the database has
   room.  Each refusal is counted.
7. **Ageing.** A record not refreshed within its lifetime is dropped.
8. **Routes.** An edge u->v (u's cost) exists when u's record lists v and
   v's record lists u: both ends hear each other.  Next hops are those of
   `icnd.core.routing.paths.multipath`: after a change of the graph (a
   record with other adjacencies, a new or expired origin) recomputed at
   most once per ``hold_down``; after a change of announcements alone at
   once, on the per-neighbour distances kept from the last computation (no
   Dijkstra), so a node routes a new prefix before it notifies it onward.
   Prefixes whose next hops changed are output as `RouteUpdate`s (empty:
   remove).
9. **Budget.** Each face gets at most ``max_requests_per_s`` (400)
   routing Interests answered or acted on per second, well above what a
   paced neighbour sends (two per ``pace`` plus its hellos); the rest are
   dropped and counted (a peer cannot make the node sign, search or send
   without bound).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Union

import msgpack

from icnd.codec import decode, encode
from icnd.core.routing.lsdb import (
    Adjacency,
    Announcement,
    LinkState,
    Lsdb,
    StoredRecord,
    decode_record,
    encode_record,
    record_name,
)
from icnd.core.routing.paths import Distances, neighbor_distances, next_hops
from icnd.errors import DecodeError, Error
from icnd.name import T_VERSION, Name, decode_nonneg, generic
from icnd.packet import Data, Interest
from icnd.security import make_data

__all__ = ["Hop", "RouteUpdate", "Router", "RouterConfig", "Transmit", "ROUTING_PREFIX", "is_routing_name"]

ROUTING_PREFIX = Name("/localhop/icnd/routing")
_SCOPE = ROUTING_PREFIX.comps
_HELLO, _SYNC, _FETCH = generic("hello"), generic("sync"), generic("ls")
_INF = math.inf
_VERSION_TYPE = bytes((T_VERSION,))

Sign = Callable[[Name, bytes], Data]  # a record's name and content -> the signed Data
Verify = Callable[[Data, tuple[bytes, ...]], None]  # a record and its certificates; raises icnd.Error


def is_routing_name(comps: tuple[bytes, ...]) -> bool:
    return comps[:3] == _SCOPE


@dataclass(frozen=True)
class RouterConfig:
    hello_interval: float = 1.0
    dead_interval: float = 3.0
    refresh: float = 600.0
    lifetime: float = 1800.0
    hold_down: float = 0.2
    load_interval: float = 1.0
    fetch_timeout: float = 1.0
    repair_interval: float = 2.0
    max_prefixes: int = 1000
    max_adjacencies: int = 256
    max_record_bytes: int = 64 * 1024
    max_reply_bytes: int = 48 * 1024
    max_nodes: int = 10_000
    max_lsdb_bytes: int = 64 * 1024 * 1024
    max_requests_per_s: int = 400
    pace: float = 0.01


@dataclass(frozen=True, slots=True)
class Transmit:
    face: int
    packet: Interest | Data


@dataclass(frozen=True, slots=True)
class Hop:
    face: int
    cost: int
    capacity: int | None = None  # announced by the origins this hop leads to (sum)
    load: int | None = None


@dataclass(frozen=True, slots=True)
class RouteUpdate:
    prefix: Name
    nexthops: tuple[Hop, ...]  # empty: no route any more


Action = Union[Transmit, RouteUpdate]


@dataclass(slots=True)
class Neighbor:
    face: int
    cost: int
    uri: str = ""
    name: str | None = None
    link_up: bool = True
    heard_at: float = -_INF
    up: bool = False
    wanted: dict[str, int] = field(default_factory=dict)
    fetch: tuple[Name, float] | None = None  # (name, deadline) of the fetch in flight
    notify: dict[str, int] = field(default_factory=dict)
    synced_at: float = -_INF  # last sync or fetch traffic either way
    full_sent_at: float = -_INF
    sync_sent_at: float = -_INF  # Rule 3-4 pacing
    fetch_sent_at: float = -_INF


COUNTERS = (
    "hellos_out", "hellos_in", "syncs_out", "syncs_in", "fetches_out", "fetches_in", "records_in",
    "records_stored", "records_stale", "records_malformed", "records_refused", "records_over_bounds",
    "records_no_room", "records_expired", "originated", "route_computations", "route_updates_light",
    "messages_malformed",
    "messages_rate_limited", "messages_not_neighbor", "bytes_out", "messages_out",
)


class Router:
    """One node's link-state routing; see the module docstring."""

    def __init__(self, name: Name, *, sign: Sign, verify: Verify, now: float, certs: tuple[bytes, ...] = (),
                 config: RouterConfig | None = None, version_base: int = 0) -> None:
        self.name = name
        self.me = name.to_uri()
        self.config = config or RouterConfig()
        self._sign = sign
        self._verify = verify
        self.certs = certs
        self.lsdb = Lsdb(max_nodes=self.config.max_nodes, max_bytes=self.config.max_lsdb_bytes)
        self.neighbors: dict[int, Neighbor] = {}
        self.prefixes: dict[str, tuple[int | None, int | None]] = {}
        self.routes: dict[str, tuple[Hop, ...]] = {}
        self._route_names: dict[str, Name] = {}  # the Name of each routed prefix, parsed once
        self.counters = dict.fromkeys(COUNTERS, 0)
        # versions start at the clock in ms (wall clock from the node, virtual in the simulator), so a
        # restarted node outgrows its previous life's records at once; Rule 2's bump covers a clock step back
        self.version = max(version_base, int(now * 1000))
        self.last_refusal: str | None = None
        self._originated_at = -_INF
        self._load_originated_at = -_INF
        self._originate_at: float = now  # the first record goes out at once
        self._compute_at: float = _INF  # a full computation (the graph changed), held down
        self._computed_at = -_INF
        self._prefixes_changed = False  # only announcements changed: recompute at once, no Dijkstra
        self._distances: Distances | None = None  # per neighbour, for the graph last computed
        self._hello_at = now
        self._budget: dict[int, tuple[float, int]] = {}  # face -> (window start, requests in it)
        self._own_adjacencies: tuple[Adjacency, ...] = ()

    # --- configuration ------------------------------------------------------------------
    def add_neighbor(self, face: int, cost: int, uri: str = "", *, link_up: bool = True) -> None:
        if cost < 1:
            raise ValueError("a neighbour's link cost must be >= 1")
        self.neighbors[face] = Neighbor(face, cost, uri, link_up=link_up)

    def remove_neighbor(self, face: int, now: float) -> list[Action]:
        nb = self.neighbors.pop(face, None)
        self._budget.pop(face, None)
        out: list[Action] = []
        if nb is not None and nb.up:
            self._adjacency_changed(now)
        self._flush(now, out)
        return out

    def link_state(self, face: int, up: bool, now: float) -> list[Action]:
        """The transport of a neighbour face connected (True) or lost its peer (Rule 1)."""
        nb = self.neighbors.get(face)
        out: list[Action] = []
        if nb is None or nb.link_up == up:
            return out
        nb.link_up = up
        if up:
            self._send_hello(nb, out)
        else:
            nb.heard_at = -_INF
            nb.fetch = None
            nb.wanted.clear()
            if nb.up:
                nb.up = False
                self._adjacency_changed(now)
        self._flush(now, out)
        return out

    def set_prefixes(self, prefixes: Mapping[str, tuple[int | None, int | None]], now: float) -> list[Action]:
        """The prefixes this node announces (URI -> (capacity, load)); Rule 2."""
        if len(prefixes) > self.config.max_prefixes:
            raise ValueError(f"{len(prefixes)} prefixes to announce, more than {self.config.max_prefixes}")
        new = dict(prefixes)
        out: list[Action] = []
        if new == self.prefixes:
            return out
        same_names = new.keys() == self.prefixes.keys()
        self.prefixes = new
        if same_names:  # load only: rate-limited
            self._originate_at = min(self._originate_at, max(now, self._load_originated_at
                                                              + self.config.load_interval))
        else:
            self._originate_at = now
        self._flush(now, out)
        return out

    # --- packets ------------------------------------------------------------------------
    def on_interest(self, face: int, interest: Interest, now: float) -> list[Action]:
        out: list[Action] = []
        comps = interest.name.comps
        if len(comps) < 4 or comps[:3] != _SCOPE or not self._within_budget(face, now):
            return out
        kind = comps[3]
        try:
            params = _params(interest)
        except DecodeError:
            self.counters["messages_malformed"] += 1
            return out
        nb = self.neighbors.get(face)
        if kind == _HELLO:
            self.counters["hellos_in"] += 1
            if nb is not None:
                try:
                    self._heard(nb, params, now, out)
                except DecodeError:
                    self.counters["messages_malformed"] += 1
                    return out
            out.append(self._transmit(face, make_data(interest.name, _pack({"n": self.me, "d": self.lsdb.digest()}))))
        elif kind == _SYNC:
            self.counters["syncs_in"] += 1
            if nb is None:  # e.g. over the connection the neighbour opened toward this node (TCP)
                nb = self._neighbor_named(params)
            if nb is None:
                self.counters["messages_not_neighbor"] += 1
            else:
                self._on_sync(nb, params, now, out)
        elif kind == _FETCH:
            self.counters["fetches_in"] += 1
            out.append(self._transmit(face, make_data(interest.name, self._reply(params))))
            if nb is not None:
                nb.synced_at = now
        else:
            self.counters["messages_malformed"] += 1
        self._flush(now, out)
        return out

    def on_data(self, face: int, data: Data, now: float) -> list[Action]:
        out: list[Action] = []
        nb = self.neighbors.get(face)
        comps = data.name.comps
        if nb is None or len(comps) < 4 or comps[:3] != _SCOPE:
            return out
        kind = comps[3]
        try:
            if kind == _HELLO:
                self._heard(nb, _unpack(data.content), now, out)
            elif kind == _FETCH and nb.fetch is not None and nb.fetch[0] == data.name:
                nb.fetch = None
                nb.synced_at = now
                self._on_records(nb, data.content, now)
        except DecodeError:
            self.counters["messages_malformed"] += 1
        self._flush(now, out)
        return out

    # --- time ---------------------------------------------------------------------------
    def next_deadline(self) -> float:
        t = min(self._hello_at, self._originate_at, self._compute_at)
        dead = self.config.dead_interval
        pace = self.config.pace
        for nb in self.neighbors.values():
            if nb.up:
                t = min(t, nb.heard_at + dead)
                if nb.notify:
                    t = min(t, nb.sync_sent_at + pace)
                if nb.wanted and nb.fetch is None:
                    t = min(t, nb.fetch_sent_at + pace)
            if nb.fetch is not None:
                t = min(t, nb.fetch[1])
        return t

    def on_timer(self, now: float) -> list[Action]:
        out: list[Action] = []
        cfg = self.config
        for nb in self.neighbors.values():
            if nb.up and now >= nb.heard_at + cfg.dead_interval:  # Rule 1
                nb.up = False
                nb.wanted.clear()
                nb.fetch = None
                self._adjacency_changed(now)
            if nb.fetch is not None and now >= nb.fetch[1]:  # Rule 4
                nb.fetch = None
        if now >= self._hello_at:
            self._hello_at = now + cfg.hello_interval
            for nb in self.neighbors.values():
                if nb.link_up:
                    self._send_hello(nb, out)
            for origin in self.lsdb.expired(now):  # Rule 7
                self.lsdb.remove(origin)
                self.counters["records_expired"] += 1
                self._routes_changed(now, True)
            if now >= self._originated_at + cfg.refresh:
                self._originate_at = now
        self._flush(now, out)
        return out

    # --- rules --------------------------------------------------------------------------
    def _neighbor_named(self, params: Any) -> Neighbor | None:
        """The up neighbour that a message from another face says it comes from.

        Two nodes that both list each other over TCP each open a connection,
        so each hears the other's messages on the face the other opened; a
        sync names its sender, and what it makes this node fetch is fetched
        on the neighbour's own face, so a false name costs nothing but a
        fetch the real neighbour answers with what it holds."""
        name = params.get("n") if type(params) is dict else None
        if type(name) is not str:
            return None
        for nb in self.neighbors.values():
            if nb.up and nb.name == name:
                return nb
        return None

    def _within_budget(self, face: int, now: float) -> bool:  # Rule 9
        start, count = self._budget.get(face, (now, 0))
        if now - start >= 1.0:
            start, count = now, 0
        if count >= self.config.max_requests_per_s:
            self.counters["messages_rate_limited"] += 1
            return False
        self._budget[face] = (start, count + 1)
        return True

    def _send_hello(self, nb: Neighbor, out: list[Action]) -> None:
        self.counters["hellos_out"] += 1
        out.append(self._transmit(nb.face, Interest.with_params(
            ROUTING_PREFIX.append_wire(_HELLO), _pack({"n": self.me, "d": self.lsdb.digest()}),
            lifetime_ms=max(1, int(self.config.hello_interval * 1000)))))

    def _heard(self, nb: Neighbor, params: Any, now: float, out: list[Action]) -> None:  # Rules 1, 5
        if type(params) is not dict or type(params.get("n")) is not str or type(params.get("d")) is not bytes:
            raise DecodeError("hello without a name and a digest")
        name = params["n"]
        nb.heard_at = now
        if not nb.up or nb.name != name:
            nb.up = True
            nb.name = name
            self._adjacency_changed(now)
        cfg = self.config
        if (params["d"] != self.lsdb.digest() and now >= nb.full_sent_at + cfg.repair_interval
                and now >= nb.synced_at + cfg.repair_interval and nb.fetch is None and not nb.wanted):
            nb.full_sent_at = now
            self._send_sync(nb, self.lsdb.vector(), True, now, out)

    def _adjacency_changed(self, now: float) -> None:
        self._originate_at = min(self._originate_at, now)

    def _routes_changed(self, now: float, topology: bool) -> None:
        """Rule 8: a changed graph is computed a hold-down after the last
        computation; changed announcements alone at once (on the distances
        kept from it), so a new prefix is routed at a node before the node
        notifies it onward, and no hop learns of it before the hop behind."""
        if not topology:
            self._prefixes_changed = True
        elif self._compute_at == _INF:
            self._compute_at = max(now, self._computed_at + self.config.hold_down)

    def _on_sync(self, nb: Neighbor, params: Any, now: float, out: list[Action]) -> None:  # Rules 3, 5
        if type(params) is not dict or type(params.get("v")) is not list:
            self.counters["messages_malformed"] += 1
            return
        nb.synced_at = now
        theirs: dict[str, int] = {}
        for item in params["v"][: self.config.max_nodes]:
            if (type(item) is not list or len(item) != 2 or type(item[0]) is not str
                    or type(item[1]) is not int or item[1] < 0):
                self.counters["messages_malformed"] += 1
                return
            theirs[item[0]] = item[1]
        lsdb = self.lsdb
        for origin, ver in theirs.items():
            if origin == self.me:  # Rule 2: a record of a previous life is outgrown, not fetched
                if ver > self.version:
                    self.version = ver
                    self._originate_at = min(self._originate_at, now)
            elif ver > lsdb.version_of(origin) and ver > nb.wanted.get(origin, -1):
                nb.wanted[origin] = ver
        if params.get("full") is True:
            newer = {o: v for o, v in lsdb.vector().items() if v > theirs.get(o, -1)}
            if newer:
                self._send_sync(nb, newer, False, now, out)

    def _send_sync(self, nb: Neighbor, entries: Mapping[str, int], full: bool, now: float,
                   out: list[Action]) -> None:
        self.counters["syncs_out"] += 1
        nb.sync_sent_at = now
        body: dict[str, Any] = {"n": self.me, "v": [[o, v] for o, v in entries.items()]}
        if full:
            body["full"] = True
        out.append(self._transmit(nb.face, Interest.with_params(ROUTING_PREFIX.append_wire(_SYNC), _pack(body))))

    def _reply(self, params: Any) -> bytes:  # Rule 4, the answering side
        records: list[bytes] = []
        if type(params) is dict and type(params.get("w")) is list:
            size, limit = 0, self.config.max_reply_bytes
            for item in params["w"][: self.config.max_nodes]:
                if type(item) is not list or len(item) != 2 or type(item[0]) is not str:
                    continue
                record = self.lsdb.get(item[0])
                if record is None:
                    continue
                if size + len(record.wire) > limit and records:
                    break
                records.append(record.wire)
                size += len(record.wire)
        return _pack(records)

    def _on_records(self, nb: Neighbor, content: bytes | memoryview, now: float) -> None:  # Rules 4, 6
        records = _unpack(content)
        if type(records) is not list:
            raise DecodeError("fetch answer is not a list")
        answered: set[str] = set()
        for wire in records:
            self.counters["records_in"] += 1
            if type(wire) is not bytes:
                self.counters["records_malformed"] += 1
                continue
            origin = self._accept(nb, wire, now)
            if origin is not None:
                answered.add(origin)
        if not answered:
            nb.wanted.clear()  # it holds none of them (any more): the next hello's digest repairs
        for origin in answered:  # stored, stale or refused: never asked again for the same version
            nb.wanted.pop(origin, None)

    def _accept(self, nb: Neighbor | None, wire: bytes, now: float) -> str | None:
        """Rule 6; returns the record's origin once it is known (stored or not)."""
        cfg = self.config
        if len(wire) > cfg.max_record_bytes:
            self.counters["records_over_bounds"] += 1
            self._refused(f"a record of {len(wire)} bytes, more than {cfg.max_record_bytes}")
            return None
        try:
            data = decode(wire)
            if type(data) is not Data:
                raise DecodeError("not a Data")
            comps = data.name.comps
            if len(comps) > 3 and comps[-1][:1] == _VERSION_TYPE:  # a stale record, known by its name alone
                held = self.lsdb.by_key(comps[:-3])
                if held is not None and 0 <= _version(comps[-1]) <= held.state.version:
                    self.counters["records_stale"] += 1
                    return held.state.origin
            state, certs = decode_record(data.name, data.content, max_adjacencies=cfg.max_adjacencies,
                                         max_prefixes=cfg.max_prefixes)
        except DecodeError as exc:
            bounds = "more than" in str(exc)
            self.counters["records_over_bounds" if bounds else "records_malformed"] += 1
            self._refused(str(exc))
            return None
        origin = state.origin
        if origin == self.me:  # Rule 2: a previous life of this node
            if state.version > self.version:
                self.version = state.version
                self._originate_at = min(self._originate_at, now)
            return origin
        if state.version <= self.lsdb.version_of(origin):
            self.counters["records_stale"] += 1
            return origin
        try:
            self._verify(data, certs)
        except Error as exc:
            self.counters["records_refused"] += 1
            self._refused(f"record of {origin}: {exc}")
            return origin
        if not self.lsdb.fits(origin, len(wire)):
            self.counters["records_no_room"] += 1
            self._refused(f"record of {origin}: the link-state database is full")
            return origin
        self._store(state, wire, now, None if nb is None else nb.face)
        return origin

    def _refused(self, why: str) -> None:
        self.last_refusal = why

    def _store(self, state: LinkState, wire: bytes, now: float, from_face: int | None) -> None:
        """Keep a record, and notify it to the other neighbours (Rule 3)."""
        lifetime = _INF if state.origin == self.me else min(state.lifetime, 7 * 86400.0)
        old = self.lsdb.get(state.origin)
        record = StoredRecord(state, wire, now, now + lifetime)
        self.lsdb.put(record)
        self.counters["records_stored"] += 1
        for nb in self.neighbors.values():
            if nb.face != from_face and nb.up:
                nb.notify[state.origin] = state.version
            if nb.wanted.get(state.origin, _INF) <= state.version:
                del nb.wanted[state.origin]
        self._routes_changed(now, old is None or old.neighbors != record.neighbors)

    def _originate(self, now: float) -> None:  # Rule 2
        cfg = self.config
        best: dict[str, int] = {}
        for nb in self.neighbors.values():
            if nb.up and nb.name is not None and nb.name != self.me:
                best[nb.name] = min(nb.cost, best.get(nb.name, nb.cost))
        adjacencies = tuple(Adjacency(n, c) for n, c in sorted(best.items()))
        prefixes = tuple(Announcement(p, cap, load) for p, (cap, load) in sorted(self.prefixes.items()))
        self.version += 1
        state = LinkState(self.me, self.version, cfg.lifetime, adjacencies, prefixes)
        data = self._sign(record_name(self.name, self.version), encode_record(state, self.certs))
        self._own_adjacencies = adjacencies
        self._originated_at = now
        self._load_originated_at = now
        self._originate_at = _INF
        self.counters["originated"] += 1
        self._store(state, encode(data), now, None)

    def _flush(self, now: float, out: list[Action]) -> None:
        """What every entry point ends with: originate, compute, notify and fetch when due."""
        if now >= self._originate_at:
            self._originate(now)
        if now >= self._compute_at or self._prefixes_changed:
            self._compute(now, out)
        pace = self.config.pace
        for nb in self.neighbors.values():
            if not nb.link_up:
                nb.notify.clear()
                continue
            if nb.notify and now >= nb.sync_sent_at + pace:
                if nb.up:
                    self._send_sync(nb, nb.notify, False, now, out)
                    nb.synced_at = now
                nb.notify = {}
            if nb.wanted and nb.fetch is None and nb.up and now >= nb.fetch_sent_at + pace:
                self.counters["fetches_out"] += 1
                interest = Interest.with_params(ROUTING_PREFIX.append_wire(_FETCH), _pack(
                    {"n": self.me, "w": [[o, v] for o, v in nb.wanted.items()]}),
                    lifetime_ms=max(1, int(self.config.fetch_timeout * 1000)))
                nb.fetch = (interest.name, now + self.config.fetch_timeout)
                nb.fetch_sent_at = now
                nb.synced_at = now
                out.append(self._transmit(nb.face, interest))

    def _compute(self, now: float, out: list[Action]) -> None:  # Rule 8
        self._prefixes_changed = False
        full = now >= self._compute_at or self._distances is None
        if full:
            self._compute_at = _INF
            self._computed_at = now
            self.counters["route_computations"] += 1
        else:
            self.counters["route_updates_light"] += 1
        origins: dict[str, list[str]] = {}
        attrs: dict[tuple[str, str], tuple[int | None, int | None]] = {}
        for record in self.lsdb:
            state = record.state
            for p in state.prefixes:
                origins.setdefault(p.prefix, []).append(state.origin)
                attrs[(p.prefix, state.origin)] = (p.capacity, p.load)
        if full:
            listed = {r.state.origin: r.neighbors for r in self.lsdb}
            adj = {u: {v: c for v, c in nbrs.items() if u in listed.get(v, ())} for u, nbrs in listed.items()}
            self._distances = neighbor_distances(adj, self.me)
        assert self._distances is not None
        faces: dict[str, tuple[int, int]] = {}  # neighbour name -> (cost, face) of its cheapest up face
        for nb in self.neighbors.values():
            if nb.up and nb.name is not None and (nb.name not in faces or (nb.cost, nb.face) < faces[nb.name]):
                faces[nb.name] = (nb.cost, nb.face)
        new: dict[str, tuple[Hop, ...]] = {}
        for prefix, nexthops in next_hops(self._distances, self.me, origins).items():
            hops = []
            for nh in nexthops:
                face = faces.get(nh.via)
                if face is None:
                    continue
                caps = [attrs[(prefix, h)] for h in nh.hosts]
                capacity = sum(c for c, _ in caps if c is not None) if any(c is not None for c, _ in caps) else None
                load = sum(ld for _, ld in caps if ld is not None) if any(ld is not None for _, ld in caps) else None
                hops.append(Hop(face[1], nh.cost, capacity, load))
            if hops:
                new[prefix] = tuple(hops)
        old = self.routes
        names = self._route_names
        for prefix, installed in new.items():
            if old.get(prefix) != installed:
                name = names.get(prefix)
                if name is None:
                    name = names[prefix] = Name(prefix)
                out.append(RouteUpdate(name, installed))
        for prefix in old.keys() - new.keys():
            name = names.pop(prefix, None)
            out.append(RouteUpdate(Name(prefix) if name is None else name, ()))
        self.routes = new

    def _transmit(self, face: int, packet: Interest | Data) -> Transmit:
        self.counters["messages_out"] += 1
        self.counters["bytes_out"] += len(encode(packet))
        return Transmit(face, packet)

    # --- observing ----------------------------------------------------------------------
    def status(self, now: float) -> dict[str, Any]:
        """The routing part of ``icnd routing --json`` (the shell adds what it knows)."""
        neighbors = [{
            "name": nb.name, "uri": nb.uri, "face": nb.face, "state": "up" if nb.up else "down",
            "cost": nb.cost, "link": "up" if nb.link_up else "down",
            "last_hello_s": None if nb.heard_at == -_INF else round(now - nb.heard_at, 3),
        } for nb in sorted(self.neighbors.values(), key=lambda n: n.face)]
        lsdb = []
        for record in sorted(self.lsdb, key=lambda r: r.state.origin):
            s = record.state
            lsdb.append({
                "origin": s.origin, "version": s.version, "age_s": round(now - record.received_at, 3),
                "expires_in_s": None if record.expires_at == _INF else round(record.expires_at - now, 3),
                "bytes": len(record.wire),
                "adjacencies": [{"name": a.name, "cost": a.cost} for a in s.adjacencies],
                "prefixes": [{"prefix": p.prefix, **({"capacity": p.capacity} if p.capacity is not None else {}),
                              **({"load": p.load} if p.load is not None else {})} for p in s.prefixes],
            })
        return {
            "name": self.me, "version": self.version, "neighbors": neighbors, "lsdb": lsdb,
            "lsdb_bytes": self.lsdb.bytes_used, "announced": sorted(self.prefixes), "routes": len(self.routes),
            "counters": dict(self.counters), "last_refusal": self.last_refusal,
        }


def _version(comp: bytes) -> int:
    """A version component's number (-1 if malformed: decode_record then says why)."""
    try:
        return decode_nonneg(comp[1:])
    except ValueError:
        return -1


def _pack(obj: Any) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


def _unpack(buf: bytes | memoryview) -> Any:
    try:
        return msgpack.unpackb(buf, raw=False, strict_map_key=True, max_bin_len=len(buf), max_str_len=len(buf),
                               max_array_len=len(buf), max_map_len=64)
    except Exception as exc:
        raise DecodeError(f"routing message: not msgpack: {exc}") from None


def _params(interest: Interest) -> Any:
    if interest.app_params is None or not interest.params_ok():
        raise DecodeError("routing Interest without valid parameters")
    return _unpack(interest.app_params)
