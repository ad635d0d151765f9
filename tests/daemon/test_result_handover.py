"""`reduce/fetch-shm` (icnd/daemon/mgmt/results.py) on a virtual clock: one fetch
shared by every local rank that asks while it is in flight or within the ttl,
files closed when they expire or are pushed out by the bounds, refusals
counted, an incomplete round a 504 naming the missing members."""

from __future__ import annotations

import os
from types import SimpleNamespace

import numpy as np
import pytest
import trio

from icnd.daemon.mgmt import results
from icnd.daemon.mgmt.dispatcher import WithFds
from icnd.errors import CommandError, Timeout
from icnd.faces import shm
from icnd.reduction.consumer import Reduced

pytestmark = pytest.mark.skipif(not shm.available(), reason="sealed memory files need Linux (memfd_create)")

LOCAL = SimpleNamespace(can_pass_fds=True)


class FakeReduce:
    """Stands in for the reduction client: counts fetches, takes `delay` seconds."""

    def __init__(self, delay: float = 1.0, n: int = 1000, fail: Exception | None = None) -> None:
        self.calls, self.delay, self.n, self.fail = 0, delay, n, fail

    async def __call__(self, ep, group, rnd, op, *, timeout, partial, version):
        self.calls += 1
        await trio.sleep(min(self.delay, timeout))
        if self.fail is not None:
            raise self.fail
        arr = np.arange(self.n, dtype=np.float64) + rnd
        return Reduced(arr, ["r0", "r1"], True, 2, group, rnd, op, version)


async def _client():
    return object()


def args(rnd: int = 1, **kw):
    return {"group": "g", "round": rnd, "op": "sum", "version": 1, "wait": 5.0, **kw}


def read(reply: WithFds) -> np.ndarray:
    info = reply.result
    out = np.empty(info["shape"], dtype=info["dtype"])
    shm.read_sealed(reply.fds[0], memoryview(out.reshape(-1).view(np.uint8).data), info["size"])
    return out


async def test_ranks_asking_at_once_or_later_share_one_fetch(monkeypatch, autojump_clock) -> None:
    fake = FakeReduce()
    monkeypatch.setattr(results, "reduce", fake)
    handover = results.ResultHandOver(_client, ttl=10.0)
    replies: list = []

    async def ask() -> None:
        replies.append(await handover.fetch_shm(LOCAL, args()))

    async with trio.open_nursery() as n:
        for _ in range(3):
            n.start_soon(ask)
    await trio.sleep(5)
    replies.append(await handover.fetch_shm(LOCAL, args()))  # within the ttl: the same file
    assert fake.calls == 1 and handover.counters["result_shm_handovers"] == 4
    for reply in replies:
        np.testing.assert_array_equal(read(reply), np.arange(1000.0) + 1)
    assert handover.tables() == {"result_shm_files": 1, "result_shm_bytes": 8000}
    await trio.sleep(6)  # past the ttl: the file is closed, a new request fetches again
    assert handover.tables() == {"result_shm_files": 0, "result_shm_bytes": 0}
    for fd in (await handover.fetch_shm(LOCAL, args())).fds:
        os.close(fd)
    assert fake.calls == 2
    handover.close()


async def test_bounds_push_out_the_oldest_and_refuse_what_cannot_fit(monkeypatch, autojump_clock) -> None:
    fake = FakeReduce(delay=0.01, n=1000)
    monkeypatch.setattr(results, "reduce", fake)
    handover = results.ResultHandOver(_client, max_entries=2, max_bytes=20_000)
    for rnd in range(4):
        for fd in (await handover.fetch_shm(LOCAL, args(rnd))).fds:
            os.close(fd)
    assert handover.tables()["result_shm_files"] == 2
    fake.n = 3000  # 24,000 bytes: over the bound
    with pytest.raises(CommandError) as exc:
        await handover.fetch_shm(LOCAL, args(9))
    assert exc.value.status == 507 and handover.counters["result_shm_refused"] == 1
    handover.close()
    assert handover.tables() == {"result_shm_files": 0, "result_shm_bytes": 0}


async def test_refusals_say_why(monkeypatch, autojump_clock) -> None:
    monkeypatch.setattr(results, "reduce", FakeReduce(fail=Timeout("g round 1 seg 0: incomplete", missing=["r1"])))
    handover = results.ResultHandOver(_client)
    with pytest.raises(CommandError) as exc:
        await handover.fetch_shm(LOCAL, args())
    assert exc.value.status == 504
    with pytest.raises(CommandError) as exc:
        await handover.fetch_shm(SimpleNamespace(can_pass_fds=False), args())
    assert exc.value.status == 400 and "descriptors" in str(exc.value)
    with pytest.raises(CommandError) as exc:
        await handover.fetch_shm(LOCAL, args(op="xor"))
    assert exc.value.status == 400
    assert handover.counters["result_shm_refused"] == 3
