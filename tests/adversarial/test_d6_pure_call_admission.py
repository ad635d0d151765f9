"""D6: pure calls skipped `function_max_jobs` admission, and the result memo
was bounded by count (10,000) only: 150 unsigned pure calls with 4 MiB
results held ~700 MiB."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import icnd
from icnd.compute.registry import hosted
from icnd.packet import ContentType, Data, Nack, NackReason

from ._fnhost import make_host, pure_interest

gate = trio.Event()


@icnd.function(pure=True)
async def held(x):
    await gate.wait()
    return x


@icnd.function(pure=True)
def blob(i, size):
    return bytes([i % 256]) * size


async def test_pure_calls_go_through_admission() -> None:
    global gate
    gate = trio.Event()
    async with trio.open_nursery() as nursery:
        host, _ = make_host(nursery, [hosted("/fn/held", held)], max_jobs=2)
        for i in range(2):
            nursery.start_soon(host._on_call, pure_interest("/fn/held", i))
        await trio.testing.wait_all_tasks_blocked()
        answers = [await host._on_call(pure_interest("/fn/held", 100 + i)) for i in range(20)]
        assert all(isinstance(a, Nack) and a.reason == NackReason.NO_RESOURCES for a in answers)
        assert host.counters["fn_executions"] == 2 and host.counters["fn_busy"] == 20
        gate.set()


async def test_the_memo_is_bounded_in_bytes_least_recently_used_first() -> None:
    size = 60 * 1024  # results come back inline (up to 256 KiB)
    budget = 200 * 1024
    async with trio.open_nursery() as nursery:
        host, _ = make_host(nursery, [hosted("/fn/blob", blob)], max_memo_bytes=budget)
        for i in range(30):
            answer = await host._on_call(pure_interest("/fn/blob", i, size))
            assert isinstance(answer, Data) and answer.content_type == ContentType.BLOB
            assert host.tables()["fn_memo_bytes"] <= budget
        assert host.counters["fn_executions"] == 30
        kept = host.tables()["fn_memo"]
        assert 1 <= kept <= budget // size
        assert host.counters["fn_memo_evictions"] == 30 - kept
        # the most recent result is remembered; the first one was evicted and runs again
        await host._on_call(pure_interest("/fn/blob", 29, size))
        assert host.counters["fn_executions"] == 30
        await host._on_call(pure_interest("/fn/blob", 0, size))
        assert host.counters["fn_executions"] == 31
        # a result larger than the whole budget is never kept
        evictions = host.counters["fn_memo_evictions"]
        await host._on_call(pure_interest("/fn/blob", 1, budget + 1))
        assert host.tables()["fn_memo_bytes"] <= budget and host.counters["fn_memo_evictions"] == evictions + 1
        await host._on_call(pure_interest("/fn/blob", 1, budget + 1))
        assert host.counters["fn_executions"] == 33


def test_the_memo_budget_is_a_config_key() -> None:
    from icnd.daemon.config import ConfigError, NodeConfig, from_dict

    assert NodeConfig().function_memo_mb == 64.0
    assert from_dict({"function_memo_mb": 8}).function_memo_mb == 8.0
    with pytest.raises(ConfigError):
        from_dict({"function_memo_mb": -1})
