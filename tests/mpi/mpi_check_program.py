"""An mpi4py-style program that checks every method of icnd.mpi against numpy.

Run as each rank of a job (``icnd exec``, ``mpirun``, or the tests' own
launch with the environment protocol): every rank computes what every
collective must give from the ranks' deterministic data, compares, and
prints ``rank R of N: ok (<checks> checks)``; a wrong answer is an
AssertionError (exit code 1) saying which check failed.

    python mpi_check_program.py [--big N]    # N: elements of the large arrays (default 300000)
"""

from __future__ import annotations

import mmap
import sys

import numpy as np

from icnd.mpi import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = comm.Get_size()
assert (rank, size) == (comm.rank, comm.size)
BIG = int(sys.argv[sys.argv.index("--big") + 1]) if "--big" in sys.argv else 300_000
checks = 0


def data(r: int, n: int, dtype: object = np.float64) -> np.ndarray:
    return (np.arange(n) % 1000 * (r + 1) + 10 * r).astype(dtype)


def same(got: object, want: object, what: str) -> None:
    global checks
    checks += 1
    if not np.array_equal(np.asarray(got), np.asarray(want)):
        raise AssertionError(f"rank {rank}: {what}: got {got!r}, want {want!r}")


everyone = range(size)
root = size - 1
t0 = MPI.Wtime()

# --- buffers: several dtypes, explicit specs, IN_PLACE ------------------------------------------
for dtype, datatype in ((np.float64, MPI.DOUBLE), (np.intc, MPI.INT), (np.float32, MPI.FLOAT)):
    n = 2 * size
    x = data(rank, n, dtype)
    xs = [data(r, n, dtype) for r in everyone]
    y = np.zeros_like(x)
    comm.Allreduce(x, y, op=MPI.SUM)
    same(y, np.sum(xs, axis=0, dtype=dtype), f"Allreduce SUM {dtype.__name__}")
    comm.Allreduce([x, n, datatype], [y, n, datatype], op=MPI.MAX)
    same(y, np.max(xs, axis=0), f"Allreduce MAX {dtype.__name__}")
    y = x.copy()
    comm.Allreduce(MPI.IN_PLACE, y, op=MPI.MIN)
    same(y, np.min(xs, axis=0), f"Allreduce IN_PLACE MIN {dtype.__name__}")
    comm.Allreduce(x, y, op=MPI.PROD)
    same(y, np.prod(xs, axis=0, dtype=dtype), f"Allreduce PROD {dtype.__name__}")
    r = np.zeros_like(x) if rank == root else None
    comm.Reduce(x, r, op=MPI.SUM, root=root)
    if rank == root:
        same(r, np.sum(xs, axis=0, dtype=dtype), f"Reduce {dtype.__name__}")
    block = np.zeros(2, dtype)
    comm.Reduce_scatter_block([x, datatype], [block, datatype], op=MPI.SUM)
    same(block, np.sum(xs, axis=0, dtype=dtype)[2 * rank:2 * rank + 2], f"Reduce_scatter_block {dtype.__name__}")

b = data(root, 5) if rank == root else np.zeros(5)
comm.Bcast(b, root=root)
same(b, data(root, 5), "Bcast")
count = np.array(99 if rank == 0 else 0, dtype=np.int64)
comm.Bcast([count, MPI.INT], root=0)  # as mpi4py's cpi demo: a C long moved as two C ints
same(count, 99, "Bcast [n, MPI.INT]")
g = np.zeros(3 * size) if rank == root else None
comm.Gather(data(rank, 3), g, root=root)
if rank == root:
    same(g, np.concatenate([data(r, 3) for r in everyone]), "Gather")
s = np.zeros(3)
comm.Scatter(np.arange(3.0 * size) if rank == root else None, s, root=root)
same(s, np.arange(3.0 * rank, 3.0 * rank + 3), "Scatter")
ag = np.zeros(3 * size)
ag[3 * rank:3 * rank + 3] = data(rank, 3)
comm.Allgather(MPI.IN_PLACE, ag)
same(ag, np.concatenate([data(r, 3) for r in everyone]), "Allgather IN_PLACE")
send = np.array([100 * rank + j for j in everyone], dtype=np.int64)
recv = np.zeros(size, dtype=np.int64)
comm.Alltoall([send, 1, MPI.LONG], [recv, 1, MPI.LONG])
same(recv, [100 * j + rank for j in everyone], "Alltoall")

# --- any buffer-protocol object --------------------------------------------------------------------
raw = bytearray([rank + 1] * 4)
total = bytearray(4)
comm.Allreduce([raw, MPI.BYTE], [total, MPI.BYTE], op=MPI.SUM)
same(list(total), [sum(r + 1 for r in everyone)] * 4, "Allreduce bytearray")
mm = mmap.mmap(-1, 8 * size)
comm.Allgather([np.array([float(rank)]), MPI.DOUBLE], [mm, MPI.DOUBLE])
same(np.frombuffer(mm, np.float64), list(everyone), "Allgather into mmap")

# --- large arrays: several segments ----------------------------------------------------------------
big = data(rank, BIG)
out = np.zeros(BIG)
comm.Allreduce(big, out, op=MPI.SUM)
same(out, np.sum([data(r, BIG) for r in everyone], axis=0), f"Allreduce {BIG} doubles")
payload = data(0, BIG) if rank == 0 else np.zeros(BIG)
comm.Bcast(payload, root=0)
same(payload, data(0, BIG), f"Bcast {BIG} doubles")

# --- nonblocking, interleaved ------------------------------------------------------------------------
x = data(rank, 4)
y = np.zeros(4)
bb = data(0, 2) if rank == 0 else np.zeros(2)
agg = np.zeros(2 * size)
gg = np.zeros(2 * size) if rank == 0 else None
ss = np.zeros(1)
aa = np.zeros(size)
rr = np.zeros(4) if rank == 0 else None
rs = np.zeros(1)
requests = [comm.Iallreduce(x, y, op=MPI.SUM), comm.Ibcast(bb, root=0), comm.Iallgather(data(rank, 2), agg),
            comm.Igather(data(rank, 2), gg, root=0), comm.Iscatter(np.arange(1.0 * size) if rank == 0 else None, ss),
            comm.Ialltoall(np.arange(size, dtype=np.float64) + 10 * rank, aa),
            comm.Ireduce(x, rr, op=MPI.MAX, root=0), comm.Ireduce_scatter_block(np.ones(size), rs), comm.Ibarrier()]
MPI.Request.Waitall(requests)
same(y, np.sum([data(r, 4) for r in everyone], axis=0), "Iallreduce")
same(bb, data(0, 2), "Ibcast")
same(agg, np.concatenate([data(r, 2) for r in everyone]), "Iallgather")
if rank == 0:
    same(gg, np.concatenate([data(r, 2) for r in everyone]), "Igather")
    same(rr, np.max([data(r, 4) for r in everyone], axis=0), "Ireduce")
same(ss, [rank], "Iscatter")
same(aa, [10.0 * j + rank for j in everyone], "Ialltoall")
same(rs, [size], "Ireduce_scatter_block")
req = comm.Iallreduce(MPI.IN_PLACE, z := np.ones(2))
while not req.Test():
    pass
same(z, [size, size], "Test until done")

# --- lower case: objects -------------------------------------------------------------------------------
same(comm.bcast({"k": [1, 2]} if rank == 0 else None, root=0) == {"k": [1, 2]}, True, "bcast dict")
same(comm.allreduce(rank + 1), size * (size + 1) // 2, "allreduce int")
same(comm.allreduce([rank]), list(everyone), "allreduce list (concatenation)")
same(comm.allreduce(data(rank, 3), op=MPI.MAX), np.max([data(r, 3) for r in everyone], axis=0), "allreduce array")
red = comm.reduce(float(rank), op=MPI.MAX, root=0)
same(red if rank == 0 else -1.0, float(size - 1) if rank == 0 else -1.0, "reduce float")
same(comm.gather((rank, "x"), root=0) == ([(r, "x") for r in everyone] if rank == 0 else None), True, "gather")
same(comm.scatter([j * j for j in everyone] if rank == 0 else None, root=0), rank * rank, "scatter")
same(comm.allgather(f"r{rank}") == [f"r{r}" for r in everyone], True, "allgather")
same(comm.alltoall([(rank, j) for j in everyone]) == [(j, rank) for j in everyone], True, "alltoall")
received = comm.bcast(np.arange(3.0) if rank == 0 else None)
received += 1  # writable, as with mpi4py
comm.barrier()
comm.Barrier()
assert MPI.Wtime() >= t0
print(f"rank {rank} of {size}: ok ({checks} checks)", flush=True)
