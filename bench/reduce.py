#!/usr/bin/env python3
"""Reduction benchmark: icnd's in-network collective reduction (float32 SUM)
next to MPI (Open MPI + mpi4py) measured in the same run.

Cases ``<op>-<size>-<members>`` for op in ``allreduce`` and ``reduce``,
sizes 1 KiB, 1, 16 and 64 MiB, 4 and 8 members (``--quick``: 4 members,
1 KiB and 1 MiB, 3 repetitions; under a minute).  Member ``i`` (1-based)
contributes ``full(n, i)`` float32, so every element of the sum is
``N (N + 1) / 2``, exact in float32; every result is checked element by
element, outside the timed region.

icnd side: every case against a fresh topology (so no case inherits another's
rounds, caches or memory), started with ``icnd.topology.launch`` (one
``icnd run`` process per node on loopback),
``--layout tree`` (default): members ``w1..wN``, the first half linked to
aggregator node ``agg1``, the rest to ``agg2``, both linked to ``root``;
``--layout star``: every member linked to one ``hub``.  Links use
``--link-transport`` (tcp by default, udp with hop-by-hop fragmentation
otherwise).  Group ``bench`` = the member nodes; where each segment's
aggregation starts is icnd's default (the group's rendezvous nodes: the
members' nodes, segment s at member s mod N) unless ``--rendezvous`` names
nodes (e.g. ``root``, or ``agg1,agg2``).  This process holds one
`icnd.Client` per member node, all on one trio loop, and per repetition a
fresh round number:

- ``allreduce``: every member calls ``client.allreduce("bench", round=r,
  array=x, op="sum")`` at once; time = from the start until the last member
  has its result (the slowest member, as MPI's max over ranks);
- ``reduce``: every member first calls ``client.contribute("bench", round=r,
  array=x)`` (timed apart: ``contribute_s``), then w1's client calls
  ``client.reduce("bench", round=r, op="sum")``, timed; the result must be
  complete with all N contributors.

One untimed (but checked) warm-up round precedes the timed repetitions of
each case.  Reported: the median over ``--reps`` (min and max in the JSON
line), plus, from /proc, the CPU seconds per operation of this process (all
member clients) and of the member and aggregator daemons
(``cpu_s_per_op``, 10 ms ticks: meaningful from 1 MiB up), the daemons'
peak resident memory (``daemon_peak_rss_mib``: the largest, and the sum)
and the share of a core the rest of the machine used meanwhile
(``other_cpu``: task time of the whole machine less ours, interrupt and
softirq time left out, over the whole case, warm-up included, or None when
that is under 1 s; likewise over each MPI launch; ``contended`` and ``(!)``
in the table above 0.25: the figures are disturbed).

MPI side (the baselines, ``bench/mpi_allreduce.py`` under ``mpirun``; method
and flags of shared/reference/collective.md section 5 and Appendix A):
N ranks, one launch per member count and transport, ``mpi-tcp`` (BTL
``tcp,self`` on ``lo``) and ``mpi-shm`` (BTL ``vader,self``, shared
memory); ``MPI_Allreduce`` for the allreduce cases, ``MPI_Reduce`` to rank 0
for the reduce cases; warm-up, Barrier, time per call = max over ranks,
median of ``--reps``; results checked.

``ratio`` = icnd time / MPI time for the same op, size and member count
(<= 1.0: icnd is no slower): ``ratio`` against mpi-tcp (``baseline``,
``baseline_name``), ``ratio_shm`` against mpi-shm (``baseline_shm``).  A
baseline that cannot run (no ``mpirun``, no mpi4py, a failed launch) is
reported, with how to install it, and gives no ratio.  With 2 cores, 4 and 8
members are oversubscribed on both sides (MPI: ``--oversubscribe
--bind-to none``; icnd: N + 3 daemons and this process, unpinned).

Output: progress on stderr; on stdout a table, then one JSON line per case
(``--json-only``: only the JSON lines).  Exit status 1 if an icnd case
failed or icnd has no reduction API.  Runtime: ``--quick`` ~10 s, the full
matrix ~4 min (mostly the 64 MiB cases; the MPI side ~40 s).
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Awaitable, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/_common.py (it adds the checkout)
import _common as C  # noqa: E402

import numpy as np  # noqa: E402

GROUP = "bench"
OPS = ("allreduce", "reduce")
KiB, MiB = 1 << 10, 1 << 20
SIZES = (KiB, MiB, 16 * MiB, 64 * MiB)
QUICK_SIZES = (KiB, MiB)
MEMBERS = (4, 8)
QUICK_MEMBERS = (4,)
REPS, QUICK_REPS = 7, 3
OP_TIMEOUT = 120.0  # seconds, one icnd operation
CONTENDED = 0.25  # other processes using more than this share of a core meanwhile: numbers disturbed
API = ("allreduce", "contribute", "reduce")  # icnd.Client methods the icnd side needs

MPI_SCRIPT = C.BENCH_DIR / "mpi_allreduce.py"
MPI_COMMON = ["--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "--mca", "pml", "ob1",
              "--mca", "oob_tcp_if_include", "lo"]
MPI_TRANSPORTS = {  # label -> BTL flags
    "tcp": ["--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "lo"],
    "shm": ["--mca", "btl", "vader,self"],
}
MPI_OP_NAMES = {"allreduce": "MPI_Allreduce", "reduce": "MPI_Reduce (root 0)"}
MPI_INSTALL_HINT = ("`make bench-deps`, or by hand: `apt-get update && DEBIAN_FRONTEND=noninteractive apt-get "
                    "install -y openmpi-bin libopenmpi-dev` (as root), then `.venv/bin/pip install mpi4py`")
MPI_LAUNCH_TIMEOUT = 900.0
CLK_TCK = os.sysconf("SC_CLK_TCK")
MIN_OTHER_WINDOW = 1.0  # s: shorter windows are too coarse (10 ms ticks, a dozen processes) to judge contention


# --- formatting -------------------------------------------------------------------------------------


def size_label(nbytes: int) -> str:
    """1024 -> '1KiB', 67108864 -> '64MiB', 1000 -> '1000B'."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", MiB), ("KiB", KiB)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale}{unit}"
    return f"{nbytes}B"


def parse_size(text: str) -> int:
    """'1KiB', '16MiB', '1GiB' or a plain number of bytes."""
    text = text.strip()
    for unit, scale in (("GiB", 1 << 30), ("MiB", MiB), ("KiB", KiB), ("B", 1)):
        if text.endswith(unit):
            return int(text[: -len(unit)]) * scale
    return int(text)


def parse_list(text: str, item: Callable[[str], Any]) -> list[Any]:
    return [item(part) for part in text.split(",") if part.strip()]


def fmt_time(seconds: float | None) -> str:
    if seconds is None or seconds != seconds:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.3f} s"


def _r(v: float | None, digits: int = 4) -> float | None:
    """`v` to `digits` significant digits (None stays None, nan becomes None)."""
    return None if v is None or v != v else float(f"{v:.{digits}g}")


# --- results -------------------------------------------------------------------------------------------


@dataclass
class Timing:
    """One case on one side: seconds per operation over the timed repetitions, or why there are none."""

    median: float | None = None
    lo: float | None = None
    hi: float | None = None
    reps: int = 0
    extra: dict[str, Any] = field(default_factory=dict)  # side-specific fields for the JSON line
    error: str | None = None

    @classmethod
    def of(cls, samples: list[float], **extra: Any) -> Timing:
        return cls(statistics.median(samples), min(samples), max(samples), len(samples), extra)

    def summary(self) -> dict[str, Any]:
        if self.error or self.median is None:
            return {"error": self.error or "not measured"}
        return {"median_s": _r(self.median), "min_s": _r(self.lo), "max_s": _r(self.hi), "reps": self.reps,
                **self.extra}


Key = tuple[str, int, int]  # (op, bytes, members)


# --- MPI baseline --------------------------------------------------------------------------------------


def mpi_unavailable() -> str | None:
    """Why the MPI baseline cannot run here (with how to install it), or None."""
    missing = []
    if shutil.which("mpirun") is None:
        missing.append("mpirun (Open MPI)")
    if importlib.util.find_spec("mpi4py") is None:
        missing.append(f"mpi4py (in {sys.executable})")
    if not missing:
        return None
    return f"{' and '.join(missing)} not found: no MPI baseline, no ratios. Install with {MPI_INSTALL_HINT}."


def mpi_argv(transport: str, members: int, sizes: list[int], ops: list[str], reps: int) -> list[str]:
    return ["mpirun", *MPI_COMMON, *MPI_TRANSPORTS[transport], "-np", str(members),
            sys.executable, str(MPI_SCRIPT), "--label", transport, "--reps", str(reps),
            "--sizes", ",".join(map(str, sizes)), "--ops", ",".join(ops)]


def machine_task_seconds() -> float:
    """CPU seconds all cores have spent running tasks (user, nice, system, steal) since boot:
    `C.machine_busy_seconds` less interrupt and softirq time, which loopback traffic (ours
    as much as anyone's) is charged to and which no process's own CPU time includes."""
    try:
        with open("/proc/stat", "rb") as f:
            user, nice, system, _idle, _iowait, _irq, _softirq, steal = map(int, f.readline().split()[1:9])
    except (OSError, ValueError):
        return 0.0
    return (user + nice + system + steal) / CLK_TCK


def own_cpu_seconds() -> float:
    """CPU seconds of this process and its reaped descendants (mpirun and its ranks)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def log_excerpt(path: str, n: int = 3) -> str:
    """The first `n` lines of a log that look like errors (else its last lines), on one line."""
    lines = [ln.strip() for ln in C.tail(path, 200).splitlines() if ln.strip() and not ln.startswith("-")]
    errors = [ln for ln in lines if any(w in ln.lower() for w in ("error", "can't", "cannot", "no such", "abort"))]
    return " | ".join(list(dict.fromkeys(errors or lines[-n:]))[:n])


def run_mpi(transport: str, members: int, sizes: list[int], ops: list[str], reps: int,
            workdir: str, quiet: bool) -> dict[Key, Timing]:
    """One mpirun launch: every (op, size) at `members` ranks over `transport`."""
    argv = mpi_argv(transport, members, sizes, ops, reps)
    log_path = f"{workdir}/mpi-{transport}-{members}.log"
    C.log(f"mpi-{transport}: {members} ranks: {' '.join(argv)}", quiet)
    busy0, ours0, wall0 = machine_task_seconds(), own_cpu_seconds(), time.perf_counter()
    proc = C.spawn(argv, log_path=log_path, stdout=subprocess.PIPE)
    try:
        out, _ = proc.communicate(timeout=MPI_LAUNCH_TIMEOUT)
        error = None if proc.returncode == 0 else f"mpirun exited with {proc.returncode}"
    except subprocess.TimeoutExpired:
        out, error = b"", f"mpirun did not finish within {MPI_LAUNCH_TIMEOUT:g} s"
    finally:
        C.stop(proc)
    other = machine_task_seconds() - busy0 - (own_cpu_seconds() - ours0)
    other_cpu = _r(max(0.0, other) / (time.perf_counter() - wall0), 2)
    results: dict[Key, Timing] = {}
    for text in out.decode("utf-8", "replace").splitlines():
        if not text.startswith("{"):
            continue
        rec = json.loads(text)
        timing = Timing(rec["median_s"], rec["min_s"], rec["max_s"], rec["reps"],
                        {"inner_calls": rec["inner"], "other_cpu": other_cpu,
                         "version": f"{rec['mpi']}; mpi4py {rec['mpi4py']}"})
        if not rec.get("ok"):
            timing.error = rec.get("error", "wrong result")
        results[(rec["op"], rec["bytes"], members)] = timing
        C.log(f"  {rec['op']} {size_label(rec['bytes'])}: {fmt_time(rec['median_s'])} "
              f"({fmt_time(rec['min_s'])}..{fmt_time(rec['max_s'])})"
              + ("" if rec.get("ok") else f" WRONG RESULT: {timing.error}"), quiet)
    if error:
        error += f"; {log_path}: {log_excerpt(log_path)}"
        C.log(f"  mpi-{transport} {members} ranks FAILED: {error}", quiet)
    for op in ops:
        for nbytes in sizes:
            results.setdefault((op, nbytes, members), Timing(error=error or "no result printed"))
    return results


# --- icnd side -----------------------------------------------------------------------------------------


def icnd_unavailable() -> str | None:
    """Why the icnd side cannot run (the reduction API is missing), or None."""
    try:
        import icnd
    except ImportError as exc:
        return f"cannot import icnd: {exc}"
    missing = [m for m in API if not hasattr(icnd.Client, m)]
    if missing:
        return f"icnd.Client has no {', '.join(missing)}: the reduction API is not implemented in this checkout"
    return None


def layout_nodes(members: int, layout: str) -> tuple[list[str], dict[str, list[str]]]:
    """(member nodes, aggregator node -> its neighbours) of a layout."""
    workers = [f"w{i}" for i in range(1, members + 1)]
    if layout == "star":
        return workers, {"hub": workers}
    half = (members + 1) // 2
    return workers, {"agg1": workers[:half], "agg2": workers[half:], "root": ["agg1", "agg2"]}


def describe_layout(members: int, opts: Any) -> str:
    workers, aggs = layout_nodes(members, opts.layout)
    parts = [f"{a}: {', '.join(n)}" for a, n in aggs.items()]
    rendezvous = ",".join(opts.rendezvous) if opts.rendezvous else "icnd's default"
    return (f"{opts.layout} ({len(workers) + len(aggs)} icnd daemons; {'; '.join(parts)}; "
            f"{opts.link_transport} links; group {GROUP} = {workers[0]}..{workers[-1]}, rendezvous {rendezvous})")


def topology(members: int, opts: Any) -> Any:
    """The TopologySpec of `opts.layout` (see `layout_nodes`) for `members` members."""
    from icnd.topology import parse

    workers, aggs = layout_nodes(members, opts.layout)
    links = [{"ends": [a, n], "transport": opts.link_transport} for a, neighbours in aggs.items() for n in neighbours]
    group: dict[str, Any] = {"members": workers}
    if opts.rendezvous:
        group["rendezvous"] = opts.rendezvous
    return parse({
        "nodes": {name: {} for name in [*workers, *aggs]},
        "links": links,
        "groups": {GROUP: group},
    }, source=f"bench/reduce.py {opts.layout}-{members}")


class CheckFailed(Exception):
    """A result that is not the expected sum."""


def check_array(what: str, got: Any, expected: np.ndarray) -> None:
    """CheckFailed unless `got` is an ndarray equal to `expected` (dtype, shape, every element)."""
    if not isinstance(got, np.ndarray):
        raise CheckFailed(f"{what}: expected a numpy array, got {type(got).__name__}")
    if got.dtype != expected.dtype or got.shape != expected.shape:
        raise CheckFailed(f"{what}: got {got.dtype}{list(got.shape)}, expected {expected.dtype}{list(expected.shape)}")
    if not np.array_equal(got, expected):
        bad = int(np.count_nonzero(got != expected))
        first = int(np.flatnonzero(got != expected)[0])
        raise CheckFailed(f"{what}: {bad} wrong elements, e.g. [{first}] = {got[first].item()!r}, "
                          f"expected {expected[first].item()!r}")


def contributor_count(reduced: Any) -> int | None:
    c = getattr(reduced, "contributors", None)
    if c is None:
        return None
    return c if isinstance(c, int) else len(c)


class CpuMeter:
    """CPU seconds (from /proc, 10 ms ticks) of this process (the member clients), the
    member daemons and the other daemons: accumulated over the timed regions between
    `start` and `stop`, and, for `other_cpu`, over the whole case since `begin`."""

    def __init__(self, pids: dict[str, int | None], members: list[str]) -> None:
        self.daemons = {"member_daemons": [p for n, p in pids.items() if p and n in members],
                        "aggregator_daemons": [p for n, p in pids.items() if p and n not in members]}
        self.total = {"clients": 0.0, **{g: 0.0 for g in self.daemons}}
        self._start: dict[str, float] = {}
        self._begin = (0.0, 0.0, 0.0)

    def _sample(self) -> dict[str, float]:
        return {"clients": C.self_cpu_seconds(),
                **{g: sum(map(C.cpu_seconds, pids)) for g, pids in self.daemons.items()}}

    def begin(self) -> None:
        self._begin = (machine_task_seconds(), sum(self._sample().values()), time.perf_counter())

    def start(self) -> None:
        self._start = self._sample()

    def stop(self) -> None:
        for g, v in self._sample().items():
            self.total[g] += v - self._start[g]

    def per_op(self, ops: int) -> dict[str, float | None]:
        """CPU seconds per timed operation of this process and of the daemons."""
        return {g: _r(t / ops, 3) if ops else None for g, t in self.total.items()}

    def other_cpu(self) -> tuple[float | None, float]:
        """(share of a core the rest of the machine used since `begin`, or None if that
        window is too short to tell; the window in seconds)."""
        machine0, ours0, wall0 = self._begin
        window = time.perf_counter() - wall0
        other = machine_task_seconds() - machine0 - (sum(self._sample().values()) - ours0)
        return (_r(max(0.0, other) / window, 2) if window >= MIN_OTHER_WINDOW else None), window


def describe(exc: BaseException) -> str:
    """'Type: message' of an exception, of the first leaf of an exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


class IcndBench:
    """The timed operations on a launched topology (`clients[i]` is member w(i+1)'s client)."""

    def __init__(self, clients: list[Any], cpu: CpuMeter, timeout: float) -> None:
        self.clients = clients
        self.cpu = cpu
        self.timeout = timeout
        self.rounds = itertools.count(1)

    async def allreduce(self, arrays: list[np.ndarray], expected: np.ndarray, timed: bool) -> tuple[float, dict]:
        import trio

        r = next(self.rounds)
        results: list[Any] = [None] * len(self.clients)
        done = [0.0] * len(self.clients)

        async def member(i: int) -> None:
            results[i] = await self.clients[i].allreduce(GROUP, round=r, array=arrays[i], op="sum",
                                                         timeout=self.timeout)
            done[i] = time.perf_counter()

        with trio.fail_after(self.timeout + 10):
            if timed:
                self.cpu.start()
            t0 = time.perf_counter()
            async with trio.open_nursery() as nursery:
                for i in range(len(self.clients)):
                    nursery.start_soon(member, i)
            elapsed = max(done) - t0
            if timed:
                self.cpu.stop()
        for i, z in enumerate(results):
            check_array(f"round {r}: w{i + 1}'s allreduce", z, expected)
        return elapsed, {}

    async def reduce(self, arrays: list[np.ndarray], expected: np.ndarray, timed: bool) -> tuple[float, dict]:
        import trio

        r = next(self.rounds)
        with trio.fail_after(self.timeout + 10):
            t0 = time.perf_counter()
            async with trio.open_nursery() as nursery:
                for c, x in zip(self.clients, arrays):
                    nursery.start_soon(partial(c.contribute, GROUP, round=r, array=x))
            contributed = time.perf_counter() - t0
            if timed:
                self.cpu.start()
            t0 = time.perf_counter()
            res = await self.clients[0].reduce(GROUP, round=r, op="sum", timeout=self.timeout)
            elapsed = time.perf_counter() - t0
            if timed:
                self.cpu.stop()
        n = contributor_count(res)
        if not getattr(res, "complete", False) or n != len(self.clients):
            raise CheckFailed(f"round {r}: reduce returned complete={getattr(res, 'complete', None)!r} "
                              f"with {n} contributors, expected complete with {len(self.clients)}")
        check_array(f"round {r}: w1's reduce", getattr(res, "array", None), expected)
        return elapsed, {"contribute_s": contributed}


def peak_rss_mib(pid: int | None) -> float:
    """A process's peak resident memory (VmHWM) in MiB; 0.0 if unknown."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0.0


async def icnd_case(opts: Any, members: int, op: str, nbytes: int) -> Timing:
    """One case against a freshly launched topology: warm-up, then `opts.reps` timed rounds."""
    from icnd.topology import launch

    spec = topology(members, opts)
    workers, _ = layout_nodes(members, opts.layout)
    n = nbytes // 4
    arrays = [np.full(n, i + 1, dtype=np.float32) for i in range(members)]
    expected = np.full(n, members * (members + 1) / 2, dtype=np.float32)
    samples: list[float] = []
    extras: list[dict] = []
    try:
        async with launch(spec, log_level="warning") as net:
            clients = [await net.connect(w) for w in workers]
            pids = {name: net[name].pid for name in spec.nodes}
            cpu = CpuMeter(pids, workers)
            run: Callable[..., Awaitable[tuple[float, dict]]] = getattr(IcndBench(clients, cpu, opts.timeout), op)
            cpu.begin()
            warm, _ = await run(arrays, expected, timed=False)
            for _ in range(opts.reps):
                elapsed, extra = await run(arrays, expected, timed=True)
                samples.append(elapsed)
                extras.append(extra)
            other, window = cpu.other_cpu()
            peaks = [peak_rss_mib(p) for p in pids.values()]
    except Exception as exc:
        return Timing(error=f"{describe(exc)} (after {len(samples)} timed reps)")
    timing = Timing.of(samples, warmup_s=_r(warm), cpu_s_per_op=cpu.per_op(len(samples)),
                       other_cpu=other, other_cpu_window_s=_r(window, 3),
                       daemon_peak_rss_mib={"max": round(max(peaks)), "sum": round(sum(peaks))})
    for k in extras[0]:  # e.g. contribute_s
        timing.extra[k] = _r(statistics.median(e[k] for e in extras))
    return timing


def icnd_side(opts: Any) -> dict[Key, Timing]:
    """Every icnd case, each against fresh daemons (no state carried from one case to the next)."""
    import trio

    results: dict[Key, Timing] = {}
    for members in opts.members:
        C.log(f"icnd: {members} members, {describe_layout(members, opts)}", opts.quiet)
        for nbytes in opts.sizes:
            for op in opts.ops:
                t = results[(op, nbytes, members)] = trio.run(icnd_case, opts, members, op, nbytes)
                if t.error:
                    C.log(f"  {op} {size_label(nbytes)}: FAILED: {t.error}", opts.quiet)
                else:
                    C.log(f"  {op} {size_label(nbytes)}: {fmt_time(t.median)} ({fmt_time(t.lo)}..{fmt_time(t.hi)}; "
                          f"warm-up {fmt_time(t.extra['warmup_s'])}; daemons' peak RSS "
                          f"{t.extra['daemon_peak_rss_mib']['max']} MiB max, "
                          f"{t.extra['daemon_peak_rss_mib']['sum']} MiB summed)", opts.quiet)
    return results


# --- report ---------------------------------------------------------------------------------------------


def build_lines(opts: Any, icnd: dict[Key, Timing], icnd_error: str | None,
                mpi: dict[str, dict[Key, Timing]], mpi_error: str | None) -> tuple[list[dict], list[str]]:
    """One JSON line and one table row per case."""
    lines: list[dict] = []
    rows: list[str] = []
    for members in opts.members:
        for op in opts.ops:
            for nbytes in opts.sizes:
                key = (op, nbytes, members)
                case = f"{op}-{size_label(nbytes)}-{members}"
                mine = icnd.get(key) or Timing(error=icnd_error or "not measured")
                value = None if mine.error else mine.median
                line: dict[str, Any] = {
                    "bench": "reduce", "case": case, "op": op, "bytes": nbytes, "members": members,
                    "value": _r(value), "unit": "s", **{k: v for k, v in mine.summary().items() if k != "median_s"},
                    "algbw_GBps": _r(nbytes / value / 1e9, 3) if value else None,
                    "layout": opts.layout, "link_transport": opts.link_transport, "rendezvous": opts.rendezvous or None,
                    "baseline_name": "mpi-tcp", "baseline_op": MPI_OP_NAMES[op],
                }
                ratios: dict[str, float | None] = {}
                details: dict[str, Any] = {}
                for transport, suffix in (("tcp", ""), ("shm", "_shm")):
                    base = mpi.get(transport, {}).get(key) or Timing(error=mpi_error or f"mpi-{transport} not run")
                    bvalue = None if base.error else base.median
                    ratios[transport] = value / bvalue if value is not None and bvalue else None
                    line[f"baseline{suffix}"] = _r(bvalue)
                    line[f"ratio{suffix}"] = _r(ratios[transport], 3)
                    details[transport] = base.summary()
                line["mpi"] = details
                others = [mine.extra.get("other_cpu"), *(d.get("other_cpu") for d in details.values())]
                line["contended"] = any(o is not None and o > CONTENDED for o in others)
                lines.append(line)
                shown = fmt_time(value) if not mine.error else ("-" if icnd_error else "FAILED")
                rows.append(f"{case:<22} {shown:>10} "
                            f"{fmt_time(line['baseline']):>10} {fmt_time(line['baseline_shm']):>10} "
                            f"{_fmt_ratio(ratios['tcp']):>9} {_fmt_ratio(ratios['shm']):>9}"
                            + ("  (!)" if line["contended"] else ""))
    return lines, rows


def _fmt_ratio(r: float | None) -> str:
    if r is None:
        return "-"
    return f"{r:.2f}" if r < 100 else f"{r:.0f}"


def print_table(opts: Any, rows: list[str], notes: list[str], elapsed: float) -> None:
    print()
    print(f"{'case':<22} {'icnd':>10} {'mpi-tcp':>10} {'mpi-shm':>10} {'icnd/tcp':>9} {'icnd/shm':>9}")
    for row in rows:
        print(row)
    members = opts.members[0]
    print(f"icnd: {describe_layout(members, opts)}"
          + (f" (and likewise for {', '.join(map(str, opts.members[1:]))} members)" if len(opts.members) > 1 else "")
          + "; all member clients in this process; reduce = contributions first, then w1's reduce timed.")
    print("MPI: bench/mpi_allreduce.py under mpirun, N ranks (Allreduce, resp. Reduce to rank 0); "
          "tcp = BTL tcp,self on lo, shm = BTL vader,self. Time = median over "
          f"{opts.reps} reps (MPI: max over ranks per rep). ratio = icnd / MPI (<= 1: icnd no slower). "
          f"2 cores: oversubscribed on both sides. python {platform.python_version()}; {elapsed:.0f} s")
    for note in notes:
        print(note)
    print()


# --- main -------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK_MEMBERS[0]} members, {'+'.join(map(size_label, QUICK_SIZES))}, {QUICK_REPS} reps")
    ap.add_argument("--members", help="comma-separated member counts (default 4,8; quick 4)")
    ap.add_argument("--sizes", help="comma-separated sizes, e.g. 1KiB,1MiB,16MiB,64MiB (the default; quick 1KiB,1MiB)")
    ap.add_argument("--ops", default=",".join(OPS), help="comma-separated, of allreduce, reduce (default both)")
    ap.add_argument("--reps", type=int,
                    help=f"timed repetitions per case, both sides (default {REPS}, quick {QUICK_REPS})")
    ap.add_argument("--layout", choices=("tree", "star"), default="tree",
                    help="icnd topology: two aggregators under a root (default), or one hub")
    ap.add_argument("--link-transport", choices=("tcp", "udp"), default="tcp", help="icnd links (default tcp)")
    ap.add_argument("--rendezvous", help="comma-separated nodes where aggregation starts, e.g. root "
                                         "(default: none set, icnd's default)")
    ap.add_argument("--timeout", type=float, default=OP_TIMEOUT, help=f"per icnd operation, s (default {OP_TIMEOUT:g})")
    ap.add_argument("--mpi-transports", default="tcp,shm", help="MPI baselines to run (default tcp,shm)")
    ap.add_argument("--no-mpi", action="store_true", help="skip the MPI baselines (no ratios)")
    ap.add_argument("--no-icnd", action="store_true", help="measure only the MPI baselines")
    ap.add_argument("--json-only", action="store_true", help="print only the JSON lines")
    opts = ap.parse_args(argv)
    opts.quiet = opts.json_only
    opts.members = parse_list(opts.members, int) if opts.members else list(QUICK_MEMBERS if opts.quick else MEMBERS)
    opts.sizes = parse_list(opts.sizes, parse_size) if opts.sizes else list(QUICK_SIZES if opts.quick else SIZES)
    opts.ops = parse_list(opts.ops, str.strip)
    opts.reps = opts.reps or (QUICK_REPS if opts.quick else REPS)
    opts.rendezvous = parse_list(opts.rendezvous, str.strip) if opts.rendezvous else []
    transports = parse_list(opts.mpi_transports, str.strip)
    if (any(m < 1 for m in opts.members) or any(s <= 0 or s % 4 for s in opts.sizes) or opts.reps < 1
            or any(o not in OPS for o in opts.ops) or any(t not in MPI_TRANSPORTS for t in transports)):
        ap.error("members and reps must be >= 1, sizes positive multiples of 4 bytes, "
                 f"ops among {', '.join(OPS)}, MPI transports among {', '.join(MPI_TRANSPORTS)}")
    t0 = time.perf_counter()
    notes: list[str] = []
    C.log(f"reduce: members {opts.members}, sizes {[size_label(s) for s in opts.sizes]}, ops {opts.ops}, "
          f"{opts.reps} reps", opts.quiet)

    mpi: dict[str, dict[Key, Timing]] = {}
    mpi_error = "skipped (--no-mpi)" if opts.no_mpi else mpi_unavailable()
    if mpi_error:
        notes.append(f"MPI baseline: {mpi_error}")
        C.log(notes[-1], False)
    else:
        workdir = tempfile.mkdtemp(prefix="icnd-reduce-mpi-")
        try:
            for members in opts.members:
                for transport in transports:
                    mpi.setdefault(transport, {}).update(
                        run_mpi(transport, members, opts.sizes, opts.ops, opts.reps, workdir, opts.quiet))
        finally:
            C.stop_all()
        failed = sorted({t.error for by in mpi.values() for t in by.values() if t.error})
        notes += [f"MPI baseline failed: {e} (no ratio for those cases)" for e in failed]
        if not failed:
            shutil.rmtree(workdir, ignore_errors=True)

    icnd: dict[Key, Timing] = {}
    icnd_error = "skipped (--no-icnd)" if opts.no_icnd else icnd_unavailable()
    if icnd_error:
        notes.append(f"icnd: {icnd_error}")
        C.log(notes[-1], False)
    else:
        icnd = icnd_side(opts)
        failed = sorted({t.error for t in icnd.values() if t.error})
        notes += [f"icnd failed: {e}" for e in failed]

    lines, rows = build_lines(opts, icnd, icnd_error, mpi, mpi_error)
    if any(line["contended"] for line in lines):
        notes.append(f"(!) other processes used over {CONTENDED:.0%} of a core while measuring the marked cases "
                     "(other_cpu in the JSON line, per side): the numbers are disturbed, run again on a quiet machine")
    if not opts.quiet:
        print_table(opts, rows, notes, time.perf_counter() - t0)
    for line in lines:
        C.emit_json(line)
    icnd_failed = not opts.no_icnd and (icnd_error is not None or any(t.error for t in icnd.values()))
    return 1 if icnd_failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("reduce: interrupted", file=sys.stderr)
        sys.exit(130)
