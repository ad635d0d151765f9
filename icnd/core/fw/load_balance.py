"""``load-balance``: one next hop per Interest, by measured round-trip time and load.

For function prefixes (and anything else served by several equivalent
producers).  Unlike the other strategies it keeps state of its own (per
prefix and next hop, bounded), fed by the forwarder's observation hooks
(``observes``); see `LoadBalance`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from icnd.core.fw.strategy import RouteHop, Strategy, StrategyHost, reject_with
from icnd.core.tables.fib import FibEntry
from icnd.core.tables.pit import PitEntry
from icnd.name import Name
from icnd.packet import Interest, Nack, NackReason

LB_ALPHA = 0.125  # EWMA gain of the smoothed RTT (RFC 6298's 1/8)
LB_MIN_RTT = 0.001  # RTT samples are floored here: below 1 ms differences are noise
LB_INITIAL_RTT = 0.1  # the RTT assumed for a prefix none of whose hops has been measured
LB_MAX_RTT = 60.0  # srtt ceiling (timeouts push it up, never past this)
LB_TIMEOUT_FACTOR = 2.0  # a timeout counts as an RTT sample of twice the time the hop was given
LB_PROBE = 0.05  # share of new Interests sent to a non-best hop to keep it measured
LB_BUSY_BASE = 0.05  # a hop that Nacked no-resources/congestion is avoided this long,
LB_BUSY_MAX = 1.0  # doubling per consecutive busy Nack up to this
LB_SWEEP_INTERVAL = 1.0  # how often a hop's in-flight set is checked for entries that went silently
LB_MAX_HOPS = 4096  # (prefix, face) states kept, least recently used evicted first
LB_LOAD_FRESH = 1.0  # a hop with an RTT sample this recent: its srtt already reflects its hosts' load
LB_MAX_HINT_PREFIXES = 4096  # prefixes with routing's capacity/load hints; beyond, new ones are dropped
_MASK64 = (1 << 64) - 1
_BUSY_REASONS = frozenset({NackReason.NO_RESOURCES, NackReason.CONGESTION})


class SplitMix64:
    """A small seeded pseudo-random generator (SplitMix64): the same numbers
    for the same seed on every platform, and no module state, so the core
    needs no `random` (nor any source of entropy)."""

    __slots__ = ("_state",)

    def __init__(self, seed: int = 0) -> None:
        self._state = seed & _MASK64

    def seed(self, seed: int) -> None:
        self._state = seed & _MASK64

    def random(self) -> float:
        """The next number in [0, 1)."""
        self._state = z = (self._state + 0x9E3779B97F4A7C15) & _MASK64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return ((z ^ (z >> 31)) >> 11) / 9007199254740992.0  # top 53 bits / 2**53


class HopStats:
    """What `LoadBalance` knows about one next hop of one prefix.

    ``flights`` maps the PIT entries sent there and not yet answered to
    whether their RTT sample would be ambiguous (the entry was sent there
    again while pending: Karn's rule, no sample).  Entries that leave the PIT
    without a hook (a consumer face went down, a reject elsewhere) are pruned
    at most every `LB_SWEEP_INTERVAL`, so the count never leaks.
    """

    __slots__ = ("face", "srtt", "samples", "flights", "busy_until", "busy_level", "last_sent",
                 "sweep_at", "timeouts", "busy_nacks", "sampled_at")

    def __init__(self, face: int) -> None:
        self.face = face
        self.srtt: float | None = None  # None: never measured
        self.samples = 0
        self.flights: dict[PitEntry, bool] = {}
        self.busy_until = 0.0
        self.busy_level = 0
        self.last_sent = float("-inf")
        self.sweep_at = 0.0
        self.timeouts = 0
        self.busy_nacks = 0
        self.sampled_at = float("-inf")  # when the last RTT sample was taken

    def __repr__(self) -> str:
        return (f"<HopStats face={self.face} srtt={self.srtt} in_flight={len(self.flights)} "
                f"busy_until={self.busy_until}>")

    def in_flight(self, now: float) -> int:
        flights = self.flights
        if flights and now >= self.sweep_at:
            self.sweep_at = now + LB_SWEEP_INTERVAL
            face = self.face
            for entry in [e for e in flights if e.removed or _settled(e, face, now)]:
                del flights[entry]
                out = entry.out_records.get(face)
                if not entry.removed and out is not None and out.nacked is None:
                    self.timed_out(out.sent_at, out.expiry)  # its out-record expired unanswered
        return len(flights)

    def sample(self, rtt: float, now: float = float("-inf")) -> None:
        self.sampled_at = now
        rtt = min(max(rtt, LB_MIN_RTT), LB_MAX_RTT)
        srtt = self.srtt
        self.srtt = rtt if srtt is None else srtt + LB_ALPHA * (rtt - srtt)
        self.samples += 1

    def timed_out(self, sent_at: float, until: float) -> None:
        self.timeouts += 1
        self.sample(LB_TIMEOUT_FACTOR * (until - sent_at))

    def busy(self, now: float) -> None:
        self.busy_nacks += 1
        self.busy_level = min(self.busy_level + 1, 16)
        self.busy_until = now + min(LB_BUSY_BASE * 2 ** (self.busy_level - 1), LB_BUSY_MAX)


def _settled(entry: PitEntry, face: int, now: float) -> bool:
    out = entry.out_records.get(face)
    return out is None or out.nacked is not None or out.expiry <= now


class LoadBalance(Strategy):
    """RTT- and load-aware choice of one next hop per Interest.

    State: per (FIB prefix, next-hop face) a `HopStats`: smoothed RTT (EWMA,
    gain 1/8, samples floored at 1 ms; RTT = Data arrival - the out-record's
    ``sent_at``, no sample for an ambiguous retransmission), the set of
    entries in flight there, and a busy mark.  At most ``max_hops`` states
    (LRU); a face going down forgets its states.

    Choice, for a new Interest, among the eligible next hops:

    - ranking key ``(busy, score)``, ties broken by FIB order (cost, face):
      ``score = srtt * (1 + in_flight)`` -- the expected wait if the hop
      serves its outstanding Interests one after another; a hop never
      measured is optimistically given the best srtt measured among the
      candidates (``LB_INITIAL_RTT`` if none), so it ties with the best hop
      and wins if its route is cheaper, and it is the first one probed (see
      below).  (Not a blind "unknown first": a host's own function, measured,
      must not lose its calls to an unmeasured remote host.)
    - capacity hints (announced by function hosts through routing, see
      `set_hints`): when *every* candidate hop of the prefix has a hint with
      a capacity, ``score = srtt * (1 + queue / capacity)`` -- the
      expected wait if the hop's hosts work through the calls ahead of this
      one ``capacity`` at a time -- with ``queue = in_flight`` (this node's,
      exact) when the hop gave an RTT sample within `LB_LOAD_FRESH` (its
      srtt already carries every caller's queueing there), else
      ``max(in_flight, announced_load)`` (``announced_load`` counts every
      caller's calls but is up to a couple of seconds old: used only for a
      hop this node knows nothing fresh about; used always, it starved a
      hop whose queue had drained since it was announced).
      Since a hop's srtt itself grows with its queue (srtt ~ queue /
      capacity once hosts queue), minimising the score keeps each hop's
      calls in flight, and so its share of the calls, in proportion to its
      capacity, so every hop's calls wait about as long (measured at 16
      and 64 calls in flight: bench/anycast.py; ``(1 + queue) / capacity``
      instead over-filled the big hop at low concurrency).  A hop announcing capacity 0 ranks like a busy one.  When some
      candidate lacks a hint the hints are ignored (the RTT rule above:
      hinted and unhinted scores are not comparable).
    - busy (a no-resources/congestion Nack within the last 50 ms, doubling
      per consecutive busy Nack up to 1 s; cleared by Data from the hop):
      used only when no other hop is left;
    - probing: with probability ``probe`` (5 %, from an RNG seeded per
      strategy instance, i.e. per forwarder, so runs are reproducible) a new
      Interest goes instead to the non-busy, non-best hop used longest ago
      (never-used hops first, in FIB order).

    A retransmission goes to the best untried hop, else to the best hop.  A
    Nack (busy reasons mark the hop busy) makes it try the best untried hop
    once nothing else is pending; when every hop has Nacked, the least
    severe reason goes downstream.  A timeout counts as an RTT sample of
    twice the time the hop was given.  Every Interest goes to exactly one
    next hop, so trigger Interests keep their one-host-per-call rule.
    """

    name = "load-balance"
    observes = True
    uses_route_hints = True

    def __init__(self, *, seed: int = 0, max_hops: int = LB_MAX_HOPS, probe: float = LB_PROBE) -> None:
        self.max_hops = max_hops
        self.probe = probe
        self.rng = SplitMix64(seed)
        self._hops: OrderedDict[tuple[tuple[bytes, ...], int], HopStats] = OrderedDict()
        # routing's hints: prefix -> face -> (capacity, announced load); bounded, faces forgotten when down
        self._hints: dict[tuple[bytes, ...], dict[int, tuple[int, int]]] = {}
        self.max_hint_prefixes = LB_MAX_HINT_PREFIXES
        self.hints_dropped = 0  # hint sets refused because `max_hint_prefixes` prefixes already have some

    def __len__(self) -> int:
        return len(self._hops)

    def reseed(self, seed: int) -> None:
        self.rng.seed(seed)

    def stats(self, prefix: tuple[bytes, ...], face: int) -> HopStats | None:
        """The state kept for (prefix components, face), if any."""
        return self._hops.get((prefix, face))

    def set_hints(self, prefix: tuple[bytes, ...], hints: dict[int, tuple[int | None, int | None]]) -> None:
        """Replace the capacity/load hints of `prefix` (wire components):
        face -> (capacity, load) as routing announced them for the origins
        behind that next hop.  A face with no capacity gets no hint (load
        alone, None, counts as 0); an empty map forgets the prefix.  A new
        prefix beyond `max_hint_prefixes` is dropped and counted."""
        clean = {face: (max(0, cap), max(0, load or 0)) for face, (cap, load) in hints.items() if cap is not None}
        if not clean:
            self._hints.pop(prefix, None)
            return
        if prefix not in self._hints and len(self._hints) >= self.max_hint_prefixes:
            self.hints_dropped += 1
            return
        self._hints[prefix] = clean

    def route_hints(self, prefix: Name, hops: Iterable[RouteHop]) -> None:
        """`set_hints` from routing's next hops of `prefix` (the routing
        shell's ``on_hops`` callback)."""
        self.set_hints(prefix.comps, {h.face: (h.capacity, h.load) for h in hops})

    def hints(self, prefix: tuple[bytes, ...]) -> dict[int, tuple[int, int]]:
        """The hints kept for `prefix` (a copy)."""
        return dict(self._hints.get(prefix, {}))

    def _hop(self, prefix: tuple[bytes, ...], face: int) -> HopStats:
        hops = self._hops
        key = (prefix, face)
        hop = hops.get(key)
        if hop is None:
            hop = hops[key] = HopStats(face)
            if len(hops) > self.max_hops:
                hops.popitem(last=False)
        else:
            hops.move_to_end(key)
        return hop

    def _rank(self, prefix: tuple[bytes, ...], faces: list[int],
              now: float) -> list[tuple[bool, float, int, HopStats]]:
        hops = [self._hop(prefix, f) for f in faces]
        known = [h.srtt for h in hops if h.srtt is not None]
        guess = min(known) if known else LB_INITIAL_RTT
        hints = self._hints.get(prefix)
        if hints is not None and not all(f in hints for f in faces):
            hints = None  # some hop has no hint: scores would not compare
        ranked = []
        for i, hop in enumerate(hops):
            n = hop.in_flight(now)
            srtt = hop.srtt
            busy = hop.busy_until > now
            if hints is None:
                score = (guess if srtt is None else srtt) * (1 + n)
            else:
                capacity, load = hints[hop.face]
                busy = busy or capacity == 0
                queue = n if now - hop.sampled_at < LB_LOAD_FRESH else max(n, load)
                score = (guess if srtt is None else srtt) * (1 + queue / max(capacity, 1))
            ranked.append((busy, score, i, hop))
        ranked.sort(key=lambda r: r[:3])
        return ranked

    def _send(self, fw: StrategyHost, entry: PitEntry, hop: HopStats, interest: Interest, now: float) -> None:
        hop.flights[entry] = entry in hop.flights  # sent there again while pending: ambiguous RTT
        hop.last_sent = now
        fw.send_interest(entry, hop.face, interest, now)

    def after_receive_interest(
        self, fw: StrategyHost, entry: PitEntry, in_face: int, interest: Interest,
        fib_entry: FibEntry | None, now: float,
    ) -> None:
        faces = fw.eligible_nexthops(entry, in_face, fib_entry)
        if not faces:
            fw.reject(entry, NackReason.NO_ROUTE, now)
            return
        assert fib_entry is not None  # there are next hops
        prefix = fib_entry.prefix.comps
        if len(faces) == 1:
            self._send(fw, entry, self._hop(prefix, faces[0]), interest, now)
            return
        outs = entry.out_records
        ranked = self._rank(prefix, faces, now)
        if outs:  # a retransmission: the best untried hop, else the best
            hop = next((r[3] for r in ranked if r[3].face not in outs), ranked[0][3])
        else:
            hop = ranked[0][3]
            free = [r for r in ranked[1:] if not r[0]]
            if free and not ranked[0][0] and self.rng.random() < self.probe:
                hop = min(free, key=lambda r: (r[3].last_sent, r[2]))[3]
        self._send(fw, entry, hop, interest, now)

    def after_receive_nack(
        self, fw: StrategyHost, entry: PitEntry, in_face: int, nack: Nack,
        fib_entry: FibEntry | None, now: float,
    ) -> None:
        prefix = fib_entry.prefix.comps if fib_entry is not None else None
        if prefix is not None:
            hop = self._hops.get((prefix, in_face))
            if hop is not None:
                hop.flights.pop(entry, None)
                if nack.reason in _BUSY_REASONS:
                    hop.busy(now)
        outs = entry.out_records
        pending = any(o.nacked is None and o.expiry > now for o in outs.values())
        if not pending and prefix is not None:
            untried = [f for f in fw.eligible_nexthops(entry, None, fib_entry)
                       if f not in outs and f not in entry.in_records]
            if untried:
                hop = self._rank(prefix, untried, now)[0][3]
                record = max(entry.in_records.values(), key=lambda r: r.expiry)
                self._send(fw, entry, hop, record.interest, now)
                return
        if entry.all_out_nacked():
            reject_with(fw, entry, nack, now)

    def after_receive_data(self, fw: StrategyHost, entry: PitEntry, face: int, now: float) -> None:
        fib_entry = fw.fib.longest_match(entry.comps)
        if fib_entry is None:
            return  # the route went; stale flights are swept
        prefix = fib_entry.prefix.comps
        hops = self._hops
        for f, out in entry.out_records.items():
            hop = hops.get((prefix, f))
            if hop is None:
                continue
            ambiguous = hop.flights.pop(entry, None)
            if ambiguous is None:
                continue  # not sent there by this strategy (or already swept)
            if f == face:
                if not ambiguous:
                    hop.sample(now - out.sent_at, now)
                hop.busy_level = 0
                hop.busy_until = 0.0

    def on_interest_timeout(self, fw: StrategyHost, entry: PitEntry, now: float) -> None:
        fib_entry = fw.fib.longest_match(entry.comps)
        if fib_entry is None:
            return
        prefix = fib_entry.prefix.comps
        hops = self._hops
        for f, out in entry.out_records.items():
            hop = hops.get((prefix, f))
            if hop is not None and hop.flights.pop(entry, None) is not None and out.nacked is None:
                hop.timed_out(out.sent_at, min(now, out.expiry))

    def on_face_down(self, face: int) -> None:
        hops = self._hops
        for key in [k for k in hops if k[1] == face]:
            del hops[key]
        for prefix, hints in list(self._hints.items()):
            if hints.pop(face, None) is not None and not hints:
                del self._hints[prefix]
