#!/usr/bin/env python3
"""Remote-call benchmark: a small named-function call through icnd, next to a
gRPC unary call of the same function measured in the same run.

Cases (icnd and gRPC, the same function ``apps.functions:add``, the same
argument and result encoding ``icnd.compute.values.encode_value``):

- ``latency-p50`` (p99 in the same line): ``add(1, 2)`` called
  sequentially, one call at a time, ``--calls`` times (default 1000, quick
  300) after ``--warmup-calls`` unmeasured ones; wall time of each call as
  the application sees it (``await client.call("/fn/add", 1, 2)``, resp. the
  gRPC stub returning the decoded result);
- ``throughput-64``: a closed loop of ``--inflight`` (64) concurrent tasks,
  each calling ``add(1, 2)`` again as soon as its previous call returned,
  for ``--warmup`` s (default 1, quick 0.5) and then ``--duration`` s
  (default 5, quick 1.5): calls/s = calls completed in the measured window
  / its length; failed calls (icnd.Timeout, Nacked, RpcError...) are counted
  apart and never as calls;
- ``latency-distinct-p50`` (information, no target): the sequential case
  with a different argument each call (``add(i, 0.5)``). ``add`` is declared
  ``pure``: for the repeated ``add(1, 2)`` the icnd host answers from its
  memo after the handshake and the function never runs again, while here it
  runs every time (in the host's worker thread pool). gRPC runs it every
  time in both;
- ``throughput-64-distinct`` (information, no target): the throughput case
  with a different argument each call (``add(k, 0.5)``, each result
  checked), so the host runs the function every call; its baseline is the
  gRPC throughput case, which runs ``add`` every call anyway.

- ``latency-p50-schema`` and ``throughput-64-schema``: the ``latency-p50``
  and ``throughput-64`` cases again on a second pair of daemons where the
  host node applies a trust schema (``--trust``; both nodes' keys certified
  by the bench's anchor; a rule for the nodes' link-state routing Data,
  which the host checks too) and the caller connects with a certified key and the same
  schema (``connect(key=, cert=, trust=)``): the host checks every caller's
  certificate chain (cached after the first call), the caller every answer
  that is not session-MACed.  Their ratios are against the same icnd case
  without a schema in this run (``baseline_case``; issue #16: calls/s at
  most 10% lower).

icnd side: a two-node topology (``icnd.topology.launch``: one ``icnd run``
process per node on loopback, a UDP link between them), ``client`` and
``host``, with ``apps.functions:add=/fn/add`` hosted by the host daemon
itself (``--function``: an in-process client on a memory face, sync
callables in the daemon's worker threads), default node configuration
(``function_max_jobs`` 8, ``function_workers`` 4).  The caller is a trio
`icnd.Client` of the client node in this process.  ``add(1, 2)`` is a small
call: one round trip, the arguments and the caller's proof of identity in
the trigger, the result inline in its Data.  The caller's first call is
Ed25519-signed and offers a session key; the host's answer grants it, and
every later call is proven by an HMAC under that session and answered
HMAC'd (see docs/functions.md, "Session keys"): the measured calls are
these, as a long-lived caller's are.

gRPC side (the baseline): a grpcio server process on 127.0.0.1 serving one
generic unary method (``grpc.method_handlers_generic_handler``, raw bytes,
no protoc): the request is the msgpack list of ``encode_value(arg)`` (what
an icnd pure call carries), the reply ``encode_value(result)``.  Server:
``grpc.server`` with a ``ThreadPoolExecutor`` of ``--grpc-workers`` (10)
threads, the canonical Python server, so the function runs in a worker
thread as a sync icnd function does (``--grpc-server aio``: a ``grpc.aio``
server, the handler in its event loop).  Client: a sync stub for the
sequential cases, a ``grpc.aio`` channel (64 asyncio tasks) for the
throughput case.  grpcio is imported lazily and only needed for the
baseline: without it the icnd figures are printed without ratios (no
baseline is ever invented) with how to install it; developed with grpcio
1.85.1 (``.venv/bin/pip install grpcio``).

``ratio`` = icnd / gRPC in both cases, so that it reads like the targets:
latency p50 ratio <= 3, throughput ratio >= 0.5 (``meets_target``).

CPU placement (2 cores), as in bench/forward.py: the servers (both icnd
daemons, resp. the gRPC server) on one core, this process (the callers) on
the other (``--no-pin``: nothing pinned; every thread of a process is
pinned).  Each case also reports, from /proc, the CPU time the processes
involved spent per call (``cpu_ms_per_call``, and per process in
``cpu_ms_per_call_by``: the two daemons + this process, resp. the gRPC
server + this process), the CPU other processes on the machine used
meanwhile (``other_cpu``, share of a core; ``contended`` above 0.25: the
numbers are disturbed, marked ``(!)`` in the table), and for icnd the
client node's packet counters per call (``client_node_per_call``:
``interests_in`` 1 = the trigger; ``nacks_in`` > 0 in the throughput case:
the host refused triggers with no-resources beyond ``function_max_jobs``
and the callers backed off), and the host node's function counters per
call (``host_per_call``: ``fn_session_calls`` 1 = every call proven by a
session MAC, ``fn_signed_calls`` by an Ed25519 signature,
``fn_executions`` the function ran: 0 for the memoized pure ``add(1, 2)``).

Output: progress on stderr; on stdout a table, then one JSON line per case
(``--json-only``: only the JSON lines).  ``--profile`` then profiles the
icnd call path: two fresh daemons of the same topology, each ``icnd run``
under cProfile timed by its main thread's CPU time (started after the
warm-up by SIGUSR1, written at SIGUSR2), and this process under cProfile,
first during sequential calls, then the daemons again under 64 calls in
flight; hottest functions and Python function calls per call on stderr.
Runtime ~25 s (``--quick`` ~12 s), plus ~15 s with ``--profile``.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/_common.py (it adds the checkout)
import _common as C  # noqa: E402

FN = "/fn/add"
TARGET = "apps.functions:add"
GRPC_SERVICE = "icnd.bench.Functions"
GRPC_METHOD = "Add"
GRPC_PATH = f"/{GRPC_SERVICE}/{GRPC_METHOD}"
GRPCIO_DEVELOPED_WITH = "1.85.1"
TARGET_LATENCY_RATIO = 3.0  # icnd p50 <= 3 x gRPC p50
TARGET_THROUGHPUT_RATIO = 0.5  # icnd calls/s >= 0.5 x gRPC calls/s
CALL_TIMEOUT = 10.0
CONTENDED = 0.25  # other processes using more than this share of a core meanwhile: numbers disturbed
COUNTER_KEYS = ("interests_out", "data_in", "nacks_in", "interests_in", "data_out")
HOST_COUNTER_KEYS = ("fn_signed_calls", "fn_session_calls", "fn_session_unknown", "fn_executions")


# --- results ----------------------------------------------------------------------------------------


@dataclass
class Latency:
    samples: list[float] = field(default_factory=list)  # seconds
    errors: Counter = field(default_factory=Counter)
    cpu: dict[str, float] = field(default_factory=dict)  # CPU s of each process involved while measuring
    counters: dict[str, int] = field(default_factory=dict)  # client node, delta

    def p(self) -> tuple[float, float]:
        return C.latency_ms(self.samples)

    def cpu_ms_per_call(self) -> float | None:
        return _ms_per_call(sum(_ours(self.cpu).values()), len(self.samples))

    def cpu_by_process(self) -> dict[str, float | None]:
        return {k: _ms_per_call(v, len(self.samples)) for k, v in _ours(self.cpu).items()}

    def other_cpu(self) -> float | None:
        return _other_cpu(self.cpu)


@dataclass
class Throughput:
    calls: int = 0  # completed in the measured window
    all_calls: int = 0  # completed since the loop started (warm-up included): normalizes `counters`
    elapsed: float = 0.0
    samples: list[float] = field(default_factory=list)  # latencies under load, seconds
    errors: Counter = field(default_factory=Counter)
    cpu: dict[str, float] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.calls / self.elapsed if self.elapsed > 0 else 0.0

    def cpu_ms_per_call(self) -> float | None:
        return _ms_per_call(sum(_ours(self.cpu).values()), self.calls)

    def cpu_by_process(self) -> dict[str, float | None]:
        return {k: _ms_per_call(v, self.calls) for k, v in _ours(self.cpu).items()}

    def other_cpu(self) -> float | None:
        return _other_cpu(self.cpu)


@dataclass
class Side:
    name: str
    latency: Latency | None = None
    distinct: Latency | None = None
    throughput: Throughput | None = None
    throughput_distinct: Throughput | None = None  # icnd only (gRPC runs add every call anyway)
    error: str = ""
    note: str = ""


def _ms_per_call(seconds: float, calls: int) -> float | None:
    return round(1000.0 * seconds / calls, 3) if calls else None


def _cpu(pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds so far of each process in `pids` (label -> pid) and of this one ("caller"),
    plus "_machine" (busy CPU seconds of the whole machine) and "_wall" (perf_counter)."""
    out = {label: C.cpu_seconds(pid) for label, pid in pids.items()}
    out["caller"] = C.self_cpu_seconds()
    out["_machine"] = C.machine_busy_seconds()
    out["_wall"] = time.perf_counter()
    return out


def _ours(cpu: dict[str, float]) -> dict[str, float]:
    return {k: v for k, v in cpu.items() if not k.startswith("_")}


def _other_cpu(cpu: dict[str, float]) -> float | None:
    """Share of a core that other processes on the machine used meanwhile (None: unknown)."""
    wall = cpu.get("_wall", 0.0)
    if wall <= 0 or "_machine" not in cpu:
        return None
    return max(0.0, cpu["_machine"] - sum(_ours(cpu).values())) / wall


def _cpu_delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before.get(k, 0.0) for k in after}


def pin_threads(pid: int, cpus: set[int] | None) -> None:
    """Pin every thread of `pid` (os.sched_setaffinity(pid) moves only its main thread)."""
    if not cpus:
        return
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        tids = [pid]
    for tid in tids:
        C.pin(tid, cpus)


def _per_call(counters: dict[str, int], calls: int, keys: tuple[str, ...] = COUNTER_KEYS) -> dict[str, float]:
    return {k: round(v / calls, 2) for k, v in counters.items() if k in keys} if calls else {}


# --- the measurement loops (one for trio, one for asyncio) ----------------------------------------


async def trio_sequential(call: Callable[[int], Awaitable[Any]], n: int, expect: Callable[[int], Any],
                          cpu_pids: dict[str, int]) -> Latency:
    import icnd

    lat = Latency()
    cpu0 = _cpu(cpu_pids)
    for i in range(n):
        t = time.perf_counter()
        try:
            got = await call(i)
        except icnd.Error as exc:
            lat.errors[type(exc).__name__] += 1
            continue
        lat.samples.append(time.perf_counter() - t)
        if got != expect(i):
            raise RuntimeError(f"wrong result {got!r} for call {i} (expected {expect(i)!r})")
    lat.cpu = _cpu_delta(_cpu(cpu_pids), cpu0)
    return lat


async def trio_closed_loop(call: Callable[[], Awaitable[Any]], inflight: int, warmup: float, duration: float,
                           cpu_pids: dict[str, int]) -> Throughput:
    import trio

    import icnd

    res = Throughput()
    t0 = time.perf_counter()
    start, stop = t0 + warmup, t0 + warmup + duration
    cpu_at: list[dict[str, float]] = []

    async def worker() -> None:
        while True:
            t = time.perf_counter()
            try:
                await call()
            except icnd.Error as exc:
                if start <= time.perf_counter() < stop:
                    res.errors[type(exc).__name__] += 1
                continue
            end = time.perf_counter()
            res.all_calls += 1
            if start <= end < stop:
                res.calls += 1
                res.samples.append(end - t)

    async def clock(nursery: trio.Nursery) -> None:
        await trio.sleep(max(0.0, start - time.perf_counter()))
        cpu_at.append(_cpu(cpu_pids))
        await trio.sleep(max(0.0, stop - time.perf_counter()))
        cpu_at.append(_cpu(cpu_pids))
        nursery.cancel_scope.cancel()  # calls in flight at the end are abandoned, not counted

    async with trio.open_nursery() as nursery:
        nursery.start_soon(clock, nursery)
        for _ in range(inflight):
            nursery.start_soon(worker)
    res.elapsed = duration
    res.cpu = _cpu_delta(cpu_at[1], cpu_at[0]) if len(cpu_at) == 2 else {}
    return res


async def asyncio_closed_loop(call: Callable[[], Awaitable[Any]], inflight: int, warmup: float, duration: float,
                              cpu_pids: dict[str, int], errors_of: tuple[type[BaseException], ...]) -> Throughput:
    import asyncio

    res = Throughput()
    t0 = time.perf_counter()
    start, stop = t0 + warmup, t0 + warmup + duration
    cpu_at: list[dict[str, float]] = []

    async def worker() -> None:
        while True:
            t = time.perf_counter()
            try:
                await call()
            except errors_of as exc:
                if start <= time.perf_counter() < stop:
                    res.errors[type(exc).__name__] += 1
                continue
            end = time.perf_counter()
            res.all_calls += 1
            if start <= end < stop:
                res.calls += 1
                res.samples.append(end - t)

    tasks = [asyncio.ensure_future(worker()) for _ in range(inflight)]
    try:
        await asyncio.sleep(max(0.0, start - time.perf_counter()))
        cpu_at.append(_cpu(cpu_pids))
        await asyncio.sleep(max(0.0, stop - time.perf_counter()))
        cpu_at.append(_cpu(cpu_pids))
    finally:
        for t in tasks:
            t.cancel()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    for outcome in outcomes:  # a worker that died of anything but the cancellation: a bug, not a number
        if isinstance(outcome, BaseException) and not isinstance(outcome, asyncio.CancelledError):
            raise outcome
    res.elapsed = duration
    res.cpu = _cpu_delta(cpu_at[1], cpu_at[0])
    return res


# --- icnd -----------------------------------------------------------------------------------------


def topology_spec() -> Any:
    from icnd.topology import parse

    return parse({
        "nodes": {"client": {}, "host": {"functions": [f"{TARGET}={FN}"]}},
        "links": [{"ends": ["client", "host"], "transport": "udp"}],
    }, source="bench/rmi.py client-host")


async def _counters(client: Any, host: Any) -> dict[str, int]:
    """The client node's packet counters and the host node's function counters."""
    try:
        counters = (await client.status()).get("counters", {})
        host_counters = (await host.status()).get("counters", {})
    except Exception:
        return {}
    return {**{k: int(counters.get(k, 0)) for k in COUNTER_KEYS},
            **{k: int(host_counters.get(k, 0)) for k in HOST_COUNTER_KEYS}}


def _delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in after}


async def icnd_side(opts: Any) -> Side:
    from icnd.topology import launch

    side = Side("icnd")
    C.log("icnd: launching client -- host (udp link), host serving "
          f"{TARGET}={FN}...", opts.quiet)
    async with launch(topology_spec(), log_level="warning") as net:
        pids = {"client-daemon": net["client"].pid, "host-daemon": net["host"].pid}
        for pid in pids.values():
            pin_threads(pid, opts.server_cpus)
        c = await net.connect("client")
        h = await net.connect("host")
        status = await c.status()
        if status.get("pid") != pids["client-daemon"]:
            raise RuntimeError("connected to the wrong daemon")

        async def call12(_: int = 0) -> Any:
            return await c.call(FN, 1, 2, timeout=CALL_TIMEOUT)

        async def call_distinct(i: int) -> Any:
            return await c.call(FN, opts.distinct_base + i, 0.5, timeout=CALL_TIMEOUT)

        t = time.perf_counter()
        first = await call12()
        C.log(f"  first call: add(1, 2) = {first!r} in {1000 * (time.perf_counter() - t):.1f} ms "
              "(the caller fetches the host's key once)", opts.quiet)
        for _ in range(opts.warmup_calls):
            await call12()

        before = await _counters(c, h)
        side.latency = await trio_sequential(call12, opts.calls, lambda i: 3, pids)
        side.latency.counters = _delta(await _counters(c, h), before)
        p50, p99 = side.latency.p()
        C.log(f"  sequential add(1, 2): p50 {p50:.3f} ms, p99 {p99:.3f} ms over {len(side.latency.samples)} calls"
              + _errors_note(side.latency.errors) + _cpu_note(side.latency), opts.quiet)

        before = await _counters(c, h)
        side.distinct = await trio_sequential(call_distinct, opts.distinct_calls,
                                              lambda i: opts.distinct_base + i + 0.5, pids)
        side.distinct.counters = _delta(await _counters(c, h), before)
        p50, p99 = side.distinct.p()
        C.log(f"  sequential add(i, 0.5), distinct arguments: p50 {p50:.3f} ms, p99 {p99:.3f} ms "
              f"over {len(side.distinct.samples)} calls" + _errors_note(side.distinct.errors)
              + _cpu_note(side.distinct), opts.quiet)

        before = await _counters(c, h)
        side.throughput = await trio_closed_loop(call12, opts.inflight, opts.warmup, opts.duration, pids)
        side.throughput.counters = _delta(await _counters(c, h), before)
        C.log(f"  {opts.inflight} in flight: {side.throughput.rate:,.0f} calls/s ({side.throughput.calls} in "
              f"{side.throughput.elapsed:g} s)" + _errors_note(side.throughput.errors)
              + _cpu_note(side.throughput) + f"; client node counters: {side.throughput.counters}", opts.quiet)

        fresh = itertools.count(opts.distinct_base + 1_000_000)

        async def call_fresh() -> Any:
            x = next(fresh)
            got = await c.call(FN, x, 0.5, timeout=CALL_TIMEOUT)
            if got != x + 0.5:
                raise RuntimeError(f"icnd: add({x}, 0.5) returned {got!r}")
            return got

        before = await _counters(c, h)
        side.throughput_distinct = await trio_closed_loop(call_fresh, opts.inflight, opts.warmup, opts.duration, pids)
        side.throughput_distinct.counters = _delta(await _counters(c, h), before)
        C.log(f"  {opts.inflight} in flight, distinct arguments: {side.throughput_distinct.rate:,.0f} calls/s"
              + _errors_note(side.throughput_distinct.errors) + _cpu_note(side.throughput_distinct), opts.quiet)
    return side


def make_trust(workdir: str) -> dict[str, str]:
    """An anchor, both nodes' and a caller's keys certified by it, and a
    schema: the host's answers must chain to the anchor, and so must callers
    and the nodes' routing Data (records, hello proofs: without a rule for
    those the host refuses the client node and has no route back to it)."""
    from icnd.name import Name
    from icnd.security import Ed25519Key
    from icnd.keyfiles import save_certificate
    from icnd.trust import issue, self_signed

    anchor = Ed25519Key.generate(Name("/bench"))
    files = {"anchor": os.path.join(workdir, "anchor.cert"), "schema": os.path.join(workdir, "schema.toml")}
    now = time.time()
    save_certificate(self_signed(anchor, now=now), files["anchor"])
    for who, identity in (("host", "/node/host"), ("client", "/node/client"), ("alice", "/bench/alice")):
        # a node's key under its routable /node/<name>: callers fetch its certificate there
        key = Ed25519Key.generate(Name(identity))
        files[f"{who}.key"] = os.path.join(workdir, f"{who}.key")
        files[f"{who}.cert"] = os.path.join(workdir, f"{who}.cert")
        with open(files[f"{who}.key"], "wb") as f:
            f.write(key.to_bytes())
        save_certificate(issue(anchor, key, now=now), files[f"{who}.cert"])
    with open(files["schema"], "w", encoding="utf-8") as f:
        f.write('anchors = ["anchor.cert"]\n'
                '[[rule]]\nname = "answers"\ndata = "/fn/<**>"\nsigner = "/node/host/KEY/<*>"\n'
                '[[rule]]\nname = "node-routing"\ndata = "/node/<n>/routing/<**>"\nsigner = "/node/<n>/KEY/<*>"\n'
                '[[rule]]\nname = "node-certs"\ndata = "/node/<n>/KEY/<**>"\nsigner = "/bench/KEY/<*>"\n'
                '[[rule]]\nname = "user-certs"\ndata = "/bench/<who>/KEY/<**>"\nsigner = "/bench/KEY/<*>"\n')
    return files


async def icnd_schema_side(opts: Any) -> Side:
    """The sequential and throughput cases again, under a trust schema: the host
    node applies it to every caller (whose certificate chain it checks), the
    caller to the host's answers."""
    import icnd
    from icnd.topology import launch, parse

    side = Side("icnd-schema")
    workdir = tempfile.mkdtemp(prefix="icnd-rmi-trust-")
    try:
        t = make_trust(workdir)
        spec = parse({
            "nodes": {"client": {"key": t["client.key"], "cert": t["client.cert"]},
                      "host": {"functions": [f"{TARGET}={FN}"], "key": t["host.key"], "cert": t["host.cert"],
                               "trust": t["schema"]}},
            "links": [{"ends": ["client", "host"], "transport": "udp"}],
        }, source="bench/rmi.py client-host, trust schema")
        C.log("icnd under a trust schema: launching client -- host again...", opts.quiet)
        async with launch(spec, log_level="warning") as net:
            pids = {"client-daemon": net["client"].pid, "host-daemon": net["host"].pid}
            for pid in pids.values():
                pin_threads(pid, opts.server_cpus)
            h = await net.connect("host")
            async with icnd.connect(net["client"].socket, key=t["alice.key"], cert=t["alice.cert"],
                                    trust=t["schema"]) as c:
                async def call12(_: int = 0) -> Any:
                    return await c.call(FN, 1, 2, timeout=CALL_TIMEOUT)

                for _ in range(opts.warmup_calls + 1):
                    await call12()
                before = await _counters(c, h)
                side.latency = await trio_sequential(call12, opts.calls, lambda i: 3, pids)
                side.latency.counters = _delta(await _counters(c, h), before)
                p50, p99 = side.latency.p()
                C.log(f"  sequential add(1, 2) under the schema: p50 {p50:.3f} ms, p99 {p99:.3f} ms"
                      + _errors_note(side.latency.errors), opts.quiet)
                before = await _counters(c, h)
                side.throughput = await trio_closed_loop(call12, opts.inflight, opts.warmup, opts.duration, pids)
                side.throughput.counters = _delta(await _counters(c, h), before)
                C.log(f"  {opts.inflight} in flight under the schema: {side.throughput.rate:,.0f} calls/s"
                      + _errors_note(side.throughput.errors), opts.quiet)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return side


def schema_lines(plain: Side, schema: Side, opts: Any) -> list[dict]:
    """The schema cases, each against the same case without a schema in this run."""
    lines: list[dict] = []
    if schema.error:
        for case in ("latency-p50-schema", f"throughput-{opts.inflight}-schema"):
            lines.append({"bench": "rmi", "case": case, "value": None, "error": schema.error})
        return lines
    if schema.latency is not None and schema.latency.samples:
        p50, p99 = schema.latency.p()
        line: dict[str, Any] = {"bench": "rmi", "case": "latency-p50-schema", "value": _r(p50), "unit": "ms",
                                "p99": _r(p99), "calls": len(schema.latency.samples),
                                "failed": sum(schema.latency.errors.values())}
        if plain.latency is not None and plain.latency.samples:
            b50 = plain.latency.p()[0]
            line.update(baseline=_r(b50), ratio=_r(p50 / b50, 3), baseline_case="latency-p50 (icnd, no schema)")
        line.update(cpu_ms_per_call=schema.latency.cpu_ms_per_call())
        lines.append(line)
    if schema.throughput is not None:
        tp = schema.throughput
        line = {"bench": "rmi", "case": f"throughput-{opts.inflight}-schema", "value": round(tp.rate, 1),
                "unit": "calls/s", "calls": tp.calls, "failed": sum(tp.errors.values())}
        if plain.throughput is not None and plain.throughput.calls:
            line.update(baseline=round(plain.throughput.rate, 1), ratio=_r(tp.rate / plain.throughput.rate, 3),
                        baseline_case=f"throughput-{opts.inflight} (icnd, no schema)",
                        target_ratio_min=0.9, meets_target=tp.rate / plain.throughput.rate >= 0.9)
        line.update(cpu_ms_per_call=tp.cpu_ms_per_call())
        lines.append(line)
    return lines


def _cpu_note(res: Latency | Throughput) -> str:
    by = res.cpu_by_process()
    if not by:
        return ""
    other = res.other_cpu()
    return "; CPU ms/call: " + ", ".join(f"{k} {v:.3f}" for k, v in by.items() if v is not None) + \
        f" (total {res.cpu_ms_per_call():.3f})" + \
        (f"; other processes {other:.0%} of a core" + (" (CONTENDED)" if other > CONTENDED else "")
         if other is not None else "")


def _errors_note(errors: Counter) -> str:
    return ("; failed: " + ", ".join(f"{k} x{v}" for k, v in errors.most_common())) if errors else ""


# --- gRPC -----------------------------------------------------------------------------------------


def grpc_available() -> bool:
    try:
        return importlib.util.find_spec("grpc") is not None
    except (ImportError, ValueError):
        return False


def _make_invoke() -> Callable[[bytes], bytes]:
    """What the gRPC server does per call: decode the arguments, run add, encode the result."""
    import msgpack

    from apps.functions import add
    from icnd.compute.values import decode_value, encode_value

    unpackb = msgpack.unpackb

    def invoke(request: bytes) -> bytes:
        args = [decode_value(b) for b in unpackb(request, raw=False, max_array_len=64)]
        return encode_value(add(*args))

    return invoke


def grpc_server_main(kind: str, workers: int) -> None:
    """Child process: serve GRPC_PATH on 127.0.0.1 until SIGTERM; print 'READY <port>'."""
    import grpc

    invoke = _make_invoke()  # imports the function before READY, as the daemon does
    if kind == "sync":
        import threading
        from concurrent.futures import ThreadPoolExecutor

        handler = grpc.unary_unary_rpc_method_handler(lambda req, ctx: invoke(req))  # raw bytes both ways
        server = grpc.server(ThreadPoolExecutor(max_workers=workers))
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(GRPC_SERVICE, {GRPC_METHOD: handler}),))
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        done = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: done.set())
        print(f"READY {port}", flush=True)
        done.wait()
        server.stop(0)
        return

    import asyncio

    async def run() -> None:
        async def handle(req: bytes, ctx: Any) -> bytes:
            return invoke(req)

        server = grpc.aio.server()
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            GRPC_SERVICE, {GRPC_METHOD: grpc.unary_unary_rpc_method_handler(handle)}),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        print(f"READY {port}", flush=True)
        await stop.wait()
        await server.stop(0)

    asyncio.run(run())


def grpc_side(opts: Any, workdir: str) -> Side:
    side = Side("grpc")
    log_path = os.path.join(workdir, "grpc-server.log")
    C.log(f"gRPC: starting a grpcio server process ({opts.grpc_server}"
          + (f", {opts.grpc_workers} worker threads" if opts.grpc_server == "sync" else "") + ")...", opts.quiet)
    # spawned before this process imports grpc (no fork after grpc's threads exist)
    proc = C.spawn([sys.executable, str(Path(__file__).resolve()), "--grpc-server-process", opts.grpc_server,
                    "--grpc-workers", str(opts.grpc_workers)],
                   log_path=log_path, cpus=opts.server_cpus, stdout=subprocess.PIPE)
    try:
        line = C.read_line(proc, 30.0)
        if not line or not line.startswith("READY "):
            raise RuntimeError(f"the gRPC server did not start: {line!r} {C.tail(log_path, 5)}")
        port = int(line.split()[1])
        pin_threads(proc.pid, opts.server_cpus)
        _grpc_measure(opts, side, f"127.0.0.1:{port}", {"grpc-server": proc.pid})
        import grpc

        side.note = f"grpcio {grpc.__version__}, {opts.grpc_server} server"
    finally:
        C.stop(proc)
    return side


def _grpc_measure(opts: Any, side: Side, target: str, pids: dict[str, int]) -> None:
    import asyncio

    import grpc
    import msgpack

    from icnd.compute.values import decode_value, encode_value

    def request(a: Any, b: Any) -> bytes:  # per call, as icnd's client encodes per call
        return msgpack.packb([encode_value(a), encode_value(b)], use_bin_type=True)

    with grpc.insecure_channel(target) as channel:
        stub = channel.unary_unary(GRPC_PATH)  # no serializers: bytes in, bytes out
        grpc.channel_ready_future(channel).result(timeout=10)

        def sequential(call: Callable[[int], Any], n: int, expect: Callable[[int], Any]) -> Latency:
            lat = Latency()
            cpu0 = _cpu(pids)
            for i in range(n):
                t = time.perf_counter()
                try:
                    got = call(i)
                except grpc.RpcError as exc:
                    lat.errors[str(exc.code())] += 1
                    continue
                lat.samples.append(time.perf_counter() - t)
                if got != expect(i):
                    raise RuntimeError(f"gRPC: wrong result {got!r} (expected {expect(i)!r})")
            lat.cpu = _cpu_delta(_cpu(pids), cpu0)
            return lat

        def call12(_: int = 0) -> Any:
            return decode_value(stub(request(1, 2), timeout=CALL_TIMEOUT))

        def call_distinct(i: int) -> Any:
            return decode_value(stub(request(opts.distinct_base + i, 0.5), timeout=CALL_TIMEOUT))

        for _ in range(max(opts.warmup_calls, 200)):
            call12()
        side.latency = sequential(call12, opts.calls, lambda i: 3)
        p50, p99 = side.latency.p()
        C.log(f"  sequential add(1, 2): p50 {p50:.3f} ms, p99 {p99:.3f} ms over {len(side.latency.samples)} calls"
              + _errors_note(side.latency.errors) + _cpu_note(side.latency), opts.quiet)
        side.distinct = sequential(call_distinct, opts.distinct_calls, lambda i: opts.distinct_base + i + 0.5)
        p50, p99 = side.distinct.p()
        C.log(f"  sequential add(i, 0.5), distinct arguments: p50 {p50:.3f} ms, p99 {p99:.3f} ms "
              f"over {len(side.distinct.samples)} calls" + _errors_note(side.distinct.errors)
              + _cpu_note(side.distinct), opts.quiet)

    async def load() -> Throughput:
        async with grpc.aio.insecure_channel(target) as channel:
            stub = channel.unary_unary(GRPC_PATH)
            await channel.channel_ready()

            async def call() -> Any:
                got = decode_value(await stub(request(1, 2), timeout=CALL_TIMEOUT))
                if got != 3:
                    raise RuntimeError(f"gRPC: wrong result {got!r}")
                return got

            return await asyncio_closed_loop(call, opts.inflight, opts.warmup, opts.duration, pids,
                                             (grpc.RpcError,))

    side.throughput = asyncio.run(load())
    C.log(f"  {opts.inflight} in flight: {side.throughput.rate:,.0f} calls/s ({side.throughput.calls} in "
          f"{side.throughput.elapsed:g} s)" + _errors_note(side.throughput.errors)
          + _cpu_note(side.throughput), opts.quiet)


# --- profiling (icnd) ------------------------------------------------------------------------------

# `icnd run` with a cProfile profiler timed by its main thread's CPU time (time.thread_time),
# so that a daemon waiting for the core it shares with the other one is not
# charged for it (a wall-clock sampler such as py-spy sees such waits as time
# spent in sendto/epoll).  SIGUSR1 starts profiling, SIGUSR2 stops it and
# writes the profile: start-up and warm-up are left out.
_PROFILED_DAEMON = (
    "import cProfile, signal, sys, time\n"
    "sys.path.insert(0, {repo!r})\n"
    "from icnd.cli import main\n"
    "prof = cProfile.Profile(time.thread_time)\n"
    "def stop(*_):\n"
    "    prof.disable()\n"
    "    prof.dump_stats({out!r})\n"
    "signal.signal(signal.SIGUSR1, lambda *_: prof.enable())\n"
    "signal.signal(signal.SIGUSR2, stop)\n"
    "main(sys.argv[1:])\n"
)


class ProfiledPair:
    """The two nodes of `topology_spec`, each `icnd run` under cProfile, linked and
    routed as the topology launcher does (UDP faces both ways, `derive_routes`)."""

    def __init__(self, workdir: str, cpus: set[int] | None) -> None:
        from icnd.topology import derive_routes

        self.workdir = workdir
        self.procs: dict[str, subprocess.Popen] = {}
        self.sockets: dict[str, str] = {}
        self.profiles: dict[str, str] = {}
        spec = topology_spec()
        for node in ("client", "host"):
            sock = os.path.join(workdir, f"{node}.sock")
            out = os.path.join(workdir, f"{node}.prof")
            argv = [sys.executable, "-c", _PROFILED_DAEMON.format(repo=str(C.REPO_DIR), out=out),
                    "run", "--name", f"/node/{node}", "--socket", sock, "--listen", "udp://127.0.0.1:0",
                    "--data-dir", os.path.join(workdir, node), "--log-level", "warning"]
            for entry in spec.nodes[node].functions:
                argv += ["--function", entry]
            self.procs[node] = C.spawn(argv, log_path=os.path.join(workdir, f"{node}.log"), cpus=cpus)
            self.sockets[node] = sock
            self.profiles[node] = out
        udp = {node: self._wait_ready(node) for node in self.procs}
        faces = {}
        for node, peer in (("client", "host"), ("host", "client")):
            faces[node] = C.command(self.sockets[node], "face", "create", uri=udp[peer])["id"]
        for node, routes in derive_routes(spec).items():
            for route in routes:
                C.command(self.sockets[node], "route", "add", prefix=route.prefix, face=faces[node], cost=route.cost)
        for proc in self.procs.values():
            pin_threads(proc.pid, cpus)

    def _wait_ready(self, node: str, timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.procs[node].poll() is not None:
                log_tail = C.tail(os.path.join(self.workdir, node + ".log"), 5)
                raise RuntimeError(f"profiled daemon {node} exited: {log_tail}")
            if os.path.exists(self.sockets[node]):
                try:
                    status = C.command(self.sockets[node], "status", "get", timeout=2.0)
                    return next(u for u in status["listen"] if u.startswith("udp://"))
                except (OSError, C.CommandError, StopIteration):
                    pass
            time.sleep(0.05)
        raise RuntimeError(f"profiled daemon {node} not ready within {timeout:g} s")

    def stop(self) -> None:
        for proc in self.procs.values():
            C.stop(proc)

    def signal(self, sig: int) -> None:
        for proc in self.procs.values():
            proc.send_signal(sig)

    def wait_profiles(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not all(os.path.exists(p) for p in self.profiles.values()):
            time.sleep(0.05)
        time.sleep(0.2)  # dump_stats may still be writing


def _print_stats(title: str, source: Any, calls: int, n: int = 22, wall: bool = False) -> None:
    import pstats

    out = sys.stderr
    try:
        stats = pstats.Stats(source, stream=out)
    except (OSError, TypeError) as exc:
        print(f"\n=== {title}: no profile ({exc}) ===", file=out)
        return
    total = getattr(stats, "total_tt", 0.0)
    fcalls = getattr(stats, "total_calls", 0)
    timed = "wall-clock ms per call, waits in epoll included" if wall else "profiled CPU ms per call"
    print(f"\n=== {title}: {calls} calls; {fcalls / max(calls, 1):,.0f} Python function calls and "
          f"{1000 * total / max(calls, 1):.3f} {timed} (cProfile's own overhead grows with the "
          "number of function calls: compare shares, not absolute times) ===", file=out)
    stats.sort_stats("tottime").print_stats(n)
    stats.sort_stats("cumulative").print_stats(n + 8)


async def _profile_phase(opts: Any, phase: str, seconds: float) -> None:
    import cProfile

    import trio

    import icnd

    workdir = tempfile.mkdtemp(prefix="icnd-rmi-prof-")
    pair = None
    calls = 0
    prof = cProfile.Profile()  # the caller has a core of its own: wall clock, cheaper
    try:
        pair = await trio.to_thread.run_sync(ProfiledPair, workdir, opts.server_cpus)
        async with icnd.connect(pair.sockets["client"]) as c:
            for _ in range(opts.warmup_calls):
                await c.call(FN, 1, 2, timeout=CALL_TIMEOUT)

            async def call12(_: int = 0) -> Any:
                return await c.call(FN, 1, 2, timeout=CALL_TIMEOUT)

            pair.signal(signal.SIGUSR1)
            await trio.sleep(0.1)
            prof.enable()
            if phase == "sequential":
                t_end = time.perf_counter() + seconds
                while time.perf_counter() < t_end:
                    await call12()
                    calls += 1
                note = f"{calls} sequential calls in {seconds:g} s"
            else:
                res = await trio_closed_loop(call12, opts.inflight, 0.0, seconds, {})
                calls = res.all_calls
                note = f"{opts.inflight} in flight: {res.rate:,.0f} calls/s" + _errors_note(res.errors)
            prof.disable()
            pair.signal(signal.SIGUSR2)
            await trio.to_thread.run_sync(pair.wait_profiles)
        C.log(f"  {note} (under cProfile)", False)
    finally:
        if pair is not None:
            await trio.to_thread.run_sync(pair.stop)
    assert pair is not None
    for node in ("client", "host"):
        _print_stats(f"{node}-node daemon under cProfile (CPU time), {phase}", pair.profiles[node], calls)
    if phase == "sequential":
        _print_stats(f"caller (this process) under cProfile, {phase}", prof, calls, wall=True)
    shutil.rmtree(workdir, ignore_errors=True)


async def profile_icnd(opts: Any) -> None:
    """Where the CPU of a call goes: both daemons and the caller under cProfile (CPU time)."""
    seconds = 2.0 if opts.quick else 4.0
    for phase in ("sequential", f"{opts.inflight}-in-flight"):
        C.log(f"\nprofile: {seconds:g} s of {phase} add(1, 2), both daemons (fresh) and the caller under cProfile...",
              False)
        await _profile_phase(opts, phase, seconds)


# --- output -------------------------------------------------------------------------------------------


def _r(v: float | None, nd: int = 3) -> float | None:
    return None if v is None or v != v else round(v, nd)


def _contention(line: dict, res: Latency | Throughput, base: Latency | Throughput | None) -> bool:
    """Record the CPU other processes used meanwhile; True if either side was disturbed."""
    other = res.other_cpu()
    bother = base.other_cpu() if base is not None else None
    line.update(other_cpu=_r(other, 2), baseline_other_cpu=_r(bother, 2))
    contended = any(o is not None and o > CONTENDED for o in (other, bother))
    line["contended"] = contended
    return contended


def build_lines(icnd: Side, grpc: Side | None, opts: Any) -> tuple[list[dict], list[str]]:
    lines: list[dict] = []
    rows: list[str] = []
    base_ok = grpc is not None and not grpc.error

    def row(label: str, v: str, b: str, ratio: float | None, target: str, meets: bool | None,
            contended: bool = False) -> None:
        r = f"{ratio:.2f}" if ratio is not None else "-"
        verdict = "" if meets is None else ("met" if meets else "MISSED")
        if contended:
            verdict += " (!)"
        rows.append(f"{label:<28} {v:>12} {b:>12} {r:>7}  {target:<7} {verdict}")

    for case, attr, target in (("latency-p50", "latency", TARGET_LATENCY_RATIO),
                               ("latency-distinct-p50", "distinct", None)):
        lat: Latency | None = getattr(icnd, attr)
        line: dict[str, Any] = {"bench": "rmi", "case": case, "unit": "ms"}
        if lat is None or not lat.samples:
            line.update(value=None, error=icnd.error or "no successful call")
            lines.append(line)
            row(case, "FAILED", "-", None, "", None)
            continue
        p50, p99 = lat.p()
        line.update(value=_r(p50), p99=_r(p99), calls=len(lat.samples), failed=sum(lat.errors.values()))
        blat: Latency | None = getattr(grpc, attr) if base_ok else None
        ratio = None
        meets = None
        bp50 = bp99 = None
        if blat is not None and blat.samples:
            bp50, bp99 = blat.p()
            ratio = p50 / bp50
            line.update(baseline=_r(bp50), ratio=_r(ratio, 2), baseline_p99=_r(bp99), p99_ratio=_r(p99 / bp99, 2))
        if target is not None:
            line["target_ratio_max"] = target
            if ratio is not None:
                meets = ratio <= target
                line["meets_target"] = meets
        else:
            line["info"] = "distinct arguments each call: the pure function runs every time (no host memo)"
        line.update(cpu_ms_per_call=lat.cpu_ms_per_call(), cpu_ms_per_call_by=lat.cpu_by_process(),
                    baseline_cpu_ms_per_call=blat.cpu_ms_per_call() if blat else None,
                    baseline_cpu_ms_per_call_by=blat.cpu_by_process() if blat else None,
                    client_node_per_call=_per_call(lat.counters, len(lat.samples)),
                    host_per_call=_per_call(lat.counters, len(lat.samples), HOST_COUNTER_KEYS))
        contended = _contention(line, lat, blat)
        lines.append(line)
        row(f"{case} (p50)", f"{p50:.3f} ms", f"{bp50:.3f} ms" if bp50 is not None else "-", ratio,
            f"<= {target:g}" if target else "info", meets, contended)
        row(f"{case.replace('-p50', '')} (p99)", f"{p99:.3f} ms", f"{bp99:.3f} ms" if bp99 is not None else "-",
            (p99 / bp99) if bp99 else None, "", None)

    btp = grpc.throughput if base_ok else None
    for case, tp, target in ((f"throughput-{opts.inflight}", icnd.throughput, True),
                             (f"throughput-{opts.inflight}-distinct", icnd.throughput_distinct, False)):
        line = {"bench": "rmi", "case": case, "unit": "calls/s"}
        lines.append(line)
        if tp is None:
            line.update(value=None, error=icnd.error or "not measured")
            row(case, "FAILED", "-", None, "", None)
            continue
        line.update(value=round(tp.rate, 1), calls=tp.calls, failed=sum(tp.errors.values()),
                    duration_s=tp.elapsed, inflight=opts.inflight)
        ratio = meets = None
        if btp is not None and btp.calls:
            ratio = tp.rate / btp.rate
            line.update(baseline=round(btp.rate, 1), ratio=_r(ratio, 2))
            if target:
                meets = ratio >= TARGET_THROUGHPUT_RATIO
                line["meets_target"] = meets
        if target:
            line["target_ratio_min"] = TARGET_THROUGHPUT_RATIO
        else:
            line["info"] = ("distinct arguments each call: the pure function runs every time (no host memo); "
                            "the baseline is the gRPC case above, which runs add every call")
        p50, p99 = C.latency_ms(tp.samples)
        line.update(p50_ms=_r(p50), p99_ms=_r(p99))
        if btp is not None and btp.samples:
            bp50, bp99 = C.latency_ms(btp.samples)
            line.update(baseline_p50_ms=_r(bp50), baseline_p99_ms=_r(bp99))
        line.update(cpu_ms_per_call=tp.cpu_ms_per_call(), cpu_ms_per_call_by=tp.cpu_by_process(),
                    baseline_cpu_ms_per_call=btp.cpu_ms_per_call() if btp else None,
                    baseline_cpu_ms_per_call_by=btp.cpu_by_process() if btp else None,
                    client_node_per_call=_per_call(tp.counters, tp.all_calls),
                    host_per_call=_per_call(tp.counters, tp.all_calls, HOST_COUNTER_KEYS))
        contended = _contention(line, tp, btp)
        if tp.errors:
            line["errors"] = dict(tp.errors)
        row(f"{case} (calls/s)", f"{tp.rate:,.0f}", f"{btp.rate:,.0f}" if btp and btp.calls else "-", ratio,
            f">= {TARGET_THROUGHPUT_RATIO:g}" if target else "info", meets, contended)
    for line in lines:
        if base_ok:
            line["baseline_kind"] = grpc.note
        elif grpc is not None and grpc.error:
            line["baseline_error"] = grpc.error
        else:
            line["baseline_error"] = "grpcio not installed"
    return lines, rows


# --- main ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer calls, shorter throughput runs (~12 s)")
    ap.add_argument("--calls", type=int, help="sequential calls measured (default 1000, quick 300)")
    ap.add_argument("--distinct-calls", type=int,
                    help="sequential calls with distinct arguments (default 500, quick 150)")
    ap.add_argument("--warmup-calls", type=int, default=50, help="unmeasured calls first (default 50)")
    ap.add_argument("--inflight", type=int, default=64, help="concurrent callers of the throughput case (default 64)")
    ap.add_argument("--duration", type=float, help="measured seconds of the throughput case (default 5, quick 1.5)")
    ap.add_argument("--warmup", type=float, help="warm-up seconds of the throughput case (default 1, quick 0.5)")
    ap.add_argument("--grpc-server", choices=("sync", "aio"), default="sync",
                    help="gRPC server: grpc.server + thread pool (default) or grpc.aio")
    ap.add_argument("--grpc-workers", type=int, default=10, help="thread pool of the sync gRPC server (default 10)")
    ap.add_argument("--no-grpc", action="store_true", help="skip the gRPC baseline")
    ap.add_argument("--no-pin", action="store_true", help="do not pin processes to cores")
    ap.add_argument("--json-only", action="store_true", help="print only the JSON lines")
    ap.add_argument("--profile", action="store_true",
                    help="then profile the icnd call path (both daemons and the caller under cProfile, CPU time)")
    ap.add_argument("--grpc-server-process", choices=("sync", "aio"), help=argparse.SUPPRESS)
    opts = ap.parse_args(argv)
    if opts.grpc_server_process:
        grpc_server_main(opts.grpc_server_process, opts.grpc_workers)
        return 0
    opts.quiet = opts.json_only
    opts.calls = opts.calls or (300 if opts.quick else 1000)
    opts.distinct_calls = opts.distinct_calls if opts.distinct_calls is not None else (150 if opts.quick else 500)
    opts.duration = opts.duration or (1.5 if opts.quick else 5.0)
    opts.warmup = opts.warmup if opts.warmup is not None else (0.5 if opts.quick else 1.0)
    opts.distinct_base = 1000  # add(1000 + i, 0.5): never equal to add(1, 2)
    if opts.calls < 1 or opts.inflight < 1 or opts.duration <= 0 or opts.distinct_calls < 0:
        ap.error("--calls, --inflight and --duration must be positive")
    server_cpus, client_cpus = (None, None) if opts.no_pin else C.cpu_plan()
    opts.server_cpus = server_cpus
    C.pin(0, client_cpus)  # before any thread exists: every thread of this process inherits it
    t0 = time.perf_counter()
    C.log(f"rmi: {FN} = {TARGET}; {opts.calls} sequential calls, {opts.inflight} in flight for "
          f"{opts.warmup:g} + {opts.duration:g} s; servers on cpus {sorted(server_cpus) if server_cpus else 'any'}, "
          f"callers on cpus {sorted(client_cpus) if client_cpus else 'any'}", opts.quiet)

    import trio

    try:
        icnd_result = trio.run(icnd_side, opts)
    except Exception as exc:
        icnd_result = Side("icnd", error=f"{type(exc).__name__}: {exc}")
        C.log(f"icnd: FAILED: {icnd_result.error}", opts.quiet)

    try:
        schema_result = trio.run(icnd_schema_side, opts)
    except Exception as exc:
        schema_result = Side("icnd-schema", error=f"{type(exc).__name__}: {exc}")
        C.log(f"icnd under a trust schema: FAILED: {schema_result.error}", opts.quiet)

    if opts.profile:
        try:
            trio.run(profile_icnd, opts)
        except Exception as exc:
            C.log(f"profile: FAILED: {type(exc).__name__}: {exc}", False)

    grpc_result: Side | None = None
    install_hint = ""
    if opts.no_grpc:
        install_hint = "gRPC baseline skipped (--no-grpc): no ratios"
    elif not grpc_available():
        install_hint = (f"grpcio is not installed: no gRPC baseline, no ratios. Install it with "
                        f"`.venv/bin/pip install grpcio` (developed with grpcio {GRPCIO_DEVELOPED_WITH}).")
        C.log(install_hint, False)
    else:
        workdir = tempfile.mkdtemp(prefix="icnd-rmi-")
        try:
            grpc_result = grpc_side(opts, workdir)
        except Exception as exc:
            grpc_result = Side("grpc", error=f"{type(exc).__name__}: {exc}")
            C.log(f"gRPC: FAILED: {grpc_result.error}", opts.quiet)
        finally:
            C.stop_all()
            shutil.rmtree(workdir, ignore_errors=True)

    lines, rows = build_lines(icnd_result, grpc_result, opts)
    lines += schema_lines(icnd_result, schema_result, opts)
    if not opts.quiet:
        print()
        base = grpc_result.note if grpc_result and not grpc_result.error else "not measured"
        print(f"{'case':<28} {'icnd':>12} {'gRPC':>12} {'ratio':>7}  {'target':<7}")
        for r in rows:
            print(r)
        print(f"ratio = icnd / gRPC. icnd: 2 daemons (client, host) on a UDP link, {TARGET} hosted by the host "
              f"daemon, trio client; gRPC: {base}. python {platform.python_version()}; "
              f"{time.perf_counter() - t0:.0f} s")
        if any(line.get("contended") for line in lines):
            print(f"(!) other processes used over {CONTENDED:.0%} of a core during this case (other_cpu in the "
                  "JSON line): the numbers are disturbed, run again on a quiet machine")
        if install_hint:
            print(install_hint)
        if grpc_result is not None and grpc_result.error:
            print(f"gRPC baseline failed: {grpc_result.error}; no ratios")
        print()
    for line in lines:
        C.emit_json(line)
    return 0 if not icnd_result.error else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("rmi: interrupted", file=sys.stderr)
        sys.exit(130)
