"""What a simulation reports (`icnd.sim.scenario.simulate`), and how it is shown.

A `SimReport` holds per fetch (`FetchResult`) whether it got Data, its
simulated RTT, the path its Data took and the hop count; simulated and wall
time; packets delivered; the counters of every forwarder; and, under
link-state routing, the routing section (`icnd.sim.routing.routing_report`).
`format_report` renders it for people, `report_json` as a JSON-ready dict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FetchResult", "SimReport", "format_report", "format_routing", "report_json"]


@dataclass
class FetchResult:
    """The outcome of one fetch.

    ``path``: nodes from the consumer's node (``src``) to the node that
    answered (``served_by``), as the Data travelled back; ``hops`` =
    ``len(path) - 1`` links.  ``cache_hit``: a Content Store answered
    (rather than the producer application).  ``rtt_s``: simulated seconds
    from the first Interest to the Data (or to the failure).  ``error``:
    None on success, else ``"nack <reason>"``, ``"timeout"`` or
    ``"unfinished"`` (the simulation stopped at ``until`` first).
    """

    src: str
    dst: str
    name: str
    started_s: float
    ok: bool = False
    rtt_s: float | None = None
    hops: int | None = None
    path: list[str] = field(default_factory=list)
    served_by: str | None = None
    cache_hit: bool = False
    attempts: int = 0
    error: str | None = "unfinished"

    def as_dict(self) -> dict[str, Any]:
        return {
            "from": self.src, "to": self.dst, "name": self.name, "started_s": self.started_s,
            "ok": self.ok, "rtt_s": self.rtt_s, "hops": self.hops, "path": list(self.path),
            "served_by": self.served_by, "cache_hit": self.cache_hit, "attempts": self.attempts,
            "error": self.error,
        }


@dataclass
class SimReport:
    """What a simulation did; see the module docstring."""

    topology: str
    node_count: int
    link_count: int
    seed: int
    routes: str  # the routing mode used: "link-state", "full", "destinations" or "lazy"
    fetches: list[FetchResult]
    sim_time_s: float  # simulated time when the simulation stopped
    wall_s: float  # wall-clock seconds, building included
    run_wall_s: float  # wall-clock seconds of the event loop (lazy route derivation included)
    routes_s: float  # wall-clock seconds spent deriving and installing routes (up front or lazily)
    forwarding_wall_s: float  # run_wall_s less the lazy route derivation done inside the loop
    packets: int  # packets delivered to a node or an application
    events: int  # events processed on the virtual clock
    counters: dict[str, dict[str, int]]  # node -> Forwarder counters
    dead: list[str]  # nodes dead when the simulation stopped
    links: dict[str, dict[str, int]]  # "a-b" -> link statistics
    steps: list[dict[str, Any]]  # scenario steps executed (at, action, nodes)
    routing: dict[str, Any] | None = None  # link-state: `icnd.sim.routing.routing_report`; else None

    @property
    def ok(self) -> bool:
        """Every fetch got its Data."""
        return all(f.ok for f in self.fetches)

    @property
    def exit_code(self) -> int:
        """0 when every fetch succeeded (and, with link-state routing, routes
        converged and re-converged after every failure step), else 1."""
        routing = self.routing
        if routing is not None and (not routing["converged"]
                                    or any(f["reconvergence_s"] is None for f in routing["failures"])):
            return 1
        return 0 if self.ok else 1

    @property
    def packets_per_s(self) -> float:
        """Simulated packets processed per wall-clock second of the event loop,
        route derivation excluded (``packets / forwarding_wall_s``): routes are
        set-up work, done before the loop or, in lazy mode, on first use."""
        return self.packets / self.forwarding_wall_s if self.forwarding_wall_s > 0 else math.inf


_TABLE_COUNTERS = ("interests_in", "interests_out", "data_in", "data_out", "cs_hits", "pit_aggregated",
                   "retransmissions", "nacks_in", "nacks_out")


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None or seconds != seconds else f"{seconds * 1000:.3f} ms"


def format_report(report: SimReport) -> str:
    """A human-readable report: one line per fetch, totals, and a counters
    table of the nodes that saw traffic."""
    lines = [f"topology {report.topology}: {report.node_count} nodes, {report.link_count} links, "
             f"seed {report.seed}, routes {report.routes}"]
    for step in report.steps:
        if step["action"] != "fetch":
            lines.append(f"  at {step['at']:.3f} s: {step['action']} {' '.join(step['nodes'])}")
    for f in report.fetches:
        head = f"fetch {f.src} -> {f.dst} {f.name}:"
        if f.ok:
            where = (f"cache hit at {f.served_by}" if f.cache_hit else f"producer at {f.served_by}")
            hops = f"{f.hops} hop{'s' if f.hops != 1 else ''}"
            lines.append(f"{head} ok, {hops} ({' '.join(f.path)}), {where}, simulated RTT {_ms(f.rtt_s)}, "
                         f"{f.attempts} attempt{'s' if f.attempts != 1 else ''}")
        else:
            lines.append(f"{head} FAILED ({f.error}) after {_ms(f.rtt_s)}, {f.attempts} attempt"
                         f"{'s' if f.attempts != 1 else ''}")
    ok = sum(f.ok for f in report.fetches)
    fetched = (f"{ok}/{len(report.fetches)} fetches ok" if report.fetches
               else "no fetches asked for (--fetch FROM TO)")
    lines.append(f"{fetched}; simulated time {report.sim_time_s:.6f} s; "
                 f"wall {report.wall_s:.3f} s (event loop {report.run_wall_s:.3f} s, routes "
                 f"{report.routes_s:.3f} s); {report.packets} packets delivered "
                 f"({report.packets_per_s:,.0f} packets/s)")
    if report.routing is not None:
        lines.extend(format_routing(report.routing))
    busy = [(n, c) for n, c in report.counters.items() if c["interests_in"] or c["data_in"] or c["nacks_in"]]
    if busy:
        dead = set(report.dead)
        width = max(4, *(len(n) + (7 if n in dead else 0) for n, _ in busy))
        lines.append("")
        lines.append(f"{'node':<{width}}" + "".join(f"{h:>16}" for h in _TABLE_COUNTERS))
        for name, c in busy:
            label = f"{name} (dead)" if name in dead else name
            lines.append(f"{label:<{width}}" + "".join(f"{c[h]:>16}" for h in _TABLE_COUNTERS))
    return "\n".join(lines)


def format_routing(section: Mapping[str, Any]) -> list[str]:
    """The lines of a report's link-state ``routing`` section."""
    def s(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f} s"

    cfg = section["config"]
    lines = [f"routing link-state (hello {cfg['hello_interval_s']:g} s, dead {cfg['dead_interval_s']:g} s, "
             f"hold-down {cfg['hold_down_s']:g} s): "
             + (f"converged at {s(section['convergence_s'])}" if section["converged"] else "NOT converged")]
    for label, key in (("cold start", "cold_start"), ("whole run", "whole_run")):
        t = section[key]
        if t is not None:
            m, b, c = t["messages_per_node"], t["bytes_per_node"], t["route_computations"]
            lines.append(f"  {label}: {m['mean']:.1f} messages/node (max {m['max']:.0f}), "
                         f"{b['mean']:,.0f} bytes/node (max {b['max']:,.0f}), "
                         f"{c['total']} route computations ({c['mean']:.1f}/node, max {c['max']:.0f})")
    for f in section["failures"]:
        lines.append(f"  {f['action']} {' '.join(f['nodes'])} at {f['at']:.3f} s: routes consistent again after "
                     f"{s(f['reconvergence_s'])}")
    steady = section["steady"]
    if steady is not None:
        m, b = steady["messages_per_s_per_node"], steady["bytes_per_s_per_node"]
        lines.append(f"  steady state over {steady['window_s']:g} s: {m['mean']:.2f} messages/s/node "
                     f"(max {m['max']:.2f}), {b['mean']:,.0f} bytes/s/node (max {b['max']:,.0f})")
    return lines


def report_json(report: SimReport) -> dict[str, Any]:
    """The report as a JSON-ready dict (``json.dumps`` works on it as is)."""
    def num(x: float | None) -> float | None:
        return None if x is None or x != x else x

    fetches = []
    for f in report.fetches:
        d = f.as_dict()
        d["started_s"] = num(d["started_s"])
        fetches.append(d)
    return {
        "topology": report.topology,
        "nodes": report.node_count,
        "links": report.link_count,
        "seed": report.seed,
        "routes": report.routes,
        "ok": report.ok,
        "fetches": fetches,
        "sim_time_s": report.sim_time_s,
        "wall_s": report.wall_s,
        "run_wall_s": report.run_wall_s,
        "routes_s": report.routes_s,
        "forwarding_wall_s": report.forwarding_wall_s,
        "packets": report.packets,
        "packets_per_s": num(report.packets_per_s) if math.isfinite(report.packets_per_s) else None,
        "events": report.events,
        "steps": report.steps,
        "dead": report.dead,
        "counters": report.counters,
        "link_stats": report.links,
        "routing": report.routing,
    }
