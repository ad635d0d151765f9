#!/usr/bin/env python3
"""Forwarding-core benchmark: Interest/Data exchanges per second through ONE
`icnd.core.Forwarder`, against a dict-only relay doing the same codec work.

One *exchange* (case ``cs-miss``)::

    consumer Interest bytes arrive on face 1 -> decode -> fw.on_packet
    -> encode the forwarded Interest for the upstream face the FIB chose
    -> producer: decode that Interest, look up its reply
    -> Data bytes arrive on that face -> decode -> fw.on_packet
    -> encode the Data for face 1

The producer's Data replies are built and signed (digest-sha256, ~100-byte
content) *ahead of time*, one per name, while the clock is paused: only the
producer's decode of the Interest and a dict lookup of the pre-encoded reply
are inside the measured time, so producer cost is not counted as forwarder
cost.  Case ``cs-hit``: Interests (fresh nonces) for names already in the
Content Store; an exchange is decode -> fw.on_packet -> encode the cached Data.

Setup (realistic, not a toy):
- FIB of 10,000 random prefixes of 2-4 components
  (``/site<k>/svc<j>[/v<m>[/part<p>]]``) with 1-2 next hops each on four
  upstream faces, random costs;
- consumer names are a random FIB prefix plus a unique suffix
  (``/<prefix>/r<seq>/seg=<s>``), so every Interest misses the CS and the PIT
  (the cache-miss path) and longest-prefix match finds a real prefix;
- Content Store at the Forwarder's default capacity, pre-filled to capacity
  with other Data before measuring, so every measured miss inserts and evicts;
- the forwarder's timers are driven like the daemon does (the wake-up time
  moves earlier only when a packet pushed an earlier timer, ``on_timer(now)``
  when it is reached) with a fake monotonic clock: a
  ``perf_counter`` that stops while packets are generated between batches.
  The cs-miss case first warms up for longer than the Interest lifetime so
  PIT-expiry timers and dead-nonce-list sweeps are at steady state.

Baseline ("dict-only relay"), in the same run, same packet shapes:
- cs-miss: decode the Interest, destination face from a dict keyed by the
  first name component, remember the name in a pending dict, encode the
  forwarded Interest (hop limit - 1: byte-identical to what the forwarder
  sends), producer side identical, decode the Data, pop the pending name,
  encode the Data;
- cs-hit: decode the Interest, look the name up in a plain dict of the same
  cached Data objects, encode the Data.
So ``ratio = forwarder / baseline`` is the share of the pure codec+relay rate
the forwarding logic keeps.

Encoding a Data is free on both sides (the codec caches a decoded Data's
wire bytes and the forwarder sends the same object on), so the Data leg
costs one decode plus the table work; the forwarded Interest is, on both
sides, `Interest.forwarded`: the received bytes with the hop-limit byte
patched.

Each case runs ~1 s (``--quick``: 0.25 s, and only a 0.3 s warm-up), best of
3, forwarder and baseline runs interleaved.  The cyclic GC is left on and
never forced between runs: with a full Content Store of small Data the
collector is a real cost (full collections traverse every cached Data), so
besides the best run each case reports ``sustained_value`` (all runs
together, full collections amortized) and ``gc_share`` (time inside the
collector).  Output: a table, then one JSON line per case (``--json-only``:
the JSON lines only).  ``--profile`` adds a cProfile of the forwarder's
cs-miss loop at steady state (stderr).  Total runtime ~25 s (quick ~10 s),
most of it filling the 64 MiB store and the timer warm-up.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

if __package__ in (None, ""):  # run as a script from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import msgpack

from icnd import codec
from icnd.core.timers import TIMER_SLACK
from icnd.daemon.runtime import tune_gc
from icnd.codec import decode, encode
from icnd.core.fw.forwarder import Forwarder
from icnd.name import Name, generic, segment
from icnd.packet import DEFAULT_HOP_LIMIT, DEFAULT_LIFETIME_MS, Data, Interest, SigType, new_data
from icnd.reduction.aggregate import Aggregator
from icnd.reduction.group import REDUCE
from icnd.security import make_data

CONSUMER = 1
UPSTREAMS = (2, 3, 4, 5)
FIB_ENTRIES = 10_000
CONTENT = bytes(random.Random(7).getrandbits(8) for _ in range(100))
FRESHNESS_MS = 10_000
HIT_POOL = 10_000
BATCH = 2_000
SEED = 20240601

TARGET_RATE = 50_000
TARGET_RATIO = 0.3

_packb = msgpack.packb
_sha256 = hashlib.sha256


# --- packet generation (never timed) ---------------------------------------------


INF = float("inf")

def _fast_interest_wire(comps: tuple[bytes, ...], nonce: int) -> bytes:
    return _packb(
        [codec.VERSION, codec.T_INTEREST, comps, nonce, DEFAULT_LIFETIME_MS, DEFAULT_HOP_LIMIT, 0, None, []],
        use_bin_type=True,
    )


def _slow_interest_wire(comps: tuple[bytes, ...], nonce: int) -> bytes:
    return encode(Interest(Name.from_wire(comps), nonce))


_DATA_HEAD = b"\x9a" + _packb(codec.VERSION) + _packb(codec.T_DATA)
_DATA_TAIL = (
    _packb(0)  # content type BLOB
    + _packb(FRESHNESS_MS)
    + _packb(None)  # final block id
    + _packb(CONTENT, use_bin_type=True)
    + _packb(int(SigType.DIGEST_SHA256))
    + _packb(None)  # key locator
)


def _fast_data_wire(comps: tuple[bytes, ...]) -> bytes:
    """A digest-signed Data, built from a template of the codec's layout."""
    portion = _DATA_HEAD + _packb(comps, use_bin_type=True) + _DATA_TAIL
    return portion + _packb(_sha256(portion).digest(), use_bin_type=True)


def _slow_data_wire(comps: tuple[bytes, ...]) -> bytes:
    return encode(make_data(Name.from_wire(comps), CONTENT, freshness_ms=FRESHNESS_MS))


def _pick_generators() -> tuple[Callable, Callable, bool]:
    """The template builders if they match the real codec byte for byte."""
    comps = Name("/site1/svc2/v3/r1f/seg=0").comps
    fast = (
        _fast_interest_wire(comps, 0xDEADBEEF) == _slow_interest_wire(comps, 0xDEADBEEF)
        and _fast_data_wire(comps) == _slow_data_wire(comps)
    )
    if fast:
        return _fast_interest_wire, _fast_data_wire, True
    return _slow_interest_wire, _slow_data_wire, False


interest_wire, data_wire, FAST_GEN = _pick_generators()


def make_prefixes(rng: random.Random, n: int) -> list[tuple[bytes, ...]]:
    seen: set[tuple[bytes, ...]] = set()
    out: list[tuple[bytes, ...]] = []
    while len(out) < n:
        length = rng.randint(2, 4)
        comps = [generic(f"site{rng.randrange(1000)}"), generic(f"svc{rng.randrange(100)}")]
        if length >= 3:
            comps.append(generic(f"v{rng.randrange(20)}"))
        if length >= 4:
            comps.append(generic(f"part{rng.randrange(20)}"))
        key = tuple(comps)
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


class Workload:
    """Unique consumer names under the FIB prefixes, generated in batches."""

    def __init__(self, prefixes: list[tuple[bytes, ...]], seed: int, tag: str) -> None:
        self.prefixes = prefixes
        self.rng = random.Random(seed)
        self.tag = tag
        self.seq = 0

    def names(self, n: int) -> list[tuple[bytes, ...]]:
        rng, prefixes, tag = self.rng, self.prefixes, self.tag
        out = []
        for _ in range(n):
            self.seq += 1
            s = self.seq
            out.append(rng.choice(prefixes) + (generic(f"{tag}{s:x}"), segment(s & 7)))
        return out

    def nonce(self) -> int:
        self.seq += 1
        return (self.seq * 2654435761) & 0xFFFFFFFF

    def miss_batch(self, n: int) -> tuple[list[bytes], dict[tuple[bytes, ...], bytes]]:
        """Interest wires and the producer's pre-encoded replies, by name."""
        names = self.names(n)
        interests = [interest_wire(c, self.nonce()) for c in names]
        replies = {c: data_wire(c) for c in names}
        return interests, replies


# --- the fake clock ----------------------------------------------------------------


class FakeClock:
    """perf_counter minus the untimed gaps: ``now = perf_counter() - off``."""

    def __init__(self) -> None:
        self.off = time.perf_counter()
        self._paused = 0.0

    def pause(self) -> None:
        self._paused = time.perf_counter()

    def resume(self) -> None:
        self.off += time.perf_counter() - self._paused

    def jump(self, seconds: float) -> None:
        self.off -= seconds

    def now(self) -> float:
        return time.perf_counter() - self.off


# --- the measured loops ------------------------------------------------------------


class NodeTimers:
    """Drives a forwarder's timers as `icnd.daemon.node.Node` drives them: the
    wake-up time is the earliest deadline plus `TIMER_SLACK`, it moves
    earlier only when a packet pushed an earlier timer
    (`TimerQueue.pushed_min`), and `on_timer` runs when it is reached."""

    def __init__(self, fw: Forwarder) -> None:
        self.fw = fw
        self.timers = fw.timers
        self.deadline = (fw.next_deadline() or INF) + TIMER_SLACK
        self.timers.pushed_min = INF

    def tick(self, now: float) -> None:
        """What the node does around each packet (its `_rearm_timer`, its timer task)."""
        timers = self.timers
        if timers.pushed_min + TIMER_SLACK < self.deadline:
            self.deadline = timers.pushed_min + TIMER_SLACK
        timers.pushed_min = INF
        if now >= self.deadline:
            for s in self.fw.on_timer(now):
                encode(s.packet)
            self.deadline = (self.fw.next_deadline() or INF) + TIMER_SLACK
            timers.pushed_min = INF


def fw_miss_batch(fw: Forwarder, batch, off: float) -> None:
    interests, replies = batch
    pc = time.perf_counter
    on_packet = fw.on_packet
    tick = NodeTimers(fw).tick
    for iw in interests:
        now = pc() - off
        tick(now)
        for face, pkt in on_packet(CONSUMER, decode(iw), now):
            wire = encode(pkt)
            if face == CONSUMER:
                continue
            # producer: decode the Interest, answer with the pre-built Data
            dwire = replies[decode(wire).name.comps]
            now = pc() - off
            tick(now)
            for _face, dpkt in on_packet(face, decode(dwire), now):
                encode(dpkt)


def base_miss_batch(routes: dict[bytes, int], batch) -> None:
    interests, replies = batch
    pending: dict[tuple[bytes, ...], int] = {}
    for iw in interests:
        i = decode(iw)
        comps = i.name.comps
        face = routes[comps[0]]
        pending[comps] = CONSUMER
        # an Interest by construction: no isinstance check inside the timed loop
        wire = encode(i.forwarded(i.hop_limit - 1))  # type: ignore[union-attr]
        # producer: as above
        dwire = replies[decode(wire).name.comps]
        d = decode(dwire)
        down = pending.pop(d.name.comps)
        encode(d)
    assert face and down == CONSUMER and not pending


def fw_hit_batch(fw: Forwarder, interests: list[bytes], off: float) -> None:
    pc = time.perf_counter
    on_packet = fw.on_packet
    tick = NodeTimers(fw).tick
    for iw in interests:
        now = pc() - off
        tick(now)
        for _face, pkt in on_packet(CONSUMER, decode(iw), now):
            encode(pkt)


def base_hit_batch(cache: dict, interests: list[bytes]) -> None:
    for iw in interests:
        encode(cache[decode(iw).name.comps])


class GcMeter:
    """Time the cyclic garbage collector spends inside measured code."""

    def __init__(self) -> None:
        self.active = False
        self.seconds = 0.0
        self.full = 0  # generation-2 collections
        self._t0 = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if not self.active:
            return
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._t0
            self.full += info["generation"] == 2


GC = GcMeter()


class Run(NamedTuple):
    rate: float
    n: int
    seconds: float
    gc_seconds: float
    gc_full: int


def timed(run: Callable, make: Callable, duration: float, clock: FakeClock) -> Run:
    """Run batches until `duration` seconds were measured.

    Batches are generated with the fake clock paused and outside the measured
    time.  The collector is left alone (no gc.collect() between runs): its
    cost is part of the forwarder's steady state and is reported separately.
    """
    n = 0
    spent = 0.0
    gc_s0, gc_f0 = GC.seconds, GC.full
    pc = time.perf_counter
    while spent < duration:
        clock.pause()
        batch = make()
        clock.resume()
        GC.active = True
        t0 = pc()
        run(batch, clock.off)
        spent += pc() - t0
        GC.active = False
        n += len(batch[0]) if isinstance(batch, tuple) else len(batch)
    return Run(n / spent, n, spent, GC.seconds - gc_s0, GC.full - gc_f0)


def best_and_sustained(runs: list[Run]) -> tuple[Run, Run]:
    best = max(runs)
    n = sum(r.n for r in runs)
    t = sum(r.seconds for r in runs)
    return best, Run(n / t, n, t, sum(r.gc_seconds for r in runs), sum(r.gc_full for r in runs))


# --- setup -------------------------------------------------------------------------


def build_forwarder(prefixes: list[tuple[bytes, ...]], rng: random.Random) -> tuple[Forwarder, dict[bytes, int]]:
    # default table sizes, Content Store included, and the /reduce handler, as the daemon has them
    fw = Forwarder(hooks={REDUCE: Aggregator(node_name="bench")})
    fw.add_face(CONSUMER)
    for f in UPSTREAMS:
        fw.add_face(f)
    routes: dict[bytes, int] = {}
    for p in prefixes:
        for face in rng.sample(UPSTREAMS, rng.randint(1, 2)):
            fw.add_route(Name.from_wire(p), face, rng.randrange(100))
        routes.setdefault(p[0], face)
    return fw, routes


_SIG_LEN = 32
_CONTENT_END = -(2 + _SIG_LEN + 1 + 1)  # sig bin header + sig, sig_type, key locator nil


def _direct_data(comps: tuple[bytes, ...]) -> Data:
    """What `decode(data_wire(comps))` returns, built without the decoder
    (setup speed only: the CS fill is ~360,000 Data)."""
    wire = data_wire(comps)
    return new_data(
        Name.from_wire(comps), wire[_CONTENT_END - len(CONTENT) : _CONTENT_END], 0, FRESHNESS_MS,
        None, int(SigType.DIGEST_SHA256), None, wire[-_SIG_LEN:], wire,
    )


def _decoded(wire: bytes, kind: type[Data] | type[Interest]) -> Any:
    """`decode(wire)`, checked to be a `kind` (setup and checks only, never timed)."""
    packet = decode(wire)
    if not isinstance(packet, kind):
        raise SystemExit(f"bench/core.py: generated a {type(packet).__name__}, not a {kind.__name__}")
    return packet


def _decoded_data(comps: tuple[bytes, ...]) -> Data:
    data: Data = _decoded(data_wire(comps), Data)
    return data


def _fill_builder() -> Callable[[tuple[bytes, ...]], Data]:
    comps = Name("/site1/svc2/r1/seg=1").comps
    try:
        same = FAST_GEN and _direct_data(comps) == decode(data_wire(comps))
    except Exception:
        same = False
    return _direct_data if same else _decoded_data


def fill_cs(fw: Forwarder, work: Workload, now: float) -> int:
    """Insert Data (equal to what the decoder produces, as the forwarder
    would store it) until the store is full and has started evicting;
    returns how many were inserted."""
    cs = fw.cs
    build = _fill_builder()
    inserted = 0
    gc.disable()  # setup only: the measured runs keep the collector on
    try:
        while cs.evictions == 0:
            for c in work.names(BATCH):
                cs.insert(build(c), now)
            inserted += BATCH
    finally:
        gc.enable()
    gc.collect()  # settle the fill in the oldest generation, as in a long-running daemon
    return inserted


def self_check(fw: Forwarder, routes: dict[bytes, int], work: Workload, now: float) -> None:
    """One exchange both ways: the forwarder must send the baseline's bytes."""
    (c,) = work.names(1)
    iw = interest_wire(c, work.nonce())
    sends = fw.on_packet(CONSUMER, decode(iw), now)
    interest: Interest = _decoded(iw, Interest)
    relay = encode(interest.forwarded(interest.hop_limit - 1))
    if len(sends) != 1 or sends[0].face == CONSUMER or encode(sends[0].packet) != relay:
        raise SystemExit(f"bench/core.py: forwarder did not forward {Name.from_wire(c)} as expected: {sends}")
    back = fw.on_packet(sends[0].face, decode(data_wire(c)), now)
    if [(s.face, encode(s.packet)) for s in back] != [(CONSUMER, data_wire(c))]:
        raise SystemExit(f"bench/core.py: Data for {Name.from_wire(c)} did not come back: {back}")
    if routes[c[0]] not in UPSTREAMS:
        raise SystemExit("bench/core.py: baseline route table is wrong")


def counters(fw: Forwarder) -> dict[str, int]:
    return fw.counters.as_dict()


def check(before: dict[str, int], after: dict[str, int], n: int, case: str) -> None:
    d = {k: after[k] - before[k] for k in after}
    want = {"data_out": n, "nacks_out": 0, "unsolicited_data": 0, "pit_full": 0}
    if case == "cs-miss":
        want.update(cs_misses=n, interests_out=n, pit_satisfied=n, cs_hits=0)
    else:
        want.update(cs_hits=n, interests_out=0)
    bad = {k: (d[k], v) for k, v in want.items() if k in d and d[k] != v}
    if bad:
        raise SystemExit(f"bench/core.py: {case}: forwarder did not do what was measured: {bad}")


def log(msg: str, quiet: bool) -> None:
    if not quiet:
        print(msg, file=sys.stderr, flush=True)


# --- main --------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="short runs, short timer warm-up (~10 s)")
    ap.add_argument("--json-only", action="store_true", help="print only the JSON lines")
    ap.add_argument("--runs", type=int, default=3, help="best of N (default 3)")
    ap.add_argument("--duration", type=float, help="seconds per run (default 1.0, quick 0.25)")
    ap.add_argument("--profile", action="store_true", help="also cProfile the forwarder cs-miss loop (stderr)")
    args = ap.parse_args(argv)
    quiet = args.json_only
    duration = args.duration or (0.25 if args.quick else 1.0)
    runs = max(1, args.runs)
    t_start = time.perf_counter()

    rng = random.Random(SEED)
    prefixes = make_prefixes(rng, FIB_ENTRIES)
    tune_gc()  # the daemon's process settings (icnd.daemon.runtime), applied at start-up as icnd run does
    fw, routes = build_forwarder(prefixes, rng)
    clock = FakeClock()

    log(f"setup: {len(fw.fib)} FIB prefixes, routes on faces {UPSTREAMS}; filling the "
        f"{fw.cs.capacity_bytes / 2**20:g} MiB Content Store...", quiet)
    t = time.perf_counter()
    filled = fill_cs(fw, Workload(prefixes, SEED + 1, "f"), clock.now())
    log(f"  {filled} Data inserted, {len(fw.cs)} entries, {fw.cs.bytes_used} bytes, "
        f"{time.perf_counter() - t:.1f}s", quiet)

    miss_work = Workload(prefixes, SEED + 2, "r")
    base_work = Workload(prefixes, SEED + 3, "b")
    self_check(fw, routes, Workload(prefixes, SEED + 6, "c"), clock.now())

    def fw_miss(batch, off):
        fw_miss_batch(fw, batch, off)

    def base_miss(batch, off):
        base_miss_batch(routes, batch)

    # Warm-up longer than the Interest lifetime: expiry timers then fire at
    # the rate they are scheduled and the dead-nonce list is at its bound.
    warm = 0.3 if args.quick else DEFAULT_LIFETIME_MS / 1000 + 0.5
    log(f"cs-miss: warm-up {warm:.1f}s (steady state for timers and dead-nonce list)...", quiet)
    timed(fw_miss, lambda: miss_work.miss_batch(BATCH), warm, clock)
    timed(base_miss, lambda: base_work.miss_batch(BATCH), min(warm, 0.3), clock)

    results: list[tuple[str, list[Run], list[Run], dict]] = []

    # --- cs-miss: forwarder and baseline runs interleaved ----------------------
    evict0 = fw.cs.evictions
    fw_runs: list[Run] = []
    base_runs: list[Run] = []
    for r in range(runs):
        before = counters(fw)
        fw_runs.append(timed(fw_miss, lambda: miss_work.miss_batch(BATCH), duration, clock))
        check(before, counters(fw), fw_runs[-1].n, "cs-miss")
        base_runs.append(timed(base_miss, lambda: base_work.miss_batch(BATCH), duration, clock))
        log(f"  run {r + 1}: forwarder {fw_runs[-1].rate:>9,.0f}/s (gc {fw_runs[-1].gc_seconds:.2f}s)"
            f"   baseline {base_runs[-1].rate:>9,.0f}/s", quiet)
    results.append(("cs-miss", fw_runs, base_runs, {
        "cs_evictions": fw.cs.evictions - evict0,
        "timer_heap": len(fw.timers),
        "dnl_entries": len(fw.dnl),
        "pit_entries": len(fw.pit),
    }))

    if args.profile:
        profile_miss(fw, miss_work, clock, 10_000 if args.quick else 30_000)

    # --- cs-hit ------------------------------------------------------------------
    # Let everything pending from the miss phase expire (clock jump, untimed),
    # then put HIT_POOL names in the CS through the forwarder itself.
    clock.jump(2 * DEFAULT_LIFETIME_MS / 1000 + 10)
    fw.on_timer(clock.now())
    hit_work = Workload(prefixes, SEED + 4, "h")
    hit_names = hit_work.names(HIT_POOL)
    cache: dict[tuple[bytes, ...], Data] = {}
    for c in hit_names:
        now = clock.now()
        (send,) = fw.on_packet(CONSUMER, decode(interest_wire(c, hit_work.nonce())), now)
        data = _decoded_data(c)
        fw.on_packet(send.face, data, now)
        cache[c] = data
    hit_rng = random.Random(SEED + 5)

    def hit_batch() -> list[bytes]:
        return [interest_wire(c, hit_work.nonce()) for c in hit_rng.choices(hit_names, k=BATCH)]

    def fw_hit(batch, off):
        fw_hit_batch(fw, batch, off)

    def base_hit(batch, off):
        base_hit_batch(cache, batch)

    log("cs-hit:", quiet)
    fw_runs, base_runs = [], []
    for r in range(runs):
        before = counters(fw)
        fw_runs.append(timed(fw_hit, hit_batch, duration, clock))
        check(before, counters(fw), fw_runs[-1].n, "cs-hit")
        base_runs.append(timed(base_hit, hit_batch, duration, clock))
        log(f"  run {r + 1}: forwarder {fw_runs[-1].rate:>9,.0f}/s (gc {fw_runs[-1].gc_seconds:.2f}s)"
            f"   baseline {base_runs[-1].rate:>9,.0f}/s", quiet)
    results.append(("cs-hit", fw_runs, base_runs, {"hit_pool": HIT_POOL}))

    # --- report --------------------------------------------------------------------
    elapsed = time.perf_counter() - t_start
    common = {
        "fib_entries": len(fw.fib),
        "cs_capacity_bytes": fw.cs.capacity_bytes,
        "cs_entries": len(fw.cs),
        "content_bytes": len(CONTENT),
        "runs": runs,
        "run_seconds": duration,
        "quick": args.quick,
        "python": platform.python_version(),
        "msgpack": ".".join(map(str, msgpack.version)),
        "fast_packet_gen": FAST_GEN,
    }
    lines = []
    if not quiet:
        print()
        print(f"icnd forwarding core: one Forwarder, best of {runs} x {duration:g}s, "
              f"Python {platform.python_version()}, {elapsed:.1f}s in all")
        print(f"{'case':<8} {'forwarder/s':>11} {'us':>6} {'sustained/s':>11} {'gc%':>4} "
              f"{'baseline/s':>10} {'us':>6} {'ratio':>5} {'logic us':>8}  target "
              f"(>= {TARGET_RATE:,}/s, ratio >= {TARGET_RATIO})")
    for case, fw_runs, base_runs, extra in results:
        best, sustained = best_and_sustained(fw_runs)
        bbest, _ = best_and_sustained(base_runs)
        ratio = best.rate / bbest.rate
        logic_us = 1e6 / best.rate - 1e6 / bbest.rate
        gc_share = sustained.gc_seconds / sustained.seconds
        ok = best.rate >= TARGET_RATE and ratio >= TARGET_RATIO
        if not quiet:
            print(f"{case:<8} {best.rate:>11,.0f} {1e6 / best.rate:>6.1f} {sustained.rate:>11,.0f} "
                  f"{gc_share:>4.0%} {bbest.rate:>10,.0f} {1e6 / bbest.rate:>6.1f} {ratio:>5.2f} "
                  f"{logic_us:>8.1f}  {'ok' if ok else 'MISSED'}")
        lines.append({
            "bench": "core",
            "case": case,
            "value": round(best.rate),
            "unit": "exchanges/s",
            "baseline": round(bbest.rate),
            "ratio": round(ratio, 2),
            "n": best.n,
            "us_per_exchange": round(1e6 / best.rate, 2),
            "baseline_us_per_exchange": round(1e6 / bbest.rate, 2),
            "forwarding_logic_us": round(logic_us, 2),
            "sustained_value": round(sustained.rate),
            "gc_share": round(gc_share, 3),
            "gc_full_collections": sustained.gc_full,
            "all_runs": [round(r.rate) for r in fw_runs],
            "baseline_runs": [round(r.rate) for r in base_runs],
            "meets_target": ok,
            **extra,
            **common,
        })
    if not quiet:
        print("  us = microseconds per exchange; sustained = all runs together (amortizes full "
              "GC collections a single best run can dodge);\n  gc% = share of the forwarder's "
              "measured time spent in the cyclic GC; logic us = forwarder us - baseline us.")
        print()
    for line in lines:
        print(json.dumps(line), flush=True)
    return 0


def profile_miss(fw: Forwarder, work: Workload, clock: FakeClock, exchanges: int) -> None:
    """cProfile of the forwarder's cs-miss loop at steady state, to stderr.

    cProfile cannot see the cyclic GC: its pauses are charged to whatever
    function happened to allocate, so the GC share is printed separately.
    """
    import cProfile
    import pstats

    clock.pause()
    batches = [work.miss_batch(BATCH) for _ in range(max(1, exchanges // BATCH))]
    clock.resume()
    prof = cProfile.Profile()
    gc_s0 = GC.seconds
    GC.active = True
    t0 = time.perf_counter()
    prof.enable()
    for b in batches:
        fw_miss_batch(fw, b, clock.off)
    prof.disable()
    spent = time.perf_counter() - t0
    GC.active = False
    gc_s = GC.seconds - gc_s0
    out = sys.stderr
    print(f"\n--- cProfile: forwarder cs-miss loop, {len(batches) * BATCH} exchanges, {spent:.2f}s "
          f"under the profiler, of which cyclic GC {gc_s:.2f}s ({gc_s / spent:.0%}) ---", file=out)
    stats = pstats.Stats(prof, stream=out).strip_dirs()
    stats.sort_stats("cumulative").print_stats(35)
    stats.sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    sys.exit(main())
