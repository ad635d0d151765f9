#!/usr/bin/env python3
"""Compute-aware anycast benchmark (issue 17): calls split by the hosts' announced capacity.

Network (real ``icnd run`` processes on loopback, linked only by
``--neighbor``, link-state routing, UDP faces)::

    C (caller) --- R (router) --- H1 (function_workers 8)
                              \\-- H2 (function_workers 2)

``apps.functions:slow`` (``time.sleep(seconds)``: not pure, so nothing is
cached or memoized; capacity is workers, not CPU) is hosted with
``--function`` as ``/fn/nap`` on H1 and H2, H1 with ``--big-workers`` (8)
worker threads and H2 with ``--small-workers`` (2): combined capacity =
(8 + 2) / 10 ms = 1,000 calls/s.  Both hosts take far more calls than
they run (``function_max_jobs`` 512), so a host that is sent too many
queues them (no busy Nacks).  Every node gives ``/fn`` the load-balance
strategy; the choice between the hosts happens at R (C has one next hop).

A trio `icnd.Client` on C keeps ``--inflight`` (64) calls of
``slow(0.010, k)`` in flight (each task calls again as soon as its call
returned) for ``--warmup`` s, then ``--duration`` s measured.

Cases (one JSON line each, ``bench: "anycast"``):

- ``load-aware``: every node's default (``[routing] load_aware = true``):
  the hosts report capacity and load to their nodes, routing announces them,
  R's load-balance weighs them (docs/routing.md).  ``value``: calls/s in the
  measured window; ``split``: calls each host ran in the window (their
  ``fn_executions`` counters); ``share_big``: H1's share (capacity share:
  0.8); ``capacity``: combined capacity in calls/s; ``of_capacity``:
  value / capacity (target >= 0.8).
- ``load-blind`` (the baseline): the same run with load information
  disabled: ``[routing] load_aware = false`` on every node and R's ``/fn``
  under the ``round-robin`` strategy, which alternates between the hosts
  blind to announced figures, RTT and calls in flight: the capacity-blind
  even split the issue compares with.  The ``load-aware`` line carries
  ``ratio`` = load-aware / load-blind (target >= 1.8).
- ``rtt-only`` (information): announced figures ignored (``load_aware =
  false``) but R's load-balance keeps its own measurements (RTT, which
  includes queueing at the host, and calls in flight).  The ``load-aware``
  line carries ``ratio_rtt_only`` = load-aware / rtt-only: how much the
  announcements add to what a forwarder measures by itself in steady state.

Run: ``.venv/bin/python bench/anycast.py [--duration 10] [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

import trio  # noqa: E402

import icnd  # noqa: E402

PREFIX = "/fn/nap"
TARGET = "apps.functions:slow"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Net:
    """The four daemons of one case."""

    def __init__(self, workdir: str, opts: Any, case: str) -> None:
        self.workdir = workdir
        ports = {n: free_port() for n in ("c", "r", "h1", "h2")}
        links = {"c": ["r"], "r": ["c", "h1", "h2"], "h1": ["r"], "h2": ["r"]}
        workers = {"h1": opts.big_workers, "h2": opts.small_workers}
        self.sockets: dict[str, str] = {}
        self.procs: dict[str, Any] = {}
        for node, neighbours in links.items():
            conf = Path(workdir) / f"{node}.toml"
            strategy = "round-robin" if case == "load-blind" and node == "r" else "load-balance"
            lines = ['[strategies]', f'"/fn" = "{strategy}"', "", "[routing]",
                     f"load_aware = {'true' if case == 'load-aware' else 'false'}"]
            top = []
            if node in workers:
                top = [f"function_workers = {workers[node]}", "function_max_jobs = 512",
                       f'functions = [{{target = "{TARGET}", prefix = "{PREFIX}"}}]']
            conf.write_text("\n".join(top + lines) + "\n")
            sock = os.path.join(workdir, f"{node}.sock")
            argv = [sys.executable, "-m", "icnd", "run", "--config", str(conf), "--name", f"/node/{node}",
                    "--socket", sock, "--listen", f"udp://127.0.0.1:{ports[node]}"]
            for nb in neighbours:
                argv += ["--neighbor", f"udp://127.0.0.1:{ports[nb]}"]
            self.procs[node] = C.spawn(argv, log_path=os.path.join(workdir, f"{node}.log"))
            self.sockets[node] = sock

    def status(self, node: str) -> dict[str, Any]:
        return C.command(self.sockets[node], "status", "get", timeout=5.0)

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Every daemon answers; R routes /fn/nap to both hosts, each announcing a capacity; C routes it."""
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            for node, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{node} exited: {C.tail(os.path.join(self.workdir, node + '.log'))}")
            try:
                r_routes = [h for x in C.client_command(self.sockets["r"], "route", "list") if x["prefix"] == PREFIX
                            for h in x["nexthops"]]
                c_routes = [x for x in C.client_command(self.sockets["c"], "route", "list") if x["prefix"] == PREFIX]
                lsdb = C.client_command(self.sockets["r"], "routing", "status")["lsdb"]
                caps = {rec["origin"]: p.get("capacity") for rec in lsdb for p in rec["prefixes"]
                        if p["prefix"] == PREFIX}
                if len(r_routes) >= 2 and c_routes and all(caps.get(f"/node/{h}") for h in ("h1", "h2")):
                    return
                last = f"R routes {len(r_routes)}, C routes {len(c_routes)}, capacities {caps}"
            except (OSError, C.CommandError, icnd.Error) as exc:  # not up yet
                last = str(exc)
            time.sleep(0.1)
        raise RuntimeError(f"network not ready within {timeout:g}s: {last}")

    def executions(self) -> dict[str, int]:
        return {h: int(self.status(h).get("counters", {}).get("fn_executions", 0)) for h in ("h1", "h2")}

    def cpu(self) -> dict[str, float]:
        return {n: C.cpu_seconds(p.pid) for n, p in self.procs.items()}

    def stop(self) -> None:
        for proc in self.procs.values():
            C.stop(proc)


async def drive(sock: str, inflight: int, warmup: float, duration: float, sleep_s: float) -> dict[str, Any]:
    """A closed loop of `inflight` callers; calls completed (and failed) in the measured window."""
    done = 0
    failed: dict[str, int] = {}
    measuring = False
    latencies: list[float] = []
    async with icnd.connect(sock) as client:
        async def caller(k: int) -> None:
            nonlocal done
            i = 0
            while True:
                i += 1
                t = time.perf_counter()
                try:
                    await client.call(PREFIX, sleep_s, k * 1_000_000 + i, timeout=10)
                except icnd.Error as exc:
                    if measuring:
                        failed[type(exc).__name__] = failed.get(type(exc).__name__, 0) + 1
                    await trio.sleep(0.01)
                    continue
                if measuring:
                    done += 1
                    latencies.append(time.perf_counter() - t)

        async with trio.open_nursery() as nursery:
            for k in range(inflight):
                nursery.start_soon(caller, k)
            await trio.sleep(warmup)
            measuring = True
            t0 = time.perf_counter()
            await trio.sleep(duration)
            measuring = False
            elapsed = time.perf_counter() - t0
            nursery.cancel_scope.cancel()
    p50, p99 = C.latency_ms(latencies)
    return {"calls": done, "elapsed": elapsed, "failed": failed, "p50_ms": p50, "p99_ms": p99}


def run_case(opts: Any, case: str) -> dict[str, Any]:
    workdir = tempfile.mkdtemp(prefix="icnd-anycast-")
    net = Net(workdir, opts, case)
    try:
        net.wait_ready()
        before = net.executions()
        cpu0 = net.cpu()
        busy0, self0, t0 = C.machine_busy_seconds(), C.self_cpu_seconds(), time.monotonic()
        box: dict[str, Any] = {}

        async def main() -> None:
            # count host executions over the measured window only: snapshot when warm-up ends
            async with trio.open_nursery() as nursery:
                async def snap() -> None:
                    await trio.sleep(opts.warmup)
                    box["before"] = await trio.to_thread.run_sync(net.executions)
                    await trio.sleep(opts.duration)
                    box["after"] = await trio.to_thread.run_sync(net.executions)
                nursery.start_soon(snap)
                box["drive"] = await drive(net.sockets["c"], opts.inflight, opts.warmup, opts.duration,
                                           opts.sleep_ms / 1000)

        trio.run(main)
        cpu1 = net.cpu()
        wall = time.monotonic() - t0
        other = (C.machine_busy_seconds() - busy0) - (C.self_cpu_seconds() - self0) \
            - sum(cpu1[n] - cpu0[n] for n in cpu1)
        d = box["drive"]
        b, a = box.get("before", before), box.get("after", net.executions())
        split = {h: a[h] - b[h] for h in a}
        capacity = (opts.big_workers + opts.small_workers) / (opts.sleep_ms / 1000)
        value = d["calls"] / d["elapsed"]
        total = sum(split.values()) or 1
        line = {"bench": "anycast", "case": case, "value": round(value, 1), "unit": "calls/s",
                "split": split, "share_big": round(split["h1"] / total, 3),
                "capacity_share_big": round(opts.big_workers / (opts.big_workers + opts.small_workers), 3),
                "capacity": capacity, "of_capacity": round(value / capacity, 3),
                "inflight": opts.inflight, "duration_s": opts.duration, "p50_ms": round(d["p50_ms"], 2),
                "p99_ms": round(d["p99_ms"], 2), "failed": d["failed"],
                "cpu_s": {n: round(cpu1[n] - cpu0[n], 2) for n in cpu1},
                # CPU other processes used meanwhile, in cores: above ~0.3 the figures are disturbed
                "other_cpu": round(max(other, 0.0) / wall, 2), "contended": other / wall > 0.3}
        C.log(f"{case}: {value:.0f} calls/s ({value / capacity:.0%} of {capacity:.0f}), split {split}, "
              f"p50 {d['p50_ms']:.1f} ms, failed {d['failed']}, other processes {max(other, 0) / wall:.2f} cores",
              opts.quiet)
        return line
    finally:
        net.stop()
        if opts.keep:
            C.log(f"logs kept in {workdir}", opts.quiet)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--warmup", type=float, default=3.0)
    p.add_argument("--inflight", type=int, default=64)
    p.add_argument("--big-workers", type=int, default=8)
    p.add_argument("--small-workers", type=int, default=2)
    p.add_argument("--sleep-ms", type=float, default=10.0)
    p.add_argument("--cases", default="load-aware,load-blind,rtt-only")
    p.add_argument("--quick", action="store_true", help="4 s measured, 2 s warm-up")
    p.add_argument("--keep", action="store_true", help="keep the daemons' logs")
    p.add_argument("--quiet", action="store_true")
    opts = p.parse_args()
    if opts.quick:
        opts.duration, opts.warmup = 4.0, 2.0
    lines = []
    for case in opts.cases.split(","):
        if case not in ("load-aware", "load-blind", "rtt-only"):
            p.error(f"unknown case {case!r}")
        lines.append(run_case(opts, case))
    by = {line["case"]: line for line in lines}
    if "load-aware" in by and "load-blind" in by:
        aware, blind = by["load-aware"], by["load-blind"]
        ratio = aware["value"] / blind["value"] if blind["value"] else None
        aware.update(baseline=blind["value"], ratio=round(ratio, 2) if ratio else None, target_ratio_min=1.8,
                     target_of_capacity_min=0.8,
                     meets_target=bool(ratio and ratio >= 1.8 and aware["of_capacity"] >= 0.8))
    if "load-aware" in by and "rtt-only" in by and by["rtt-only"]["value"]:
        by["load-aware"]["ratio_rtt_only"] = round(by["load-aware"]["value"] / by["rtt-only"]["value"], 2)
    for line in lines:
        C.emit_json(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
