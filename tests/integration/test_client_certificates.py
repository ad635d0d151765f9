"""A client's certificate is served by its node while the client is connected (issue 27 item 6).

Each client connecting with ``key=``/``cert=`` used to leave a route for its
key name and one for its certificate on its node, announced to every node,
for good.  Now they go when the client does -- unless Data signed by that
key was published through the node, which must stay verifiable after the
client left."""

from __future__ import annotations

import time

import pytest
import trio

import icnd
from icnd.client import Client
from icnd.name import Name
from icnd.security import Ed25519Key
from icnd.testing.processes import Daemon
from icnd.trust import self_signed
from icnd.trust.cert import parse_certificate


@pytest.fixture
async def node(tmp_path):
    d = Daemon(tmp_path, "--name", "/node/s", "--listen", "udp://127.0.0.1:0", name="s")
    try:
        await d.until_ready()
        yield d
    finally:
        d.stop()


async def _routes(c: Client) -> tuple[set[str], set[str]]:
    """The node's route prefixes and what its routing announces."""
    routes = {r["prefix"] for r in await c.command("route", "list")}
    return routes, set((await c.routing())["announced"])


async def _until(c: Client, want: tuple[set[str], set[str]], what: str) -> None:
    """The node's routes and announcements become `want` within 5 s (a face's end is handled as it closes)."""
    with trio.move_on_after(5):
        while await _routes(c) != want:
            await trio.sleep(0.05)
        return
    assert await _routes(c) == want, what


async def test_a_clients_key_is_routed_and_announced_while_it_is_connected_and_withdrawn_after(node) -> None:
    async with node.connect() as observer:
        baseline = await _routes(observer)
        for n in range(3):
            key = Ed25519Key.generate(Name(f"/net/user{n}"))
            async with icnd.connect(node.socket, key=key, cert=self_signed(key, now=time.time())):
                routes, _ = await _routes(observer)
                assert routes == baseline[0] | {key.name.to_uri()}  # one route: the key name
                await _until(observer, (routes, baseline[1] | {key.name.to_uri()}), "announced while connected")
                cert = parse_certificate(await observer.fetch(key.name, can_be_prefix=True, verify=False))
                assert cert.key_name == key.name
            await _until(observer, baseline, f"client {n} gone: its key's routes and announcement gone")


async def test_a_key_that_signed_published_data_stays_served_after_its_client_left(node) -> None:
    key = Ed25519Key.generate(Name("/net/writer"))
    async with icnd.connect(node.socket, key=key, cert=self_signed(key, now=time.time())) as writer:
        await writer.publish("/net/writer/note", b"signed by the writer")
        await writer.publish_object("/net/writer/book", b"chapter " * 5000, segment_size=4096)
    async with node.connect() as reader:
        data = await reader.fetch("/net/writer/note")  # verified: the writer's certificate is still served
        assert data.content == b"signed by the writer" and data.signer == key.name
        assert await reader.fetch_object("/net/writer/book") == b"chapter " * 5000
        assert key.name.to_uri() in {r["prefix"] for r in await reader.command("route", "list")}
