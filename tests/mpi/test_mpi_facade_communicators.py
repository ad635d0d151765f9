"""The blocking (`icnd.sync`) and asyncio (`icnd.aio`) communicators on a real
daemon: two ranks in this process, one client each -- what icnd.mpi stands on."""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import icnd
import icnd.aio
import icnd.sync
from icnd.sync import SyncCommunicator, SyncRequest
from icnd.testing.processes import Daemon


def fresh_group(socket: str, size: int) -> str:
    group = f"t-{secrets.token_hex(6)}"
    with icnd.sync.connect(socket) as client:
        client.create_group(group, members=[f"rank{i}@s" for i in range(size)])
    return group


def in_threads(size: int, body: Callable[[int], Any], timeout: float = 30.0) -> list[Any]:
    """``body(rank)`` for each rank in its own thread; their results (a rank's exception raised here)."""
    results: list[Any] = [None] * size
    errors: list[BaseException | None] = [None] * size

    def run(rank: int) -> None:
        try:
            results[rank] = body(rank)
        except BaseException as exc:  # reported below
            errors[rank] = exc

    threads = [threading.Thread(target=run, args=(r,), daemon=True) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a rank did not finish"
    for exc in errors:
        if exc is not None:
            raise exc
    return results


def test_the_blocking_communicator(node: Daemon) -> None:
    group = fresh_group(node.socket, 2)

    def rank_body(rank: int) -> dict[str, Any]:
        with icnd.sync.connect(node.socket) as client:
            comm = client.communicator(group, f"rank{rank}")
            assert isinstance(comm, SyncCommunicator)
            assert (comm.rank, comm.size, comm.group, comm.member, comm.members) == \
                (rank, 2, group, f"rank{rank}", ["rank0", "rank1"])
            out: dict[str, Any] = {"sum": comm.allreduce(np.arange(3.0) * (rank + 1), op="sum")}
            # nonblocking: started back to back without waiting, they keep their order (sequence numbers)
            requests = [comm.ibcast({"v": 7} if rank == 0 else None, root=0), comm.iallgather(rank),
                        comm.ireduce_scatter(np.ones(4, np.int32)), comm.ibarrier()]
            assert all(isinstance(r, SyncRequest) for r in requests)
            out["i"] = [r.wait() for r in requests]
            assert all(r.test() and r.done for r in requests)
            with pytest.raises(ValueError, match="root 5 is out of range"):
                comm.ibcast(1, root=5)  # an argument error: raised by the call itself
            if rank == 0:  # rank 1 never makes this call
                with pytest.raises(icnd.Timeout) as info:
                    comm.allreduce(np.ones(1), timeout=0.5)
                out["missing"] = list(info.value.missing)
            return out

    results = in_threads(2, rank_body)
    for rank, out in enumerate(results):
        assert out["sum"].tolist() == [0.0, 3.0, 6.0]
        bcast, allgather, block, barrier = out["i"]
        assert (bcast, allgather, barrier) == ({"v": 7}, [0, 1], None)
        assert block.tolist() == [2, 2] and block.dtype == np.int32
    assert results[0]["missing"] == ["rank1"]


def test_the_asyncio_communicator(node: Daemon) -> None:
    group = fresh_group(node.socket, 2)

    async def rank_body(rank: int) -> list[Any]:
        async with icnd.aio.connect(node.socket) as client:
            comm = await client.communicator(group, f"rank{rank}")
            assert (comm.rank, comm.size) == (rank, 2)
            first = comm.iallreduce(np.full(2, rank + 1.0))  # returns at once, without blocking the loop
            second = comm.ialltoall([f"{rank}->0", f"{rank}->1"])
            gathered = await comm.gather(rank * 10, root=1)
            return [await first.wait(), await second.wait(), gathered, first.test()]

    async def job() -> list[list[Any]]:
        return await asyncio.wait_for(asyncio.gather(rank_body(0), rank_body(1)), 30)

    results = asyncio.run(job())
    for rank, (total, exchanged, gathered, done) in enumerate(results):
        assert total.tolist() == [3.0, 3.0]
        assert exchanged == [f"0->{rank}", f"1->{rank}"]
        assert gathered == ([0, 10] if rank == 1 else None)
        assert done
