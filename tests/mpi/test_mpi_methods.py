"""Every method of icnd.mpi's COMM_WORLD against numpy's answer, on an
in-process job of N ranks (tests/mpi/mpi_fakes.py: one thread per rank,
answers computed independently with numpy), and on a lone process."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from icnd.errors import Error, Timeout
from icnd.mpi import MPI
from icnd.mpi.comm import Intracomm, Unsupported
from icnd.mpi.lone import LoneCommunicator
from tests.mpi.mpi_fakes import FakeWorld, run_ranks

SIZES = (1, 2, 3, 4)
DTYPES = ((np.float64, MPI.DOUBLE), (np.float32, MPI.FLOAT), (np.intc, MPI.INT), (np.dtype("l"), MPI.LONG))


def data(rank: int, n: int, dtype: Any = np.float64) -> np.ndarray:
    """Rank `rank`'s test array: distinct per rank and per element."""
    return (np.arange(n) * (rank + 1) + 10 * rank).astype(dtype)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dtype, datatype", DTYPES)
def test_allreduce_reduce_and_reduce_scatter_block(size: int, dtype: Any, datatype: Any) -> None:
    n = 6

    def program(comm: Intracomm) -> dict[str, Any]:
        x = data(comm.rank, n * size, dtype)
        out: dict[str, Any] = {}
        for name, op in (("sum", MPI.SUM), ("max", MPI.MAX), ("min", MPI.MIN), ("prod", MPI.PROD)):
            y = np.zeros_like(x)
            comm.Allreduce(x, y, op=op)
            out[name] = y
        y = np.zeros_like(x)
        comm.Allreduce([x, datatype], [y, datatype], MPI.SUM)  # explicit datatype
        out["typed"] = y
        inplace = x.copy()
        comm.Allreduce(MPI.IN_PLACE, inplace, op=MPI.SUM)
        out["inplace"] = inplace
        r = np.full_like(x, -1) if comm.rank == size - 1 else None
        comm.Reduce(x, r, op=MPI.MAX, root=size - 1)
        out["reduce"] = r
        r2 = x.copy()
        comm.Reduce(MPI.IN_PLACE if comm.rank == 0 else x, r2 if comm.rank == 0 else None, op=MPI.SUM, root=0)
        out["reduce_inplace"] = r2 if comm.rank == 0 else None
        block = np.zeros(n, dtype)
        comm.Reduce_scatter_block(x, block, op=MPI.SUM)
        out["rsb"] = block
        whole = x.copy()
        comm.Reduce_scatter_block(MPI.IN_PLACE, whole, op=MPI.SUM)
        out["rsb_inplace"] = whole[:n]
        return out

    results = run_ranks(size, program)
    xs = [data(r, n * size, dtype) for r in range(size)]
    total = np.sum(xs, axis=0, dtype=dtype)
    for rank, out in enumerate(results):
        np.testing.assert_array_equal(out["sum"], total)
        np.testing.assert_array_equal(out["max"], np.max(xs, axis=0))
        np.testing.assert_array_equal(out["min"], np.min(xs, axis=0))
        np.testing.assert_array_equal(out["prod"], np.prod(xs, axis=0, dtype=dtype))
        np.testing.assert_array_equal(out["typed"], total)
        np.testing.assert_array_equal(out["inplace"], total)
        assert out["sum"].dtype == np.dtype(dtype)
        if rank == size - 1:
            np.testing.assert_array_equal(out["reduce"], np.max(xs, axis=0))
        if rank == 0:
            np.testing.assert_array_equal(out["reduce_inplace"], total)
        np.testing.assert_array_equal(out["rsb"], total[rank * n:(rank + 1) * n])
        np.testing.assert_array_equal(out["rsb_inplace"], total[rank * n:(rank + 1) * n])


@pytest.mark.parametrize("size", SIZES)
def test_bcast_gather_scatter_allgather_alltoall(size: int) -> None:
    n = 3
    root = size // 2

    def program(comm: Intracomm) -> dict[str, Any]:
        rank = comm.rank
        out: dict[str, Any] = {}
        b = data(rank, 5) if rank == root else np.zeros(5)
        comm.Bcast(b, root=root)
        out["bcast"] = b
        n64 = np.array(42 if rank == 0 else 0, dtype=np.int64)  # mpi4py's cpi demo: a C long sent as 2 C ints
        comm.Bcast([n64, MPI.INT], root=0)
        out["bcast_int"] = int(n64)
        g = np.full(n * size, -1.0) if rank == root else None
        comm.Gather(data(rank, n), g, root=root)
        out["gather"] = g
        gi = np.full(n * size, -1.0)
        if rank == root:
            gi[root * n:(root + 1) * n] = data(root, n)
            comm.Gather(MPI.IN_PLACE, gi, root=root)
        else:
            comm.Gather(data(rank, n), None, root=root)
        out["gather_inplace"] = gi if rank == root else None
        s = np.zeros(n)
        comm.Scatter(np.arange(n * size, dtype=np.float64) if rank == root else None, s, root=root)
        out["scatter"] = s
        sb = np.arange(n * size, dtype=np.float64) if rank == root else np.zeros(n)
        comm.Scatter([sb, n, MPI.DOUBLE] if rank == root else None, MPI.IN_PLACE if rank == root else sb,
                     root=root)
        out["scatter_inplace"] = sb[:n].copy() if rank != root else sb[root * n:(root + 1) * n].copy()
        ag = np.zeros(n * size)
        comm.Allgather(data(rank, n), ag)
        out["allgather"] = ag
        agi = np.zeros(n * size)
        agi[rank * n:(rank + 1) * n] = data(rank, n)
        comm.Allgather(MPI.IN_PLACE, agi)
        out["allgather_inplace"] = agi
        send = np.array([100 * rank + j for j in range(size) for _ in range(n)], dtype=np.int32)
        recv = np.zeros(n * size, dtype=np.int32)
        comm.Alltoall([send, n, MPI.INT], [recv, n, MPI.INT])
        out["alltoall"] = recv
        comm.Alltoall(MPI.IN_PLACE, send)
        out["alltoall_inplace"] = send
        comm.Barrier()
        return out

    results = run_ranks(size, program)
    gathered = np.concatenate([data(r, n) for r in range(size)])
    for rank, out in enumerate(results):
        np.testing.assert_array_equal(out["bcast"], data(root, 5))
        assert out["bcast_int"] == 42
        if rank == root:
            np.testing.assert_array_equal(out["gather"], gathered)
            np.testing.assert_array_equal(out["gather_inplace"], gathered)
        np.testing.assert_array_equal(out["scatter"], np.arange(rank * n, (rank + 1) * n))
        np.testing.assert_array_equal(out["scatter_inplace"], np.arange(rank * n, (rank + 1) * n))
        np.testing.assert_array_equal(out["allgather"], gathered)
        np.testing.assert_array_equal(out["allgather_inplace"], gathered)
        expected = np.array([100 * j + rank for j in range(size) for _ in range(n)], dtype=np.int32)
        np.testing.assert_array_equal(out["alltoall"], expected)
        np.testing.assert_array_equal(out["alltoall_inplace"], expected)


@pytest.mark.parametrize("size", (1, 3))
def test_nonblocking_forms_keep_call_order_and_fill_buffers_on_wait(size: int) -> None:
    def program(comm: Intracomm) -> dict[str, Any]:
        rank = comm.rank
        x = data(rank, 4)
        y = np.zeros(4)
        b = data(0, 3) if rank == 0 else np.zeros(3)
        g = np.zeros(2 * size) if rank == 0 else None
        ag = np.zeros(2 * size)
        s = np.zeros(2)
        a2a = np.zeros(size)
        r = np.zeros(4) if rank == 0 else None
        rsb = np.zeros(1)
        requests = [
            comm.Iallreduce(x, y, op=MPI.SUM),
            comm.Ibcast(b, root=0),
            comm.Igather(data(rank, 2), g, root=0),
            comm.Iallgather(data(rank, 2), ag),
            comm.Iscatter(np.arange(2.0 * size) if rank == 0 else None, s, root=0),
            comm.Ialltoall(np.arange(size, dtype=np.float64) + 10 * rank, a2a),
            comm.Ireduce(x, r, op=MPI.MAX, root=0),
            comm.Ireduce_scatter_block(np.ones(size), rsb, op=MPI.SUM),
            comm.Ibarrier(),
        ]
        assert MPI.Request.Waitall(requests) is True
        assert all(req.Test() for req in requests) and requests[0].Wait() is True  # done: again at once
        assert MPI.Request.Testall(requests)
        return {"y": y, "b": b, "g": g, "ag": ag, "s": s, "a2a": a2a, "r": r, "rsb": rsb}

    results = run_ranks(size, program)
    xs = [data(r, 4) for r in range(size)]
    for rank, out in enumerate(results):
        np.testing.assert_array_equal(out["y"], np.sum(xs, axis=0))
        np.testing.assert_array_equal(out["b"], data(0, 3))
        np.testing.assert_array_equal(out["ag"], np.concatenate([data(r, 2) for r in range(size)]))
        np.testing.assert_array_equal(out["s"], [2.0 * rank, 2.0 * rank + 1])
        np.testing.assert_array_equal(out["a2a"], [10.0 * j + rank for j in range(size)])
        np.testing.assert_array_equal(out["rsb"], [size])
        if rank == 0:
            np.testing.assert_array_equal(out["g"], np.concatenate([data(r, 2) for r in range(size)]))
            np.testing.assert_array_equal(out["r"], np.max(xs, axis=0))


def test_a_nonblocking_buffer_is_written_only_when_waited_for() -> None:
    world = FakeWorld(2)
    comms = [Intracomm(world.comm(r)) for r in range(2)]
    y0 = np.zeros(2)
    req0 = comms[0].Iallreduce(np.ones(2), y0)
    assert not req0.Test() and y0.tolist() == [0.0, 0.0]  # rank 1 has not called yet
    y1 = np.zeros(2)
    req1 = comms[1].Iallreduce(np.ones(2), y1)
    assert req0.Test() and y0.tolist() == [2.0, 2.0]
    req1.Wait()
    assert y1.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("size", SIZES)
def test_lower_case_object_forms(size: int) -> None:
    def program(comm: Intracomm) -> dict[str, Any]:
        rank = comm.rank
        out: dict[str, Any] = {}
        out["bcast"] = comm.bcast({"step": 3, "w": np.arange(3.0)} if rank == 0 else None, root=0)
        out["bcast"]["w"] += 1  # received arrays are writable, as unpickled ones are
        out["sum_int"] = comm.allreduce(rank + 1)  # Python numbers: Python arithmetic
        out["big"] = comm.allreduce(2 ** 70 * (rank + 1), op=MPI.SUM)  # beyond int64: still exact
        out["concat"] = comm.allreduce([rank], op=MPI.SUM)  # lists concatenate, in rank order
        out["max"] = comm.allreduce(rank * 1.5, op=MPI.MAX)
        out["fn"] = comm.allreduce(rank, op=lambda a, b: a * 10 + b)  # a function as op, in rank order
        out["array"] = comm.allreduce(data(rank, 3), op=MPI.SUM)  # combined by the communicator
        out["array"][0] = -1.0
        out["scalar"] = comm.allreduce(np.float32(rank), op=MPI.MAX)
        out["reduce"] = comm.reduce(data(rank, 2), op=MPI.MIN, root=size - 1)
        out["reduce_obj"] = comm.reduce(str(rank), op=MPI.SUM, root=0)
        out["gather"] = comm.gather((rank, f"r{rank}"), root=0)
        out["scatter"] = comm.scatter([{"to": j} for j in range(size)] if rank == 0 else None, root=0)
        out["allgather"] = comm.allgather(rank ** 2)
        out["alltoall"] = comm.alltoall([(rank, j) for j in range(size)])
        comm.barrier()
        return out

    results = run_ranks(size, program)
    for rank, out in enumerate(results):
        assert out["bcast"]["step"] == 3 and out["bcast"]["w"].tolist() == [1.0, 2.0, 3.0]
        assert out["sum_int"] == size * (size + 1) // 2 and type(out["sum_int"]) is int
        assert out["big"] == 2 ** 70 * size * (size + 1) // 2
        assert out["concat"] == list(range(size))
        assert out["max"] == (size - 1) * 1.5
        assert out["fn"] == int("".join(str(r) for r in range(size)))
        expected = np.sum([data(r, 3) for r in range(size)], axis=0)
        assert out["array"][1:].tolist() == expected[1:].tolist()
        assert out["scalar"] == size - 1 and type(out["scalar"]) is np.float32
        if rank == size - 1:
            assert out["reduce"].tolist() == np.min([data(r, 2) for r in range(size)], axis=0).tolist()
        else:
            assert out["reduce"] is None
        assert out["reduce_obj"] == ("".join(str(r) for r in range(size)) if rank == 0 else None)
        assert out["gather"] == ([(r, f"r{r}") for r in range(size)] if rank == 0 else None)
        assert out["scatter"] == {"to": rank}
        assert out["allgather"] == [r ** 2 for r in range(size)]
        assert out["alltoall"] == [(j, rank) for j in range(size)]


def test_local_mistakes_are_refused_before_anything_is_sent() -> None:
    world = FakeWorld(2)
    comm = Intracomm(world.comm(0))
    x = np.zeros(4)
    with pytest.raises(ValueError, match=r"Bcast: root 2 is out of range \(ranks 0..1\), at rank 0"):
        comm.Bcast(x, root=2)
    with pytest.raises(ValueError, match="reduce: root -1 is out of range"):
        comm.reduce(1, root=-1)
    with pytest.raises(ValueError, match="Allreduce: unknown op 'sum'"):
        comm.Allreduce(x, np.zeros(4), op="sum")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Allreduce: the send buffer holds float64, the receive buffer float32"):
        comm.Allreduce(x, np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="Allreduce: the send buffer holds 4 elements, the receive buffer 3"):
        comm.Allreduce(x, np.zeros(3))
    with pytest.raises(ValueError, match="Gather: the send buffer holds 4 x float64 .32 bytes. per rank"):
        comm.Gather(x, np.zeros(6), root=0)
    with pytest.raises(BufferError, match="Allreduce recvbuf: the buffer is read-only"):
        comm.Allreduce(x, b"12345678" * 4)
    with pytest.raises(ValueError, match="scatter: root 0 passed 3 values for 2 ranks"):
        comm.scatter([1, 2, 3], root=0)
    with pytest.raises(ValueError, match="alltoall: each rank passes a sequence of 2 values"):
        comm.alltoall([1])
    with pytest.raises(TypeError, match="Reduce sendbuf: expected a buffer, not MPI.IN_PLACE"):
        Intracomm(world.comm(1)).Reduce(MPI.IN_PLACE, None, root=0)  # IN_PLACE only at the root
    assert world.log == []  # nothing reached the communicator


def test_what_other_ranks_send_wrong_is_an_error_naming_them() -> None:
    def program(comm: Intracomm) -> Any:
        buf = np.zeros(3 if comm.rank == 1 else 2)
        try:
            comm.Bcast(buf if comm.rank else np.ones(2), root=0)
        except ValueError as exc:
            return str(exc)
        return None

    results = run_ranks(2, program)
    assert results[0] is None
    assert results[1] == ("Bcast: root 0 sent 2 x float64 (16 bytes), this rank's receive buffer takes "
                          "3 x float64 (24 bytes)")

    def mixed(comm: Intracomm) -> Any:
        try:
            if comm.rank == 0:
                comm.allreduce(np.ones(2))
            else:
                comm.bcast(1)
        except Error as exc:
            return str(exc)
        return None

    for message in run_ranks(2, mixed):
        assert "rank 0 allreduce, rank 1 bcast" in message


def test_a_rank_that_never_comes_is_a_timeout_naming_it() -> None:
    world = FakeWorld(3, timeout=0.2)
    comm = Intracomm(world.comm(0))
    with pytest.raises(Timeout) as info:
        comm.Allreduce(np.ones(2), np.zeros(2))
    assert tuple(info.value.missing) == ("rank1", "rank2")


def test_unsupported_parts_of_mpi_say_so_by_name() -> None:
    comm = Intracomm(LoneCommunicator())
    for get, name in ((lambda: comm.Send, "Comm.Send"), (lambda: comm.Split, "Comm.Split"),
                      (lambda: MPI.COMM_SELF, "MPI.COMM_SELF"), (lambda: MPI.ANY_SOURCE, "MPI.ANY_SOURCE"),
                      (lambda: MPI.Request.Waitany, "MPI.Request.Waitany"), (lambda: MPI.LAND, "MPI.LAND"),
                      (lambda: MPI.Intracomm.Allreduce_init, "MPI.Intracomm.Allreduce_init")):
        with pytest.raises(NotImplementedError, match=f"icnd.mpi does not implement {name} "):
            get()
    req = comm.Ibarrier()
    with pytest.raises(Unsupported, match="MPI.Request.Cancel"):
        req.Cancel()
    assert not hasattr(MPI, "Send") and getattr(comm, "Scan", None) is None  # hasattr/getattr: "not there"
    with pytest.raises(AttributeError):
        MPI.__wrapped__  # dunder lookups (pickle, inspect, pytest) stay plain AttributeErrors
    assert isinstance(comm, MPI.Comm) and MPI.Wtime() <= MPI.Wtime() and 0 < MPI.Wtick() < 1
    assert isinstance(MPI.Get_processor_name(), str)


def test_a_process_without_a_launcher_is_rank_0_of_1_without_a_node() -> None:
    """As mpi4py's singleton: COMM_WORLD works with no daemon and no launcher variables."""
    code = ("from icnd.mpi import MPI; import numpy as np; c = MPI.COMM_WORLD; y = np.zeros(2); "
            "c.Allreduce(np.ones(2), y); print(c.Get_rank(), c.Get_size(), y.tolist(), c.bcast('x'), "
            "c.allgather(5), c.scatter([7]), c.Ibarrier().Wait())")
    env = {"PATH": "/usr/bin:/bin", "ICND_SOCKET": "/nonexistent/icnd.sock"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0 1 [1.0, 1.0] x [5] 7 True"


def test_a_lone_process_checks_arguments_as_a_job_does() -> None:
    comm = Intracomm(LoneCommunicator())
    with pytest.raises(ValueError, match="root 1 is out of range"):
        comm.Bcast(np.zeros(1), root=1)
    with pytest.raises(ValueError, match="scatter: root 0 passed 2 values for 1 ranks"):
        comm.scatter([1, 2])
    with pytest.raises(TypeError, match="numeric"):
        comm.communicator.allreduce(np.array(["a"]))
    y = np.zeros(3)
    comm.Reduce_scatter_block(np.arange(3.0), y)
    assert y.tolist() == [0.0, 1.0, 2.0]
