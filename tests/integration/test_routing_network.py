"""A network that forms itself (issue 17, acceptance): real ``icnd run``
processes on loopback given only ``--neighbor`` -- no ``--route``, no
``route add`` anywhere.

- a line a - b - c: an object published under ``/videos`` at a is fetched at c;
  ``icnd routing --json`` at b shows both neighbours up, by name, and the
  three link-state records;
- a diamond a-b-d, a-c-d (b cheaper): a function a client hosts at d is called
  from a through b; b's process is killed, and calls succeed again within 5 s
  (measured from the kill);
- a TCP neighbour restarting: the routes come back by themselves;
- a python-ndn producer registering at one node is reached from another
  node's native client.

Default hello (1 s) and dead (3 s) intervals throughout; every wait is bounded.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio

import icnd
from icnd.client import connect
from icnd.testing.processes import Daemon, free_ports, run_cli, stop_process
from icnd.trust.cert import self_signed

CONVERGE = 15.0  # bound on any convergence wait (hellos every 1 s; records synchronized within a few)
RECOVERY_BOUND = 5.0  # the acceptance: calls succeed again within 5 s of the middle node's death


def start(workdir: Path, name: str, port: int, neighbours: list[tuple[int, int]], *extra: str,
          transport: str = "udp") -> Daemon:
    """``icnd run`` as node /node/<name> listening on `port`, with a ``--neighbor`` per (port, cost)."""
    args = ["--name", f"/node/{name}", "--listen", f"{transport}://127.0.0.1:{port}"]
    for peer, cost in neighbours:
        args += ["--neighbor", f"{transport}://127.0.0.1:{peer},cost={cost}"]
    return Daemon(workdir, *args, *extra, name=name)


async def routed(daemon: Daemon, prefix: str) -> list[dict[str, Any]]:
    """`daemon`'s routing next hops for `prefix` (empty: none)."""
    async with daemon.connect() as c:
        for entry in await c.command("route", "list"):
            if entry["prefix"] == prefix:
                return [h for h in entry["nexthops"] if h["origin"] == "routing"]
    return []


async def until_routed(daemon: Daemon, prefixes: list[str], timeout: float = CONVERGE) -> None:
    with trio.fail_after(timeout):
        for prefix in prefixes:
            while not await routed(daemon, prefix):
                await trio.sleep(0.05)


@pytest.fixture
def workdir():  # type: ignore[no-untyped-def]
    from icnd.testing.processes import short_tempdir

    with short_tempdir("icnd-rn-") as path:
        yield Path(path)


@pytest.fixture
def started():  # type: ignore[no-untyped-def]
    """Collects daemons and stops every one at the end, whatever happened."""
    daemons: list[Daemon] = []
    yield daemons
    for d in daemons:
        d.kill()


async def test_line_of_three_publish_at_one_end_fetch_at_the_other(workdir, started) -> None:
    pa, pb, pc = free_ports(3)
    started += [start(workdir, "a", pa, [(pb, 1)]), start(workdir, "b", pb, [(pa, 1), (pc, 1)]),
                start(workdir, "c", pc, [(pb, 1)])]
    a, b, c = started
    for d in started:
        await d.until_ready()
    payload = os.urandom(20_000)  # a few segments
    async with a.connect() as pub:
        await pub.publish_object("/videos/line/clip", payload)
    for hop in (b, c):  # every hop on the way (routes may reach c a hold-down before b while converging)
        await until_routed(hop, ["/node/a", "/videos/line/clip"])
    async with c.connect() as reader:
        got = await reader.fetch_object("/videos/line/clip", timeout=10)
    assert got == payload

    # icnd routing --json at the middle node: both neighbours up, named; all three records
    with trio.fail_after(CONVERGE):  # c's record may still be on its way to b (c routes through b first)
        while True:
            r = await trio.to_thread.run_sync(lambda: run_cli("routing", "--json", "--socket", b.socket))
            assert r.returncode == 0, r.stderr.decode()
            status = json.loads(r.stdout)
            if len(status["lsdb"]) == 3:
                break
            await trio.sleep(0.1)
    neighbours = {n["name"]: n for n in status["neighbors"]}
    assert set(neighbours) == {"/node/a", "/node/c"}
    assert all(n["state"] == "up" and n["cost"] == 1 for n in neighbours.values()), neighbours
    assert neighbours["/node/a"]["uri"] == f"udp://127.0.0.1:{pa}"
    records = {rec["origin"]: rec for rec in status["lsdb"]}
    assert set(records) == {"/node/a", "/node/b", "/node/c"}
    assert {adj["name"] for adj in records["/node/b"]["adjacencies"]} == {"/node/a", "/node/c"}
    assert any(p["prefix"].startswith("/videos/line/clip") for p in records["/node/a"]["prefixes"])


def double(x: int) -> int:
    return 2 * x


async def test_diamond_call_survives_the_cheaper_middle_node_dying(workdir, started) -> None:
    pa, pb, pc, pd = free_ports(4)
    started += [start(workdir, "a", pa, [(pb, 1), (pc, 5)]), start(workdir, "b", pb, [(pa, 1), (pd, 1)]),
                start(workdir, "c", pc, [(pa, 5), (pd, 5)]), start(workdir, "d", pd, [(pb, 1), (pc, 5)])]
    a, b, c, d = started
    for daemon in started:
        await daemon.until_ready()
    key = icnd.security.Ed25519Key.generate(icnd.Name("/fn/double/host"))
    async with connect(d.socket, key=key, cert=self_signed(key, now=time.time())) as host_client, \
            host_client.host({"/fn/double": double}), connect(a.socket) as caller:
        await until_routed(a, ["/node/d", "/fn/double", "/node/b", "/node/c"])
        await until_routed(b, ["/fn/double"])  # converged on the path too (a may compute before b does)
        with trio.fail_after(CONVERGE):  # every record in: the cheapest way is through b
            hops = await routed(a, "/fn/double")
            while min(h["cost"] for h in hops) != 2:
                await trio.sleep(0.1)
                hops = await routed(a, "/fn/double")
        assert await caller.call("/fn/double", 21, timeout=10) == 42
        b_face = next(h["face"] for h in hops if h["cost"] == 2)

        b.kill()
        killed = trio.current_time()
        with trio.fail_after(CONVERGE):
            while True:
                with trio.move_on_after(1.0):
                    assert await caller.call("/fn/double", 5, timeout=1.0) == 10
                    break
                await trio.sleep(0.05)
        recovered = trio.current_time() - killed
        print(f"calls succeed again {recovered:.2f}s after the middle node was killed")
        assert recovered <= RECOVERY_BOUND, f"calls failed for {recovered:.2f}s after b died"
        # and routing has moved the prefix off b: through c now, at cost 10
        with trio.fail_after(CONVERGE):
            while any(h["face"] == b_face for h in await routed(a, "/fn/double")):
                await trio.sleep(0.05)
        assert [h["cost"] for h in await routed(a, "/fn/double")] == [10]


async def test_tcp_neighbour_restarting_gets_its_routes_back(workdir, started) -> None:
    pa, pb = free_ports(2, socket.SOCK_STREAM)
    started += [start(workdir, "a", pa, [(pb, 1)], transport="tcp"),
                start(workdir, "b", pb, [(pa, 1)], transport="tcp")]
    a, b = started
    for daemon in started:
        await daemon.until_ready()
    await until_routed(a, ["/node/b"])
    await until_routed(b, ["/node/a"])
    a_face = (await routed(a, "/node/b"))[0]["face"]

    b.stop()
    with trio.fail_after(CONVERGE):  # a notices (the connection dropped) and drops the route
        while await routed(a, "/node/b"):
            await trio.sleep(0.05)
    started.append(start(workdir, "b", pb, [(pa, 1)], transport="tcp"))  # the same port, no command
    b = started[-1]
    await b.until_ready()
    await until_routed(a, ["/node/b"])
    await until_routed(b, ["/node/a"])
    assert [h["face"] for h in await routed(a, "/node/b")] == [a_face]  # the permanent face, reconnected
    async with b.connect() as producer, a.connect() as consumer:
        await producer.publish("/node/b/back", b"after the restart")
        assert (await consumer.fetch("/node/b/back", timeout=5)).content == b"after the restart"


NDN_PRODUCER = r'''
import json, sys
from ndn import appv2
from ndn.security import DigestSha256Signer

app = appv2.NDNApp()

def on_interest(name, app_param, reply, context):
    reply(app.make_data(name, b"from python-ndn", signer=DigestSha256Signer(), freshness_period=0))

async def main():
    app.attach_handler(sys.argv[1], on_interest)
    ok = await app.register(sys.argv[1])
    print(json.dumps({"registered": ok}), flush=True)

app.run_forever(after_start=main())
'''


async def test_python_ndn_producer_at_one_node_reached_from_another(workdir, started) -> None:
    pytest.importorskip("ndn", reason="python-ndn (the test extra) is not installed")
    pa, pb = free_ports(2)
    ndn_sock = workdir / "a-ndn.sock"
    started += [start(workdir, "a", pa, [(pb, 1)], "--ndn-listen", f"unix://{ndn_sock}"),
                start(workdir, "b", pb, [(pa, 1)])]
    a, b = started
    for daemon in started:
        await daemon.until_ready()
    script = workdir / "producer.py"
    script.write_text(NDN_PRODUCER)
    home = workdir / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "NDN_CLIENT_TRANSPORT": f"unix://{ndn_sock}"}
    proc = subprocess.Popen([sys.executable, str(script), "/ndn/h17/sensor"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    try:
        assert proc.stdout is not None
        line = await trio.to_thread.run_sync(proc.stdout.readline)
        assert json.loads(line) == {"registered": True}, (line, proc.stderr.read() if proc.poll() else b"")
        await until_routed(b, ["/ndn/h17/sensor"])
        async with b.connect() as consumer:
            data = await consumer.express(icnd.Interest(icnd.Name("/ndn/h17/sensor/reading/1")), timeout=5)
        assert data.content == b"from python-ndn"
    finally:
        stop_process(proc)
    # the producer gone, its registration is withdrawn network-wide
    with trio.fail_after(CONVERGE):
        while await routed(b, "/ndn/h17/sensor"):
            await trio.sleep(0.05)
