"""Real `icnd run` processes on loopback: forwarding, caching, robustness."""

from __future__ import annotations

import os
import random
import socket
import time

import trio

import icnd
from icnd import Interest, Nack, NackReason, Name
from icnd.security import Ed25519Key
from icnd.trust.cert import self_signed


async def line3(daemons):
    """a - b - c over UDP with static routes toward /data at c."""
    a = await daemons.start("a")
    b = await daemons.start("b")
    c = await daemons.start("c")
    async with a.connect() as ca:
        await ca.command("route", "add", prefix="/data", face=b.uri("udp"))
        await ca.command("route", "add", prefix="/node/c", face=b.uri("udp"))
    async with b.connect() as cb:
        await cb.command("route", "add", prefix="/data", face=c.uri("udp"))
        await cb.command("route", "add", prefix="/node/c", face=c.uri("udp"))
    return a, b, c


async def test_line3_publish_fetch_and_cache_hit_on_path(daemons) -> None:
    a, b, c = await line3(daemons)
    async with c.connect() as cc:
        await cc.publish("/data/hello", b"hello from c", freshness=60)
    async with a.connect() as ca:
        first = await ca.fetch("/data/hello")
        assert first.content == b"hello from c"
        assert first.signer is not None and first.signer.to_uri().startswith("/node/c/KEY/")
        before = (await b.get_status())["counters"]
        second = await ca.fetch("/data/hello")
        assert second.content == b"hello from c"
        status_a = await ca.status()
    # the second fetch never left a: answered from a's Content Store
    assert status_a["counters"]["cs_hits"] >= 1
    after = (await b.get_status())["counters"]
    assert after["interests_in"] == before["interests_in"]
    # a second consumer, on b, is answered from b's cache without reaching c
    c_before = (await c.get_status())["counters"]["interests_in"]
    async with b.connect() as cb:
        assert (await cb.fetch("/data/hello")).content == b"hello from c"
        assert (await cb.status())["counters"]["cs_hits"] >= 1
    assert (await c.get_status())["counters"]["interests_in"] == c_before


async def test_200_concurrent_fetches_all_correct(daemons) -> None:
    a, b, c = await line3(daemons)
    key = Ed25519Key.generate(Name("/data"))  # signed answers (a digest-only one verifies for no one)
    async with icnd.connect(c.socket, key=key, cert=self_signed(key, now=time.time())) as cc:
        async def handler(interest: Interest) -> bytes:
            return b"reply:" + interest.name.to_uri().encode()

        async with cc.serve("/data/gen", handler):
            results: dict[int, bytes] = {}
            async with a.connect() as ca:
                async def one(i: int) -> None:
                    data = await ca.fetch(f"/data/gen/{i}", timeout=10)
                    results[i] = data.content

                async with trio.open_nursery() as nursery:
                    for i in range(200):
                        nursery.start_soon(one, i)
    assert results == {i: f"reply:/data/gen/{i}".encode() for i in range(200)}


async def test_unserved_prefix_is_nacked_at_the_consumers_timeout(daemons) -> None:
    """A no-route Nack comes back at once; the consumer asks again until its
    timeout (a producer may yet start: issue #26, F1), then says nobody serves it."""
    a, b, c = await line3(daemons)
    async with a.connect() as ca:
        for name in ("/nobody/serves/this", "/data/missing"):  # the second across hops: c has no route beyond its repo
            start = trio.current_time()
            try:
                await ca.fetch(name, timeout=0.5)
            except icnd.Nacked as exc:
                assert exc.reason == "no-route" and exc.retries >= 2 and "nobody serves it" in str(exc)
            else:
                raise AssertionError("expected a Nack")
            assert 0.4 <= trio.current_time() - start < 1.5


def udp_port(uri: str) -> int:
    return int(uri.rsplit(":", 1)[1])


async def test_garbage_datagrams_are_counted_and_forwarding_continues(daemons) -> None:
    a, b, c = await line3(daemons)
    port = udp_port(b.uri("udp"))
    rng = random.Random(5)
    valid = icnd.encode(Interest(Name("/data/x")))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for i in range(5000):
            if i % 2:
                junk = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 200)))
            else:  # mutated valid packets: the nastier kind
                junk = bytearray(valid)
                junk[rng.randrange(len(junk))] ^= 1 << rng.randrange(8)
                junk = bytes(junk[: rng.randrange(1, len(junk) + 1)])
            s.sendto(junk, ("127.0.0.1", port))
            if i % 500 == 0:
                await trio.sleep(0.01)  # let the receiver keep up; UDP drops are not the point
    with trio.fail_after(10):
        while True:
            status = await b.get_status()
            if status["counters"]["decode_errors"] >= 2500:
                break
            await trio.sleep(0.1)
    assert b.proc.poll() is None
    async with c.connect() as cc:
        await cc.publish("/data/after-garbage", b"still here")
    async with a.connect() as ca:
        assert (await ca.fetch("/data/after-garbage")).content == b"still here"


async def test_management_refused_from_non_local_face(daemons) -> None:
    a = await daemons.start("a")
    port = udp_port(a.uri("udp"))
    interest = Interest.with_params(Name("/localhost/icnd/status/get"), b"\x80")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(5)
        s.sendto(icnd.encode(interest), ("127.0.0.1", port))
        reply = icnd.decode(s.recv(65536))
    assert isinstance(reply, Nack) and reply.reason is NackReason.PROHIBITED
    assert (await a.get_status())["counters"]["scope_violations"] == 1


async def test_restart_keeps_published_data_with_data_dir(daemons, tmp_path) -> None:
    data_dir = str(tmp_path / "a-data")
    a = await daemons.start("a", "--data-dir", data_dir)
    key_before = a.status["key"]
    async with a.connect() as ca:
        await ca.publish("/keep/me", b"persistent", freshness=1)
    a = await daemons.restart(a)
    assert a.status["key"] == key_before  # the identity survives too
    async with a.connect() as ca:
        data = await ca.fetch("/keep/me")
    assert data.content == b"persistent"
    assert os.path.exists(os.path.join(data_dir, "repo.sqlite3"))


async def test_emulated_link_delay_loss_and_cut(daemons) -> None:
    a, b, c = await line3(daemons)
    async with c.connect() as cc:
        await cc.publish("/data/far", b"x", freshness=0)
    async with a.connect() as ca, b.connect() as cb:
        # 20 ms each way on a->b and b->a
        await ca.command("face", "link", face=b.uri("udp"), delay_ms=20)
        await cb.command("face", "link", face=a.uri("udp"), delay_ms=20)
        start = trio.current_time()
        await ca.fetch("/node/c/ping/1", must_be_fresh=True)
        assert trio.current_time() - start >= 0.040
        faces = await ca.command("face", "list")
        shaped = [f for f in faces if f["remote_uri"] == b.uri("udp")]
        assert shaped[0]["link"]["delay_ms"] == 20
        # cut: nothing gets through; heal: back to normal
        await ca.command("face", "link", face=b.uri("udp"), up=False)
        try:
            await ca.fetch("/node/c/ping/2", must_be_fresh=True, timeout=0.5)
        except icnd.Timeout:
            pass
        else:
            raise AssertionError("a cut link delivered")
        await ca.command("face", "link", face=b.uri("udp"), up=True, delay_ms=0)
        await cb.command("face", "link", face=a.uri("udp"), delay_ms=0)
        assert (await ca.fetch("/node/c/ping/3", must_be_fresh=True)).name.to_uri() == "/node/c/ping/3"
        try:
            await ca.command("face", "link", face=b.uri("udp"), loss=1.5)
        except icnd.RemoteError as exc:
            assert "loss" in str(exc)
        else:
            raise AssertionError("loss 1.5 accepted")
