"""Compute-aware anycast, the host's side (interface §12, issue 17): a
function host reports its capacity and load to its node (``routing/load``),
which announces them with the prefix; a neighbour sees them in its
link-state database.  Real daemons a — b linked only by ``--neighbor``;
the strategy's use of the figures is tests/core/fw/test_load_balance.py, the
whole effect bench/anycast.py."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import trio

import icnd
from icnd.client import connect
from icnd.compute import host as host_module
from icnd.errors import CommandError
from icnd.testing.processes import Daemon, free_ports, neighbours
from icnd.trust.cert import self_signed

DEADLINE = 15.0


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> Any:  # type: ignore[no-untyped-def]
    workdir: Path = tmp_path_factory.mktemp("anycast")
    (workdir / "off.toml").write_text("[routing]\nmode = \"off\"\n")
    with neighbours(workdir) as (a, b):
        off = Daemon(workdir, "--config", str(workdir / "off.toml"), "--name", "/node/off",
                     "--listen", f"udp://127.0.0.1:{free_ports(1)[0]}", name="off")
        try:
            off.wait_ready()
            yield a, b, off
        finally:
            off.stop()


async def announced_load(daemon: Daemon, origin: str, prefix: str) -> dict[str, Any] | None:
    """The prefix entry of `origin`'s record in `daemon`'s link-state database."""
    async with connect(daemon.socket) as c:
        for record in (await c.routing())["lsdb"]:
            if record["origin"] == origin:
                for p in record["prefixes"]:
                    if p["prefix"] == prefix:
                        return dict(p)
    return None


async def until_announced(daemon: Daemon, check) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    with trio.fail_after(DEADLINE):
        while True:
            entry = await announced_load(daemon, "/node/b", "/fn/nap")
            if entry is not None and check(entry):
                return entry
            await trio.sleep(0.05)


def nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


async def test_a_host_announces_its_capacity_and_its_load_follows_the_calls(pair) -> None:
    a, b, _ = pair
    key = icnd.security.Ed25519Key.generate(icnd.Name("/fn/nap/host"))
    async with connect(b.socket, key=key, cert=self_signed(key, now=time.time())) as host_client, \
            host_client.host({"/fn/nap": nap}, workers=3):
        idle = await until_announced(a, lambda e: e.get("capacity") == 3)
        assert idle.get("load", 0) == 0
        async with connect(a.socket) as caller:
            with trio.fail_after(DEADLINE):
                while not any(r["prefix"] == "/fn/nap" for r in await caller.command("route", "list")):
                    await trio.sleep(0.05)
        async with connect(a.socket) as caller, trio.open_nursery() as nursery:
            for _ in range(5):
                nursery.start_soon(lambda: caller.call("/fn/nap", 3.0, timeout=30))
            busy = await until_announced(a, lambda e: e.get("load", 0) >= 3)
            assert busy["capacity"] == 3
        await until_announced(a, lambda e: e.get("load", 0) == 0)  # and back once they are done


async def test_load_command_checks_its_arguments(pair) -> None:
    _, b, off = pair
    async with connect(b.socket) as c:
        with pytest.raises(CommandError) as err:
            await c.command("routing", "load", prefix="/fn/nobody", capacity=1, load=0)
        assert err.value.status == 404
        for bad in ({"capacity": -1, "load": 0}, {"capacity": 1, "load": 10**9}, {"capacity": "1", "load": 0},
                    {"capacity": 1}):
            with pytest.raises(CommandError) as err:
                await c.command("routing", "load", prefix="/fn/x", **bad)
            assert err.value.status == 400, bad
    async with connect(off.socket) as c:
        with pytest.raises(CommandError) as err:
            await c.command("routing", "load", prefix="/fn/x", capacity=1, load=0)
        assert err.value.status == 409


async def test_a_host_on_a_node_without_routing_stops_reporting_quietly(pair, caplog) -> None:
    _, _, off = pair
    key = icnd.security.Ed25519Key.generate(icnd.Name("/fn/nap/host"))
    async with connect(off.socket, key=key, cert=self_signed(key, now=time.time())) as host_client, \
            host_client.host({"/fn/nap": nap}, workers=2) as host:
        async with connect(off.socket) as caller:  # served; the load reports were refused
            assert await caller.call("/fn/nap", 0.01) == 0.01
        await trio.sleep(host_module.LOAD_REPORT_INTERVAL * 2)
        assert host.load_reports == 0
        assert host.load() == {icnd.Name("/fn/nap"): (2, 0)}
    assert not [r for r in caplog.records if "could not report the load" in r.getMessage()]
