"""``icnd topo up|down|sim``: whole topologies (interface §6).

The work is `icnd.topology`'s; these commands only parse and report."""

from __future__ import annotations

import argparse
import json
from typing import Any

from icnd.cli.errors import CliError
from icnd.cli.options import add_command, add_group, positive_seconds
from icnd.daemon.config import LOG_LEVELS


def cmd_topo_up(args: argparse.Namespace) -> int:
    from icnd.topology.launcher import main_up

    return main_up(args.file, netns=args.netns, workdir=args.workdir, log_level=args.log_level)


def cmd_topo_down(args: argparse.Namespace) -> int:
    from icnd.topology.launcher import topo_down

    return topo_down(args.workdir)


def cmd_topo_sim(args: argparse.Namespace) -> int:
    from icnd.topology import format_report, report_json, simulate

    try:
        report = simulate(args.file, [tuple(f) for f in args.fetch], seed=args.seed,
                          scenario=args.scenario, until=args.until)
    except ValueError as exc:  # TopologyError, ScenarioError (both ValueErrors) and bad arguments
        raise CliError(str(exc), 2) from None
    print(json.dumps(report_json(report)) if args.json else format_report(report))
    return report.exit_code


def add_commands(subparsers: Any) -> None:
    verbs = add_group(
        subparsers, "topo", "start, stop or simulate a topology of nodes",
        "Start one daemon per node of a topology file (topologies/*.toml), stop a "
        "topology running in the background, or simulate one in-process on a virtual clock.",
    )
    p = add_command(verbs, "up", cmd_topo_up,
                    "start every node of FILE (link-state: with its neighbours only, ready once every node "
                    "routes to every node), print their sockets, stay in the foreground (Ctrl-C stops)")
    p.add_argument("file", metavar="FILE", help="topology file, e.g. topologies/grid9.toml")
    p.add_argument("--netns", action="store_true",
                   help="one network namespace per node (root only; otherwise falls back to processes "
                   "on loopback)")
    p.add_argument("--workdir", metavar="DIR",
                   help="sockets, logs, data and topology.json (default: $XDG_RUNTIME_DIR/icnd-topo, "
                   "else /tmp/icnd-topo-$UID)")
    p.add_argument("--log-level", type=str.lower, choices=LOG_LEVELS, default="info",
                   help="the daemons' log level")
    p = add_command(verbs, "down", cmd_topo_down, "stop the topology running in the background from its workdir")
    p.add_argument("--workdir", metavar="DIR", help="as given to 'icnd topo up' (same default)")
    p = add_command(verbs, "sim", cmd_topo_sim,
                    "simulate FILE in-process on a virtual clock (the real forwarding core and, for a "
                    "link-state topology, the routing protocol: convergence is reported; many nodes)")
    p.add_argument("file", metavar="FILE", help="topology file, e.g. topologies/grid9.toml")
    p.add_argument("--fetch", nargs=2, action="append", metavar=("FROM", "TO"), default=[],
                   help="node FROM fetches a test object published at node TO (repeatable; in order)")
    p.add_argument("--scenario", metavar="FILE",
                   help="TOML file of timed [[step]] actions: kill, restart, cut, heal, fetch")
    p.add_argument("--seed", type=int, default=0, help="random seed for nonces and link loss (default: 0)")
    p.add_argument("--until", type=positive_seconds, metavar="S", help="stop the simulation at S seconds")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
