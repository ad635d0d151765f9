"""``icnd topo up|down|sim``: whole topologies (interface §6).

The work is `icnd.topology`'s; these commands only parse and report.  A
topology that cannot start (a node that exits or is not ready, a workdir
another launcher holds, namespaces that cannot be made) is one line naming
the node and the cause, exit 2 (`failure_line`), however deep in the
launcher's nurseries it was raised."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys
from typing import TYPE_CHECKING, Any

import trio

from icnd.cli.errors import CliError
from icnd.cli.options import add_command, add_group, positive_seconds
from icnd.daemon.config import LOG_LEVELS
from icnd.errors import Error
from icnd.excgroups import leaves

if TYPE_CHECKING:
    from icnd.topology.launcher import Network

_OTHER_NODE = re.compile(r"^node \S+ (exited with code|was not ready)")


def failure_line(message: str) -> str:
    """A launcher's failure as one line: what failed, the cause, where the log is.

    A node that failed to start is reported by the launcher with the end of
    its log (and one line per other failed node); the cause is the node's own
    one-line error (``icnd: error: ...``), else the last line of its log."""
    lines = message.splitlines()
    if not lines:
        return "the topology failed to start"
    head, sep, tail = lines[0].partition("; end of ")
    if not sep:
        return " ".join(line.strip() for line in lines if line.strip())
    log_path = tail.removesuffix(":")
    log = [line.strip() for line in lines[1:] if line.strip() and not _OTHER_NODE.match(line)]
    others = sum(1 for line in lines[1:] if _OTHER_NODE.match(line))
    errors = [line.removeprefix("icnd: error: ") for line in log if line.startswith("icnd: error: ")]
    cause = errors[-1] if errors else (log[-1] if log else "no log")
    more = f"; {others} other node(s) failed too" if others else ""
    return f"{head}: {cause} (log: {log_path}){more}"


def _launch_errors(exc: BaseException) -> list[Error]:
    """The launcher's errors inside `exc` (a group from its nurseries, or one); [] if anything else is there."""
    found = leaves(exc)
    errors = [e for e in found if isinstance(e, Error)]
    return errors if len(errors) == len(found) else []


def _ready_json(net: Network) -> dict[str, Any]:
    return {
        "topology": str(net.spec.source), "workdir": net.workdir, "netns": any(h.netns for h in net.nodes.values()),
        "routing": net.spec.routing,
        "nodes": {h.name: {"prefix": h.prefix,
                           "socket": h.socket, "udp": h.udp_uri, "tcp": h.tcp_uri, "pid": h.pid,
                           "netns": h.netns, "log": h.log_path}
                  for h in net.nodes.values()},
    }


def cmd_topo_up(args: argparse.Namespace) -> int:
    """`icnd.topology.launcher.topo_up` in the foreground, its failures as one line (exit 2)."""
    from icnd.topology import netns as _netns
    from icnd.topology.console import print_ready
    from icnd.topology.launcher import topo_up
    from icnd.topology.state import default_workdir
    from icnd.topology.spec import TopologyError, load

    try:
        spec = load(args.file)
    except TopologyError as exc:
        raise CliError(str(exc), 2) from None
    netns = args.netns
    if netns:
        try:
            _netns.check_available(need_tc=any(link.bandwidth_mbps > 0 for link in spec.links))
        except _netns.NetnsUnavailable as exc:
            print(f"icnd: {exc}; falling back to processes on loopback", file=sys.stderr, flush=True)
            netns = False

    def ready(net: Network) -> None:
        if args.json:
            print(json.dumps(_ready_json(net)), flush=True)
        else:
            print_ready(net, sys.stdout)

    workdir = os.path.abspath(args.workdir) if args.workdir else default_workdir()
    try:
        trio.run(lambda: topo_up(spec, workdir=workdir, netns=netns, log_level=args.log_level,
                                 ready_callback=ready, clean_workdir=args.workdir is None))
    except (Exception, BaseExceptionGroup) as exc:  # noqa: B902 -- sorted out just below
        errors = _launch_errors(exc)
        if not errors:
            raise
        raise CliError(failure_line(str(errors[0])), 2) from None
    if not args.json:
        print("topology stopped", flush=True)
    return 0


def cmd_topo_down(args: argparse.Namespace) -> int:
    from icnd.topology.console import topo_down
    from icnd.topology.state import STATE_FILE, default_workdir

    if not args.json:
        return topo_down(args.workdir)
    workdir = os.path.abspath(args.workdir) if args.workdir else default_workdir()
    was_running = os.path.exists(os.path.join(workdir, STATE_FILE))
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        code = topo_down(workdir)
    print(json.dumps({"workdir": workdir, "running": was_running, "stopped": was_running and code == 0,
                      "message": said.getvalue().strip()}))
    return code


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
    p.add_argument("--json", action="store_true",
                   help="once ready, print the nodes as one line of JSON (keys: topology, workdir, netns, "
                   "routing, nodes{NAME: prefix, socket, udp, tcp, pid, netns, log})")
    p = add_command(verbs, "down", cmd_topo_down, "stop the topology running in the background from its workdir")
    p.add_argument("--workdir", metavar="DIR", help="as given to 'icnd topo up' (same default)")
    p.add_argument("--json", action="store_true",
                   help="print what was done as JSON (keys: workdir, running, stopped, message)")
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
