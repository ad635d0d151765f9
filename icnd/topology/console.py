"""What ``icnd topo up`` and ``icnd topo down`` print (`icnd.cli.topo`).

The launcher (`icnd.topology.launcher`) and the record's cleanup
(`icnd.topology.state`) print nothing: they return what they did, and the
command line says it here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Protocol, TextIO

from icnd.topology.spec import TopologySpec
from icnd.topology.state import STATE_FILE, LaunchError, default_workdir, stop_recorded

__all__ = ["describe_mode", "print_ready", "topo_down"]


class _ShownNode(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def socket(self) -> str: ...
    @property
    def udp_uri(self) -> str: ...
    @property
    def tcp_uri(self) -> str: ...
    @property
    def pid(self) -> int | None: ...
    @property
    def netns(self) -> str | None: ...


class ShownNetwork(Protocol):
    """What `print_ready` reads of a running topology (`icnd.topology.launcher.Network`)."""

    @property
    def spec(self) -> TopologySpec: ...
    @property
    def workdir(self) -> str: ...
    @property
    def netns(self) -> bool: ...
    @property
    def link_state(self) -> bool: ...
    @property
    def converged_s(self) -> float | None: ...
    @property
    def nodes(self) -> Mapping[str, _ShownNode]: ...


def describe_mode(net: ShownNetwork) -> str:
    mode = "network namespaces" if net.netns else "processes on loopback"
    if net.link_state:
        took = f", converged in {net.converged_s:.1f}s" if net.converged_s is not None else ""
        return f"{mode}, link-state routing (nodes started with their neighbours only{took})"
    return f"{mode}, static routes derived from the graph"


def print_ready(net: ShownNetwork, out: TextIO) -> None:
    """``icnd topo up``'s report once every node is ready: one line per node."""
    print(
        f"topology {net.spec.source}: {len(net.nodes)} nodes, {len(net.spec.links)} links, "
        f"{describe_mode(net)} (workdir {net.workdir})",
        file=out,
    )
    rows = [
        (h.name, h.socket, h.udp_uri, h.tcp_uri, f"pid {h.pid}") + ((f"netns {h.netns}",) if h.netns else ())
        for h in net.nodes.values()
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))] if rows else []
    for row in rows:
        print("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip(), file=out)
    print(f"ready; Ctrl-C (or `icnd topo down --workdir {net.workdir}`) stops it", file=out, flush=True)


def _error(message: str) -> None:
    print(f"icnd: error: {message}", file=sys.stderr, flush=True)


def topo_down(workdir: str | os.PathLike[str] | None = None, *, timeout: float = 30.0) -> int:
    """``icnd topo down [--workdir DIR]``: stop the topology recorded in ``workdir``
    (`icnd.topology.state.stop_recorded`) and say what was done.

    Idempotent: with nothing running it says so and returns 0.  Returns 1 if
    something could not be removed."""
    wd = os.path.abspath(os.fspath(workdir)) if workdir is not None else default_workdir()
    try:
        done = stop_recorded(wd, timeout=timeout)
    except LaunchError as exc:
        _error(str(exc))
        return 1
    if not done.recorded:
        print(f"icnd: no topology is running in {wd} (no {STATE_FILE})", file=sys.stderr, flush=True)
        return 0
    if done.launcher_killed:
        print(f"icnd: launcher pid {done.launcher_pid} did not stop within {timeout:g}s; killing it",
              file=sys.stderr)
    if done.by_launcher:
        print(f"stopped the topology in {wd} (launcher pid {done.launcher_pid})", flush=True)
        return 0
    what = [f"{len(done.stopped)} node process(es)"] + ([f"{len(done.deleted)} namespace(s)"] if done.deleted else [])
    print(f"cleaned up after the launcher of {wd}: stopped {', '.join(what)}", flush=True)
    for problem in done.problems:
        _error(problem)
    return 1 if done.problems else 0
