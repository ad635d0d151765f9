#!/usr/bin/env python3
"""Link-state routing in the simulator: convergence and routing traffic at scale.

Cases (each one `icnd.topology.simulate` run with ``routes="link-state"``:
every node runs the daemon's router, `icnd.core.routing`, on the virtual
clock; every routing message is encoded, crosses a modelled link (1 ms) and
is decoded):

- ``sim-100``: a 10 x 10 grid;
- ``sim-1000``: a 32 x 32 grid (1,024 nodes, 1,984 links).

Each case starts cold (no routes anywhere), waits until routes are
consistent (`icnd.sim.routing`: every live node routes to every node it can
reach, and no route's cheapest next hop is dead or cut), cuts one link in
the middle of the grid at ``--cut-at`` virtual seconds, waits until routes
are consistent again, then measures a quiet window of ``--steady`` virtual
seconds.  One fetch across the grid checks that forwarding works on the
routes the protocol installed.

Printed per case (JSON line): ``convergence_s`` (virtual seconds from cold
start to consistent routes), ``reconvergence_s`` (from the cut), routing
messages and bytes sent per node until convergence (mean, max) and over the
whole run, route computations, steady-state messages/s and bytes/s per
node, and ``wall_s`` (wall-clock seconds of the whole run; ``value``).
There is no baseline: NLSR publishes no simulator figures to compare with,
so ``"baseline": null`` and no ratio.  Router configuration: the defaults
(hello 1 s, dead 3 s) except ``--hold-down`` (route computation hold-down;
one Dijkstra per neighbour per computation is the main cost at 1,000 nodes).

``--quick``: sim-100 only.  ``--profile FILE``: run under cProfile, stats to FILE.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import sys
import time
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent
if str(REPO_DIR) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO_DIR))

from icnd.core.routing import RouterConfig  # noqa: E402
from icnd.sim.scenario import SimReport, grid_spec, simulate  # noqa: E402

CASES = {"sim-100": (10, 10), "sim-1000": (32, 32)}


def run_case(rows: int, cols: int, *, cut_at: float, steady: float, hold_down: float) -> tuple[SimReport, float]:
    spec = grid_spec(rows, cols, delay_ms=1)
    r, c = rows // 2, cols // 2
    scenario = [("cut", f"r{r}c{c}", f"r{r}c{c + 1}", cut_at),
                ("fetch", f"r0c0", f"r{rows - 1}c{cols - 1}", cut_at + 10.0)]
    t0 = time.perf_counter()
    report = simulate(spec, scenario=scenario, routes="link-state", steady_s=steady, seed=1,
                      routing_config=RouterConfig(hold_down=hold_down), hop_limit=255)
    return report, time.perf_counter() - t0


def summarize(case: str, report: SimReport, wall: float) -> dict:
    section = report.routing
    assert section is not None
    cold, whole, steady = section["cold_start"], section["whole_run"], section["steady"]
    (cut,) = section["failures"]
    fetch = report.fetches[0]

    def r(x: float | None, n: int = 3) -> float | None:
        return None if x is None else round(x, n)

    def spread(d: dict | None, n: int = 1) -> dict | None:
        return None if d is None else {k: round(v, n) for k, v in d.items()}

    return {
        "bench": "routing_sim",
        "case": case,
        "value": round(wall, 2),
        "unit": "wall s",
        "nodes": report.node_count,
        "links": report.link_count,
        "convergence_s": r(section["convergence_s"]),
        "reconvergence_s": r(cut["reconvergence_s"]),
        "messages_per_node": spread(cold and cold["messages_per_node"]),
        "bytes_per_node": spread(cold and cold["bytes_per_node"], 0),
        "route_computations_per_node": spread(cold and cold["route_computations"]),
        "messages_per_node_whole_run": spread(whole["messages_per_node"]),
        "bytes_per_node_whole_run": spread(whole["bytes_per_node"], 0),
        "steady_window_s": steady and steady["window_s"],
        "steady_messages_per_s_per_node": spread(steady and steady["messages_per_s_per_node"], 2),
        "steady_bytes_per_s_per_node": spread(steady and steady["bytes_per_s_per_node"], 0),
        "fetch_ok": fetch.ok,
        "fetch_hops": fetch.hops,
        "sim_time_s": r(report.sim_time_s),
        "events": report.events,
        "wall_s": round(wall, 2),
        "hold_down_s": section["config"]["hold_down_s"],
        "baseline": None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="sim-100 only")
    ap.add_argument("--cases", nargs="+", choices=sorted(CASES), help="cases to run (default: all)")
    ap.add_argument("--cut-at", type=float, default=10.0, help="virtual time of the cut (default 10 s)")
    ap.add_argument("--steady", type=float, default=10.0, help="steady-state window, virtual s (default 10)")
    ap.add_argument("--hold-down", type=float, default=RouterConfig().hold_down,
                    help=f"route computation hold-down, s (default {RouterConfig().hold_down})")
    ap.add_argument("--profile", metavar="FILE", help="run under cProfile and write the stats to FILE")
    args = ap.parse_args(argv)
    cases = args.cases or (["sim-100"] if args.quick else list(CASES))
    profiler = cProfile.Profile() if args.profile else None
    for case in cases:
        rows, cols = CASES[case]
        print(f"{case}: {rows}x{cols} grid, cold start, cut at {args.cut_at:g} s ...", file=sys.stderr, flush=True)
        if profiler is not None:
            profiler.enable()
        report, wall = run_case(rows, cols, cut_at=args.cut_at, steady=args.steady, hold_down=args.hold_down)
        if profiler is not None:
            profiler.disable()
        line = summarize(case, report, wall)
        if not (report.ok and line["convergence_s"] is not None and line["reconvergence_s"] is not None):
            print(json.dumps(line), flush=True)
            raise SystemExit(f"bench/routing_sim.py: {case}: did not converge or the fetch failed")
        print(json.dumps(line), flush=True)
    if profiler is not None:
        profiler.dump_stats(args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
