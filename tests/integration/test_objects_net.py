"""Large objects across real daemons: multi-hop, lossy links, tampering."""

from __future__ import annotations

import hashlib
import os

import pytest
import trio

import icnd
from icnd import Data, Name, decode, encode
from icnd.faces import connect_stream, open_stream_listener
from icnd.objects.manifest import segment_index
from icnd.topology import launch, parse

MiB = 1024 * 1024


def line3(transport: str = "udp", loss_bc: float = 0.0) -> icnd.topology.TopologySpec:
    return parse({
        "nodes": {"a": {}, "b": {}, "c": {}},
        "links": [
            {"ends": ["a", "b"], "transport": transport},
            {"ends": ["b", "c"], "transport": transport, "loss": loss_bc},
        ],
    })


@pytest.mark.parametrize("transport", ["tcp", "udp"])
async def test_24_mib_object_through_two_hops(transport: str) -> None:
    blob = os.urandom(24 * MiB)
    async with launch(line3(transport)) as net:
        producer = await net.connect("c")
        consumer = await net.connect("a")
        manifest = await producer.publish_object("/node/c/data/big.bin", blob)
        assert manifest.segments == 24
        with trio.fail_after(60):
            got = await consumer.fetch_object("/node/c/data/big.bin", timeout=60)
        assert hashlib.sha256(got).digest() == hashlib.sha256(blob).digest()
        # the whole object now sits in b's cache: a consumer at b never reaches c
        before = (await net.status("c"))["counters"]["interests_in"]
        again = await (await net.connect("b")).fetch_object("/node/c/data/big.bin", timeout=60)
        assert again == blob
        assert (await net.status("c"))["counters"]["interests_in"] - before <= 1  # discovery only


async def test_object_over_a_lossy_link_completes() -> None:
    blob = os.urandom(4 * MiB)
    async with launch(line3("udp", loss_bc=0.05)) as net:
        producer = await net.connect("c")
        consumer = await net.connect("a")
        await producer.publish_object("/node/c/lossy", blob, segment_size=64 * 1024)
        with trio.fail_after(90):
            got = await consumer.fetch_object("/node/c/lossy", timeout=90)
        assert got == blob
        b_faces = await (await net.connect("b")).command("face", "list")
        dropped = sum(f.get("link", {}).get("stats", {}).get("dropped_loss", 0) for f in b_faces)
        c_faces = await producer.command("face", "list")
        dropped += sum(f.get("link", {}).get("stats", {}).get("dropped_loss", 0) for f in c_faces)
        assert dropped > 0, "the link should have lost packets"


async def test_never_published_object_fails_clearly_at_the_timeout() -> None:
    async with launch(line3()) as net:
        consumer = await net.connect("a")
        start = trio.current_time()
        with pytest.raises(icnd.NotFound, match="no such object: nobody serves it"):
            await consumer.fetch_object("/node/c/never/published", timeout=1.5)  # after waiting for it
        assert trio.current_time() - start < 3


class TamperingProxy:
    """A Unix-socket 'face' between a client and its node that flips one byte
    in the content of chosen segments on their way to the client."""

    def __init__(self, node_socket: str, path: str, segment: int, times: int) -> None:
        self.node_socket, self.path = node_socket, path
        self.segment, self.left = segment, times
        self.tampered = 0

    def maybe_tamper(self, wire: bytes) -> bytes:
        try:
            packet = decode(wire)
        except icnd.DecodeError:
            return wire
        if not isinstance(packet, Data) or self.left == 0:
            return wire
        if segment_index(packet.name.comps[-1]) != self.segment:
            return wire
        self.left -= 1
        self.tampered += 1
        content = bytearray(packet.content)
        content[len(content) // 2] ^= 0x01
        forged = Data(packet.name, bytes(content), packet.content_type, packet.freshness_ms,
                      packet.final_block_id, packet.sig_type, packet.key_locator, packet.sig_value)
        return encode(forged)

    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            def on_client(client_face) -> None:
                nursery.start_soon(self.relay, client_face)

            listener = await open_stream_listener(f"unix://{self.path}", on_new_face=on_client)
            nursery.start_soon(listener.run)
            task_status.started()

    async def relay(self, client_face) -> None:
        upstream = await connect_stream(f"unix://{self.node_socket}")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(upstream.run, lambda f, wire: client_face.send(self.maybe_tamper(wire)))
            await client_face.run(lambda f, wire: upstream.send(wire))
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("times, expect_ok", [(1, True), (1000, False)])
async def test_corrupted_segment_is_refetched_or_reported(tmp_path, times: int, expect_ok: bool) -> None:
    blob = os.urandom(MiB)
    async with launch(line3()) as net:
        await (await net.connect("c")).publish_object("/node/c/obj", blob, segment_size=64 * 1024)
        proxy = TamperingProxy(net.nodes["a"].socket, str(tmp_path / "proxy.sock"), segment=5, times=times)
        async with trio.open_nursery() as nursery:
            await nursery.start(proxy.run)
            async with icnd.connect(proxy.path) as client:
                if expect_ok:
                    assert await client.fetch_object("/node/c/obj", timeout=30) == blob
                else:
                    with pytest.raises(icnd.VerificationError, match=r"seg=5.*does not match"):
                        await client.fetch_object("/node/c/obj", timeout=30)
            nursery.cancel_scope.cancel()
        assert proxy.tampered >= 1
