"""The forwarder: NFD's pipelines as a sans-IO state machine.

Packets and time go in, `Send` actions come out::

    actions = fw.on_packet(face_id, packet, now)   # Interest, Data or Nack
    actions = fw.on_timer(now)                     # when now >= fw.next_deadline()
    actions = fw.on_face_down(face_id)

Routes go into the RIB (`rib`, `icnd.core.tables.rib`: routes by origin),
which alone writes the FIB (`fib`) that forwarding reads; a route with an
expiry time is removed by the RIB's timer, run from `on_timer`.

The caller owns the clock, the faces and the encoding; the forwarder never
reads a clock or touches a socket, so the same code runs in the daemon, in
unit tests and in the simulator on a virtual clock.

Pipelines (read in this order):
- Interest: `on_incoming_interest` -> scope and hop-limit checks -> dead-nonce
  and PIT loop checks -> `on_content_store_hit` / `on_content_store_miss` ->
  strategy -> `send_interest` (the outgoing-Interest pipeline) or `reject`.
  A new entry under best-route (``Strategy.sends_new_to_cheapest``) takes a
  composed fast path in `on_content_store_miss` instead (`fast_best_route`).
- Data: `on_incoming_data` -> PIT match (only entries with an out-record on
  the arrival face) -> Content Store insert -> Data to every in-record face;
  no match -> `on_data_unsolicited` (dropped, counted, not cached).
- Nack: `on_incoming_nack` -> the entry whose out-record carries that nonce
  -> strategy (try another hop, or pass the least severe reason down).
- Namespace handlers (`icnd.core.hooks`, given at construction): where the
  Interest and Nack pipelines would ask a strategy, a name whose first
  component has a handler goes to the handler instead (`route`,
  `after_nack`); what the pipelines send to a handler's hook face is handed
  to it before the actions are returned (`_run_hooks`).
- Expiry: `on_interest_expiry` from the one timer heap when the last
  in-record has expired; nonces go to the dead-nonce list.
- Observing strategies (``Strategy.observes``, e.g. load-balance) also hear
  of satisfied entries (`after_receive_data`), expired ones
  (`on_interest_timeout`) and dead faces (`on_face_down`); while no prefix
  uses one, this costs one flag test per Data and per expiry.
- Reflexive forwarding (rules in `icnd.core.tables.reflexive`): a name with an
  ``rnp=`` component leaves the Interest pipeline at the Content Store miss
  (it cannot hit: Data with an RNP is never cached) or at the PIT match for
  `on_incoming_reflexive_interest`, which Nacks a misplaced RNP and hands
  trigger Interests to `on_incoming_trigger_interest` and reflexive ones to
  `on_incoming_ri`; Nacks on reflexive Interests go to `on_reflexive_nack`;
  removing a trigger Interest's PIT entry removes its reflexive entry
  (`_close_trigger`).  The cost on the common path: one ``max(comps)`` per
  Content Store miss and per solicited Data, nothing on a Content Store hit.

`/localhost` names are accepted only from local faces (an Interest from any
other face is Nacked *prohibited*) and only sent to local faces.  Every
decision that drops a packet increments a counter.

The fast paths read other tables' public, read-only state (`Pit.by_name`,
`ContentStore.by_name`, `DeadNonceList.records`, ...) instead of calling
their methods where that saves a call per packet; each inlined path names
the method it stands for, and the property tests compare the composed
best-route path with the general one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, fields
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Protocol, Sequence

from icnd.core.fw.strategy import RouteHop, Strategy, least_severe
from icnd.core.fw.strategy_choice import StrategyChoice
from icnd.core.tables.cs import ContentStore
from icnd.core.tables.dnl import DeadNonceList
from icnd.core.tables.fib import Fib, FibEntry, TableFull
from icnd.core.tables.pit import OutRecord, Pit, PitEntry
from icnd.core.tables.reflexive import (
    MALFORMED, NOT_REFLEXIVE, TRIGGER, ReflexiveEntry, ReflexiveTable, classify, has_rnp,
)
from icnd.core.tables.rib import ORIGIN_STATIC, Rib
from icnd.core.timers import TimerQueue
from icnd.name import LOCALHOST, T_DIGEST, T_RNP, Name
from icnd.packet import (
    MAX_LIFETIME_MS,
    MIN_LIFETIME_MS,
    ContentType,
    Data,
    Interest,
    Nack,
    NackReason,
    Packet,
    SigType,
)
from icnd.ratelog import RateLimitedLog

SUPPRESS_INITIAL = 0.010  # retransmission suppression, doubles per retransmission
SUPPRESS_MAX = 0.250
DNL_SWEEP_INTERVAL = 1.0
REFUSAL_LOG_INTERVAL = 10.0  # a kind of PIT refusal is logged at most once per this many seconds
UNCACHED_TYPES = frozenset({ContentType.NACK, ContentType.ERROR, ContentType.THUNK, ContentType.PARTIAL})
# A name whose greatest component is >= this has a component of type >= T_RNP
# (components compare by type byte first): the one reflexive test per packet.
RNP_MIN = bytes((T_RNP,))


class Send(NamedTuple):
    face: int
    packet: Packet


# Builds a Send from a (face, packet) pair in C: NamedTuple's generated
# __new__ is a Python function, and two Sends are made per exchange.
_send = tuple.__new__


@dataclass(slots=True)
class Counters:
    """The forwarder's counters, in the order status output lists them."""

    # the names interface.md §8 promises, then the rest
    interests_in: int = 0
    interests_out: int = 0
    data_in: int = 0
    data_out: int = 0
    nacks_in: int = 0
    nacks_out: int = 0
    cs_hits: int = 0
    cs_misses: int = 0
    unsolicited_data: int = 0
    decode_errors: int = 0
    pit_aggregated: int = 0
    pit_expired: int = 0
    pit_satisfied: int = 0
    pit_full: int = 0
    pit_local_reserve: int = 0  # a non-local face met the PIT's local reserve
    pit_fair_share: int = 0  # a non-local face met its fair share of the PIT
    pit_bytes_full: int = 0  # a PIT bound in Interest parameter bytes
    duplicate_nonces: int = 0
    dead_nonce_hits: int = 0
    retx_suppressed: int = 0
    retransmissions: int = 0
    hop_limit_drops: int = 0
    scope_violations: int = 0
    no_route: int = 0
    unsolicited_nacks: int = 0
    cs_inserts: int = 0
    unknown_face_drops: int = 0
    # reflexive forwarding (icnd.core.tables.reflexive)
    rf_entries_created: int = 0
    rf_miss: int = 0
    rf_wrong_ingress: int = 0
    rf_prohibited: int = 0
    rf_killed: int = 0
    rf_extended: int = 0
    rf_collisions: int = 0
    rf_full: int = 0
    rf_ri_limit: int = 0
    rnp_malformed: int = 0

    def as_dict(self) -> dict[str, int]:
        return {n: getattr(self, n) for n in COUNTER_NAMES}


COUNTER_NAMES = tuple(f.name for f in fields(Counters))
log = logging.getLogger(__name__)


HOOK_FACE = 0  # the first handler's face; further handlers get HOOK_FACE - 1, HOOK_FACE - 2, ...


class NamespaceHandler(Protocol):
    """A feature that takes over the names under one first component: the
    contract is in `icnd.core.hooks`."""

    def attach(self, fw: Forwarder, face: int) -> None:
        """Called once by the forwarder's constructor: `face` is this handler's hook face."""

    def route(self, entry: PitEntry, in_face: int, interest: Interest, now: float) -> None:
        """Forward or keep `interest` (PIT `entry`, arrived on `in_face`), in place of a strategy."""

    def after_nack(self, entry: PitEntry, face: int, nack: Nack, now: float) -> None:
        """An upstream `face` Nacked `entry` (its out-record is marked), in place of a strategy."""

    def deliver(self, packet: Packet) -> None:
        """Queue a packet the pipelines sent to the hook face (handled in `process`)."""

    def process(self, now: float) -> bool:
        """Handle what is queued (may call back into the pipelines); False if nothing was."""

    def pending(self) -> bool:
        """Whether packets may still come back to the hook face (`icnd.core.hooks`, rule 5)."""

    def on_face_down(self, face: int, now: float) -> None:
        """`face` is gone (called before the PIT forgets it)."""

    def stats(self) -> dict[str, int]:
        """Table sizes, merged into `Forwarder.table_sizes`."""


@dataclass(slots=True)
class FaceInfo:
    local: bool


def clamp_lifetime(ms: int) -> float:
    if ms < MIN_LIFETIME_MS:
        return MIN_LIFETIME_MS / 1000.0
    if ms > MAX_LIFETIME_MS:
        return MAX_LIFETIME_MS / 1000.0
    return ms / 1000.0


class Forwarder:
    def __init__(
        self,
        *,
        cs_capacity_bytes: int = 64 * 1024 * 1024,
        pit_max_entries: int = 100_000,
        pit_max_per_face: int = 50_000,
        pit_local_reserve: float = 0.1,
        pit_max_bytes: int = 256 * 1024 * 1024,
        pit_max_bytes_per_face: int = 64 * 1024 * 1024,
        fib_max_entries: int = 1_000_000,
        rib_max_routes: int = 1_000_000,
        rib_max_bytes: int = 256 * 1024 * 1024,
        dnl_lifetime: float = 6.0,
        dnl_capacity: int = 65536,
        default_strategy: str = "best-route",
        rf_max_entries: int = 65536,
        rf_max_per_face: int = 256,
        hooks: Mapping[bytes, NamespaceHandler] | None = None,
    ) -> None:
        """`hooks`: namespace handlers by first name component (wire form),
        see `icnd.core.hooks`.  `pit_local_reserve`: the share of the PIT's
        entries and parameter bytes only local faces may use
        (`icnd.core.tables.pit`)."""
        self.fib = Fib(max_entries=fib_max_entries)
        self.rib = Rib(self.fib, max_routes=rib_max_routes, max_bytes=rib_max_bytes,
                       schedule=self._schedule_route_expiry)
        self.pit = Pit(max_entries=pit_max_entries, max_per_face=pit_max_per_face,
                       local_reserve=pit_local_reserve, max_bytes=pit_max_bytes,
                       max_bytes_per_face=pit_max_bytes_per_face)
        self._refusal_logs: dict[str, RateLimitedLog] = {}  # one per counter of PIT refusals
        self.cs = ContentStore(cs_capacity_bytes)
        self.dnl = DeadNonceList(dnl_lifetime, dnl_capacity)
        self._dnl_ms = dnl_lifetime * 1000
        self.strategies = StrategyChoice(default_strategy)
        self.rf = ReflexiveTable(rf_max_entries, rf_max_per_face)
        self._single_path = StrategyChoice.single_path()
        self.counters = Counters()
        self.faces: dict[int, FaceInfo] = {}
        self.timers = TimerQueue()
        self._expiry_timer = self._on_expiry_timer  # one bound method: it keys the timer lanes
        # the composed best-route path of on_content_store_miss (False: always the
        # general strategy path; tests compare the two)
        self.fast_best_route = True
        self._out: list[Send] = []
        self._dnl_sweep_at: float | None = None
        # namespace handlers (icnd.core.hooks); `hooks` is read-only after construction
        self.hooks: dict[bytes, NamespaceHandler] = dict(hooks or {})
        self._handlers: tuple[NamespaceHandler, ...] = tuple({id(h): h for h in self.hooks.values()}.values())
        self._hook_faces: dict[int, NamespaceHandler] = {}
        self._hooks_busy = False  # a handler may have work: run _run_hooks before returning actions
        # first components whose Interests never take the composed best-route path
        self._not_fast = frozenset(self.hooks) | {LOCALHOST}
        for i, handler in enumerate(self._handlers):
            face = HOOK_FACE - i
            self.faces[face] = FaceInfo(True)
            self.pit.local_faces.add(face)
            self._hook_faces[face] = handler
            handler.attach(self, face)

    # --- faces ----------------------------------------------------------------
    def add_face(self, face: int, *, local: bool = False) -> None:
        self.faces[face] = FaceInfo(local)
        if local:
            self.pit.local_faces.add(face)
        else:
            self.pit.local_faces.discard(face)

    def route_hints(self, prefix: Name, hops: Iterable[RouteHop]) -> None:
        """Routing's next hops of `prefix` with the capacity/load their
        function hosts announced: kept by the strategies that use them
        (`StrategyChoice.route_hints`: load-balance; the routing shell's ``on_hops``)."""
        self.strategies.route_hints(prefix, hops)

    def on_face_down(self, face: int, now: float = 0.0) -> list[Send]:
        """Forget a face: its routes, its in-records and out-records, and its
        place in reflexive entries (an entry whose last consumer face it was
        goes, with its trigger Interest's PIT entry)."""
        self.faces.pop(face, None)
        self.pit.local_faces.discard(face)
        self.rib.remove_face(face)
        self.rf.remove_face(face)
        self.strategies.face_down(face)
        if self._handlers:
            for handler in self._handlers:
                handler.on_face_down(face, now)
            self._hooks_busy = True
        for entry in list(self.pit):
            if face in entry.in_records:
                self.pit.remove_in_record(entry, face)
                self._schedule_expiry(entry)
                if entry.in_records:
                    rf = self._trigger_entry(entry)
                    if rf is not None:
                        self.rf.update(rf)
            entry.out_records.pop(face, None)
            if not entry.in_records:  # a TI's entry went with its last consumer face
                self.pit.remove(entry)
        return self._flush(now)

    # --- entry points -----------------------------------------------------------
    def on_packet(self, face: int, packet: Packet, now: float) -> list[Send]:
        # one type() per packet; mypy does not narrow `packet` through `kind`
        kind = type(packet)
        if kind is Interest:
            self.on_incoming_interest(face, packet, now)  # type: ignore[arg-type]  # kind is Interest
        elif kind is Data:
            self.on_incoming_data(face, packet, now)  # type: ignore[arg-type]  # kind is Data
        elif kind is Nack:
            self.on_incoming_nack(face, packet, now)  # type: ignore[arg-type]  # kind is Nack
        else:
            raise TypeError(f"not a packet: {kind.__name__}")
        out = self._out
        self._out = []
        if self._hooks_busy:
            return self._run_hooks(out, now)
        return out

    def on_timer(self, now: float) -> list[Send]:
        self.timers.run_due(now)
        return self._flush(now)

    def next_deadline(self) -> float | None:
        return self.timers.next_due()

    def schedule(self, at: float, callback: Callable[[Any, float, float], None], arg: Any = None) -> None:
        """Call ``callback(arg, at, now)`` from `on_timer` once ``now >= at``."""
        self.timers.push(at, callback, arg)

    def _flush(self, now: float) -> list[Send]:
        out = self._out
        self._out = []
        if self._hooks_busy:
            return self._run_hooks(out, now)
        return out

    def _run_hooks(self, out: list[Send], now: float) -> list[Send]:
        """Hand what the pipelines sent to a hook face to its handler and let
        the handlers process, round after round, until none has anything
        left to do; the other actions are returned (`icnd.core.hooks`, 4-5)."""
        hook_faces = self._hook_faces
        handlers = self._handlers
        done: list[Send] = []
        while True:
            for send in out:
                face = send[0]
                if face in hook_faces:
                    hook_faces[face].deliver(send[1])
                else:
                    done.append(send)
            worked = False
            for handler in handlers:
                if handler.process(now):
                    worked = True
            if not worked:
                self._hooks_busy = any(handler.pending() for handler in handlers)
                return done
            out = self._out
            self._out = []

    def _is_local(self, face: int) -> bool:
        info = self.faces.get(face)
        return info is not None and info.local

    # --- Interest pipeline ------------------------------------------------------
    def on_incoming_interest(self, face: int, interest: Interest, now: float) -> None:
        c = self.counters
        c.interests_in += 1
        info = self.faces.get(face)
        if info is None:
            c.unknown_face_drops += 1
            return
        comps = interest.name.comps
        if comps and comps[0] == LOCALHOST and not info.local:
            c.scope_violations += 1
            self._nack(face, interest, NackReason.PROHIBITED, "/localhost is only for local faces")
            return
        if interest.hop_limit == 0:
            c.hop_limit_drops += 1
            return
        dnl = self.dnl
        if dnl.records and dnl.has(comps, interest.nonce, now):
            c.dead_nonce_hits += 1
            self._nack(face, interest, NackReason.DUPLICATE, "looping Interest (dead-nonce list)")
            return
        # pit.find and the Content Store's exact lookup, inlined for the common miss
        entry = self.pit.find(interest) if comps in self.pit.by_name else None
        if entry is None:
            # A name with an rnp= never hits (no such Data is cached), so the
            # reflexive test costs nothing on the Content Store hit path.
            cs = self.cs
            if (interest.can_be_prefix or comps in cs.by_name
                    or (comps and comps[-1][0] == T_DIGEST)):
                data = cs.lookup(interest, now)
            else:
                data = None
            if data is not None:
                self.on_content_store_hit(face, interest, data)
                return
            if comps and max(comps) >= RNP_MIN and self.on_incoming_reflexive_interest(face, interest, now):
                return
            c.cs_misses += 1
            self.on_content_store_miss(face, interest, now)
            return
        if comps and (comps[0][0] == T_RNP or comps[-1][0] == T_RNP):  # the PIT holds only valid names
            self.on_incoming_reflexive_interest(face, interest, now)
            return
        if self._is_loop(entry, face, interest.nonce):
            c.duplicate_nonces += 1
            self._nack(face, interest, NackReason.DUPLICATE, "duplicate nonce")
            return
        if self._pending_interest(entry, face, interest, now):
            self._strategy_interest(entry, face, interest, now)

    def _is_loop(self, entry: PitEntry, face: int, nonce: int) -> bool:
        for f, rec in entry.in_records.items():
            if rec.nonce == nonce and f != face:
                return True
        for out in entry.out_records.values():
            if out.nonce == nonce:
                return True
        return False

    def on_content_store_hit(self, face: int, interest: Interest, data: Data) -> None:
        self.counters.cs_hits += 1
        self.counters.data_out += 1
        self._out.append(_send(Send, (face, data)))

    def on_content_store_miss(self, face: int, interest: Interest, now: float) -> None:
        pit = self.pit
        try:
            entry = pit.insert(interest)
        except TableFull as exc:
            self._pit_refused(face, interest, exc, now)
            return
        ms = interest.lifetime_ms  # _add_in_record, inlined: the hot path
        expiry = now + (ms / 1000.0 if MIN_LIFETIME_MS <= ms <= MAX_LIFETIME_MS else clamp_lifetime(ms))
        try:
            pit.add_in_record(entry, face, interest, expiry)
        except TableFull as exc:
            pit.remove(entry)
            self._pit_refused(face, interest, exc, now)
            return
        # _schedule_expiry, inlined: a new entry has no timer yet
        entry.timer_at = expiry
        comps = entry.comps
        self.timers.push(expiry, self._expiry_timer, comps, ms)
        entry.suppress = SUPPRESS_INITIAL
        if self.fast_best_route and comps and comps[0] not in self._not_fast:
            # _strategy_interest -> BestRoute.after_receive_interest ->
            # eligible_nexthops -> send_interest -> record_out, composed for
            # the common case: a new entry (no out-record yet) under
            # best-route goes to the cheapest live next hop other than the
            # in-face.  No such hop: the general path (it rejects).  Not for
            # /localhost (scoped) nor a namespace handler's names.
            if self.strategies.find(comps).sends_new_to_cheapest:
                fib_entry = self.fib.longest_match(comps)
                if fib_entry is not None:
                    faces = self.faces
                    for hop in fib_entry.faces:
                        if hop != face and hop in faces:
                            entry.out_records[hop] = OutRecord(interest.nonce, now, expiry)
                            entry.last_forwarded = now
                            self.counters.interests_out += 1
                            self._out.append(_send(Send, (hop, interest.forwarded(interest.hop_limit - 1))))
                            return
        self._strategy_interest(entry, face, interest, now)

    def _new_entry(self, face: int, interest: Interest, now: float) -> PitEntry | None:
        """A PIT entry with its in-record and expiry timer, or None (Nacked
        congestion) when a PIT bound is reached."""
        try:
            entry = self.pit.insert(interest)
        except TableFull as exc:
            self._pit_refused(face, interest, exc, now)
            return None
        if not self._add_in_record(entry, face, interest, now):
            self.pit.remove(entry)
            return None
        return entry

    def _add_in_record(self, entry: PitEntry, face: int, interest: Interest, now: float) -> bool:
        try:
            self.pit.add_in_record(entry, face, interest, now + clamp_lifetime(interest.lifetime_ms))
        except TableFull as exc:
            self._pit_refused(face, interest, exc, now)
            return False
        self._schedule_expiry(entry)
        return True

    def _pit_refused(self, face: int, interest: Interest, exc: TableFull, now: float) -> None:
        """A PIT bound refused `interest`: count it by its kind (`PitFull.counter`),
        Nack it *congestion*, and log the kind at most once per
        `REFUSAL_LOG_INTERVAL` (with how many since the last line)."""
        kind = getattr(exc, "counter", "pit_full")
        c = self.counters
        total = getattr(c, kind) + 1
        setattr(c, kind, total)
        refusals = self._refusal_logs.get(kind)
        if refusals is None:
            refusals = self._refusal_logs[kind] = RateLimitedLog(log, REFUSAL_LOG_INTERVAL)
        refusals.warning(now, "PIT refused an Interest from face %d (%s, %d in all): %s", face, kind, total, exc)
        self._nack(face, interest, NackReason.CONGESTION, str(exc))

    def _schedule_expiry(self, entry: PitEntry) -> None:
        """Make sure a timer fires at `entry.expiry`; a later one becomes stale."""
        if entry.expiry < entry.timer_at:
            entry.timer_at = entry.expiry
            self.timers.push(entry.expiry, self._expiry_timer, entry.comps, entry.interest.lifetime_ms)

    def _on_expiry_timer(self, comps: tuple[bytes, ...], at: float, now: float) -> None:
        """An expiry timer came due: the PIT entries of that name whose
        timer it is expire.  (Timers carry the name, not the entry, so a
        satisfied entry is freed at once instead of waiting for its timer.)"""
        entries = self.pit.by_name.get(comps)
        if entries:
            for entry in [e for e in entries if e.timer_at == at]:
                self.on_interest_expiry(entry, at, now)

    def _pending_interest(self, entry: PitEntry, face: int, interest: Interest, now: float) -> bool:
        """An Interest for an existing entry: aggregate, suppress or
        retransmit.  True if it must be forwarded (again)."""
        new_downstream = face not in entry.in_records
        if not self._add_in_record(entry, face, interest, now):
            return False
        if entry.has_pending_out(now):
            if now < entry.last_forwarded + entry.suppress:
                if new_downstream:
                    self.counters.pit_aggregated += 1
                else:
                    self.counters.retx_suppressed += 1
                return False
            self.counters.retransmissions += 1
            entry.suppress = min(entry.suppress * 2, SUPPRESS_MAX)
        return True

    def _strategy_interest(self, entry: PitEntry, face: int, interest: Interest, now: float) -> None:
        comps = interest.name.comps
        hooks = self.hooks
        if comps and comps[0] in hooks:  # a namespace handler's name: the handler, not a strategy
            hooks[comps[0]].route(entry, face, interest, now)
            self._hooks_busy = True
            return
        strategy = self.strategies.find(comps)
        strategy.after_receive_interest(self, entry, face, interest, self.fib.longest_match(comps), now)

    def eligible_nexthops(self, entry: PitEntry, in_face: int | None, fib_entry: FibEntry | None) -> list[int]:
        """Next hops, cheapest first, excluding the in-face, dead faces and,
        for /localhost names, non-local faces."""
        if fib_entry is None:
            return []
        faces = self.faces
        comps = entry.comps
        scoped = bool(comps) and comps[0] == LOCALHOST
        hops = fib_entry.faces
        if len(hops) == 1 and not scoped:  # the common case, without a comprehension
            f = hops[0]
            return [f] if f != in_face and f in faces else []
        return [f for f in hops if f != in_face and f in faces and (not scoped or faces[f].local)]

    def send_interest(self, entry: PitEntry, face: int, interest: Interest, now: float) -> None:
        """The outgoing-Interest pipeline: out-record, hop limit, send."""
        self.record_out(entry, face, interest, now)
        self.counters.interests_out += 1
        self._out.append(_send(Send, (face, interest.forwarded(interest.hop_limit - 1))))

    def record_out(self, entry: PitEntry, face: int, interest: Interest, now: float) -> None:
        """The out-record of sending `interest` to `face` (nothing is sent)."""
        expiry = now + clamp_lifetime(interest.lifetime_ms)
        out = entry.out_records.get(face)
        if out is None:
            entry.out_records[face] = OutRecord(interest.nonce, now, expiry)
        else:
            out.nonce, out.sent_at, out.expiry, out.nacked = interest.nonce, now, expiry, None
        entry.last_forwarded = now

    def reject(self, entry: PitEntry, reason: NackReason, now: float, detail: str = "") -> None:
        """Nack every downstream of `entry` and drop it."""
        if reason is NackReason.NO_ROUTE:
            self.counters.no_route += 1
        for face, rec in entry.in_records.items():
            if rec.expiry > now:
                self._nack(face, rec.interest, reason, detail)
        self._finish(entry, now)

    def _nack(self, face: int, interest: Interest, reason: NackReason, detail: str) -> None:
        self.counters.nacks_out += 1
        self._out.append(Send(face, Nack(interest.name, interest.nonce, reason, detail)))

    def _finish(self, entry: PitEntry, now: float) -> None:
        """Remove `entry`; its nonces go to the dead-nonce list."""
        if entry.out_records:
            for out in entry.out_records.values():
                self.dnl.add(entry.comps, out.nonce, now)
            if self._dnl_sweep_at is None:
                self._dnl_sweep_at = now + DNL_SWEEP_INTERVAL
                self.schedule(self._dnl_sweep_at, self._sweep_dnl)
        self.pit.remove(entry)
        if self.rf.entries:
            self._close_trigger(entry)

    def _sweep_dnl(self, arg: None, due: float, now: float) -> None:
        self.dnl.evict_expired(now)
        self._dnl_sweep_at = None
        if len(self.dnl):
            self._dnl_sweep_at = now + DNL_SWEEP_INTERVAL
            self.schedule(self._dnl_sweep_at, self._sweep_dnl)

    def on_interest_expiry(self, entry: PitEntry, at: float, now: float) -> None:
        if entry.removed or at != entry.timer_at:
            return  # satisfied, or superseded by an earlier timer
        if entry.expiry > now:  # extended since scheduled
            entry.timer_at = float("inf")
            self._schedule_expiry(entry)
            return
        self.counters.pit_expired += 1
        if self.strategies.observed:
            strategy = self.strategies.find(entry.comps)
            if strategy.observes:
                strategy.on_interest_timeout(self, entry, now)
        self._finish(entry, now)

    # --- Reflexive forwarding (the rules: icnd.core.tables.reflexive) ------------------
    def on_incoming_reflexive_interest(self, face: int, interest: Interest, now: float) -> bool:
        """Rule 1, for a name with a component of type >= T_RNP; False if
        it holds no RNP after all (the normal pipeline then goes on)."""
        kind, why = classify(interest.name.comps)
        if kind == NOT_REFLEXIVE:
            return False
        if kind == MALFORMED:
            self.counters.rnp_malformed += 1
            self._nack(face, interest, NackReason.MALFORMED, why)
        elif kind == TRIGGER:
            self.on_incoming_trigger_interest(face, interest, now)
        else:
            self.on_incoming_ri(face, interest, now)
        return True

    def on_incoming_trigger_interest(self, face: int, interest: Interest, now: float) -> None:
        """Rule 2: a TI creates or refreshes the entry of its RNP."""
        c = self.counters
        rnp = interest.name.comps[-1]
        entry = self.pit.find(interest)
        rf = self.rf.get(rnp)
        if rf is not None and rf.ti_entry is not entry:
            c.rf_collisions += 1
            self._nack(face, interest, NackReason.PROHIBITED, "reflexive name prefix in use by another trigger")
            return
        if entry is None:
            entry = self._new_entry(face, interest, now)
            if entry is None:
                return
            try:
                rf = self.rf.insert(rnp, entry, now)
            except TableFull as exc:
                c.rf_full += 1
                self.pit.remove(entry)
                self._nack(face, interest, NackReason.NO_RESOURCES, str(exc))
                return
            c.rf_entries_created += 1
            entry.suppress = SUPPRESS_INITIAL
            forward = True
        else:
            assert rf is not None  # an entry exists exactly while its TI is pending
            if self._is_loop(entry, face, interest.nonce):
                c.duplicate_nonces += 1
                self._nack(face, interest, NackReason.DUPLICATE, "duplicate nonce")
                return
            try:
                self.rf.add_consumer(rf, face)
            except TableFull as exc:
                c.rf_full += 1
                self._nack(face, interest, NackReason.NO_RESOURCES, str(exc))
                return
            extended = entry.expiry
            forward = self._pending_interest(entry, face, interest, now)
            if face not in entry.in_records:  # the PIT refused the in-record
                self.rf.remove_consumer(rf, face)
            entry.extend_to(extended)  # a retransmission never undoes an RI's extension
        if forward:
            self._strategy_trigger(entry, face, interest, now)
        if not entry.removed:
            self.rf.update(rf)

    def _strategy_trigger(self, entry: PitEntry, face: int, interest: Interest, now: float) -> None:
        comps = entry.comps
        self._trigger_strategy(comps).after_receive_interest(
            self, entry, face, interest, self.fib.longest_match(comps), now)

    def _trigger_strategy(self, comps: tuple[bytes, ...]) -> Strategy:
        """The prefix's strategy, unless it would send a TI to several hosts."""
        strategy = self.strategies.find(comps)
        return self._single_path if strategy.multipath else strategy

    def on_incoming_ri(self, face: int, interest: Interest, now: float) -> None:
        """Rule 3: an RI goes only through its RNP's entry, never by FIB."""
        c = self.counters
        rf = self.rf.get(interest.name.comps[0])
        if rf is None or not rf.live(now):
            if rf is not None and rf.prohibited:
                c.rf_prohibited += 1
            else:
                c.rf_miss += 1
            self._nack(face, interest, NackReason.NO_ROUTE, "no reflexive entry")
            return
        if face not in rf.producer_faces:
            c.rf_wrong_ingress += 1
            return
        if rf.ri_count >= self.rf.max_ri_per_ti:
            c.rf_ri_limit += 1
            self._nack(face, interest, NackReason.PROHIBITED, "too many reflexive Interests for one trigger")
            return
        entry = self.pit.find(interest)
        if entry is None:
            entry = self._new_entry(face, interest, now)
            if entry is None:
                return
            entry.suppress = SUPPRESS_INITIAL
            forward = True
        else:
            if self._is_loop(entry, face, interest.nonce):
                c.duplicate_nonces += 1
                self._nack(face, interest, NackReason.DUPLICATE, "duplicate nonce")
                return
            forward = self._pending_interest(entry, face, interest, now)
            if face not in entry.in_records:  # the PIT refused the in-record
                return
        if self.rf.extend(rf, clamp_lifetime(interest.lifetime_ms), now):
            c.rf_extended += 1
        if forward:
            self.send_reflexive_interest(entry, rf, face, interest, now)

    def send_reflexive_interest(self, entry: PitEntry, rf: ReflexiveEntry, face: int, interest: Interest,
                                now: float) -> None:
        """An RI to every consumer face of its entry (never to `face`)."""
        rf.ri_count += 1
        downs = sorted(f for f in rf.consumer_faces if f != face)
        if not downs:
            self.reject(entry, NackReason.NO_ROUTE, now)
            return
        for down in downs:
            self.send_interest(entry, down, interest, now)

    def on_reflexive_nack(self, entry: PitEntry, face: int, nack: Nack, now: float) -> None:
        """Rule 6 for an RI; a TI's Nack goes to its (single-path) strategy."""
        comps = entry.comps
        if comps[0][0] == T_RNP:  # an RI: its out-records are consumer faces
            if nack.reason == NackReason.PROHIBITED:
                rf = self.rf.get(comps[0])
                if rf is not None and face in rf.consumer_faces and not rf.prohibited:
                    rf.prohibited = True
                    self.counters.rf_killed += 1
            if entry.all_out_nacked():
                self.reject(entry, least_severe(entry), now)
            return
        self._trigger_strategy(comps).after_receive_nack(
            self, entry, face, nack, self.fib.longest_match(comps), now)
        rf = self._trigger_entry(entry)
        if rf is not None:  # still pending: maybe sent to another host
            self.rf.update(rf)

    def _trigger_entry(self, entry: PitEntry) -> ReflexiveEntry | None:
        """The reflexive entry of a TI's PIT entry (None for other entries)."""
        comps = entry.comps
        if comps and comps[-1][0] == T_RNP:
            rf = self.rf.get(comps[-1])
            if rf is not None and rf.ti_entry is entry:
                return rf
        return None

    def _close_trigger(self, entry: PitEntry) -> None:
        """Rule 5: a TI's PIT entry went, and its reflexive entry with it."""
        rf = self._trigger_entry(entry)
        if rf is not None:
            self.rf.remove(rf)

    # --- Data pipeline ------------------------------------------------------------
    def on_incoming_data(self, face: int, data: Data, now: float) -> None:
        c = self.counters
        c.data_in += 1
        info = self.faces.get(face)
        if info is None:
            c.unknown_face_drops += 1
            return
        comps = data.name.comps
        if comps and comps[0] == LOCALHOST and not info.local:
            c.scope_violations += 1
            return
        pit = self.pit
        entries: Sequence[PitEntry]
        if pit.prefix_entries or pit.digest_entries:
            entries = pit.match_data(data)
        else:  # exact names only: the stored list itself (copied if an entry may be removed from it)
            entries = pit.by_name.get(comps, ())
            if len(entries) > 1:
                entries = list(entries)
        if len(entries) != 1 or face not in entries[0].out_records:
            entries = [e for e in entries if face in e.out_records]
        if not entries:
            self.on_data_unsolicited(face, data)
            return
        if comps and max(comps) >= RNP_MIN and has_rnp(comps):
            cached = False  # reflexive Data (RD, TD, anything with an rnp=) is never cached
        else:
            cached = (data.content_type not in UNCACHED_TYPES and data.sig_type != SigType.PER_HOP
                      and self.cs.insert(data, now))
        if cached:
            c.cs_inserts += 1
        # Like NFD: a satisfied Interest's nonces need the dead-nonce list only
        # if a looping copy could miss the cache (not cached, or MustBeFresh
        # with freshness shorter than the list remembers).
        short_fresh = data.freshness_ms < self._dnl_ms
        out = self._out
        if len(entries) == 1:  # the common case: no need to de-duplicate downstreams
            entry = entries[0]
            for down, rec in entry.in_records.items():
                if down != face and rec.expiry > now:
                    out.append(_send(Send, (down, data)))
                    c.data_out += 1
        else:
            sent: set[int] = set()
            for entry in entries:
                for down, rec in entry.in_records.items():
                    if down != face and down not in sent and rec.expiry > now:
                        sent.add(down)
                        out.append(_send(Send, (down, data)))
            c.data_out += len(sent)
        if self.strategies.observed:
            find = self.strategies.find
            for entry in entries:
                strategy = find(entry.comps)
                if strategy.observes:
                    strategy.after_receive_data(self, entry, face, now)
        for entry in entries:
            c.pit_satisfied += 1
            if cached and not (short_fresh and entry.interest.must_be_fresh):
                self.pit.remove(entry)
            else:
                self._finish(entry, now)

    def on_data_unsolicited(self, face: int, data: Data) -> None:
        self.counters.unsolicited_data += 1

    # --- Nack pipeline --------------------------------------------------------------
    def on_incoming_nack(self, face: int, nack: Nack, now: float) -> None:
        c = self.counters
        c.nacks_in += 1
        entry = self.pit.match_nack(nack.name.comps, face, nack.nonce)
        if entry is None:
            c.unsolicited_nacks += 1
            return
        entry.out_records[face].nacked = nack.reason
        comps = nack.name.comps
        if comps and (comps[0][0] == T_RNP or comps[-1][0] == T_RNP):
            self.on_reflexive_nack(entry, face, nack, now)
            return
        hooks = self.hooks
        if comps and comps[0] in hooks:
            hooks[comps[0]].after_nack(entry, face, nack, now)
            return
        strategy = self.strategies.find(comps)
        strategy.after_receive_nack(self, entry, face, nack, self.fib.longest_match(comps), now)

    # --- introspection ---------------------------------------------------------------
    def table_sizes(self) -> dict[str, int]:
        sizes = {
            "pit_entries": len(self.pit),
            "fib_entries": len(self.fib),
            "rib_routes": len(self.rib),
            "cs_entries": len(self.cs),
            "cs_bytes": self.cs.bytes_used,
            "faces": len(self.faces) - len(self._hook_faces),  # not the hook faces
            "rf_entries": len(self.rf),
        }
        for handler in self._handlers:
            sizes.update(handler.stats())
        return sizes

    # --- routes -------------------------------------------------------------------------
    def add_route(self, prefix: Name, face: int, cost: int = 0, origin: str = ORIGIN_STATIC,
                  expires: float | None = None) -> None:
        """Add a route to the RIB (which updates the FIB); `Rib.add` raises."""
        self.rib.add(prefix, face, cost, origin, expires=expires)

    def use_rib(self, rib: Rib) -> None:
        """Route by `rib` and its FIB from now on (the simulator: a restarted
        node keeps its routes; a lazily derived FIB); its expiries are timed here."""
        self.rib = rib
        self.fib = rib.fib
        rib.schedule = self._schedule_route_expiry
        at = rib.next_expiry()
        if at is not None:
            self._schedule_route_expiry(at)

    def _schedule_route_expiry(self, at: float) -> None:
        self.timers.push(at, self._on_route_expiry)

    def _on_route_expiry(self, arg: object, at: float, now: float) -> None:
        self.rib.expire(now)
