"""The worker-thread pool of function hosts (icnd.compute.pool.ThreadPool)."""

from __future__ import annotations

import threading
import time

import trio

from icnd.compute.pool import ThreadPool, WorkerError


async def _run(pool: ThreadPool, call) -> tuple[bool, object, str]:
    """(ok, value or exception, the thread on_done ran in)."""
    done = trio.Event()
    got: list = []

    def on_done(outcome) -> None:
        got.append((*outcome, threading.current_thread().name))
        done.set()

    pool.submit(call, on_done)
    with trio.fail_after(10):
        await done.wait()
    return got[0]


async def test_results_and_exceptions_come_back_in_the_trio_thread() -> None:
    pool = ThreadPool(2)
    trio_thread = threading.current_thread().name
    ok, value, where = await _run(pool, lambda: threading.current_thread().name)
    assert ok and value.startswith("icnd-fn-") and where == trio_thread

    def fail() -> None:
        raise KeyError("nope")

    ok, exc, where = await _run(pool, fail)
    assert not ok and isinstance(exc, KeyError) and where == trio_thread
    pool.close()


async def test_many_calls_at_once_all_finish_on_at_most_workers_threads() -> None:
    pool = ThreadPool(3)
    seen: set[str] = set()
    results: dict[int, int] = {}

    def work(i: int) -> int:
        seen.add(threading.current_thread().name)
        time.sleep(0.001)
        return i * i

    async def one(i: int) -> None:
        ok, value, _ = await _run(pool, lambda: work(i))
        assert ok
        results[i] = value  # type: ignore[assignment]  # each slot filled once, by its worker

    async with trio.open_nursery() as nursery:
        for i in range(200):
            nursery.start_soon(one, i)
    assert results == {i: i * i for i in range(200)}
    assert 1 <= len(seen) <= 3 and all(t.daemon for t in pool._threads)
    pool.close()


async def test_slow_calls_run_in_parallel_up_to_the_bound() -> None:
    pool = ThreadPool(4)
    start = time.monotonic()
    async with trio.open_nursery() as nursery:
        for _ in range(4):
            nursery.start_soon(_run, pool, lambda: time.sleep(0.3))
    assert time.monotonic() - start < 0.9  # not one after another (1.2 s)
    pool.close()


async def test_after_close_calls_are_refused_and_workers_exit() -> None:
    pool = ThreadPool(2)
    await _run(pool, lambda: 1)
    threads = list(pool._threads)
    pool.close()
    ok, exc, _ = await _run(pool, lambda: 1)
    assert not ok and isinstance(exc, WorkerError) and exc.type_name == "host-closed"
    for t in threads:
        t.join(5)
        assert not t.is_alive()


async def test_calls_queued_when_the_pool_closes_are_not_run() -> None:
    pool = ThreadPool(1)
    ran = []
    outcomes = []
    started = threading.Event()

    def first() -> None:
        started.set()
        time.sleep(0.3)

    pool.submit(first, outcomes.append)
    for i in range(10):
        pool.submit(lambda i=i: ran.append(i), outcomes.append)
    await trio.to_thread.run_sync(started.wait)
    pool.close()
    with trio.fail_after(10):
        while len(outcomes) < 11:
            await trio.sleep(0.05)
    assert ran == []
    assert all(not ok and isinstance(exc, WorkerError) and exc.type_name == "host-closed"
               for ok, exc in outcomes[1:])
