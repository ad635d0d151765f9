#!/usr/bin/env python3
"""Simulator benchmark: large topologies on the virtual clock (icnd.topology.simulate).

Cases (each a fresh `simulate` call, the real forwarding core at every node,
every packet encoded and decoded, per-link delay on the virtual clock):

- ``grid-400-corner``: a 20 x 20 grid, one fetch corner to corner (38 hops);
  the issue's "well under a minute" check;
- ``grid-1000``: a 25 x 40 grid (1,000 nodes, 1,935 links, 1 ms per link);
- ``random-1000``: a random connected graph of 1,000 nodes (a random tree
  plus as many random extra links; cost 1-3, delay 1-5 ms; seeded);
- ``grid-100``: a 10 x 10 grid with the same number of fetches, a scaling
  reference (how the per-packet cost changes with the node count).

In each 1,000- and 100-node case, round 1 (cold) starts ``--fetches``
fetches between random node pairs, one every 2 ms of simulated time (so many
are in flight together); round 2 (warm), from t = 5 s, fetches the same
objects again from other random nodes, so Content Stores answer:
``cache_hits_warm`` counts the warm fetches any Content Store answered (at
least the destination's own), ``cache_hits_warm_en_route`` those answered
before the destination.  Fetch pairs are seeded: every run simulates exactly
the same packets.

Printed per case: wall time (building included), forwarding wall time,
simulated time, packets delivered (to a node or an application), simulated
packets per wall-clock second (the ``value``) and the time spent deriving
routes.  Route derivation is set-up work, left out of ``value``
(``SimReport.packets_per_s``): the 1,000-node cases derive routes lazily,
inside the event loop, the first time a node needs them, so their
``forwarding_wall_s`` is the loop's wall time less that derivation.  Best of
``--runs`` (wall time varies, the simulation does not).  There is no
external baseline for a simulator: no ratio is printed.  ``grid-100`` is our
own smaller run, labelled as a scaling reference only.

Every topology here says ``routing = "static"``: this bench measures
forwarding on derived routes from time 0; the routing protocol in the
simulator is measured by ``bench/routing_sim.py``.

Output: a table on stdout, then one JSON line per case; ``--json-only``
prints only the JSON lines.  ``--quick``: fewer fetches, one run (~3 s);
the default run takes ~30 s.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent
if str(REPO_DIR) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO_DIR))

from icnd.sim.scenario import SimReport, grid_spec, simulate  # noqa: E402
from icnd.topology.spec import TopologySpec, parse  # noqa: E402

SEED = 20240611


def random_spec(n: int, seed: int) -> TopologySpec:
    """A connected random graph: a random tree plus ``n`` random extra links."""
    rng = random.Random(seed)
    names = [f"v{i}" for i in range(n)]
    pairs: set[frozenset[str]] = set()
    links = []

    def add(a: str, b: str) -> None:
        pair = frozenset((a, b))
        if a != b and pair not in pairs:
            pairs.add(pair)
            links.append({"ends": [a, b], "cost": rng.randint(1, 3), "delay_ms": rng.randint(1, 5)})

    for i in range(1, n):
        add(names[i], names[rng.randrange(i)])
    while len(links) < 2 * (n - 1):
        a, b = rng.sample(names, 2)
        add(a, b)
    return parse({"routing": "static", "nodes": {name: {} for name in names}, "links": links}, f"<random {n}>")


def two_rounds(spec: TopologySpec, fetches: int, seed: int) -> list[tuple]:
    """Round 1: random pairs, one every 2 ms; round 2 from 5 s: the same objects from other nodes."""
    rng = random.Random(seed)
    names = list(spec.nodes)
    cold = [tuple(rng.sample(names, 2)) for _ in range(fetches)]
    steps = [("fetch", a, b, round(i * 0.002, 6)) for i, (a, b) in enumerate(cold)]
    for i, (a, b) in enumerate(cold):
        c = rng.choice([x for x in rng.sample(names, 3) if x not in (a, b)] or [a])
        steps.append(("fetch", c, b, round(5.0 + i * 0.002, 6)))
    return steps


def run_case(spec: TopologySpec, runs: int, **kw) -> tuple[SimReport, list[float]]:
    best: SimReport | None = None
    walls = []
    for _ in range(runs):
        report = simulate(spec, seed=SEED, **kw)
        walls.append(report.forwarding_wall_s)
        if best is None or report.forwarding_wall_s < best.forwarding_wall_s:
            best = report
    assert best is not None
    return best, walls


def summarize(case: str, spec: TopologySpec, report: SimReport, walls: list[float], rounds: int) -> dict:
    fetches = report.fetches
    half = len(fetches) // rounds
    cold, warm = fetches[:half], fetches[half:]

    def mean(xs: list[float]) -> float | None:
        return round(sum(xs) / len(xs), 6) if xs else None

    line = {
        "bench": "sim",
        "case": case,
        "value": round(report.packets_per_s),
        "unit": "packets/s",
        "wall_s": round(report.wall_s, 3),
        "run_wall_s": round(report.run_wall_s, 3),
        "routes_s": round(report.routes_s, 3),
        "forwarding_wall_s": round(report.forwarding_wall_s, 3),
        "sim_time_s": round(report.sim_time_s, 6),
        "packets": report.packets,
        "events": report.events,
        "nodes": len(spec.nodes),
        "links": len(spec.links),
        "fetches": len(fetches),
        "fetches_ok": sum(f.ok for f in fetches),
        "mean_hops_cold": mean([f.hops for f in cold if f.ok]),
        "mean_rtt_ms_cold": mean([1000 * f.rtt_s for f in cold if f.ok]),
        "routes": report.routes,
        "all_runs_forwarding_wall_s": [round(w, 3) for w in walls],
        "baseline": None,
    }
    if rounds == 2:
        line["cache_hits_warm"] = sum(f.cache_hit for f in warm if f.ok)
        line["cache_hits_warm_en_route"] = sum(f.cache_hit and f.served_by != f.dst for f in warm if f.ok)
        line["mean_hops_warm"] = mean([f.hops for f in warm if f.ok])
        line["mean_rtt_ms_warm"] = mean([1000 * f.rtt_s for f in warm if f.ok])
    return line


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer fetches, one run (~3 s)")
    ap.add_argument("--json-only", action="store_true", help="print only the JSON lines")
    ap.add_argument("--fetches", type=int, help="fetches per round (default 1000, quick 200)")
    ap.add_argument("--runs", type=int, help="best of N (default 3, quick 1)")
    args = ap.parse_args(argv)
    n_fetch = args.fetches or (200 if args.quick else 1000)
    runs = args.runs or (1 if args.quick else 3)
    quiet = args.json_only
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        if not quiet:
            print(msg, file=sys.stderr, flush=True)

    lines = []
    grid400 = grid_spec(20, 20, routing="static")
    log("grid-400-corner: 20x20 grid, r0c0 fetches from r19c19 ...")
    report, walls = run_case(grid400, runs, fetches=[("r0c0", "r19c19")])
    if not report.ok or report.fetches[0].hops != 38:
        raise SystemExit(f"bench/sim.py: grid-400 corner fetch went wrong: {report.fetches[0]}")
    lines.append(summarize("grid-400-corner", grid400, report, walls, 1))

    cases = [
        ("grid-1000", grid_spec(25, 40, delay_ms=1, routing="static")),
        ("random-1000", random_spec(1000, SEED)),
        ("grid-100", grid_spec(10, 10, delay_ms=1, routing="static")),
    ]
    for case, spec in cases:
        log(f"{case}: {len(spec.nodes)} nodes, {len(spec.links)} links, 2 x {n_fetch} fetches ...")
        steps = two_rounds(spec, n_fetch, SEED + len(spec.nodes))
        report, walls = run_case(spec, runs, scenario=steps)
        if not report.ok:
            bad = [f for f in report.fetches if not f.ok][:3]
            raise SystemExit(f"bench/sim.py: {case}: {len(bad)}+ fetches failed, e.g. {bad}")
        lines.append(summarize(case, spec, report, walls, 2))

    elapsed = time.perf_counter() - t0
    if not quiet:
        print(f"icnd simulator: best of {runs} run(s), {n_fetch} fetches per round, "
              f"Python {sys.version.split()[0]}, {elapsed:.1f}s in all")
        print(f"{'case':<16} {'nodes':>5} {'fetches':>7} {'wall s':>7} {'fwd s':>7} {'routes s':>8} "
              f"{'sim s':>8} {'packets':>8} {'packets/s':>10} {'hops':>5} {'en-route hits':>13}")
        for line in lines:
            hits = line.get("cache_hits_warm_en_route")
            print(f"{line['case']:<16} {line['nodes']:>5} {line['fetches']:>7} {line['wall_s']:>7.2f} "
                  f"{line['forwarding_wall_s']:>7.2f} {line['routes_s']:>8.2f} {line['sim_time_s']:>8.3f} "
                  f"{line['packets']:>8} {line['value']:>10,} {line['mean_hops_cold'] or 0:>5.1f} "
                  f"{'-' if hits is None else hits:>13}")
        print("  baseline: none applies (no external reference for an in-process simulator), so no ratio.")
        by_case = {line["case"]: line for line in lines}
        if "grid-100" in by_case and "grid-1000" in by_case:
            scale = by_case["grid-1000"]["value"] / by_case["grid-100"]["value"]
            print(f"  scaling reference (not a baseline): packets/s at 1,000 nodes = {scale:.2f} x "
                  f"packets/s at 100 nodes, same fetch count.")
        print()
    for line in lines:
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
