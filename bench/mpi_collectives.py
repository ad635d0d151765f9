#!/usr/bin/env python3
"""MPI baseline for bench/collectives.py: the MPI collectives timed under mpirun, results checked.

Run by bench/collectives.py, one launch per placement, e.g.::

    mpirun --allow-run-as-root --oversubscribe --bind-to none --mca pml ob1 \\
        --mca oob_tcp_if_include lo --mca btl vader,self \\
        -np 8 .venv/bin/python bench/mpi_collectives.py --label shm --reps 5 \\
        --cases bcast:1024,allreduce:1048576,barrier:0

Each case ``op:bytes`` with the sizes of bench/collectives.py (``bytes`` is
the largest buffer a rank holds, as nccl-tests counts it; see
`collective_payloads` there for the per-op meaning and the values):

- ``allreduce``: ``Allreduce`` of float32, SUM;
- ``reduce_scatter``: ``Reduce_scatter_block`` of float32, SUM (``bytes``
  in, ``bytes / N`` out);
- ``bcast``: ``Bcast`` of int32 from rank 0;
- ``allgather``: ``Allgather`` of int32 (``bytes / N`` in, ``bytes`` out);
- ``alltoall``: ``Alltoall`` of int32 (``bytes`` in and out);
- ``barrier``: ``Barrier`` (``bytes`` 0).

The upper-case buffer methods: mpi4py's fastest path, the fair baseline for
numpy arrays.  Method as bench/mpi_allreduce.py (whose `timed`,
`inner_calls` and `warmup_calls` this reuses): warm-up calls, then
``--reps`` repetitions of Barrier + ``inner`` back-to-back calls, time per
call = the MAX over ranks; receive buffers are poisoned before each
repetition and checked on every rank after it, outside the timed region.
Rank 0 prints one JSON line per case: ``{"label", "op", "ranks", "bytes",
"median_s", "min_s", "max_s", "reps", "inner", "ok", "mpi", "mpi4py"}``
(``ok`` false and ``error`` set if any rank saw a wrong result); exit
status 1 if a result was wrong.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
from mpi4py import MPI

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mpi_allreduce import inner_calls, timed, warmup_calls  # noqa: E402

OPS = ("bcast", "allgather", "alltoall", "reduce_scatter", "allreduce", "barrier")


def pattern(k: int, m: int) -> np.ndarray:
    """The int32 block number `k` of `m` elements (the same as bench/collectives.py's)."""
    return np.arange(m, dtype=np.int32) + np.int32(k * m)


class Case:
    """One (op, bytes) at this rank: the call to time, how to poison its receive buffer, how to check it."""

    def __init__(self, comm: MPI.Comm, op: str, nbytes: int) -> None:
        rank, p = comm.Get_rank(), comm.Get_size()
        self.op = op
        n = nbytes // 4
        m = n // p if p else 0
        self.recv: np.ndarray | None = None
        self.expected: np.ndarray | None = None
        self.call: Callable[[], Any]
        if op == "allreduce":
            send = np.full(n, rank + 1, dtype=np.float32)
            self.recv = np.empty(n, dtype=np.float32)
            self.expected = np.full(n, p * (p + 1) / 2, dtype=np.float32)
            self.call = lambda: comm.Allreduce(send, self.recv, op=MPI.SUM)
        elif op == "reduce_scatter":
            send = np.full(n, rank + 1, dtype=np.float32)
            self.recv = np.empty(m, dtype=np.float32)
            self.expected = np.full(m, p * (p + 1) / 2, dtype=np.float32)
            self.call = lambda: comm.Reduce_scatter_block(send, self.recv, op=MPI.SUM)
        elif op == "bcast":
            self.expected = pattern(0, n)
            self.recv = self.expected.copy() if rank == 0 else np.empty(n, dtype=np.int32)
            self.call = lambda: comm.Bcast(self.recv, root=0)
        elif op == "allgather":
            send = pattern(rank, m)
            self.recv = np.empty(m * p, dtype=np.int32)
            self.expected = np.concatenate([pattern(j, m) for j in range(p)])
            self.call = lambda: comm.Allgather(send, self.recv)
        elif op == "alltoall":
            send = np.concatenate([pattern(rank * p + d, m) for d in range(p)])
            self.recv = np.empty(m * p, dtype=np.int32)
            self.expected = np.concatenate([pattern(j * p + rank, m) for j in range(p)])
            self.call = lambda: comm.Alltoall(send, self.recv)
        elif op == "barrier":
            self.call = comm.Barrier
        else:
            raise ValueError(f"unknown op {op!r}")
        self.root_keeps = op == "bcast" and rank == 0  # the root's buffer is the value itself

    def poison(self) -> None:
        if self.recv is not None and not self.root_keeps:
            self.recv.fill(-1)

    def ok(self) -> bool:
        return self.recv is None or self.expected is None or bool(np.array_equal(self.recv, self.expected))


def measure(comm: MPI.Comm, op: str, nbytes: int, reps: int) -> tuple[list[float], int, bool]:
    """Seconds per call of each repetition (max over ranks), the calls per repetition, and
    whether every rank's every result was right."""
    case = Case(comm, op, nbytes)
    inner = inner_calls(nbytes)
    for _ in range(warmup_calls(nbytes)):
        case.call()
    ok = case.ok()
    times = []
    for _ in range(reps):
        case.poison()
        times.append(timed(comm, case.call, inner))
        ok = ok and case.ok()
    return times, inner, bool(comm.allreduce(ok, op=MPI.LAND))


def parse_cases(text: str) -> list[tuple[str, int]]:
    cases = []
    for item in text.split(","):
        op, _, size = item.strip().partition(":")
        cases.append((op, int(size or 0)))
    return cases


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", default="mpi", help="copied into every JSON line (e.g. tcp, shm)")
    ap.add_argument("--reps", type=int, default=5, help="timed repetitions per case (default 5)")
    ap.add_argument("--cases", required=True, help="comma-separated op:bytes, e.g. bcast:1024,barrier:0")
    opts = ap.parse_args(argv)
    comm = MPI.COMM_WORLD
    p = comm.Get_size()
    try:
        cases = parse_cases(opts.cases)
    except ValueError:
        ap.error(f"--cases: expected op:bytes,..., got {opts.cases!r}")
    bad = [f"{op}:{b}" for op, b in cases if op not in OPS or b < 0 or b % (4 * p) or (op == "barrier") != (b == 0)]
    if opts.reps < 1 or bad:
        ap.error(f"--reps must be >= 1; ops among {', '.join(OPS)} with bytes a multiple of 4 x ranks "
                 f"(barrier: 0); bad: {', '.join(bad)}")
    version = MPI.Get_library_version().replace("\x00", "").split(", ident")[0].strip()
    all_ok = True
    for op, nbytes in cases:
        times, inner, ok = measure(comm, op, nbytes, opts.reps)
        all_ok = all_ok and ok
        if comm.Get_rank() == 0:
            line: dict[str, Any] = {
                "label": opts.label, "op": op, "ranks": p, "bytes": nbytes,
                "median_s": statistics.median(times), "min_s": min(times), "max_s": max(times),
                "reps": len(times), "inner": inner, "ok": ok, "mpi": version,
                "mpi4py": __import__("mpi4py").__version__,
            }
            if not ok:
                line["error"] = f"wrong {op} result on some rank"
            print(json.dumps(line), flush=True)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
