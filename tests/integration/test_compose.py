"""Named computations, composed (issue #31, interface §16), on real daemons.

A line a - b - c linked only by ``--neighbor`` (link-state routing, the
default), every client keyless unless a test says otherwise: ``/fn/total``
hosted at b and c, ``/fn/double`` and ``/fn/digest`` at b; data published at
c; the caller at a.  Checked through the public interface: a ref fetched by
the host (the caller's node never holds it), a ref nobody serves, a ref the
host's trust schema refuses, a future passed on to a second host (the caller
never fetches it), a future read twice (once from its host, then from
caches), an expired future (NotFound), placement near the data and
``place="any"``, a caller refused before any ref is fetched, and a pure
function memoized by a ref's bytes, never its name."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import trio

import icnd
from icnd.client import connect
from icnd.testing.processes import Daemon, free_ports
from tests.integration.test_placement_command import start
from tests.trust._pki import USER_SCHEMA, anchor, certified, write_schema

CONVERGE = 20.0


@pytest.fixture(scope="module")
def line(tmp_path_factory: pytest.TempPathFactory) -> Any:
    workdir = tmp_path_factory.mktemp("compose")
    pa, pb, pc = free_ports(3)
    fns = "apps.functions"
    daemons = [start(workdir, "a", pa, [pb]),
               start(workdir, "b", pb, [pa, pc], "--function", f"{fns}:total=/fn/total",
                     "--function", f"{fns}:double=/fn/double", "--function", f"{fns}:digest=/fn/digest"),
               start(workdir, "c", pc, [pb], "--function", f"{fns}:total=/fn/total")]
    try:
        for d in daemons:
            d.wait_ready()
        trio.run(converged, daemons)
        yield daemons
    finally:
        for d in daemons:
            d.stop()


async def converged(daemons: list[Daemon]) -> None:
    """Until a's database lists both hosts of /fn/total and every node's name."""
    async with connect(str(daemons[0].sock)) as c:
        with trio.fail_after(CONVERGE):
            while True:
                records = {r["origin"]: {p["prefix"] for p in r["prefixes"]} for r in (await c.routing())["lsdb"]}
                if {"/node/b", "/node/c"} <= {o for o, ps in records.items() if "/fn/total" in ps} \
                        and "/fn/double" in records.get("/node/b", set()):
                    return
                await trio.sleep(0.1)


async def counters(daemon: Daemon) -> dict[str, int]:
    async with connect(str(daemon.sock)) as c:
        result: dict[str, int] = (await c.status())["counters"]
        return result


async def cached(daemon: Daemon, prefix: str) -> list[str]:
    async with connect(str(daemon.sock)) as c:
        return [e["name"] for e in await c.command("cs", "list", prefix=prefix)]


async def publish_at(daemon: Daemon, name: str, value: Any, seen_at: Daemon, freshness: float | None = None) -> None:
    """Publish `value` at `daemon`, until `seen_at` (the caller's node) has a route to it."""
    async with connect(str(daemon.sock)) as c:
        await c.publish_value(name, value, freshness=freshness)
    async with connect(str(seen_at.sock)) as c:
        await c.wait_routed(name)


async def test_a_ref_is_fetched_by_the_host_never_through_the_caller(line: list[Daemon]) -> None:
    a, b, c = line
    x = np.arange(3 * 1024 * 1024 // 8, dtype=np.float64)  # 3 MiB
    await publish_at(c, "/data/ref3m", x, a)
    async with connect(str(a.sock)) as caller:
        info: dict[str, Any] = {}
        total = await caller.call("/fn/total", icnd.Ref("/data/ref3m"), timeout=30, info=info)
    assert total == float(x.sum())
    assert info["host"] == "/node/c"  # hosted at b and c: placed where the data is
    assert await cached(a, "/data/ref3m") == []  # the caller's node never held a segment of it


async def test_a_ref_nobody_serves_is_a_remote_error_naming_it(line: list[Daemon]) -> None:
    a, _, _ = line
    async with connect(str(a.sock)) as caller:
        with pytest.raises(icnd.RemoteError) as err:
            await caller.call("/fn/double", icnd.Ref("/data/nobody/has/this"), timeout=30)
    assert err.value.code == "bad-ref"
    assert "/data/nobody/has/this" in str(err.value)


async def test_a_future_is_passed_to_a_second_host_by_name(line: list[Daemon]) -> None:
    a, b, c = line
    x = np.full(1024 * 1024 // 4, 1.5, dtype=np.float32)  # 1 MiB, doubled at b into a 1 MiB intermediate
    await publish_at(c, "/data/pipe", x, a)
    before = (await counters(b))["fn_executions"], (await counters(c))["fn_executions"]
    async with connect(str(a.sock)) as caller:
        fut = await caller.submit("/fn/double", icnd.Ref("/data/pipe"), timeout=30)
        assert isinstance(fut, icnd.Future) and fut.name.to_uri().startswith("/node/")
        placed: dict[str, Any] = {}
        assert await caller.call("/fn/total", fut, timeout=30, info=placed) == float((x * 2).sum())
        assert placed["host"] == "/node/b"  # left to placement: where the future's result is
        other: dict[str, Any] = {}
        z = await caller.call("/fn/total", fut, timeout=30, place="/node/c", info=other)  # a second host
    assert z == float((x * 2).sum()) and other["host"] == "/node/c"
    assert await cached(a, fut.name.to_uri()) == []  # the intermediate never reached the caller's node
    assert await cached(c, fut.name.to_uri()) != []  # c fetched it from b, by name
    after = (await counters(b))["fn_executions"], (await counters(c))["fn_executions"]
    assert (after[0] - before[0], after[1] - before[1]) == (2, 1)  # double and one total at b, a total at c


async def test_a_future_read_twice_runs_once_and_is_then_served_from_caches(line: list[Daemon]) -> None:
    a, b, _ = line
    async with connect(str(a.sock)) as caller:
        before = (await counters(b))["fn_executions"]
        fut = await caller.submit("/fn/double", np.arange(300_000, dtype=np.int64), timeout=30)
        first = await fut.result(timeout=30)
        hits = (await counters(a))["cs_hits"]
        second = await caller.result(fut.name, timeout=30)
        np.testing.assert_array_equal(first, second)
        np.testing.assert_array_equal(first, np.arange(300_000, dtype=np.int64) * 2)
    assert (await counters(b))["fn_executions"] - before == 1
    assert (await counters(a))["cs_hits"] > hits  # the second read: segments from a's Content Store


async def test_an_expired_future_is_not_found_never_a_hang(line: list[Daemon]) -> None:
    a, b, _ = line
    async with connect(str(b.sock)) as hosting, connect(str(a.sock)) as caller:
        async with hosting.host({"/fn/short": lambda v: v + 1}, retention=0.5):
            await caller.wait_routed("/fn/short")
            fut = await caller.submit("/fn/short", 41, timeout=30)
            assert await fut.result(timeout=30) == 42
            await trio.sleep(2.5)  # past the retention, and past the manifest's freshness in caches
            started = time.monotonic()
            with pytest.raises(icnd.NotFound):
                await caller.result(fut.name, timeout=20)
            assert time.monotonic() - started < 10


async def test_place_any_lets_the_network_choose(line: list[Daemon]) -> None:
    a, _, c = line
    await publish_at(c, "/data/any", np.ones(1000), a)
    async with connect(str(a.sock)) as caller:
        info: dict[str, Any] = {}
        assert await caller.call("/fn/total", icnd.Ref("/data/any"), place="any", info=info, timeout=30) == 1000.0
        assert info["host"] is None
        forced: dict[str, Any] = {}
        assert await caller.call("/fn/total", icnd.Ref("/data/any"), place="/node/b", info=forced,
                                 timeout=30) == 1000.0
        assert forced["host"] == "/node/b"


async def test_an_unauthorized_caller_is_refused_before_any_ref_is_fetched(line: list[Daemon]) -> None:
    a, b, c = line
    asked: list[str] = []

    def producer(interest: icnd.Interest) -> bytes:
        asked.append(interest.name.to_uri())
        return b"secret"

    async with connect(str(c.sock)) as serving, connect(str(b.sock)) as hosting, \
            connect(str(a.sock)) as caller:
        async with serving.serve("/data/watched", producer), \
                hosting.host({"/fn/guarded": len}, allow={"/fn/guarded": ["/nobody"]}):
            await caller.wait_routed("/fn/guarded")
            await caller.wait_routed("/data/watched")
            with pytest.raises(icnd.Unauthorized):
                await caller.call("/fn/guarded", icnd.Ref("/data/watched"), timeout=30)
    assert asked == []


async def test_a_pure_function_is_memoized_by_the_refs_bytes_not_its_name(line: list[Daemon]) -> None:
    a, b, c = line
    first, second = np.arange(5000, dtype=np.int32), np.arange(5000, dtype=np.int32)[::-1].copy()
    # (segments fresh for 1 s: a cache holding the first version's answers a discovery only that long)
    await publish_at(c, "/data/memo", first, a, freshness=1.0)
    async with connect(str(a.sock)) as caller:
        runs = (await counters(b))["fn_executions"]
        d1 = await caller.call("/fn/digest", icnd.Ref("/data/memo"), pure=True, timeout=30)
        assert await caller.call("/fn/digest", icnd.Ref("/data/memo"), pure=True, timeout=30) == d1
        assert (await counters(b))["fn_executions"] - runs == 1  # the second: from the memo
        async with connect(str(c.sock)) as publisher:
            await publisher.publish_value("/data/memo", second, freshness=1.0)  # the same name, new bytes
        with trio.fail_after(10):
            while (d2 := await caller.call("/fn/digest", icnd.Ref("/data/memo"), pure=True, timeout=30)) == d1:
                await trio.sleep(0.3)  # until the first version is no longer fresh in caches
    assert d2 == await_digest(second)
    assert (await counters(b))["fn_executions"] - runs == 2


def await_digest(x: np.ndarray) -> str:
    from apps.functions import digest

    result: str = digest(x)
    return result


async def test_a_ref_the_hosts_trust_schema_refuses(line: list[Daemon], tmp_path: Path) -> None:
    a, b, c = line
    now = time.time()
    root_key, root = anchor("/net", now=now - 3600)
    alice_key, alice = certified("/net/alice", root_key, now=now - 3600)
    schema = write_schema(tmp_path, USER_SCHEMA, {"anchor.cert": root})
    await publish_at(c, "/data/untrusted", np.ones(10), b)  # signed by node c: not under the schema
    async with connect(str(b.sock), trust=schema) as hosting, \
            connect(str(a.sock), key=alice_key, cert=alice) as caller:
        async with hosting.host({"/fn/strict": len}):
            await caller.wait_routed("/fn/strict")
            await caller.publish_value("/net/alice/data", np.ones(7))  # signed by alice: trusted
            await caller.wait_routed("/net/alice/data")
            assert await caller.call("/fn/strict", icnd.Ref("/net/alice/data"), timeout=30) == 7
            with pytest.raises(icnd.RemoteError) as err:
                await caller.call("/fn/strict", icnd.Ref("/data/untrusted"), timeout=30)
    assert err.value.code == "bad-ref" and "/data/untrusted" in str(err.value)
    assert "refused" in str(err.value)


def test_the_blocking_facade_submits_and_passes_futures(line: list[Daemon]) -> None:
    a, _, c = line
    trio.run(publish_at, c, "/data/sync", np.arange(10.0), a)
    with icnd.sync.connect(str(a.sock)) as caller:
        fut = caller.submit("/fn/double", icnd.Ref("/data/sync"), timeout=30)
        assert isinstance(fut, icnd.Future)
        np.testing.assert_array_equal(fut.result(timeout=30), np.arange(10.0) * 2)
        assert caller.call("/fn/total", fut, timeout=30) == 90.0
        np.testing.assert_array_equal(caller.result(fut.name, timeout=30), np.arange(10.0) * 2)


def test_the_asyncio_facade_submits_and_passes_futures(line: list[Daemon]) -> None:
    import asyncio

    a, _, _ = line

    async def main() -> tuple[Any, Any]:
        async with icnd.aio.connect(str(a.sock)) as caller:
            fut = await caller.submit("/fn/double", 21, timeout=30)
            assert isinstance(fut, icnd.Future)
            return await fut.result(timeout=30), await caller.call("/fn/total", fut, timeout=30)

    assert asyncio.run(main()) == (42, 42.0)


async def test_a_place_that_is_not_a_node_name_is_refused_before_anything_is_sent(line: list[Daemon]) -> None:
    a, _, _ = line
    async with connect(str(a.sock)) as caller:
        with pytest.raises(ValueError, match="place='nearby'"):
            await caller.call("/fn/total", icnd.Ref("/data/any"), place="nearby", timeout=5)
