"""Real daemons: configured faces are permanent (issue #17).

A ``--route`` to a peer that is not up yet gets its route at start and works
once the peer comes up; when the peer restarts, the route works again with
no command.  Over TCP (a reconnect) and UDP (the same face throughout)."""

from __future__ import annotations

import socket
import time
from typing import Any

import trio

import icnd
from icnd import Name
from icnd.security import Ed25519Key
from icnd.testing.processes import Daemon
from icnd.trust.cert import self_signed


def free_port(kind: int) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def fetch_soon(node: Daemon, name: str, deadline: float = 15.0) -> bytes:
    """Fetch `name` through `node`, retrying while the path is still forming."""
    with trio.fail_after(deadline):
        async with node.connect() as client:
            while True:
                try:
                    return (await client.fetch(name, timeout=0.5)).content
                except (icnd.Timeout, icnd.Nacked):
                    await trio.sleep(0.1)


async def face_entry(node: Daemon, uri: str) -> dict[str, Any]:
    async with node.connect() as client:
        faces = await client.command("face", "list")
    return next(f for f in faces if f["remote_uri"] == uri)


async def serve_and_fetch(a: Daemon, b: Daemon, prefix: str, n: int) -> None:
    """A client of `b` serves `prefix` (signed by a key under it, whose certificate `b` serves);
    a client of `a` fetches a name under it."""
    key = Ed25519Key.generate(Name(prefix))
    async with icnd.connect(b.socket, key=key, cert=self_signed(key, now=time.time())) as cb:
        async def handler(interest: icnd.Interest) -> bytes:
            return b"from b: " + interest.name.to_uri().encode()

        async with cb.serve(prefix, handler):
            assert await fetch_soon(a, f"{prefix}/{n}") == f"from b: {prefix}/{n}".encode()


async def test_a_tcp_route_given_before_the_peer_is_up_works_and_survives_its_restart(daemons) -> None:
    port = free_port(socket.SOCK_STREAM)
    b_uri = f"tcp://127.0.0.1:{port}"
    a = await daemons.start("a", "--route", f"/x={b_uri}")
    entry = await face_entry(a, b_uri)  # b is not up: the face and its route are there anyway
    assert entry["permanent"] is True and entry["state"] == "down"
    async with a.connect() as ca:
        routes = await ca.command("route", "list")
    assert any(r["prefix"] == "/x" and r["nexthops"][0]["face"] == entry["id"] for r in routes)

    b = await daemons.start("b", listen=("udp://127.0.0.1:0", b_uri))
    await serve_and_fetch(a, b, "/x", 1)
    up = await face_entry(a, b_uri)
    assert up["state"] == "up" and up["id"] == entry["id"] and up["reconnect"]["connects"] == 1

    b = await daemons.restart(b)  # same port: a reconnects by itself
    await serve_and_fetch(a, b, "/x", 2)
    again = await face_entry(a, b_uri)
    assert again["id"] == entry["id"] and again["state"] == "up" and again["reconnect"]["connects"] == 2
    assert again["counters"]["out_packets"] >= 2  # counted over both connections


async def test_a_udp_neighbor_and_its_route_survive_the_peers_restart(daemons) -> None:
    port = free_port(socket.SOCK_DGRAM)
    b_uri = f"udp://127.0.0.1:{port}"
    a = await daemons.start("a", "--neighbor", f"{b_uri},cost=5", "--route", f"/y={b_uri}")
    entry = await face_entry(a, b_uri)
    assert entry["permanent"] is True
    async with a.connect() as ca:
        faces = await ca.command("face", "list")
    assert [f["remote_uri"] for f in faces].count(b_uri) == 1  # --neighbor and --route share the face

    b = await daemons.start("b", listen=(b_uri, "tcp://127.0.0.1:0"))
    await serve_and_fetch(a, b, "/y", 1)
    b = await daemons.restart(b)
    await serve_and_fetch(a, b, "/y", 2)
    assert (await face_entry(a, b_uri))["id"] == entry["id"]


async def test_destroying_a_permanent_face_removes_it_and_its_routes(daemons) -> None:
    b_port = free_port(socket.SOCK_STREAM)
    c_port = free_port(socket.SOCK_STREAM)
    while c_port == b_port:  # the kernel may hand a just-closed port out again: two faces are needed
        c_port = free_port(socket.SOCK_STREAM)
    b_uri, c_uri = f"tcp://127.0.0.1:{b_port}", f"tcp://127.0.0.1:{c_port}"
    a = await daemons.start("a", "--face", b_uri, "--neighbor", c_uri)
    entry = await face_entry(a, b_uri)
    async with a.connect() as ca:
        await ca.command("route", "add", prefix="/z", face=entry["id"])
        await ca.command("face", "destroy", id=entry["id"])
        with trio.fail_after(5):
            while any(f["id"] == entry["id"] for f in await ca.command("face", "list")):
                await trio.sleep(0.05)
        routes = await ca.command("route", "list")
    assert not any(r["prefix"] == "/z" for r in routes)
    assert (await face_entry(a, c_uri))["state"] == "down"
    assert a.stop() == 0  # a clean shutdown while a permanent face is still retrying
