"""The communicator's collectives through the public interface (interface §15):
every collective against numpy's answer on one real node (several ranks per
node) and across a topology, nonblocking forms, deadlines and partial
results, late readers, and bad input."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path

import numpy as np
import pytest
import trio

import icnd
from icnd.topology import launch
from tests.fakes import each

LINE3 = Path(__file__).resolve().parents[2] / "topologies" / "line3.toml"
OPS = {"sum": np.add.reduce, "max": np.maximum.reduce, "min": np.minimum.reduce, "prod": np.multiply.reduce}


async def ranks(stack: AsyncExitStack, sock: str, n: int, group: str = "job", **kw) -> list:
    clients = [await stack.enter_async_context(icnd.connect(sock)) for _ in range(n)]
    await clients[0].create_group(group, members=[f"r{i}@s" for i in range(n)], **kw)
    return [await c.communicator(group, member=f"r{i}") for i, c in enumerate(clients)]


def check_all(comms, xs, got_by_op, dt):
    for op, got in got_by_op.items():
        expected = OPS[op](np.stack(xs))
        for g in got:
            assert g.dtype == dt and g.shape == xs[0].shape
            if dt.kind == "f":
                np.testing.assert_allclose(g, expected, rtol=1e-5)
            else:
                np.testing.assert_array_equal(g, expected)


async def run_every_collective(comms, rng, dt, shape) -> None:
    n = len(comms)
    xs = [(rng.standard_normal(shape) * 3).astype(dt) if dt.kind == "f" else
          rng.integers(1, 4, shape).astype(dt) for _ in range(n)]
    got = {op: await each(comms, lambda c, op=op: c.allreduce(xs[c.rank], op=op)) for op in ("sum", "max", "prod")}
    check_all(comms, xs, got, dt)
    mean = await each(comms, lambda c: c.allreduce(xs[c.rank], op="mean"))
    np.testing.assert_allclose(mean[0], np.stack(xs).mean(0), rtol=1e-5)
    root = n - 1
    got = await each(comms, lambda c: c.reduce(xs[c.rank], op="min", root=root))
    check_all(comms, xs, {"min": [got[root]]}, dt)
    assert all(g is None for r, g in enumerate(got) if r != root)
    got = await each(comms, lambda c: c.bcast(xs[c.rank] if c.rank == root else None, root=root))
    for g in got:
        np.testing.assert_array_equal(g, xs[root])
        assert g.dtype == dt and g.shape == xs[root].shape
    got = await each(comms, lambda c: c.gather(xs[c.rank], root=0))
    assert all(g is None for g in got[1:])
    for j in range(n):
        np.testing.assert_array_equal(got[0][j], xs[j])
    got = await each(comms, lambda c: c.allgather(xs[c.rank]))
    for g in got:
        for j in range(n):
            np.testing.assert_array_equal(g[j], xs[j])
    # scatter and alltoall: uneven slices (np.array_split of a length that does not divide)
    base = np.arange(7 * n + 3, dtype=dt)
    got = await each(comms, lambda c: c.scatter(np.array_split(base, n) if c.rank == 0 else None))
    for r, g in enumerate(got):
        np.testing.assert_array_equal(g, np.array_split(base, n)[r])
    sent = [[np.full(d + 1 + r, r * 100 + d, dtype=dt) for d in range(n)] for r in range(n)]
    got = await each(comms, lambda c: c.alltoall(sent[c.rank]))
    for d, g in enumerate(got):
        for j in range(n):
            np.testing.assert_array_equal(g[j], sent[j][d])
    # reduce_scatter: axis 0 split as numpy.array_split (uneven when size does not divide it)
    rows = [rng.integers(0, 9, (2 * n + 1, 3)).astype(dt) for _ in range(n)]
    got = await each(comms, lambda c: c.reduce_scatter(rows[c.rank]))
    for r, block in enumerate(np.array_split(np.add.reduce(np.stack(rows)), n)):
        assert got[r].dtype == dt
        np.testing.assert_array_equal(got[r], block)
    await each(comms, lambda c: c.barrier())


@pytest.mark.parametrize("n", [1, 2, 3, 8])
async def test_every_collective_on_one_node(node_socket, n) -> None:
    rng = np.random.default_rng(n)
    async with AsyncExitStack() as stack:
        comms = await ranks(stack, node_socket, n)
        assert [c.rank for c in comms] == list(range(n)) and {c.size for c in comms} == {n}
        dtypes = [np.dtype(np.float64), np.dtype(np.int32)] if n in (2, 3) else [np.dtype(np.float32)]
        for dt in dtypes:
            await run_every_collective(comms, rng, dt, (4, 3) if dt.kind == "f" else (5,))


async def test_function_values_and_large_arrays(node_socket) -> None:
    """bcast/gather/scatter/allgather/alltoall carry §9 values, never pickled;
    a multi-segment array (segments of 4 KiB) keeps dtype and shape."""
    async with AsyncExitStack() as stack:
        comms = await ranks(stack, node_socket, 3, segment_bytes=4096)
        value = {"name": "x", "n": [1, 2.5, None, True], "blob": b"\x00\xff", "t": (1, "two")}
        got = await each(comms, lambda c: c.bcast(value if c.rank == 2 else None, root=2))
        assert all(g == value for g in got)
        big = np.arange(40_000, dtype=np.int16).reshape(200, 200)  # 80 KB: 20 segments, shared memory
        got = await each(comms, lambda c: c.allgather(big + c.rank))
        for g in got:
            for j in range(3):
                np.testing.assert_array_equal(g[j], big + j)
        got = await each(comms, lambda c: c.alltoall([big[d::3] * c.rank for d in range(3)]))
        for d, g in enumerate(got):
            for j in range(3):
                np.testing.assert_array_equal(g[j], big[d::3] * j)
        with pytest.raises(TypeError, match="bcast"):
            await comms[0].bcast(object())


async def test_nonblocking_forms_interleaved_keep_call_order(node_socket) -> None:
    async with AsyncExitStack() as stack:
        comms = await ranks(stack, node_socket, 3)

        async def program(c):
            x = np.arange(6.0) * (c.rank + 1)
            reqs = [c.iallreduce(x), c.ibcast("hello" if c.rank == 0 else None), c.iallgather(c.rank),
                    c.ialltoall([c.rank * 10 + d for d in range(3)]), c.ireduce_scatter(x, op="max"),
                    c.igather(c.rank, root=1), c.iscatter(["a", "b", "c"] if c.rank == 2 else None, root=2),
                    c.ireduce(x, root=0), c.ibarrier()]
            out = []
            for r in reversed(reqs):  # waited for in the opposite order
                out.append(await r.wait())
                assert r.test() and r.done
            return out[::-1]

        got = await each(comms, program)
        x_sum = np.arange(6.0) * 6
        for r, out in enumerate(got):
            np.testing.assert_array_equal(out[0], x_sum)
            assert out[1] == "hello" and out[2] == [0, 1, 2]
            assert out[3] == [j * 10 + r for j in range(3)]
            np.testing.assert_array_equal(out[4], np.array_split(np.arange(6.0) * 3, 3)[r])
            assert out[5] == ([0, 1, 2] if r == 1 else None)
            assert out[6] == "abc"[r]
            assert (out[7] is None) == (r != 0)
            assert out[8] is None


async def test_small_allreduce_and_barrier_push_each_ranks_part_with_its_request(node_socket) -> None:
    """One request per rank (docs/reduction.md#pushed-contributions): the node
    stores each rank's part as it comes and sums it, asking nobody."""
    async with AsyncExitStack() as stack:
        comms = await ranks(stack, node_socket, 4)
        status = (await stack.enter_async_context(icnd.connect(node_socket))).status  # the ranks' node's
        before = (await status())["counters"]
        got = await each(comms, lambda c: c.allreduce(np.arange(8.0) * (c.rank + 1)))
        await each(comms, lambda c: c.barrier())
        after = (await status())["counters"]
        for g in got:
            np.testing.assert_array_equal(g, np.arange(8.0) * 10)
        assert after["agg_pushed"] - before["agg_pushed"] == 8  # 4 ranks, 2 calls
        assert after["agg_children"] == before["agg_children"] and after["contrib_served"] == before["contrib_served"]


async def test_a_rank_that_never_comes_is_named_within_the_deadline(node_socket) -> None:
    async with AsyncExitStack() as stack:
        comms = await ranks(stack, node_socket, 3)
        live = comms[:2]  # rank 2 never takes part
        for call in (lambda c: c.allreduce(np.ones(4), timeout=1.5),
                     lambda c: c.allgather(c.rank, timeout=1.5),
                     lambda c: c.gather(c.rank, root=1, timeout=1.5),
                     lambda c: c.alltoall([1, 2, 3], timeout=1.5),
                     lambda c: c.barrier(timeout=1.5)):
            started = trio.current_time()
            errors: list = []

            async def one(c, call=call):
                try:
                    await call(c)
                except icnd.Timeout as exc:
                    errors.append(exc)

            async with trio.open_nursery() as n:
                for c in live:
                    n.start_soon(one, c)
            assert trio.current_time() - started < 1.5 + 1.0
            assert errors, "someone waited for rank 2 and must have timed out"
            for exc in errors:
                assert exc.ranks == (2,) and exc.missing == ("r2",) and "r2" in str(exc)
        partial = await each(live, lambda c: c.allreduce(np.full(3, c.rank + 1.0), timeout=1.5, partial=True))
        for p in partial:
            assert isinstance(p, icnd.Reduced) and p.partial and p.contributors == ["r0", "r1"]
            np.testing.assert_array_equal(p.array, np.full(3, 3.0))
        got = await each(live, lambda c: c.allgather(c.rank * 2, timeout=1.5, partial=True))
        assert got == [[0, 2, None], [0, 2, None]]


async def test_late_reader_fetches_a_finished_result_by_name(node_socket) -> None:
    async with AsyncExitStack() as stack:
        comms = await ranks(stack, node_socket, 3)
        xs = [np.arange(5.0) + r for r in range(3)]
        await each(comms, lambda c: c.allreduce(xs[c.rank]))  # call 0
        await each(comms, lambda c: c.allgather({"r": c.rank}))  # call 1
        await each(comms, lambda c: c.bcast("v" if c.rank == 1 else None, root=1))  # call 2
        reader = await stack.enter_async_context(icnd.connect(node_socket))
        before = (await reader.status())["counters"]
        np.testing.assert_array_equal(await reader.collective_result("job", 0, "allreduce"), sum(xs))
        after = (await reader.status())["counters"]
        assert after["cs_hits"] > before["cs_hits"], "the aggregate comes from the Content Store"
        assert await reader.collective_result("job", 1, "allgather") == [{"r": 0}, {"r": 1}, {"r": 2}]
        assert await reader.collective_result("job", 2, "bcast", root=1) == "v"
        with pytest.raises(icnd.Error, match="called bcast"):
            await reader.collective_result("job", 2, "gather", root=1)


async def test_bad_input_is_a_clear_error_naming_the_rank(node_socket) -> None:
    async with AsyncExitStack() as stack:
        comms = await ranks(stack, node_socket, 3)
        with pytest.raises(ValueError, match="root 3 is out of range"):
            await comms[0].bcast(1, root=3)
        with pytest.raises(ValueError, match="unknown op 'xor'"):
            await comms[0].allreduce(np.ones(2), op="xor")
        with pytest.raises(ValueError, match="3 values"):
            await comms[0].alltoall([1, 2])
        # the local misuses above took no sequence numbers: the ranks are still in step
        # mismatched shapes: every asker is told which ranks disagree
        errs = await each(comms, lambda c: _error(c.allreduce(np.ones(4 if c.rank != 1 else 5), timeout=5)))
        for e in errs:
            assert isinstance(e, icnd.Error) and "r1" in str(e), e
        # a rank calling a different collective than the others
        errs = await each(comms, lambda c: _error(
            c.allgather(c.rank, timeout=3) if c.rank != 2 else c.bcast("x", root=2, timeout=3)))
        for r in (0, 1):
            assert isinstance(errs[r], icnd.Error) and "rank 2 (r2) called bcast (root 2)" in str(errs[r]), errs[r]


async def _error(awaitable):
    try:
        return await awaitable
    except (icnd.Error, ValueError) as exc:
        return exc


async def test_collectives_across_a_topology_several_ranks_per_node() -> None:
    """line3 (a - b - c): ranks 0 and 3 on a, 1 on b, 2 on c."""
    async with launch(str(LINE3)) as net:
        placement = ["a", "b", "c", "a"]
        clients = [await net.connect(node) for node in placement]
        await clients[0].create_group("spread", members=[f"r{i}@{node}" for i, node in enumerate(placement)])
        comms = [await c.communicator("spread", member=f"r{i}") for i, c in enumerate(clients)]
        await run_every_collective(comms, np.random.default_rng(9), np.dtype(np.float64), (300, 5))


async def test_local_ranks_share_one_verified_copy_of_a_large_aggregate(node_socket) -> None:
    """Rule 6: three ranks of one node asking for a 400 KB aggregate: the node fetches and
    verifies it once and hands each rank the same sealed memory file (mapped copy-on-write:
    the result is writable, and writing it changes no other rank's)."""
    async with AsyncExitStack() as stack:
        comms = await ranks(stack, node_socket, 3)
        reader = await stack.enter_async_context(icnd.connect(node_socket))
        xs = [np.arange(50_000, dtype=np.float64) * (r + 1) for r in range(3)]
        before = (await reader.status())["counters"]
        outs = [np.empty(50_000) for _ in range(3)]
        got = await each(comms, lambda c: c.allreduce(xs[c.rank], out=outs[c.rank] if c.rank == 2 else None))
        after = (await reader.status())["counters"]
        assert after["result_shm_fetches"] - before["result_shm_fetches"] == 1
        assert after["result_shm_handovers"] - before["result_shm_handovers"] == 3
        for g in got:
            np.testing.assert_array_equal(g, xs[0] * 6)
        assert got[2] is outs[2] or np.shares_memory(got[2], outs[2])
        got[0] += 1  # copy-on-write: the rank's own pages only
        np.testing.assert_array_equal(got[1], xs[0] * 6)
        means = await each(comms, lambda c: c.reduce(xs[c.rank], op="mean", root=1, partial=True))
        assert isinstance(means[1], icnd.Reduced) and means[1].complete and means[1].count == 3
        np.testing.assert_allclose(means[1].array, xs[0] * 2)
        small = await each(comms, lambda c: c.allreduce(np.ones(4)))  # below 64 KiB: over the socket
        assert all(s.tolist() == [3.0] * 4 for s in small)
        assert (await reader.status())["counters"]["result_shm_fetches"] == after["result_shm_fetches"] + 1


async def test_local_ranks_share_one_verified_copy_of_a_broadcast_value(node_socket) -> None:
    """Rule 6 for values: the non-root ranks of one node reading a bcast (and every rank of an
    allgather reading each other rank's value) share one fetch and one check by the node."""
    async with AsyncExitStack() as stack:
        comms = await ranks(stack, node_socket, 4)
        reader = await stack.enter_async_context(icnd.connect(node_socket))
        before = (await reader.status())["counters"]
        value = {"w": np.arange(30_000, dtype=np.int32), "step": 3}
        got = await each(comms, lambda c: c.bcast(value if c.rank == 0 else None, root=0))
        after = (await reader.status())["counters"]
        assert after["result_shm_fetches"] - before["result_shm_fetches"] == 1
        assert after["result_shm_handovers"] - before["result_shm_handovers"] == 3
        for g in got:
            assert g["step"] == 3
            np.testing.assert_array_equal(g["w"], value["w"])
        got = await each(comms, lambda c: c.allgather(f"from {c.rank}"))
        assert got == [[f"from {j}" for j in range(4)]] * 4
        last = (await reader.status())["counters"]
        assert last["result_shm_fetches"] - after["result_shm_fetches"] == 4  # one per rank's value
        assert last["result_shm_handovers"] - after["result_shm_handovers"] == 12


async def test_late_reader_of_scatter_and_alltoall(node_socket) -> None:
    async with AsyncExitStack() as stack:
        comms = await ranks(stack, node_socket, 3)
        await each(comms, lambda c: c.scatter([10, 11, 12] if c.rank == 1 else None, root=1))  # call 0
        await each(comms, lambda c: c.alltoall([(c.rank, d) for d in range(3)]))  # call 1
        reader = await stack.enter_async_context(icnd.connect(node_socket))
        assert await reader.collective_result("job", 0, "scatter", root=1) == [10, 11, 12]
        assert await reader.collective_result("job", 1, "alltoall") == [[(j, d) for d in range(3)] for j in range(3)]
