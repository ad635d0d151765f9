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
- the forwarder's timers are driven like the daemon does (``on_timer(now)``
  whenever ``now >= next_deadline()``) with a fake monotonic clock: a
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

Each case runs ~1.2 s (``--quick``: ~0.25 s), best of 3, runs interleaved
with the baseline.  Output: a table, then one JSON line per case
(``--json-only``: the JSON lines only).  ``--profile`` adds a cProfile of the
forwarder's cs-miss loop.
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
from typing import Callable

if __package__ in (None, ""):  # run as a script from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import msgpack

from icnd import codec
from icnd.codec import decode, encode
from icnd.core.forwarder import Forwarder
from icnd.name import Name, generic, segment
from icnd.packet import DEFAULT_HOP_LIMIT, DEFAULT_LIFETIME_MS, Interest, SigType
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


def fw_miss_batch(fw: Forwarder, batch, off: float) -> None:
    interests, replies = batch
    pc = time.perf_counter
    on_packet, on_timer, next_deadline = fw.on_packet, fw.on_timer, fw.next_deadline
    for iw in interests:
        now = pc() - off
        dl = next_deadline()
        if dl is not None and now >= dl:
            for s in on_timer(now):
                encode(s.packet)
        for face, pkt in on_packet(CONSUMER, decode(iw), now):
            wire = encode(pkt)
            if face == CONSUMER:
                continue
            # producer: decode the Interest, answer with the pre-built Data
            dwire = replies[decode(wire).name.comps]
            now = pc() - off
            dl = next_deadline()
            if dl is not None and now >= dl:
                for s in on_timer(now):
                    encode(s.packet)
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
        wire = encode(i.forwarded(i.hop_limit - 1))
        # producer: as above
        dwire = replies[decode(wire).name.comps]
        d = decode(dwire)
        down = pending.pop(d.name.comps)
        encode(d)
    assert face and down == CONSUMER and not pending


def fw_hit_batch(fw: Forwarder, interests: list[bytes], off: float) -> None:
    pc = time.perf_counter
    on_packet, on_timer, next_deadline = fw.on_packet, fw.on_timer, fw.next_deadline
    for iw in interests:
        now = pc() - off
        dl = next_deadline()
        if dl is not None and now >= dl:
            for s in on_timer(now):
                encode(s.packet)
        for _face, pkt in on_packet(CONSUMER, decode(iw), now):
            encode(pkt)


def base_hit_batch(cache: dict, interests: list[bytes]) -> None:
    for iw in interests:
        encode(cache[decode(iw).name.comps])


def timed(run: Callable, make: Callable, duration: float, clock: FakeClock) -> tuple[float, int]:
    """Run batches until `duration` seconds were measured; (exchanges/s, n).

    Batches are generated with the fake clock paused.
    """
    gc.collect()
    n = 0
    spent = 0.0
    pc = time.perf_counter
    while spent < duration:
        clock.pause()
        batch = make()
        clock.resume()
        t0 = pc()
        run(batch, clock.off)
        spent += pc() - t0
        n += len(batch[0]) if isinstance(batch, tuple) else len(batch)
    return n / spent, n


# --- setup -------------------------------------------------------------------------


def build_forwarder(prefixes: list[tuple[bytes, ...]], rng: random.Random) -> tuple[Forwarder, dict[bytes, int]]:
    fw = Forwarder()  # default table sizes, Content Store included
    fw.add_face(CONSUMER)
    for f in UPSTREAMS:
        fw.add_face(f)
    routes: dict[bytes, int] = {}
    for p in prefixes:
        for face in rng.sample(UPSTREAMS, rng.randint(1, 2)):
            fw.add_route(Name.from_wire(p), face, rng.randrange(100))
        routes.setdefault(p[0], face)
    return fw, routes


def fill_cs(fw: Forwarder, work: Workload, now: float) -> int:
    """Insert decoded Data (as the forwarder would store it) until the store
    is full and has started evicting; returns how many were inserted."""
    cs = fw.cs
    inserted = 0
    gc.disable()  # setup only: the measured runs keep the collector on
    try:
        while cs.evictions == 0:
            for c in work.names(BATCH):
                cs.insert(decode(data_wire(c)), now)
            inserted += BATCH
    finally:
        gc.enable()
    return inserted


def counters(fw: Forwarder) -> dict[str, int]:
    return fw.counters.as_dict()


def check(before: dict[str, int], after: dict[str, int], n: int, case: str) -> None:
    d = {k: after[k] - before[k] for k in after}
    want = {"data_out": n, "nacks_out": 0, "unsolicited_data": 0, "pit_full": 0}
    if case == "cs-miss":
        want.update(cs_misses=n, interests_out=n, pit_satisfied=n, cs_hits=0)
    else:
        want.update(cs_hits=n, interests_out=0)
    bad = {k: (d[k], v) for k, v in want.items() if d[k] != v}
    if bad:
        raise SystemExit(f"bench/core.py: {case}: forwarder did not do what was measured: {bad}")


def log(msg: str, quiet: bool) -> None:
    if not quiet:
        print(msg, file=sys.stderr, flush=True)


# --- main --------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="short runs (~5 s), no timer warm-up")
    ap.add_argument("--json-only", action="store_true", help="print only the JSON lines")
    ap.add_argument("--runs", type=int, default=3, help="best of N (default 3)")
    ap.add_argument("--duration", type=float, help="seconds per run (default 1.2, quick 0.25)")
    ap.add_argument("--profile", action="store_true", help="also cProfile the forwarder cs-miss loop")
    args = ap.parse_args(argv)
    quiet = args.json_only
    duration = args.duration or (0.25 if args.quick else 1.2)
    t_start = time.perf_counter()

    rng = random.Random(SEED)
    prefixes = make_prefixes(rng, FIB_ENTRIES)
    fw, routes = build_forwarder(prefixes, rng)
    clock = FakeClock()

    log(f"setup: {len(fw.fib)} FIB prefixes on faces {UPSTREAMS}; filling the Content Store "
        f"({fw.cs.capacity_bytes // 2**20} MiB)...", quiet)
    t = time.perf_counter()
    filled = fill_cs(fw, Workload(prefixes, SEED + 1, "f"), clock.now())
    log(f"  {filled} Data, {len(fw.cs)} entries, {fw.cs.bytes_used} bytes "
        f"in {time.perf_counter() - t:.1f}s", quiet)
    # the clock keeps running through setup; that is fine (nothing pending yet)

    miss_work = Workload(prefixes, SEED + 2, "r")
    base_work = Workload(prefixes, SEED + 3, "b")

    def fw_miss(batch, off):
        fw_miss_batch(fw, batch, off)

    def base_miss(batch, off):
        base_miss_batch(routes, batch)

    # warm-up: longer than the Interest lifetime so expiry timers fire at
    # the rate they are scheduled (steady-state timer heap and dead-nonce list)
    warm = 0.3 if args.quick else DEFAULT_LIFETIME_MS / 1000 + 0.5
    log(f"cs-miss: warm-up {warm:.1f}s...", quiet)
    timed(fw_miss, lambda: miss_work.miss_batch(BATCH), warm, clock)
    timed(base_miss, lambda: base_work.miss_batch(BATCH), min(warm, 0.3), clock)

    results = []
    state: dict[str, object] = {}

    # --- cs-miss --------------------------------------------------------------
    evict0 = fw.cs.evictions
    fw_best = base_best = (0.0, 0)
    for r in range(args.runs):
        before = counters(fw)
        res = timed(fw_miss, lambda: miss_work.miss_batch(BATCH), duration, clock)
        check(before, counters(fw), res[1], "cs-miss")
        fw_best = max(fw_best, res)
        bres = timed(base_miss, lambda: base_work.miss_batch(BATCH), duration, clock)
        base_best = max(base_best, bres)
        log(f"  run {r + 1}: forwarder {res[0]:,.0f}/s  baseline {bres[0]:,.0f}/s", quiet)
    state["cs-miss"] = {
        "cs_evictions": fw.cs.evictions - evict0,
        "timer_heap": len(getattr(fw, "_timers", ())),
        "dnl_entries": len(fw.dnl),
        "pit_entries": len(fw.pit),
    }
    results.append(("cs-miss", fw_best, base_best))

    if args.profile:
        profile_miss(fw, miss_work, clock, duration)

    # --- cs-hit ---------------------------------------------------------------
    # Let everything pending from the miss phase expire (clock jump, untimed),
    # then put HIT_POOL names in the CS through the forwarder itself.
    clock.jump(2 * DEFAULT_LIFETIME_MS / 1000 + 10)
    fw.on_timer(clock.now())
    hit_work = Workload(prefixes, SEED + 4, "h")
    hit_names = hit_work.names(HIT_POOL)
    cache: dict[tuple[bytes, ...], object] = {}
    for c in hit_names:
        now = clock.now()
        (send,) = fw.on_packet(CONSUMER, decode(interest_wire(c, hit_work.nonce())), now)
        data = decode(data_wire(c))
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
    fw_best = base_best = (0.0, 0)
    for r in range(args.runs):
        before = counters(fw)
        res = timed(fw_hit, hit_batch, duration, clock)
        check(before, counters(fw), res[1], "cs-hit")
        fw_best = max(fw_best, res)
        bres = timed(base_hit, hit_batch, duration, clock)
        base_best = max(base_best, bres)
        log(f"  run {r + 1}: forwarder {res[0]:,.0f}/s  baseline {bres[0]:,.0f}/s", quiet)
    state["cs-hit"] = {"hit_pool": HIT_POOL, "cs_evictions": 0}
    results.append(("cs-hit", fw_best, base_best))

    # --- report ---------------------------------------------------------------
    elapsed = time.perf_counter() - t_start
    common = {
        "fib_entries": len(fw.fib),
        "cs_capacity_bytes": fw.cs.capacity_bytes,
        "cs_entries": len(fw.cs),
        "content_bytes": len(CONTENT),
        "runs": args.runs,
        "run_seconds": duration,
        "quick": args.quick,
        "python": platform.python_version(),
        "msgpack": ".".join(map(str, msgpack.version)),
        "fast_packet_gen": FAST_GEN,
    }
    lines = []
    if not quiet:
        print()
        print(f"icnd forwarding core, one Forwarder, best of {args.runs} x {duration:g}s  "
              f"(Python {platform.python_version()}, {elapsed:.1f}s total)")
        print(f"{'case':<9} {'forwarder/s':>12} {'us/exch':>8} {'baseline/s':>11} {'us/exch':>8} "
              f"{'ratio':>6} {'fwd logic us':>12}  target")
    for case, (rate, n), (brate, _bn) in results:
        ratio = rate / brate
        extra_us = 1e6 / rate - 1e6 / brate
        ok = rate >= TARGET_RATE and ratio >= TARGET_RATIO
        if not quiet:
            print(f"{case:<9} {rate:>12,.0f} {1e6 / rate:>8.2f} {brate:>11,.0f} {1e6 / brate:>8.2f} "
                  f"{ratio:>6.2f} {extra_us:>12.2f}  {'ok' if ok else 'MISSED'} "
                  f"(>= {TARGET_RATE:,}/s and >= {TARGET_RATIO})")
        lines.append({
            "bench": "core",
            "case": case,
            "value": round(rate),
            "unit": "exchanges/s",
            "baseline": round(brate),
            "ratio": round(ratio, 2),
            "n": n,
            "us_per_exchange": round(1e6 / rate, 2),
            "baseline_us_per_exchange": round(1e6 / brate, 2),
            "forwarding_logic_us": round(extra_us, 2),
            "meets_target": ok,
            **state[case],
            **common,
        })
    if not quiet:
        print()
    for line in lines:
        print(json.dumps(line))
    return 0


def profile_miss(fw: Forwarder, work: Workload, clock: FakeClock, duration: float) -> None:
    import cProfile
    import pstats

    batches = []
    n = max(1, int(duration * 40_000) // BATCH)
    clock.pause()
    for _ in range(n):
        batches.append(work.miss_batch(BATCH))
    clock.resume()
    prof = cProfile.Profile()
    prof.enable()
    for b in batches:
        fw_miss_batch(fw, b, clock.off)
    prof.disable()
    print(f"\n--- cProfile: forwarder cs-miss loop, {n * BATCH} exchanges ---", file=sys.stderr)
    stats = pstats.Stats(prof, stream=sys.stderr).strip_dirs()
    stats.sort_stats("cumulative").print_stats(30)
    stats.sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    sys.exit(main())
