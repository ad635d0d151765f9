"""``routing/place`` on real daemons (issue 31, placement near the data): a
line a - b - c linked only by ``--neighbor`` (link-state routing over
loopback), ``/fn/X`` hosted at b and c (``--function``), an object published
at c.  Asked at a, the node ranks c first for a call whose ref is c's
object, and both hosts at cost 0 for a call without refs.  Also: what a
published name announces (the ref's producer is found by it), the command's
argument checks (400) and a node without link-state routing (409)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import trio

from icnd.client import connect
from icnd.errors import CommandError
from icnd.testing.processes import Daemon, free_ports

CONVERGE = 15.0  # hellos every 1 s; records synchronized within a few
FN = "/fn/X"


def start(workdir: Path, name: str, port: int, peers: list[int], *extra: str) -> Daemon:
    args = ["--name", f"/node/{name}", "--listen", f"udp://127.0.0.1:{port}"]
    for peer in peers:
        args += ["--neighbor", f"udp://127.0.0.1:{peer}"]
    return Daemon(workdir, *args, *extra, name=name)


@pytest.fixture(scope="module")
def line(tmp_path_factory) -> Any:  # type: ignore[no-untyped-def]
    workdir: Path = tmp_path_factory.mktemp("place")
    (workdir / "off.toml").write_text("[routing]\nmode = \"off\"\n")
    pa, pb, pc, poff = free_ports(4)
    host = ("--function", f"apps.functions:add={FN}")
    daemons = [start(workdir, "a", pa, [pb]), start(workdir, "b", pb, [pa, pc], *host),
               start(workdir, "c", pc, [pb], *host),
               Daemon(workdir, "--config", str(workdir / "off.toml"), "--name", "/node/off",
                      "--listen", f"udp://127.0.0.1:{poff}", name="off")]
    try:
        for d in daemons:
            d.wait_ready()
        yield daemons
    finally:
        for d in daemons:
            d.stop()


def announced(status: dict[str, Any]) -> dict[str, set[str]]:
    """origin -> the prefixes its record announces, in a node's ``routing/status``."""
    return {r["origin"]: {p["prefix"] for p in r["prefixes"]} for r in status["lsdb"]}


async def until_announced(daemon: Daemon, want: dict[str, set[str]]) -> None:
    """Until `daemon`'s link-state database holds records announcing (at least) `want`."""
    async with connect(daemon.socket) as c:
        with trio.fail_after(CONVERGE):
            while True:
                have = announced(await c.routing())
                if all(prefixes <= have.get(origin, set()) for origin, prefixes in want.items()):
                    return
                await trio.sleep(0.05)


async def place(daemon: Daemon, fn: str, refs: list[str] | None = None) -> list[dict[str, Any]]:
    async with connect(daemon.socket) as c:
        args: dict[str, Any] = {"fn": fn} if refs is None else {"fn": fn, "refs": refs}
        answer = await c.command("routing", "place", **args)
    hosts: list[dict[str, Any]] = answer["hosts"]
    return hosts


async def test_a_call_with_a_ref_is_placed_at_the_host_holding_the_data(line) -> None:
    a, b, c, _ = line
    async with connect(c.socket) as producer:
        await producer.publish_object("/data/A", os.urandom(5000))
        await producer.publish("/data/B/v=1", b"one packet")
    # what a published name announces: the object's name (no version) and a Data's whole name
    await until_announced(a, {"/node/b": {FN}, "/node/c": {FN, "/data/A", "/data/B/v=1"}})

    hosts = await place(a, FN, ["/data/A"])
    assert [(h["node"], h["cost"]) for h in hosts] == [("/node/c", 0), ("/node/b", 1)], hosts
    assert [h["node"] for h in await place(a, FN, ["/data/A/v=7/seg=0"])] == ["/node/c", "/node/b"]
    assert [h["node"] for h in await place(a, FN, ["/data/B/v=1"])] == ["/node/c", "/node/b"]
    # a future named under its host node: that node is its producer
    assert [(h["node"], h["cost"]) for h in await place(a, FN, ["/node/b/thunk/1"])] == [
        ("/node/b", 0), ("/node/c", 1)]
    # each host asked from the other end ranks the same
    assert [h["node"] for h in await place(c, FN, ["/data/A"])] == ["/node/c", "/node/b"]
    assert [h["node"] for h in await place(b, FN, ["/data/A", "/node/b/thunk/1", "/data/A"])] == [
        "/node/c", "/node/b"]  # c: 0 + 1 + 0, b: 1 + 0 + 1


async def test_without_refs_or_with_unknown_refs_every_host_costs_nothing(line) -> None:
    a, _, _, _ = line
    await until_announced(a, {"/node/b": {FN}, "/node/c": {FN}})
    for refs in (None, [], ["/nobody/announces/this"], ["/data/B"]):  # /data/B: only /data/B/v=1 is announced
        hosts = await place(a, FN, refs)
        assert sorted((h["node"], h["cost"]) for h in hosts) == [("/node/b", 0), ("/node/c", 0)], (refs, hosts)
    assert await place(a, "/fn/nobody", ["/node/b"]) == []


async def test_the_command_checks_its_arguments(line) -> None:
    a, _, _, off = line
    await until_announced(a, {"/node/b": {FN}, "/node/c": {FN}})
    async with connect(a.socket) as c:
        for bad in ({}, {"fn": 3}, {"fn": "no-slash"}, {"fn": FN, "refs": "/data/A"},
                    {"fn": FN, "refs": [1]}, {"fn": FN, "refs": ["/a/%zz"]}, {"fn": FN, "refs": ["/data/A"] * 65}):
            with pytest.raises(CommandError) as err:
                await c.command("routing", "place", **bad)
            assert err.value.status == 400, bad
        hosts = (await c.command("routing", "place", fn=FN, refs=["/data/A"] * 64))["hosts"]
        assert {h["node"] for h in hosts} == {"/node/b", "/node/c"}
    async with connect(off.socket) as c:
        with pytest.raises(CommandError) as err:
            await c.command("routing", "place", fn=FN, refs=["/data/A"])
        assert err.value.status == 409
