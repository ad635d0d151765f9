#!/usr/bin/env python3
"""MPI baseline for bench/reduce.py: float32 SUM ``Allreduce`` (and ``Reduce``) timed under mpirun.

Run by bench/reduce.py, one launch per transport and rank count, e.g.::

    mpirun --allow-run-as-root --oversubscribe --bind-to none --mca pml ob1 \\
        --mca oob_tcp_if_include lo --mca btl tcp,self --mca btl_tcp_if_include lo \\
        -np 8 .venv/bin/python bench/mpi_allreduce.py --label tcp --reps 7

Method (shared/reference/collective.md section 5.1 and Appendix A): rank
``r`` sends ``full(n, r + 1)`` float32, so every element of the sum is
``p (p + 1) / 2`` (exact in float32 for these p).  Per size: warm-up calls
(20 up to 4 KiB, else 2), then ``--reps`` repetitions of: receive buffer
filled with NaN, ``Barrier``, ``inner`` back-to-back calls (200 up to 4 KiB,
5 up to 1 MiB, else 1), time per call = the MAX over ranks of (elapsed /
inner); then the result is checked (every element, on every rank that gets
one) outside the timed region.  Reported: median, min and max over the
repetitions.  ``Reduce`` goes to rank 0 and only rank 0 checks; its non-root
ranks return as soon as their data is sent, so back-to-back calls would
overlap and time a pipelined rate: each of its ``inner`` calls is timed on
its own after a Barrier (max over ranks) and a repetition is their median.

Rank 0 prints one JSON line per (op, size) on stdout:
``{"label", "op", "ranks", "bytes", "median_s", "min_s", "max_s", "reps",
"inner", "algbw_GBps", "busbw_GBps", "ok", "mpi", "mpi4py"}`` (``ok`` false
and ``error`` set if any rank saw a wrong result).  Needs only numpy and
mpi4py; the exit status is 1 if a result was wrong.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np
from mpi4py import MPI

DEFAULT_SIZES = (1 << 10, 1 << 20, 16 << 20, 64 << 20)
OPS = ("allreduce", "reduce")
SMALL = 4096  # bytes: latency-bound sizes get more warm-up and inner calls


def inner_calls(nbytes: int) -> int:
    """Calls per timed repetition (Appendix A)."""
    return 200 if nbytes <= SMALL else (5 if nbytes <= (1 << 20) else 1)


def warmup_calls(nbytes: int) -> int:
    return 20 if nbytes <= SMALL else 2


def collective(comm: MPI.Comm, op: str, send: np.ndarray, recv: np.ndarray) -> Callable[[], None]:
    """The call to time: Allreduce, or Reduce to rank 0 (recv ignored on the other ranks)."""
    if op == "allreduce":
        return lambda: comm.Allreduce(send, recv, op=MPI.SUM)
    if op == "reduce":
        return lambda: comm.Reduce(send, recv, op=MPI.SUM, root=0)
    raise ValueError(f"unknown op {op!r}")


def timed(comm: MPI.Comm, call: Callable[[], None], inner: int) -> float:
    """Barrier, `inner` back-to-back calls: seconds per call, the max over ranks."""
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(inner):
        call()
    return comm.allreduce((time.perf_counter() - t0) / inner, op=MPI.MAX)


def measure(comm: MPI.Comm, op: str, nbytes: int, reps: int) -> tuple[list[float], bool]:
    """Seconds per call of each repetition (max over ranks) and whether every result was right."""
    rank, p = comm.Get_rank(), comm.Get_size()
    n = nbytes // 4
    send = np.full(n, float(rank + 1), dtype=np.float32)
    recv = np.empty(n, dtype=np.float32)
    expected = np.float32(p * (p + 1) / 2)
    checks = op == "allreduce" or rank == 0
    call = collective(comm, op, send, recv)
    inner = inner_calls(nbytes)
    for _ in range(warmup_calls(nbytes)):
        call()
    ok = not checks or bool(np.all(recv == expected))
    times = []
    for _ in range(reps):
        recv.fill(np.nan)
        if op == "reduce":
            times.append(statistics.median(timed(comm, call, 1) for _ in range(inner)))
        else:
            times.append(timed(comm, call, inner))
        if checks and not np.all(recv == expected):
            ok = False
    return times, bool(comm.allreduce(ok, op=MPI.LAND))


def record(label: str, op: str, ranks: int, nbytes: int, times: list[float], ok: bool) -> dict[str, Any]:
    med = statistics.median(times)
    line: dict[str, Any] = {
        "label": label, "op": op, "ranks": ranks, "bytes": nbytes,
        "median_s": med, "min_s": min(times), "max_s": max(times),
        "reps": len(times), "inner": inner_calls(nbytes),
        "algbw_GBps": nbytes / med / 1e9,
        "busbw_GBps": 2 * (ranks - 1) / ranks * nbytes / med / 1e9 if op == "allreduce" else None,
        "ok": ok,
        "mpi": MPI.Get_library_version().replace("\x00", "").split(", ident")[0].strip(),
        "mpi4py": __import__("mpi4py").__version__,
    }
    if not ok:
        line["error"] = f"wrong {op} result: expected every element == {ranks * (ranks + 1) // 2}"
    return line


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", default="mpi", help="copied into every JSON line (e.g. tcp, shm)")
    ap.add_argument("--reps", type=int, default=7, help="timed repetitions per size (default 7)")
    ap.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                    help="comma-separated sizes in bytes, multiples of 4 (default 1 KiB, 1, 16, 64 MiB)")
    ap.add_argument("--ops", default="allreduce", help=f"comma-separated, of {', '.join(OPS)} (default allreduce)")
    opts = ap.parse_args(argv)
    sizes = [int(s) for s in opts.sizes.split(",") if s]
    ops = [o for o in opts.ops.split(",") if o]
    if opts.reps < 1 or any(s <= 0 or s % 4 for s in sizes) or any(o not in OPS for o in ops):
        ap.error("--reps must be >= 1, sizes positive multiples of 4, ops among " + ", ".join(OPS))
    comm = MPI.COMM_WORLD
    all_ok = True
    for op in ops:
        for nbytes in sizes:
            times, ok = measure(comm, op, nbytes, opts.reps)
            all_ok = all_ok and ok
            if comm.Get_rank() == 0:
                print(json.dumps(record(opts.label, op, comm.Get_size(), nbytes, times, ok)), flush=True)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
