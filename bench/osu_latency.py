#!/usr/bin/env python3
"""OSU-style latency of collectives, one program for icnd (``icnd.mpi``) and for MPI (mpi4py).

The same blocking mpi4py program runs over icnd or over MPI; only the import
line differs (``--mpi4py`` picks ``from mpi4py import MPI``, else ``from
icnd.mpi import MPI``)::

    icnd exec -n 8 -- .venv/bin/python bench/osu_latency.py --json > osu-icnd.jsonl
    mpirun --allow-run-as-root --oversubscribe --bind-to none -n 8 \\
        .venv/bin/python bench/osu_latency.py --mpi4py --json > osu-mpi.jsonl
    .venv/bin/python bench/osu_latency.py --side-by-side osu-icnd.jsonl osu-mpi.jsonl

Method, as the OSU micro-benchmarks' ``osu_allreduce`` & co. measure (the
program is our own): for each op and message size (1 B to 1 MiB, powers of
4; ``allreduce`` reduces float32, so from 4 B), ``-x`` warm-up and ``-i``
timed iterations (``--iterations-large`` / ``--warmup-large`` above 8 KiB),
each one call timed with ``MPI.Wtime`` followed by a ``Barrier`` (outside
the timed region) so iterations do not overlap; ``barrier`` itself is timed
back to back.  A rank's latency is its mean per call; the table shows the
mean over ranks (``Avg``) and the min and max of the ranks' means, as OSU
prints them.  Message size: ``allreduce`` and ``bcast`` the buffer,
``allgather`` each rank's contribution (OSU's convention: every rank
receives N times it).  The upper-case buffer methods on numpy arrays:
``Allreduce`` (SUM), ``Bcast`` (root 0), ``Allgather``, ``Barrier``.  The
last result of each size is checked against numpy's answer on every rank;
a wrong one is reported and makes the exit status 1.

Output (rank 0): one table per op; with ``--json`` one JSON line per row
instead (``{"bench": "osu_latency", "impl", "op", "bytes", "ranks",
"avg_us", "min_us", "max_us", "iterations", "ok"}``).  ``--side-by-side A
B`` (no MPI needed) prints two such JSON files as Markdown tables, one per
op, A's column next to B's and their ratio.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable

import numpy as np

OPS = ("allreduce", "bcast", "allgather", "barrier")
LARGE = 8192  # bytes: above this, the large-message iteration counts (OSU's LARGE_MESSAGE_SIZE)


def sizes(lo: int, hi: int, factor: int) -> list[int]:
    out, s = [], lo
    while s <= hi:
        out.append(s)
        s *= factor
    return out


class Op:
    """One op at one size on this rank: the call, and the check of its last result."""

    def __init__(self, MPI: Any, comm: Any, op: str, nbytes: int) -> None:
        rank, p = comm.Get_rank(), comm.Get_size()
        self.expected: np.ndarray | None = None
        self.got: np.ndarray | None = None
        self.call: Callable[[], Any]
        if op == "allreduce":
            send = np.full(nbytes // 4, rank + 1, dtype=np.float32)
            self.got = np.zeros_like(send)
            self.expected = np.full_like(send, p * (p + 1) / 2)
            self.call = lambda: comm.Allreduce(send, self.got, op=MPI.SUM)
        elif op == "bcast":
            self.expected = (np.arange(nbytes) % 251).astype(np.uint8)
            self.got = self.expected.copy() if rank == 0 else np.zeros(nbytes, np.uint8)
            self.call = lambda: comm.Bcast(self.got, root=0)
        elif op == "allgather":
            send = ((np.arange(nbytes) + 7 * rank) % 251).astype(np.uint8)
            self.got = np.zeros(nbytes * p, np.uint8)
            self.expected = np.concatenate([((np.arange(nbytes) + 7 * j) % 251).astype(np.uint8) for j in range(p)])
            self.call = lambda: comm.Allgather(send, self.got)
        elif op == "barrier":
            self.call = comm.Barrier
        else:
            raise ValueError(f"unknown op {op!r}")

    def ok(self) -> bool:
        return self.expected is None or self.got is None or bool(np.array_equal(self.got, self.expected))


def latency(MPI: Any, comm: Any, op: Op, barrier_op: bool, warmup: int, iterations: int) -> float:
    """This rank's mean seconds per call over `iterations` after `warmup` untimed ones."""
    for _ in range(warmup):
        op.call()
        if not barrier_op:
            comm.Barrier()
    if barrier_op:  # OSU's osu_barrier: back-to-back barriers, one timer around the loop
        t0 = MPI.Wtime()
        for _ in range(iterations):
            op.call()
        return (MPI.Wtime() - t0) / iterations
    total = 0.0
    for _ in range(iterations):
        t0 = MPI.Wtime()
        op.call()
        total += MPI.Wtime() - t0
        comm.Barrier()
    return total / iterations


def run(MPI: Any, impl: str, opts: argparse.Namespace) -> int:
    comm = MPI.COMM_WORLD
    rank, p = comm.Get_rank(), comm.Get_size()
    all_ok = True
    for name in opts.ops:
        rows: list[dict[str, Any]] = []
        grid = [0] if name == "barrier" else [s for s in sizes(opts.min_size, opts.max_size, opts.factor)
                                              if name != "allreduce" or s >= 4]
        for nbytes in grid:
            if name == "allreduce":
                nbytes -= nbytes % 4
            large = nbytes > LARGE
            iterations = opts.iterations_large if large else opts.iterations
            op = Op(MPI, comm, name, nbytes)
            mine = latency(MPI, comm, op, name == "barrier", opts.warmup_large if large else opts.warmup, iterations)
            ok = op.ok()
            gathered = comm.gather((mine, ok), root=0)
            if rank == 0:
                lat = [g[0] * 1e6 for g in gathered]
                good = all(g[1] for g in gathered)
                all_ok = all_ok and good
                rows.append({"bench": "osu_latency", "impl": impl, "op": name, "bytes": nbytes, "ranks": p,
                             "avg_us": round(sum(lat) / p, 2), "min_us": round(min(lat), 2),
                             "max_us": round(max(lat), 2), "iterations": iterations, "ok": good})
                if opts.json:
                    print(json.dumps(rows[-1]), flush=True)
        if rank == 0 and not opts.json:
            print_table(impl, name, p, rows)
    return 0 if all_ok else 1


def print_table(impl: str, name: str, p: int, rows: list[dict[str, Any]]) -> None:
    print(f"# OSU-style {name} latency, {impl}, {p} ranks")
    print(f"{'# Size':<10}{'Avg Latency(us)':>18}{'Min Latency(us)':>18}{'Max Latency(us)':>18}{'Iterations':>12}")
    for r in rows:
        size = "" if name == "barrier" else str(r["bytes"])
        print(f"{size:<10}{r['avg_us']:>18.2f}{r['min_us']:>18.2f}{r['max_us']:>18.2f}{r['iterations']:>12}"
              + ("" if r["ok"] else "  WRONG RESULT"))
    print(flush=True)


def side_by_side(a_path: str, b_path: str) -> int:
    """Two `--json` outputs as Markdown tables: per op, size | A avg | B avg | A / B."""
    def load(path: str) -> dict[tuple[str, int], dict[str, Any]]:
        with open(path) as f:
            recs = [json.loads(line) for line in f if line.startswith("{")]
        return {(r["op"], r["bytes"]): r for r in recs if r.get("bench") == "osu_latency"}

    a, b = load(a_path), load(b_path)
    if not a or not b:
        print(f"side-by-side: no osu_latency lines in {a_path if not a else b_path}", file=sys.stderr)
        return 1
    impl_a, impl_b = next(iter(a.values()))["impl"], next(iter(b.values()))["impl"]
    for name in [op for op in OPS if any(k[0] == op for k in a)]:
        print(f"**{name}** (average latency over ranks, µs; {next(iter(a.values()))['ranks']} ranks)\n")
        print(f"| size | {impl_a} | {impl_b} | {impl_a} / {impl_b} |")
        print("|---:|---:|---:|---:|")
        for key in sorted(k for k in a if k[0] == name):
            ra, rb = a[key], b.get(key)
            size = "-" if name == "barrier" else _size(key[1])
            bad = "" if ra["ok"] and (rb is None or rb["ok"]) else " (wrong result)"
            if rb is None:
                print(f"| {size} | {ra['avg_us']:.1f} | - | - |{bad}")
            else:
                print(f"| {size} | {ra['avg_us']:.1f} | {rb['avg_us']:.1f} | {ra['avg_us'] / rb['avg_us']:.1f} |{bad}")
        print()
    return 0


def _size(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mpi4py", action="store_true", help="run on mpi4py (under mpirun) instead of icnd.mpi")
    ap.add_argument("--ops", default=",".join(OPS), help=f"comma-separated, of {', '.join(OPS)} (default all)")
    ap.add_argument("-m", "--max-size", type=int, default=1 << 20, help="largest message, bytes (default 1 MiB)")
    ap.add_argument("--min-size", type=int, default=1, help="smallest message, bytes (default 1)")
    ap.add_argument("--factor", type=int, default=4, help="size step (default 4: 1, 4, 16, ... bytes)")
    ap.add_argument("-i", "--iterations", type=int, default=50, help="timed iterations up to 8 KiB (default 50)")
    ap.add_argument("-x", "--warmup", type=int, default=5, help="warm-up iterations up to 8 KiB (default 5)")
    ap.add_argument("--iterations-large", type=int, default=10, help="timed iterations above 8 KiB (default 10)")
    ap.add_argument("--warmup-large", type=int, default=2, help="warm-up iterations above 8 KiB (default 2)")
    ap.add_argument("--json", action="store_true", help="one JSON line per row instead of the tables")
    ap.add_argument("--side-by-side", nargs=2, metavar=("A.jsonl", "B.jsonl"),
                    help="print two --json outputs side by side (Markdown) and exit; needs no MPI")
    opts = ap.parse_args(argv)
    opts.ops = [o.strip() for o in opts.ops.split(",") if o.strip()]
    if any(o not in OPS for o in opts.ops) or not opts.ops:
        ap.error(f"--ops: comma-separated, of {', '.join(OPS)}")
    if (opts.min_size < 1 or opts.max_size < opts.min_size or opts.factor < 2 or opts.iterations < 1
            or opts.iterations_large < 1 or opts.warmup < 0 or opts.warmup_large < 0):
        ap.error("sizes must satisfy 1 <= min <= max, factor >= 2, iterations >= 1, warm-ups >= 0")
    return opts


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    if opts.side_by_side:
        return side_by_side(*opts.side_by_side)
    if opts.mpi4py:
        from mpi4py import MPI
        impl = f"mpi4py {__import__('mpi4py').__version__}"
    else:
        from icnd.mpi import MPI  # type: ignore[no-redef]  # the one line that differs
        impl = "icnd.mpi"
    return run(MPI, impl, opts)


if __name__ == "__main__":
    sys.exit(main())
