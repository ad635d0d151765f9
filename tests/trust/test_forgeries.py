"""The two forgeries of issue #16, against real daemons on loopback.

(a) An on-path producer answers a fetch of /videos/x with a digest-signed
    manifest and digest-signed segments.  Before the fix `fetch_object` and
    ``icnd fetch`` returned the attacker's bytes (exit 0): ``verify=True``
    accepted DigestSha256 Data, which needs no key.
(b) A spoofed UDP Data carrying only a digest, sent to a node's UDP face
    while a verified fetch of a name a signed producer serves is pending,
    replaced the producer's Ed25519-signed Data.

Now a digest-only Data is accepted only where something already trusted
vouches for it (the Interest named its implicit digest, or a verified
manifest lists it): (a) fails with VerificationError / exit 1 and no
attacker bytes, (b) gets the real Data.  Both tests fail on the code before
the fix (checked with PYTHONPATH pointing at a checkout of it).
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path
from typing import AsyncIterator

import pytest
import trio

import icnd
from icnd.codec import encode, full_name
from icnd.name import Name, segment
from icnd.objects.manifest import Manifest, manifest_name
from icnd.packet import Data, Interest
from icnd.security import DigestKey, Ed25519Key, KeyChain
from icnd.testing.processes import Daemon, run_cli

FORGED = b"the attacker's video " * 100  # 2100 bytes: two segments of 1 KiB and a tail
SEGMENT = 1024
DIGEST = DigestKey()


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Daemon]:
    daemon = Daemon(tmp_path, "--name", "/node/a", "--listen", "udp://127.0.0.1:0", "--listen", "tcp://127.0.0.1:0",
                    name="a")
    try:
        await daemon.until_ready(15)
        yield daemon
    finally:
        daemon.stop()


def forged_object(name: Name, content: bytes, ver: int = 7) -> tuple[Data, list[Data]]:
    """A manifest and segments for `content`, all DigestSha256 only: what anyone can make."""
    import hashlib

    pieces = [content[i:i + SEGMENT] for i in range(0, len(content), SEGMENT)]
    manifest = Manifest(name, ver, len(content), SEGMENT, b"".join(hashlib.sha256(p).digest() for p in pieces))
    man = DIGEST.sign(Data(manifest_name(name, ver), manifest.encode(), icnd.ContentType.MANIFEST, 1000))
    last = segment(len(pieces) - 1)
    segs = [DIGEST.sign(Data(manifest.segment_name(i), p, freshness_ms=1000, final_block_id=last))
            for i, p in enumerate(pieces)]
    return man, segs


def attacker(name: Name) -> tuple[Data, list[Data], object]:
    """The on-path producer's handler: the forged manifest for discovery and
    by name, the forged segments by name."""
    man, segs = forged_object(name, FORGED)
    by_name = {d.name: d for d in [man, *segs]}

    def handler(interest: Interest) -> Data | None:
        if interest.name == name and interest.can_be_prefix:
            return man
        return by_name.get(interest.name)

    return man, segs, handler


async def test_a_digest_signed_object_from_an_on_path_producer_is_refused(node: Daemon, tmp_path: Path) -> None:
    name = Name("/videos/x")
    man, _, handler = attacker(name)
    async with node.connect() as evil, node.connect() as consumer:
        async with evil.serve(name, handler):  # type: ignore[arg-type]
            with trio.fail_after(20):
                with pytest.raises(icnd.VerificationError, match="digest-only"):
                    await consumer.fetch_object(name, timeout=10)
                with pytest.raises(icnd.VerificationError, match="digest-only"):
                    await consumer.fetch_manifest(name, timeout=4)
                with pytest.raises(icnd.VerificationError):
                    await consumer.fetch(man.name, timeout=4)  # a plain fetch of the manifest's name
                # `icnd fetch`: exit 1, one line naming the refusal, no attacker bytes anywhere
                out = tmp_path / "x.out"
                proc = await trio.to_thread.run_sync(
                    lambda: run_cli("fetch", "--socket", node.socket, "/videos/x", "--timeout", "10"))
                assert proc.returncode == 1, proc.stderr
                assert FORGED[:20] not in proc.stdout and b"digest-only" in proc.stderr
                assert proc.stderr.count(b"\n") == 1
                proc = await trio.to_thread.run_sync(
                    lambda: run_cli("fetch", "--socket", node.socket, "/videos/x", "-o", str(out), "--timeout", "10"))
                assert proc.returncode == 1 and not out.exists()
                # the same Data is accepted where the asker vouches for it: by its implicit digest
                vouched = await consumer.fetch(full_name(man), timeout=4)
                assert vouched.content == man.content


async def test_a_signed_object_next_to_the_forger_still_fetches(node: Daemon) -> None:
    """The refusal is about the signature, not the name: the node's signed
    object fetches through the same client meanwhile."""
    async with node.connect() as evil, node.connect() as consumer:
        async with evil.serve("/videos/x", attacker(Name("/videos/x"))[2]):  # type: ignore[arg-type]
            await consumer.publish_object("/videos/y", b"the real video" * 300, segment_size=SEGMENT)
            with trio.fail_after(20):
                assert await consumer.fetch_object("/videos/y", timeout=10) == b"the real video" * 300


def spoofed_udp(src: tuple[str, int], dst: tuple[str, int], payload: bytes) -> None:
    """Send `payload` in a UDP datagram whose source address is `src` (a raw
    socket, IP header written here: what an off-path attacker can do)."""
    ip_len = 20 + 8 + len(payload)
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, 0, 0, 64, socket.IPPROTO_UDP, 0,
                         socket.inet_aton(src[0]), socket.inet_aton(dst[0]))
    udp = struct.pack("!HHHH", src[1], dst[1], 8 + len(payload), 0)  # checksum 0: none (IPv4)
    with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW) as raw:
        raw.setsockopt(socket.IPPROTO_IP, socket.IP_HDRINCL, 1)
        raw.sendto(header + udp + payload, (dst[0], 0))


def _addr(uri: str) -> tuple[str, int]:
    host, port = uri.split("://", 1)[1].rsplit(":", 1)
    return host, int(port)


async def test_b_spoofed_udp_digest_data_never_replaces_signed_data(node: Daemon, tmp_path: Path) -> None:
    """Consumer at a, signed producer at b (a -> b over UDP); the attacker sends
    a digest-only Data for the producer's name to a's UDP face, with b's
    address as its source, while the Interest is pending at a."""
    b = Daemon(tmp_path, "--name", "/node/b", "--listen", "udp://127.0.0.1:0", name="b")
    try:
        await b.until_ready(15)
        name = Name("/prod/news")
        key = Ed25519Key.generate(Name("/prod"))
        spoofed = encode(DIGEST.sign(Data(name, b"spoofed news", freshness_ms=3_600_000)))

        asked = trio.Event()

        async def slow_producer(interest: Interest) -> bytes:
            asked.set()  # the Interest is pending at a (forwarded to b)
            await trio.sleep(1.0)  # the spoofer is faster than the real producer
            return b"the real news"

        known = KeyChain()  # the consumer knows the producer's key (no certificate needed for that)
        known.add_trusted(key.name, key.verify_key())
        async with icnd.connect(node.socket, keychain=known) as consumer, icnd.connect(b.socket, key=key) as producer:
            await consumer.command("route", "add", prefix="/prod", face=b.uri("udp"))
            face = next(f for f in await consumer.command("face", "list") if f["remote_uri"] == b.uri("udp"))
            src, dst = _addr(face["remote_uri"]), _addr(face["local_uri"])
            async with producer.serve(name, slow_producer):

                def refused() -> int:  # (getattr: the test also runs against the code before the fix)
                    return int(getattr(consumer, "counters", {}).get("unverified_retries", 0))

                async def spoof() -> None:
                    # while the Interest is pending at a (before b answers), until the consumer refused one
                    await asked.wait()
                    with trio.move_on_after(0.8):
                        while not refused():
                            spoofed_udp(src, dst, spoofed)
                            await trio.sleep(0.01)

                with trio.fail_after(20):
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(spoof)
                        try:
                            data: Data | None = await consumer.fetch(name, timeout=8)
                        except icnd.VerificationError as exc:  # a spoofed copy answered the retry too
                            assert "digest-only" in str(exc)
                            data = None
                        nursery.cancel_scope.cancel()
                    assert data is None or data.content == b"the real news", data.content  # never the spoof
                    # the spoofed Data reached the consumer (node a took it from "b") and was refused
                    assert refused() >= 1
                    if data is None:  # then the real one comes next time
                        data = await consumer.fetch(name, timeout=8, must_be_fresh=True)
                assert data.content == b"the real news"
                assert data.sig_type == icnd.SigType.ED25519 and data.key_locator == key.name
    finally:
        b.stop()
