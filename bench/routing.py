#!/usr/bin/env python3
"""Link-state routing in real processes: convergence and routing traffic of a 20-node grid.

The network is ``topologies/grid20.toml`` (4 x 5, 31 links, ``routing =
"link-state"``), started by the topology launcher (`icnd.topology.launch`):
20 ``icnd run`` processes on loopback, each given only ``--neighbor`` for its
links; default hello 1 s, dead 3 s.  Cases, one JSON line each:

- ``cold-start``: ``value`` = seconds from the launch until every node has a
  ``routing`` route to every other node's ``/node/<n>`` (what `launch` waits
  for); also ``daemons_ready_s`` (until every daemon answered ``status``:
  process start-up, 20 Pythons on this machine's cores) and
  ``routing_after_daemons_s`` (the difference: the protocol's own share).
  Target: <= 10 s.
- ``link-cut``: the middle link n12-n13 is cut (both ends drop what they send
  on it, `Network.cut`); ``value`` = seconds until every node's routes are
  consistent again: its cheapest route to every other node costs exactly the
  shortest path in the cut graph, and neither end of the cut still has a
  next hop over it.  Dominated by the dead interval (3 s: a cut link is
  noticed by missing hellos, as a real one).  Target: <= 5 s.
- ``steady-state``: routing traffic per node once converged, from every
  node's routing counters (``messages_out``, ``bytes_out``) over a window of
  ``--window`` seconds (default 10): mean and max over nodes, messages/s
  and bytes/s.  ``value`` = mean messages/s per node.

There is no baseline in the same run (NLSR is not installed here, and its
published figures are not from this machine): ``"baseline": null`` and no
ratio.  ``cpu_busy`` is the machine's busy fraction over the case (other
processes compete for the cores; the figures move with it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parent.parent
if str(REPO_DIR) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO_DIR))

import trio  # noqa: E402

from icnd.client import Client  # noqa: E402
from icnd.topology import load  # noqa: E402
from icnd.topology.launcher import Network, launch  # noqa: E402
from icnd.core.routing.paths import dijkstra  # noqa: E402
from icnd.topology.spec import TopologySpec  # noqa: E402

TOPOLOGY = REPO_DIR / "topologies" / "grid20.toml"
CUT = ("n12", "n13")
POLL = 0.05  # seconds between rounds of polling every node's routes
DEADLINE = 60.0  # bound on any wait


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def busy_since(start: tuple[float, float]) -> float:
    busy, total = machine_busy()
    return round((busy - start[0]) / max(1.0, total - start[1]), 2)


def distances(spec: TopologySpec, cut: tuple[str, str] | None) -> dict[str, dict[str, int]]:
    """Shortest path costs between all nodes, without the link `cut`."""
    adjacent: dict[str, list[tuple[str, int]]] = {n: [] for n in spec.nodes}
    for link in spec.links:
        if cut is not None and set(link.ends) == set(cut):
            continue
        adjacent[link.a].append((link.b, link.cost))
        adjacent[link.b].append((link.a, link.cost))
    graph = {n: dict(peers) for n, peers in adjacent.items()}
    return {source: dijkstra(graph, source) for source in spec.nodes}


async def consistent(net: Network, clients: dict[str, Client], dist: dict[str, dict[str, int]],
                     avoid: dict[str, int]) -> list[str]:
    """What is still wrong with the routes (empty: consistent); `avoid` maps a node to the face it
    must no longer route over (the cut link's)."""
    problems: list[str] = []

    async def check(node: str) -> None:
        routes = await clients[node].command("route", "list")
        best: dict[str, list[dict[str, Any]]] = {}
        for entry in routes:
            hops = [h for h in entry["nexthops"] if h["origin"] == "routing"]
            if hops:
                best[entry["prefix"]] = hops
        for peer, cost in dist[node].items():
            if peer == node:
                continue
            hops = best.get(f"/node/{peer}", [])
            if not hops:
                problems.append(f"{node}: no route to {peer}")
            elif min(h["cost"] for h in hops) != cost:
                problems.append(f"{node}: /node/{peer} at {min(h['cost'] for h in hops)}, not {cost}")
            elif node in avoid and any(h["face"] == avoid[node] for h in hops):
                problems.append(f"{node}: /node/{peer} still over the cut link")

    async with trio.open_nursery() as nursery:
        for node in net.nodes:
            nursery.start_soon(check, node)
    return problems


async def until_consistent(net: Network, clients: dict[str, Client], dist: dict[str, dict[str, int]],
                           avoid: dict[str, int]) -> float:
    start = trio.current_time()
    with trio.fail_after(DEADLINE):
        while await consistent(net, clients, dist, avoid):
            await trio.sleep(POLL)
    return trio.current_time() - start


async def counters(clients: dict[str, Client]) -> dict[str, dict[str, int]]:
    out = {}
    for node, client in clients.items():
        out[node] = (await client.routing())["counters"]
    return out


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    spec = load(args.topology)
    lines: list[dict[str, Any]] = []
    common = {"bench": "routing", "nodes": len(spec.nodes), "links": len(spec.links), "baseline": None,
              "hello_interval_s": 1.0, "dead_interval_s": 3.0, "cpus": os.cpu_count()}
    cpu0 = machine_busy()
    t0 = trio.current_time()
    async with launch(spec, ready_timeout=DEADLINE, log_level="warning") as net:
        converged = trio.current_time() - t0
        assert net.daemons_ready_s is not None
        lines.append({**common, "case": "cold-start", "value": round(converged, 2), "unit": "s", "target_s": 10.0,
                      "daemons_ready_s": round(net.daemons_ready_s, 2),
                      "routing_after_daemons_s": round(converged - net.daemons_ready_s, 2),
                      "cpu_busy": busy_since(cpu0)})
        print(json.dumps(lines[-1]), flush=True)
        clients = {node: await net.connect(node) for node in net.nodes}
        full = distances(spec, None)
        await until_consistent(net, clients, full, {})  # the costs too, not only reachability

        a, b = CUT
        avoid = {}
        for end, other in ((a, b), (b, a)):
            status = await clients[end].routing()
            avoid[end] = next(n["face"] for n in status["neighbors"] if n["name"] == f"/node/{other}")
        cpu0 = machine_busy()
        cut_at = trio.current_time()
        await net.cut(a, b)
        await until_consistent(net, clients, distances(spec, CUT), avoid)
        reconverged = trio.current_time() - cut_at  # the cut's own commands included
        lines.append({**common, "case": "link-cut", "value": round(reconverged, 2), "unit": "s", "target_s": 5.0,
                      "cut": f"{a}-{b}", "cpu_busy": busy_since(cpu0)})
        print(json.dumps(lines[-1]), flush=True)

        await trio.sleep(2.0)  # past the re-convergence's last records
        cpu0 = machine_busy()
        before, w0 = await counters(clients), trio.current_time()
        await trio.sleep(args.window)
        after, window = await counters(clients), trio.current_time() - w0
        msgs = [(after[n]["messages_out"] - before[n]["messages_out"]) / window for n in clients]
        byts = [(after[n]["bytes_out"] - before[n]["bytes_out"]) / window for n in clients]
        lines.append({**common, "case": "steady-state", "value": round(sum(msgs) / len(msgs), 2),
                      "unit": "routing messages/s per node (sent)", "window_s": round(window, 1),
                      "messages_per_s_per_node": {"mean": round(sum(msgs) / len(msgs), 2), "max": round(max(msgs), 2)},
                      "bytes_per_s_per_node": {"mean": round(sum(byts) / len(byts)), "max": round(max(byts))},
                      "cpu_busy": busy_since(cpu0)})
        print(json.dumps(lines[-1]), flush=True)
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topology", default=str(TOPOLOGY), help="a link-state topology (default grid20)")
    ap.add_argument("--window", type=float, default=10.0, help="steady-state window, s (default 10)")
    args = ap.parse_args(argv)
    started = time.monotonic()
    lines = trio.run(run, args)
    print(f"bench/routing.py: {len(lines)} cases in {time.monotonic() - started:.0f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
