"""The topology launcher in process mode: real `icnd run` daemons on loopback.

Covers the acceptance of the launcher issue: grid9 corner to corner, failover
when the node on the path dies, a 20 ms link shows >= 40 ms RTT, a 5% loss
link still delivers, cut/heal, restart on the same ports with the same data,
`topo down` of a background topology (also after its launcher crashed), and
that nothing is left behind (processes, sockets, work directory)."""

from __future__ import annotations

import json
import os
import secrets
import signal
from pathlib import Path

import pytest
import trio

import icnd
from icnd import Interest, Name
from icnd.testing.processes import gone, wait_exit
from icnd.topology import TopologySpec, derive_routes, load, parse
from icnd.topology.launcher import STATE_FILE, LaunchError, launch, topo_down

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
LINE3 = TOPOLOGIES / "line3.toml"


def sockets_in(directory: str | Path) -> list[str]:
    if not os.path.isdir(directory):
        return []
    return sorted(p for p in os.listdir(directory) if p.endswith(".sock"))


def assert_cleaned(workdir: str, pids: list[int | None]) -> None:
    assert all(gone(pid) for pid in pids), [p for p in pids if not gone(p)]
    assert sockets_in(workdir) == []
    assert not os.path.exists(os.path.join(workdir, STATE_FILE))


async def test_grid9_corner_to_corner_failover_and_restart(workdir) -> None:
    spec = load(TOPOLOGIES / "grid9.toml")
    with trio.fail_after(40):
        async with launch(spec, workdir=workdir) as net:
            assert sorted(net.nodes) == sorted(spec.nodes)
            pids = [h.pid for h in net.nodes.values()]
            assert all(h.alive and h.udp_uri.startswith("udp://127.0.0.1:") for h in net.nodes.values())
            assert sorted(sockets_in(workdir)) == sorted(f"{n}.sock" for n in spec.nodes)
            state = json.loads(Path(workdir, STATE_FILE).read_text())
            assert state["ready"] and state["nodes"]["n00"]["pid"] == net.nodes["n00"].pid

            producer = await net.connect("n22")
            consumer = await net.connect("n00")
            await producer.publish("/node/n22/obj/1", b"corner to corner")
            data = await consumer.fetch("/node/n22/obj/1", timeout=8)
            assert data.content == b"corner to corner"

            # the path the Data took: the nodes that cached it on the way
            on_path = []
            for name in net.nodes:
                if name in ("n00", "n22"):
                    continue
                entries = await (await net.connect(name)).command("cs", "list", prefix="/node/n22/obj")
                if any(e["name"] == "/node/n22/obj/1" for e in entries):
                    on_path.append(name)
            assert len(on_path) == 3, on_path  # a shortest path: 4 hops
            first_hop = next(n for n in on_path if n in ("n01", "n10"))
            # the consumer's node has a route through each neighbour (failover material)
            vias = {r.via for r in derive_routes(spec)["n00"] if r.prefix == "/node/n22"}
            assert vias == {"n01", "n10"}

            victim = net.nodes[first_hop]
            old_pid, old_udp, old_tcp = victim.pid, victim.udp_uri, victim.tcp_uri
            await net.kill(first_hop)
            assert not victim.alive and gone(old_pid)

            await producer.publish("/node/n22/obj/2", b"around the dead node")
            with trio.fail_after(10):
                data = await consumer.fetch("/node/n22/obj/2", timeout=8)
            assert data.content == b"around the dead node"

            # restart: same ports, same data directory (identity key), faces and routes back
            await net.restart(first_hop)
            assert victim.alive and victim.pid != old_pid
            assert (victim.udp_uri, victim.tcp_uri) == (old_udp, old_tcp)
            status = await net.status(first_hop)
            assert f"{old_udp}" in status["listen"] and f"{old_tcp}" in status["listen"]
            client = await net.connect(first_hop)
            await client.publish(f"/node/{first_hop}/kept", b"persistent")
            pong = await consumer.express(
                Interest(Name(f"/node/{first_hop}/ping/{secrets.token_hex(4)}"), must_be_fresh=True), timeout=4
            )
            assert pong.name.to_uri().startswith(f"/node/{first_hop}/ping/")
            routes = await client.command("route", "list")
            assert any(r["prefix"] == "/node/n22" and len(r["nexthops"]) >= 2 for r in routes)
            pids.append(victim.pid)
    assert_cleaned(workdir, pids)


def two_nodes(**link) -> TopologySpec:
    return parse({"nodes": {"a": {}, "b": {}}, "links": [{"ends": ["a", "b"], **link}]}, "two-nodes")


async def rtt(client: icnd.Client, prefix: str) -> float:
    start = trio.current_time()
    await client.express(Interest(Name(f"{prefix}/ping/{secrets.token_hex(6)}"), must_be_fresh=True),
                         timeout=4, retx=None)
    return trio.current_time() - start


async def test_delay_shows_in_rtt_and_goes_back_to_zero() -> None:
    with trio.fail_after(30):
        async with launch(two_nodes(delay_ms=20)) as net:
            workdir = net.workdir
            pids = [h.pid for h in net.nodes.values()]
            a = await net.connect("a")
            samples = [await rtt(a, "/node/b") for _ in range(5)]
            assert min(samples) >= 0.040, samples
            assert net.link_params("a", "b")["delay_ms"] == 20
            await net.set_link("a", "b", delay_ms=0)
            samples = [await rtt(a, "/node/b") for _ in range(5)]
            assert min(samples) < 0.040, samples
    assert not os.path.exists(workdir)  # a temporary workdir is removed
    assert all(gone(pid) for pid in pids)


async def test_lossy_link_delivers_with_retransmission() -> None:
    with trio.fail_after(40):
        async with launch(two_nodes(loss=0.05)) as net:
            producer = await net.connect("b")
            consumer = await net.connect("a")
            for i in range(50):
                await producer.publish(f"/node/b/lossy/{i}", f"item {i}".encode())
            results: dict[int, bytes] = {}

            async def fetch(i: int) -> None:
                results[i] = (await consumer.fetch(f"/node/b/lossy/{i}", timeout=15)).content

            async with trio.open_nursery() as nursery:
                for i in range(50):
                    nursery.start_soon(fetch, i)
            assert results == {i: f"item {i}".encode() for i in range(50)}
            dropped = 0
            for name, client in (("a", consumer), ("b", producer)):
                for face in await client.command("face", "list"):
                    if "link" in face:
                        assert face["link"]["loss"] == 0.05
                        dropped += face["link"]["stats"]["dropped_loss"]
            assert dropped > 0  # the loss was real; retransmissions covered it


async def test_cut_heal_restart_over_udp_and_tcp(workdir) -> None:
    spec = parse(
        {
            "nodes": {"a": {}, "b": {}, "c": {}},
            "links": [
                {"ends": ["a", "b"]},
                {"ends": ["b", "c"], "transport": "tcp", "delay_ms": 2},
            ],
        },
        "line3-mixed",
    )
    with trio.fail_after(45):
        async with launch(spec, workdir=workdir) as net:
            pids = [h.pid for h in net.nodes.values()]
            c = await net.connect("c")
            a = await net.connect("a")
            for i in range(6):
                await c.publish(f"/node/c/doc/{i}", f"doc {i}".encode())
            assert (await a.fetch("/node/c/doc/0", timeout=5)).content == b"doc 0"

            # a second launch in the same workdir is refused while this one runs
            with pytest.raises(LaunchError, match="already running"):
                async with launch(spec, workdir=workdir):
                    pass

            for x, y, doc in (("a", "b", 1), ("b", "c", 2)):
                await net.cut(x, y)
                assert net.link_params(x, y)["up"] is False
                with pytest.raises((icnd.Timeout, icnd.Nacked)):
                    await a.fetch(f"/node/c/doc/{doc}", timeout=1.5)
                await net.heal(x, y)
                assert (await a.fetch(f"/node/c/doc/{doc}", timeout=5)).content == f"doc {doc}".encode()

            # restart c (reached over TCP): same ports, its published data still served
            node_c = net.nodes["c"]
            before = (node_c.udp_uri, node_c.tcp_uri)
            await net.kill("c")
            await net.restart("c")
            assert (node_c.udp_uri, node_c.tcp_uri) == before
            assert (await a.fetch("/node/c/doc/3", timeout=8)).content == b"doc 3"
            # the neighbour's re-created TCP faces are shaped again (2 ms each way)
            b = await net.connect("b")
            tcp = [f for f in await b.command("face", "list") if f["remote_uri"].startswith("tcp://")]
            assert len(tcp) == 2  # the face b created toward c, and the one it accepted from c
            assert all(f["link"]["delay_ms"] == 2 for f in tcp), tcp
            # restarting a live node works too
            await net.restart("c")
            assert (await a.fetch("/node/c/doc/4", timeout=8)).content == b"doc 4"
            pids.append(node_c.pid)
    assert_cleaned(workdir, pids)
    assert os.path.exists(os.path.join(workdir, "c.log"))  # a given workdir keeps the logs


async def test_a_node_that_cannot_start_fails_with_its_log(workdir) -> None:
    with trio.fail_after(20):
        with pytest.raises(LaunchError, match=r"(?s)exited with code 2.*log-level.*bogus"):
            async with launch(LINE3, workdir=workdir, log_level="bogus"):
                pass
    assert sockets_in(workdir) == []
    assert not os.path.exists(os.path.join(workdir, STATE_FILE))


# --- background topologies: icnd topo up / down ----------------------------------------------------------


async def test_topo_down_stops_a_background_topology(workdir, tmp_path, background, capsys) -> None:
    proc, state = await background(LINE3, workdir, tmp_path / "up.out")
    pids = [info["pid"] for info in state["nodes"].values()]
    assert state["launcher"]["pid"] == proc.pid and len(pids) == 3
    async with icnd.connect(state["nodes"]["a"]["socket"]) as client:
        assert (await client.status())["name"] == "/node/a"
    assert await trio.to_thread.run_sync(topo_down, workdir) == 0
    assert await wait_exit(proc) == 0
    output = (tmp_path / "up.out").read_text()
    assert "a.sock" in output and "ready" in output and "topology stopped" in output
    assert_cleaned(workdir, pids + [proc.pid])
    # idempotent: nothing to stop any more
    capsys.readouterr()
    assert await trio.to_thread.run_sync(topo_down, workdir) == 0
    assert "no topology is running" in capsys.readouterr().err


async def test_crashed_launcher_is_cleaned_up(workdir, tmp_path, background) -> None:
    # 1. kill -9 the launcher: its daemons die with it; `topo down` removes the rest
    proc, state = await background(LINE3, workdir, tmp_path / "up1.out")
    pids = [info["pid"] for info in state["nodes"].values()]
    proc.send_signal(signal.SIGKILL)
    await wait_exit(proc)
    assert os.path.exists(os.path.join(workdir, STATE_FILE))
    assert await trio.to_thread.run_sync(topo_down, workdir) == 0
    assert_cleaned(workdir, pids)

    # 2. crash again, then a new launch in the same workdir cleans up first
    proc, state = await background(LINE3, workdir, tmp_path / "up2.out")
    pids = [info["pid"] for info in state["nodes"].values()]
    proc.send_signal(signal.SIGKILL)
    await wait_exit(proc)
    with trio.fail_after(30):
        async with launch(LINE3, workdir=workdir) as net:
            assert all(gone(pid) for pid in pids)
            pids += [h.pid for h in net.nodes.values()]
            c = await net.connect("a")
            await c.express(Interest(Name(f"/node/c/ping/{secrets.token_hex(4)}"), must_be_fresh=True), timeout=4)
    assert_cleaned(workdir, pids)
