"""Consumers wait for a route within their timeout [issue #26, F1; issue #27, items 13 and 15].

A ``no-route`` Nack used to end a fetch or a call at once, however much time
it had left: a producer starting a moment later, or routes coming back a
second after a fault, were never waited for.  Now `fetch`, `fetch_object`
and `call` ask again (50 ms doubling to 1 s) until their timeout, and a name
nobody ever serves fails at the timeout with one error that says so, the
same for a call as for a fetch.  `wait_routed` waits for a route on purpose.
"""

from __future__ import annotations

import os
import subprocess
import time
import traceback

import pytest
import trio

import icnd
from icnd.security import Ed25519Key
from icnd.testing.processes import neighbours, run_cli
from icnd.trust.cert import self_signed

TIMEOUT = 5.0
LATE = 1.0  # the producer appears this long after the consumers started
BLOB = bytes(range(256)) * 40  # 10 KiB: ten segments of 1 KiB, over the network path (not shared memory)


def double(x: int) -> int:
    return 2 * x


@pytest.fixture
async def node(daemons):
    return await daemons.start("rw", listen=("udp://127.0.0.1:0",))


def _producer(node):
    key = Ed25519Key.generate(icnd.Name("/late"))  # so that callers accept its answers
    return icnd.connect(node.socket, key=key, cert=self_signed(key, now=time.time()))


async def test_fetch_fetch_object_and_call_wait_for_a_producer_that_starts_late(node) -> None:
    got: dict[str, object] = {}
    took: dict[str, float] = {}

    async with node.connect() as consumer, _producer(node) as producer:
        started = trio.current_time()

        async def one(what: str, coroutine) -> None:
            got[what] = await coroutine
            took[what] = trio.current_time() - started

        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, "fetch", consumer.fetch("/late/data/hello", timeout=TIMEOUT))
            nursery.start_soon(one, "fetch_object", consumer.fetch_object("/late/object", timeout=TIMEOUT))
            nursery.start_soon(one, "call", consumer.call("/fn/late", 21, timeout=TIMEOUT))
            nursery.start_soon(one, "rice call", consumer.call("/fn/late", 21, reflexive=True, timeout=TIMEOUT))
            await trio.sleep(LATE)
            await producer.publish("/late/data/hello", b"hello, late", freshness=10)
            await producer.publish_object("/late/object", BLOB, segment_size=1024)
            async with producer.host({"/fn/late": double}):
                with trio.fail_after(TIMEOUT):
                    while not {"call", "rice call"} <= got.keys():
                        await trio.sleep(0.05)
    assert isinstance(got["fetch"], icnd.Data) and got["fetch"].content == b"hello, late"
    assert got["fetch_object"] == BLOB
    assert got["call"] == got["rice call"] == 42
    assert all(LATE * 0.9 <= t < TIMEOUT for t in took.values()), took  # each waited, none gave up


async def test_a_name_nobody_serves_fails_at_the_timeout_saying_so(node) -> None:
    timeout = 1.5
    failures: dict[str, tuple[BaseException, float]] = {}
    async with node.connect() as consumer:
        started = trio.current_time()

        async def one(what: str, coroutine) -> None:
            try:
                await coroutine
            except icnd.Error as exc:
                failures[what] = (exc, trio.current_time() - started)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, "fetch", consumer.fetch("/never/data", timeout=timeout))
            nursery.start_soon(one, "fetch_object", consumer.fetch_object("/never/object", timeout=timeout))
            nursery.start_soon(one, "call", consumer.call("/fn/never", 1, timeout=timeout))
            nursery.start_soon(one, "pure call", consumer.call("/fn/never", 1, pure=True, timeout=timeout))
            nursery.start_soon(one, "rice call", consumer.call("/fn/never", 1, reflexive=True, timeout=timeout))
    assert set(failures) == {"fetch", "fetch_object", "call", "pure call", "rice call"}
    for what, (exc, elapsed) in failures.items():
        assert 0.8 * timeout <= elapsed <= timeout + 0.5, (what, elapsed)
        assert "nobody serves it (no route after " in str(exc) and " retries over " in str(exc), (what, exc)
    for what in ("fetch", "call", "pure call", "rice call"):
        exc = failures[what][0]
        assert isinstance(exc, icnd.Nacked) and exc.reason == "no-route" and exc.retries >= 3, (what, exc)
    for what in ("call", "pure call", "rice call"):  # the function, not its trigger's name
        assert str(failures[what][0]).startswith("/fn/never: nobody serves it"), failures[what]
    assert str(failures["fetch"][0]).startswith("/never/data: nobody serves it")
    assert isinstance(failures["fetch_object"][0], icnd.NotFound)
    assert str(failures["fetch_object"][0]).startswith("/never/object: no such object: nobody serves it")


async def test_wait_routed_returns_once_a_hosted_prefix_is_routed(node) -> None:
    async with node.connect() as consumer, _producer(node) as producer:
        started = trio.current_time()
        with pytest.raises(icnd.Timeout, match="/fn/routed: no route at /node/rw within 0.3s"):
            await consumer.wait_routed("/fn/routed", timeout=0.3)
        assert trio.current_time() - started >= 0.3
        hosted = trio.Event()

        async def host_later() -> None:
            await trio.sleep(0.5)
            async with producer.host({"/fn/routed": double}):
                hosted.set()
                await trio.sleep(TIMEOUT)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(host_later)
            await consumer.wait_routed("/fn/routed/deeper", timeout=TIMEOUT)  # a route for a prefix counts
            assert hosted.is_set()
            assert await consumer.call("/fn/routed", 4, timeout=TIMEOUT) == 8
            nursery.cancel_scope.cancel()


def test_sync_wait_routed_and_call_right_after_host(node_socket) -> None:
    """[issue 27, item 15] From `icnd.sync`: wait until a hosted prefix is
    routed; a call right after `host()` is answered, not Nacked."""
    key = Ed25519Key.generate(icnd.Name("/synchost"))
    with icnd.sync.connect(node_socket, key=key, cert=self_signed(key, now=time.time())) as host, \
            icnd.sync.connect(node_socket) as caller:
        with pytest.raises(icnd.Timeout):
            caller.wait_routed("/fn/sync-double", timeout=0.2)
        with host.host({"/fn/sync-double": double}):
            caller.wait_routed("/fn/sync-double", timeout=5)
            assert caller.call("/fn/sync-double", 5, timeout=5) == 10
        with pytest.raises(icnd.Nacked) as info:  # an expected failure: its message, not the client loop's frames
            caller.call("/fn/sync-double", 5, timeout=0.3)
        frames = traceback.extract_tb(info.value.__traceback__)
        assert {os.path.basename(f.filename) for f in frames} <= {"test_route_wait.py", "sync.py"}, frames


def test_across_nodes_a_call_right_after_host_waits_for_routing(tmp_path) -> None:
    """[issue 27, item 15] Host at node a, call from node b at once (link-state
    routing has not spread the prefix yet): the call waits for the route
    instead of failing no-route; `wait_routed` at b says when b has it."""
    key = Ed25519Key.generate(icnd.Name("/across"))
    with neighbours(tmp_path) as (a, b), icnd.sync.connect(a.socket, key=key, cert=self_signed(key, now=time.time())) as host, \
            icnd.sync.connect(b.socket) as caller:
        with host.host({"/fn/across-double": double}):
            assert caller.call("/fn/across-double", 7, timeout=10) == 14
        with host.host({"/fn/across-triple": double}):
            caller.wait_routed("/fn/across-triple", timeout=10)
            assert any(r["prefix"] == "/fn/across-triple" and r["origin"] == "routing"
                       for r in caller.command("route", "list"))


def _cli(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, timeout=30)


async def test_the_cli_says_the_same_for_a_call_and_a_fetch_nobody_serves(node) -> None:
    """[issue 27, item 13] `icnd call` to an unserved function said "nacked
    no-route" where `icnd fetch` said "nobody serves it"; and [item 15]
    `icnd fetch ""` fetched `/`."""
    call = await trio.to_thread.run_sync(lambda: _cli("call", "/fn/none", "--timeout", "0.6", "--socket", node.socket))
    fetch = await trio.to_thread.run_sync(lambda: _cli("fetch", "/none", "--timeout", "0.6", "--socket", node.socket))
    assert call.returncode == 1 and fetch.returncode == 1
    assert b"/fn/none: nobody serves it (no route after " in call.stderr, call.stderr
    assert b"/none: no such object: nobody serves it (no route after " in fetch.stderr, fetch.stderr
    empty = await trio.to_thread.run_sync(lambda: _cli("fetch", "", "--socket", node.socket))
    assert empty.returncode == 2 and b"an empty name" in empty.stderr and not empty.stdout
