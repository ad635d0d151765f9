#!/usr/bin/env python3
"""Collectives benchmark (issue #29): icnd's communicator next to MPI (Open MPI + mpi4py), same run.

Cases ``<op>-<size>-8-<placement>``: ``bcast``, ``allgather``, ``alltoall``,
``reduce_scatter`` and ``allreduce`` at 1 KiB, 1 MiB and 16 MiB, and
``barrier-0B``, 8 ranks, in two placements:

- ``one-node``: one icnd daemon, the 8 ranks are members ``rank0..rank7``
  on it (each rank its own client connection); against MPI over shared
  memory (BTL ``vader,self``);
- ``tree``: the 8-node layout of bench/reduce.py (``w1..w8``, the first
  four linked to ``agg1``, the rest to ``agg2``, both to ``root``; TCP
  links; one rank per member node, rendezvous ``root``); against MPI over
  TCP on loopback (BTL ``tcp,self`` on ``lo``).

``size`` is the largest buffer a rank holds, as nccl-tests counts it (so
every op of one size moves comparable bytes and memory stays bounded; see
`collective_payloads`): ``allreduce`` and ``reduce_scatter`` reduce a
float32 array of ``size`` bytes (``reduce_scatter`` returns the rank's
``1/N``); ``bcast`` sends ``size`` bytes (int32) from rank 0; in
``allgather`` each rank contributes ``size / N`` and receives ``size``; in
``alltoall`` each rank sends ``size`` (``N`` blocks of ``size / N``) and
receives ``size``.  Every result is checked element by element against
numpy's answer, outside the timed region: a wrong answer is a failed case
and exit status 1.

icnd side: per case a fresh topology (``icnd.topology.launch``, one
``icnd run`` process per node: no case inherits another's rounds, caches or
memory), all 8 ranks' clients in this process on one trio loop, a group
made for the case with 4 MiB segments (the largest icnd allows; bench/reduce.py's
choice on TCP links) and one `Client.communicator` per rank.  A repetition
starts every rank at once; each makes ``inner`` back-to-back calls (10 up
to 4 KiB, else 1); time per call = (the last rank's finish - start) /
``inner``: the slowest rank, as MPI's max over ranks; every call's result
is checked after the repetition.  One untimed (but checked) repetition first.  MPI side: bench/mpi_collectives.py under
``mpirun`` (one launch per placement, the buffer methods: ``Bcast``,
``Allgather``, ``Alltoall``, ``Reduce_scatter_block``, ``Allreduce``,
``Barrier``), method of bench/mpi_allreduce.py (200 inner calls up to
4 KiB, 5 up to 1 MiB, else 1; max over ranks).  ``value``: the median over
``--reps`` (>= 3); ``ratio`` = value / baseline.  Without mpirun or mpi4py
the lines carry no baseline and no ratio, and a note says how to install them.

Also in each JSON line: the issue's ``target`` where one applies (and
``met``), CPU seconds per operation of this process and of the daemons
(10 ms ticks), the daemons' peak RSS, ``other_cpu`` (the share of a core
the rest of the machine used meanwhile; ``contended`` above 0.25).

Runtime: ``--quick`` (1 KiB and 1 MiB, 3 reps) ~1-2 min; the full matrix
~4-6 min on 2 busy cores.  ``--profile DIR``: a cProfile of this process
(all ranks' clients, launching included) per placement,
``DIR/clients-<placement>.prof``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/_common.py, bench/reduce.py
import _common as C  # noqa: E402
import reduce as R  # noqa: E402  (bench/reduce.py: its MPI flags, layout, checks and meters)

import numpy as np  # noqa: E402

KiB, MiB = 1 << 10, 1 << 20
RANKS = 8
OPS = ("bcast", "allgather", "alltoall", "reduce_scatter", "allreduce", "barrier")
SIZES = (KiB, MiB, 16 * MiB)
QUICK_SIZES = (KiB, MiB)
PLACEMENTS = ("one-node", "tree")
REPS, QUICK_REPS = 5, 3
SMALL = 4 * KiB  # up to this size a repetition makes INNER_SMALL calls per rank
INNER_SMALL = 10
OP_TIMEOUT = 60.0  # seconds, one icnd call
SEGMENT_BYTES = 4 * MiB
ONE_NODE = "n1"
MPI_SCRIPT = C.BENCH_DIR / "mpi_collectives.py"
BASELINE = {"one-node": "shm", "tree": "tcp"}  # placement -> MPI transport of bench/reduce.py's MPI_TRANSPORTS
BASELINE_TEXT = {"shm": "MPI shared memory (btl vader,self)", "tcp": "MPI TCP on lo (btl tcp,self)"}
TARGETS: dict[str, dict[str, float]] = {  # issue #29 "Measured"
    "allreduce-16MiB-8-one-node": {"max_ratio": 2.0},
    "bcast-16MiB-8-tree": {"max_ratio": 2.0},
    "allgather-1MiB-8-tree": {"max_ratio": 3.0},
    **{f"{op}-1KiB-8-one-node": {"max_s": 1e-3} for op in OPS if op != "barrier"},
}

Case = tuple[str, int]  # (op, bytes); barrier has 0 bytes


def case_name(op: str, nbytes: int, placement: str) -> str:
    return f"{op}-{R.size_label(nbytes) if nbytes else '0B'}-{RANKS}-{placement}"


def all_cases(sizes: list[int]) -> list[Case]:
    return [(op, s) for op in OPS if op != "barrier" for s in sizes] + [("barrier", 0)]


def select(cases: list[Case], wanted: list[str] | None) -> list[Case]:
    """The cases named by ``--cases``: an op (``bcast``) or an op and size (``bcast-16MiB``, ``barrier-0B``)."""
    if not wanted:
        return cases
    return [(op, s) for op, s in cases
            if op in wanted or f"{op}-{R.size_label(s) if s else '0B'}" in wanted]


# --- what each rank sends and must get back ------------------------------------------------------------


def pattern(k: int, m: int) -> np.ndarray:
    """Block number `k` of `m` int32 elements: distinct per block, so a misplaced block or
    offset shows (bench/mpi_collectives.py builds the same)."""
    return np.arange(m, dtype=np.int32) + np.int32(k * m)


class Payload:
    """One case's inputs per rank and the check of each rank's result against numpy."""

    def __init__(self, op: str, nbytes: int, ranks: int) -> None:
        self.op, self.ranks = op, ranks
        n = nbytes // 4
        m = n // ranks
        self.inputs: list[Any] = [None] * ranks
        self.expected: list[Any] = [None] * ranks
        if op in ("allreduce", "reduce_scatter"):
            total = np.full(n, ranks * (ranks + 1) / 2, dtype=np.float32)  # exact in float32
            self.inputs = [np.full(n, r + 1, dtype=np.float32) for r in range(ranks)]
            self.expected = ([total] * ranks if op == "allreduce" else np.array_split(total, ranks))
        elif op == "bcast":
            value = pattern(0, n)
            self.inputs = [value] + [None] * (ranks - 1)
            self.expected = [value] * ranks
        elif op == "allgather":
            self.inputs = [pattern(r, m) for r in range(ranks)]
            self.expected = [self.inputs] * ranks
        elif op == "alltoall":
            self.inputs = [[pattern(r * ranks + d, m) for d in range(ranks)] for r in range(ranks)]
            self.expected = [[pattern(j * ranks + r, m) for j in range(ranks)] for r in range(ranks)]
        elif op != "barrier":
            raise ValueError(f"unknown op {op!r}")

    def check(self, rank: int, got: Any, what: str) -> None:
        """CheckFailed unless rank `rank`'s result `got` is numpy's answer."""
        want = self.expected[rank]
        if self.op == "barrier":
            if got is not None:
                raise R.CheckFailed(f"{what}: barrier returned {type(got).__name__}, expected None")
        elif isinstance(want, list):
            if not isinstance(got, list) or len(got) != len(want):
                raise R.CheckFailed(f"{what}: expected a list of {len(want)} arrays, got {type(got).__name__}"
                                    + (f" of {len(got)}" if isinstance(got, list) else ""))
            for j, (g, w) in enumerate(zip(got, want)):
                R.check_array(f"{what}[{j}]", g, w)
        else:
            R.check_array(what, got, want)


def call(comm: Any, payload: Payload, timeout: float, out: np.ndarray | None) -> Any:
    """Rank `comm.rank`'s call of the case (a coroutine)."""
    op, x = payload.op, payload.inputs[comm.rank]
    if op == "allreduce":
        return comm.allreduce(x, "sum", timeout=timeout, out=out)
    if op == "reduce_scatter":
        return comm.reduce_scatter(x, "sum", timeout=timeout)
    if op == "bcast":
        return comm.bcast(x, root=0, timeout=timeout)
    if op == "allgather":
        return comm.allgather(x, timeout=timeout)
    if op == "alltoall":
        return comm.alltoall(x, timeout=timeout)
    return comm.barrier(timeout=timeout)


def inner_calls(nbytes: int) -> int:
    return INNER_SMALL if nbytes <= SMALL else 1


# --- icnd side -----------------------------------------------------------------------------------------


def placement_spec(placement: str) -> tuple[Any, list[str], list[str], list[str]]:
    """(TopologySpec, the node of each rank, each rank's member id, the rendezvous nodes)."""
    from icnd.topology import parse

    if placement == "one-node":
        nodes: dict[str, list[str]] = {ONE_NODE: []}
        rank_nodes = [ONE_NODE] * RANKS
        members = [f"rank{i}" for i in range(RANKS)]
        rendezvous: list[str] = []
    else:
        workers, aggs = R.layout_nodes(RANKS, "tree")
        nodes = {**{w: [] for w in workers}, **aggs}
        rank_nodes, members, rendezvous = workers, list(workers), ["root"]
    spec = parse({"nodes": {name: {} for name in nodes},
                  "links": [{"ends": [a, n], "transport": "tcp"} for a, ns in nodes.items() for n in ns]},
                 source=f"bench/collectives.py {placement}")
    return spec, rank_nodes, members, rendezvous


def describe_placement(placement: str) -> str:
    if placement == "one-node":
        return f"one icnd daemon ({ONE_NODE}), members rank0..rank{RANKS - 1}@{ONE_NODE}"
    _, aggs = R.layout_nodes(RANKS, "tree")
    return ("tree: " + "; ".join(f"{a}: {', '.join(n)}" for a, n in aggs.items())
            + f" ({RANKS + len(aggs)} daemons, tcp links), one rank per w-node, rendezvous root")


async def one_case(clients: list[Any], meter: Any, index: int, op: str, nbytes: int, rank_nodes: list[str],
                   members: list[str], rendezvous: list[str], opts: Any) -> R.Timing:
    """A fresh group and communicators, one checked warm-up repetition, then `opts.reps` timed ones."""
    import trio

    group = f"bench{index}-{op.replace('_', '')}-{R.size_label(nbytes) if nbytes else '0B'}"
    await clients[0].create_group(group, members=[m if m == n else f"{m}@{n}" for m, n in zip(members, rank_nodes)],
                                  rendezvous=rendezvous or None, segment_bytes=SEGMENT_BYTES)
    comms = [await c.communicator(group, member=m) for c, m in zip(clients, members)]
    payload = Payload(op, nbytes, RANKS)
    inner = inner_calls(nbytes)
    # one call per repetition: allreduce into each rank's reused result array (as MPI's receive
    # buffer); several: fresh results, so every call's answer can be checked afterwards
    outs = ([np.empty_like(x) for x in payload.inputs] if op == "allreduce" and inner == 1 else [None] * RANKS)
    samples: list[float] = []

    async def repetition(rep: int, timed: bool) -> float:
        results: list[list[Any]] = [[] for _ in range(RANKS)]
        done = [0.0] * RANKS

        async def rank(r: int) -> None:
            for _ in range(inner):
                results[r].append(await call(comms[r], payload, opts.timeout, outs[r]))
            done[r] = time.perf_counter()

        with trio.fail_after(opts.timeout * inner + 10):
            if timed:
                meter.start()
            t0 = time.perf_counter()
            async with trio.open_nursery() as nursery:
                for r in range(RANKS):
                    nursery.start_soon(rank, r)
            elapsed = (max(done) - t0) / inner
            if timed:
                meter.stop()
        for r in range(RANKS):
            for k, got in enumerate(results[r]):
                payload.check(r, got, f"{op} repetition {rep}, call {k + 1}: rank {r}'s result")
        return elapsed

    warm = await repetition(0, timed=False)
    for rep in range(1, opts.reps + 1):
        samples.append(await repetition(rep, timed=True))
    return R.Timing.of(samples, warmup_s=R._r(warm), inner=inner, group=group)


async def icnd_case(placement: str, index: int, op: str, nbytes: int, opts: Any) -> R.Timing:
    """One case against a freshly launched topology: no case inherits another's rounds, caches or
    memory (a node keeps up to 1 GiB of contributions, and which rounds give way when it is
    full must not depend on what ran before)."""
    from icnd.topology import launch

    spec, rank_nodes, members, rendezvous = placement_spec(placement)
    try:
        async with launch(spec, log_level="warning") as net:
            clients = [await net.connect(n) for n in rank_nodes]
            pids = {name: net[name].pid for name in spec.nodes}
            meter = R.CpuMeter(pids, sorted(set(rank_nodes)))
            meter.begin()
            t = await one_case(clients, meter, index, op, nbytes, rank_nodes, members, rendezvous, opts)
            other, window = meter.other_cpu()
            peaks = [R.peak_rss_mib(p) for p in pids.values()]
    except Exception as exc:
        return R.Timing(error=R.describe(exc))
    t.extra.update(cpu_s_per_op=meter.per_op(t.reps * t.extra["inner"]), other_cpu=other,
                   other_cpu_window_s=R._r(window, 3),
                   daemon_peak_rss_mib={"max": round(max(peaks)), "sum": round(sum(peaks))})
    return t


def icnd_side(placement: str, cases: list[Case], opts: Any) -> dict[Case, R.Timing]:
    """Every case of one placement, each on fresh daemons (`icnd_case`)."""
    import trio

    C.log(f"icnd {placement}: {describe_placement(placement)}", opts.quiet)
    profiler = None
    if opts.profile:
        import cProfile

        profiler = cProfile.Profile()
    results: dict[Case, R.Timing] = {}
    for index, (op, nbytes) in enumerate(cases, 1):
        if profiler is not None:
            profiler.enable()
        try:
            t = results[(op, nbytes)] = trio.run(icnd_case, placement, index, op, nbytes, opts)
        finally:
            if profiler is not None:
                profiler.disable()
        name = case_name(op, nbytes, placement)
        if t.error:
            C.log(f"  {name}: FAILED: {t.error}", opts.quiet)
        else:
            C.log(f"  {name}: {R.fmt_time(t.median)} ({R.fmt_time(t.lo)}..{R.fmt_time(t.hi)}, "
                  f"warm-up {R.fmt_time(t.extra['warmup_s'])})", opts.quiet)
    if profiler is not None:
        os.makedirs(opts.profile, exist_ok=True)
        path = os.path.join(opts.profile, f"clients-{placement}.prof")
        profiler.dump_stats(path)
        C.log(f"  cProfile of this process: {path}", opts.quiet)
    return results


# --- MPI side ------------------------------------------------------------------------------------------


def run_mpi(transport: str, cases: list[Case], reps: int, workdir: str, quiet: bool) -> dict[Case, R.Timing]:
    """One mpirun launch of bench/mpi_collectives.py: every case over `transport`."""
    argv = ["mpirun", *R.MPI_COMMON, *R.MPI_TRANSPORTS[transport], "-np", str(RANKS),
            sys.executable, str(MPI_SCRIPT), "--label", transport, "--reps", str(reps),
            "--cases", ",".join(f"{op}:{nbytes}" for op, nbytes in cases)]
    log_path = f"{workdir}/mpi-{transport}.log"
    C.log(f"mpi-{transport}: {' '.join(argv)}", quiet)
    busy0, ours0, wall0 = R.machine_task_seconds(), R.own_cpu_seconds(), time.perf_counter()
    proc = C.spawn(argv, log_path=log_path, stdout=subprocess.PIPE)
    try:
        out, _ = proc.communicate(timeout=R.MPI_LAUNCH_TIMEOUT)
        error = None if proc.returncode == 0 else f"mpirun exited with {proc.returncode}"
    except subprocess.TimeoutExpired:
        out, error = b"", f"mpirun did not finish within {R.MPI_LAUNCH_TIMEOUT:g} s"
    finally:
        C.stop(proc)
    other = R.machine_task_seconds() - busy0 - (R.own_cpu_seconds() - ours0)
    other_cpu = R._r(max(0.0, other) / (time.perf_counter() - wall0), 2)
    results: dict[Case, R.Timing] = {}
    for text in out.decode("utf-8", "replace").splitlines():
        if not text.startswith("{"):
            continue
        rec = json.loads(text)
        t = R.Timing(rec["median_s"], rec["min_s"], rec["max_s"], rec["reps"],
                     {"inner": rec["inner"], "other_cpu": other_cpu, "version": f"{rec['mpi']}; mpi4py {rec['mpi4py']}"})
        if not rec.get("ok"):
            t.error = rec.get("error", "wrong result")
        results[(rec["op"], rec["bytes"])] = t
        C.log(f"  {rec['op']} {R.size_label(rec['bytes']) if rec['bytes'] else '0B'}: {R.fmt_time(t.median)}"
              + ("" if rec.get("ok") else f" WRONG RESULT: {t.error}"), quiet)
    if error:
        error += f"; {log_path}: {R.log_excerpt(log_path)}"
        C.log(f"  mpi-{transport} FAILED: {error}", quiet)
    for case in cases:
        results.setdefault(case, R.Timing(error=error or "no result printed"))
    return results


# --- report ---------------------------------------------------------------------------------------------


def judge(name: str, value: float | None, ratio: float | None) -> dict[str, Any] | None:
    """The issue's target for case `name` and whether it is met (None: no target, or not measurable)."""
    target = TARGETS.get(name)
    if target is None:
        return None
    if "max_s" in target:
        return {**target, "met": value is not None and value <= target["max_s"]}
    return {**target, "met": None if ratio is None else ratio <= target["max_ratio"]}


def build_lines(placement: str, cases: list[Case], icnd: dict[Case, R.Timing], icnd_error: str | None,
                mpi: dict[Case, R.Timing], mpi_error: str | None) -> tuple[list[dict[str, Any]], list[str]]:
    """One JSON line and one table row per case; a baseline and a ratio only where MPI measured one."""
    lines: list[dict[str, Any]] = []
    rows: list[str] = []
    transport = BASELINE[placement]
    for op, nbytes in cases:
        name = case_name(op, nbytes, placement)
        mine = icnd.get((op, nbytes)) or R.Timing(error=icnd_error or "not measured")
        base = mpi.get((op, nbytes)) or R.Timing(error=mpi_error or "not measured")
        value = None if mine.error else mine.median
        bvalue = None if base.error else base.median
        ratio = value / bvalue if value is not None and bvalue else None
        line: dict[str, Any] = {
            "bench": "collectives", "case": name, "op": op, "bytes": nbytes, "ranks": RANKS, "placement": placement,
            "value": R._r(value), "unit": "s",
            **{k: v for k, v in mine.summary().items() if k != "median_s"},
        }
        if bvalue is not None:  # never a baseline that was not measured
            line.update(baseline=R._r(bvalue), baseline_name=f"mpi-{transport}", ratio=R._r(ratio, 3))
        line["mpi"] = base.summary()
        target = judge(name, value, ratio)
        if target is not None:
            line["target"] = target
        others = [mine.extra.get("other_cpu"), base.extra.get("other_cpu")]
        line["contended"] = any(o is not None and o > R.CONTENDED for o in others)
        line["segment_bytes"] = SEGMENT_BYTES
        lines.append(line)
        shown = R.fmt_time(value) if not mine.error else ("-" if icnd_error else "FAILED")
        met = "" if target is None else (" met" if target["met"] else (" MISSED" if target["met"] is False else " ?"))
        goal = "" if target is None else (f"<= {R.fmt_time(target['max_s'])}" if "max_s" in target
                                          else f"<= {target['max_ratio']:g}x")
        rows.append(f"{name:<30} {shown:>10} {R.fmt_time(bvalue):>10} {R._fmt_ratio(ratio):>8}  {goal}{met}"
                    + ("  (!)" if line["contended"] else ""))
    return lines, rows


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help=f"sizes {'+'.join(map(R.size_label, QUICK_SIZES))} (and barrier), {QUICK_REPS} reps")
    ap.add_argument("--sizes", help="comma-separated, e.g. 1KiB,1MiB,16MiB (the default); multiples of 32 bytes")
    ap.add_argument("--cases", help="comma-separated ops or op-size pairs, e.g. allreduce,bcast-16MiB,barrier "
                                    f"(default all of {', '.join(OPS)})")
    ap.add_argument("--placements", default=",".join(PLACEMENTS), help="comma-separated, of one-node, tree")
    ap.add_argument("--reps", type=int, help=f"timed repetitions per case, both sides (default {REPS}, "
                                             f"quick {QUICK_REPS}; at least 3)")
    ap.add_argument("--timeout", type=float, default=OP_TIMEOUT, help=f"per icnd call, s (default {OP_TIMEOUT:g})")
    ap.add_argument("--no-mpi", action="store_true", help="skip the MPI baselines (no ratios)")
    ap.add_argument("--no-icnd", action="store_true", help="measure only the MPI baselines")
    ap.add_argument("--profile", metavar="DIR", help="write a cProfile of this process (all ranks' clients) "
                                                     "per placement into DIR")
    ap.add_argument("--json-only", action="store_true", help="print only the JSON lines")
    opts = ap.parse_args(argv)
    opts.quiet = opts.json_only
    opts.reps = opts.reps or (QUICK_REPS if opts.quick else REPS)
    sizes = R.parse_list(opts.sizes, R.parse_size) if opts.sizes else list(QUICK_SIZES if opts.quick else SIZES)
    placements = R.parse_list(opts.placements, str.strip)
    wanted = R.parse_list(opts.cases, str.strip) if opts.cases else None
    if opts.reps < 3:
        ap.error("--reps must be at least 3 (the value is a median)")
    if any(s <= 0 or s % (4 * RANKS) for s in sizes):
        ap.error(f"sizes must be positive multiples of {4 * RANKS} bytes (float32 or int32, split in {RANKS})")
    if not placements or any(p not in PLACEMENTS for p in placements):
        ap.error(f"--placements: comma-separated, of {', '.join(PLACEMENTS)}")
    opts.placements = placements
    opts.cases = select(all_cases(sizes), wanted)
    if not opts.cases:
        ap.error(f"--cases {','.join(wanted or [])}: no case matches (ops: {', '.join(OPS)}; "
                 f"sizes: {', '.join(map(R.size_label, sizes))}; barrier is barrier-0B)")
    return opts


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    t0 = time.perf_counter()
    C.log(f"collectives: {RANKS} ranks, placements {', '.join(opts.placements)}, "
          f"{len(opts.cases)} cases each, {opts.reps} reps; load average {os.getloadavg()[0]:.2f}", opts.quiet)
    notes: list[str] = []
    mpi_error = "skipped (--no-mpi)" if opts.no_mpi else R.mpi_unavailable()
    icnd_error = "skipped (--no-icnd)" if opts.no_icnd else R.icnd_unavailable()
    if icnd_error is None:
        import icnd

        if not hasattr(icnd.Client, "communicator"):
            icnd_error = "icnd.Client has no communicator: the collectives are not implemented in this checkout"
    for why, side in ((mpi_error, "MPI baseline"), (icnd_error, "icnd")):
        if why:
            notes.append(f"{side}: {why}")
            C.log(notes[-1], False)
    lines: list[dict[str, Any]] = []
    rows: dict[str, list[str]] = {}
    workdir = tempfile.mkdtemp(prefix="icnd-collectives-mpi-")
    failed = False
    try:
        for placement in opts.placements:
            mpi: dict[Case, R.Timing] = {}
            if not mpi_error:
                mpi = run_mpi(BASELINE[placement], opts.cases, opts.reps, workdir, opts.quiet)
                notes += sorted({f"MPI baseline failed ({placement}): {t.error} (no ratio there)"
                                 for t in mpi.values() if t.error})
            icnd_results = {} if icnd_error else icnd_side(placement, opts.cases, opts)
            failed = failed or any(t.error for t in icnd_results.values())
            notes += [f"icnd failed: {case_name(op, b, placement)}: {t.error}"
                      for (op, b), t in icnd_results.items() if t.error]
            placement_lines, rows[placement] = build_lines(placement, opts.cases, icnd_results, icnd_error, mpi,
                                                           mpi_error)
            lines += placement_lines
    finally:
        C.stop_all()
    if not any("MPI baseline failed" in n for n in notes):
        shutil.rmtree(workdir, ignore_errors=True)
    if not opts.quiet:
        print()
        print(f"{'case':<30} {'icnd':>10} {'mpi':>10} {'ratio':>8}  target")
        for placement, placement_rows in rows.items():
            for row in placement_rows:
                print(row)
        for placement in rows:
            print(f"{placement}: icnd {describe_placement(placement)}; baseline "
                  f"{BASELINE_TEXT[BASELINE[placement]]}")
        print(f"Time per call: median of {opts.reps} reps (icnd: last rank's finish / calls, all ranks' clients "
              "in this process; MPI: max over ranks). ratio = icnd / MPI. 2 cores, oversubscribed on both sides.")
        if any(line["contended"] for line in lines):
            print(f"(!): other processes used over {R.CONTENDED:.0%} of a core meanwhile (other_cpu in the JSON "
                  "line): the figures are disturbed")
        print(f"python {platform.python_version()}; {time.perf_counter() - t0:.0f} s")
        for note in notes:
            print(note)
        print()
    for line in lines:
        C.emit_json(line)
    return 1 if failed or (icnd_error is not None and not opts.no_icnd) else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("collectives: interrupted", file=sys.stderr)
        sys.exit(130)
