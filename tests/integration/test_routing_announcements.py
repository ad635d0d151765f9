"""What a node announces by itself (interface §12): what local applications
serve, withdrawn when they stop or vanish; published names unless a prefix
the node announces covers them; and the bound on announcements.  Real
daemons a — b linked only by ``--neighbor``; a watches b's announcements."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from icnd.client import connect
from icnd.testing.processes import Daemon, neighbours

DEADLINE = 10.0


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> Any:  # type: ignore[no-untyped-def]
    workdir: Path = tmp_path_factory.mktemp("announce")
    (workdir / "b.toml").write_text("[routing]\nmax_prefixes = 6\n")
    with neighbours(workdir, b=("--config", str(workdir / "b.toml"))) as both:
        yield both


async def routed_at(daemon: Daemon) -> dict[str, str]:
    """prefix -> origin of its cheapest route, at `daemon`."""
    async with connect(daemon.socket) as c:
        return {r["prefix"]: r["origin"] for r in await c.command("route", "list")}


async def until(daemon: Daemon, check) -> dict[str, str]:  # type: ignore[no-untyped-def]
    with trio.fail_after(DEADLINE):
        while True:
            routes = await routed_at(daemon)
            if check(routes):
                return routes
            await trio.sleep(0.05)


async def announced_by(daemon: Daemon) -> list[str]:
    async with connect(daemon.socket) as c:
        return list((await c.routing())["announced"])


async def test_a_served_prefix_is_announced_and_withdrawn_when_serving_stops(pair) -> None:
    a, b = pair
    async with connect(b.socket) as app:
        async with app.serve("/svc/echo", lambda interest: b"echo"):
            await until(a, lambda r: r.get("/svc/echo") == "routing")
            async with connect(a.socket) as consumer:
                assert (await consumer.fetch("/svc/echo/1", verify=False)).content == b"echo"
        await until(a, lambda r: "/svc/echo" not in r)


async def test_an_application_that_vanishes_takes_its_announcements_with_it(pair) -> None:
    a, b = pair
    async with connect(b.socket) as app:
        async with app.serve("/svc/gone", lambda interest: b"x"):
            await until(a, lambda r: r.get("/svc/gone") == "routing")
            await app.face.aclose()  # gone without a word: serve cannot unregister
    await until(a, lambda r: "/svc/gone" not in r)


async def test_published_names_are_announced_unless_covered(pair) -> None:
    a, b = pair
    async with connect(b.socket) as app:
        await app.publish("/videos/cat", b"meow", freshness=10.0)
        await app.publish("/node/b/notes/1", b"covered by /node/b", freshness=10.0)
        await until(a, lambda r: r.get("/videos/cat") == "routing")
        announced = await announced_by(b)
        assert "/videos/cat" in announced and "/node/b/notes/1" not in announced
        async with connect(a.socket) as consumer:
            assert (await consumer.fetch("/node/b/notes/1")).content == b"covered by /node/b"


async def test_beyond_the_bound_announcements_are_left_out_and_counted(pair) -> None:
    a, b = pair
    async with connect(b.socket) as app:
        prefixes = [f"/many/p{i}" for i in range(10)]
        for p in prefixes:
            await app.command("route", "add", prefix=p, face="self")
        with trio.fail_after(DEADLINE):
            while True:
                status = await app.status()
                if status["counters"]["routing_announcements_dropped"] > 0:
                    break
                await trio.sleep(0.05)
        announced = await announced_by(b)
        assert len(announced) == 6 and "/node/b" in announced
        routes = await until(a, lambda r: sum(p in r for p in prefixes) > 0)
        assert sum(p in routes for p in prefixes) <= 5


async def test_a_nodes_link_state_is_named_signed_data_anyone_can_fetch(pair) -> None:
    import msgpack

    a, b = pair
    await until(a, lambda r: "/node/b" in r)
    async with connect(a.socket) as consumer:
        data = await consumer.fetch("/node/b/routing/ls", can_be_prefix=True)  # verified: signed by b's key
    assert data.name.to_uri().startswith("/node/b/routing/ls/v=")
    assert data.signer is not None and data.signer.to_uri().startswith("/node/b/KEY/")
    record = msgpack.unpackb(data.content)
    assert record["o"] == "/node/b" and ["/node/a", 1] in record["a"]
    async with connect(b.socket) as c:
        assert (await c.routing())["version"] == record["v"]
