"""Objects: manifest codec, segment packets, the node's store, RTT and window, the fetch pipeline."""

from __future__ import annotations

import hashlib
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icnd import (
    ContentType,
    DecodeError,
    Interest,
    Nack,
    Name,
    NotFound,
    VerificationError,
    decode,
    encode,
)
from icnd.objects.fetch import MAX_CORRUPT_ATTEMPTS, fetch_object
from icnd.objects.manifest import (
    CongestionWindow,
    Manifest,
    SegmentBuilder,
    check_segment,
    check_sizes,
    parse_versioned,
    segment_count,
)
from icnd.objects.store import ObjectStore, ObjectStoreError
from icnd.rtt import RttEstimator
from icnd.security import Ed25519Key, KeyChain
from tests.fakes import StoreEndpoint, upload


def manifest_for(blob: bytes, segment_size: int, name: str = "/obj", version: int = 7) -> Manifest:
    digests = b"".join(
        hashlib.sha256(blob[i:i + segment_size]).digest()
        for i in range(0, max(len(blob), 1), segment_size)
    ) if blob else hashlib.sha256(b"").digest()
    return Manifest(Name(name), version, len(blob), segment_size, digests)


def test_manifest_round_trip_and_names() -> None:
    blob = os.urandom(5000)
    m = manifest_for(blob, 1024)
    assert m.segments == 5 and m.segment_range(4) == (4096, 5000)
    assert m.segment_name(2).to_uri() == "/obj/v=7/seg=2"
    assert m.manifest_name().to_uri() == "/obj/v=7/manifest"
    assert Manifest.decode(Name("/obj"), m.encode()) == m
    assert parse_versioned(m.segment_name(3), Name("/obj"))[0] == 7
    assert parse_versioned(Name("/obj/x"), Name("/obj")) is None
    assert check_segment(m, 4, blob[4096:]) and not check_segment(m, 4, blob[4096:-1] + b"x")


@pytest.mark.parametrize("content", [b"", b"\x81\xa1v\x02", b"\xc0", b"\x80"])
def test_manifest_decode_rejects_garbage(content: bytes) -> None:
    with pytest.raises(DecodeError):
        Manifest.decode(Name("/obj"), content)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_manifest_decode_only_raises_decode_error(content: bytes) -> None:
    try:
        Manifest.decode(Name("/obj"), content)
    except DecodeError:
        pass


def test_limits() -> None:
    assert segment_count(0, 1024) == 1
    with pytest.raises(ValueError):
        check_sizes(100, 10)
    with pytest.raises(ValueError, match="segments"):
        check_sizes(10**9, 1024)


@pytest.mark.parametrize("size", [0, 1, 1023, 1024, 1025, 4096])
def test_segment_builder_matches_the_codec(size: int) -> None:
    blob = os.urandom(size)
    m = manifest_for(blob, 1024)
    builder = SegmentBuilder(m, 60_000)
    for i in range(m.segments):
        start, end = m.segment_range(i)
        content = blob[start:end]
        data = builder.build(i, content, builder.digest_sig(i, content))
        # byte for byte what the codec encodes, and a valid DigestSha256 signature
        assert decode(data.wire) == data
        assert encode(data.__class__(data.name, data.content, data.content_type, data.freshness_ms,
                                     data.final_block_id, data.sig_type, None, data.sig_value)) == data.wire
        KeyChain().verify(decode(data.wire))
        assert data.final_block_id == m.segment_name(m.segments - 1).comps[-1]


@pytest.mark.parametrize("chunk", [1000, 1024, 3000, 10_000])
def test_store_upload_serve_and_restart(tmp_path, chunk: int) -> None:
    key = Ed25519Key.generate(Name("/node/t"))
    blob = os.urandom(7 * 1024 + 5)
    store = ObjectStore(str(tmp_path), 1 << 20)
    m = upload(store, "/files/a", blob, 1024, chunk, key)
    assert m == manifest_for(blob, 1024, "/files/a", m.version)

    def serve(s: ObjectStore) -> bytes:
        chain = KeyChain()
        chain.add_trusted(key.name, key.verify_key())
        latest = s.lookup(Interest(Name("/files/a"), can_be_prefix=True, must_be_fresh=True))
        assert latest.content_type == ContentType.MANIFEST
        chain.verify(decode(encode(latest)))
        got = Manifest.decode(Name("/files/a"), latest.content)
        parts = []
        for i in range(got.segments):
            seg = s.lookup(Interest(got.segment_name(i)))
            chain.verify(decode(seg.wire))
            assert check_segment(got, i, seg.content)
            parts.append(seg.content)
        assert s.lookup(Interest(got.segment_name(got.segments))) is None
        return b"".join(parts)

    assert serve(store) == blob
    store.close()
    reopened = ObjectStore(str(tmp_path), 1 << 20)
    assert serve(reopened) == blob and reopened.bytes_used == len(blob)
    reopened.close()


def test_store_versions_and_remove(tmp_path) -> None:
    key = Ed25519Key.generate(Name("/node/t"))
    store = ObjectStore(None, 1 << 20)
    first = upload(store, "/v", b"one" * 500, 1024, 700, key)
    second = upload(store, "/v", b"two" * 500, 1024, 700, key)
    assert second.version > first.version
    latest = store.lookup(Interest(Name("/v"), can_be_prefix=True))
    assert latest.name == second.manifest_name()
    assert store.lookup(Interest(first.segment_name(0))).content == (b"one" * 500)[:1024]
    assert [m.version for m in store.remove(Name("/v"))] == [first.version, second.version]
    assert store.lookup(Interest(Name("/v"), can_be_prefix=True)) is None and store.bytes_used == 0
    directory = store.directory
    store.close()
    assert not os.path.exists(directory)  # the temporary store is gone with the node


def test_store_refuses_bad_uploads(tmp_path) -> None:
    key = Ed25519Key.generate(Name("/node/t"))
    store = ObjectStore(str(tmp_path), 10_000, max_uploads=1)
    with pytest.raises(ObjectStoreError, match="do not fit"):
        store.begin(Name("/big"), 20_000, 1024, 0)
    uid = store.begin(Name("/x"), 3000, 1024, 0)
    with pytest.raises(ObjectStoreError, match="in progress"):
        store.begin(Name("/y"), 10, 1024, 0)
    with pytest.raises(ObjectStoreError, match="expected offset 0"):
        store.append(uid, 5, b"abc")
    store.append(uid, 0, b"a" * 1000)
    with pytest.raises(ObjectStoreError, match="more than the declared"):
        store.append(uid, 1000, b"b" * 2001)
    with pytest.raises(ObjectStoreError, match="1000 of 3000"):
        store.commit(uid, key)
    store.abort(uid)
    assert store.bytes_used == 0 and not [f for f in os.listdir(store.directory) if f.endswith(".part")]
    with pytest.raises(ObjectStoreError, match="no upload"):
        store.append(uid, 1000, b"x")
    uid = store.begin(Name("/z"), 10, 1024, 0)
    store.upload_idle_s = 0.0
    assert store.expire_uploads() == 1 and store.bytes_used == 0
    store.close()


def test_rtt_estimator_follows_rfc6298() -> None:
    rtt = RttEstimator(initial_rto=1.0, min_rto=0.01)
    assert rtt.timeout() == 1.0
    rtt.sample(0.1)
    assert rtt.srtt == 0.1 and rtt.rttvar == 0.05 and rtt.timeout() == pytest.approx(0.3)
    rtt.sample(0.1)
    assert rtt.rttvar == pytest.approx(0.0375) and rtt.timeout() == pytest.approx(0.25)
    rtt.back_off()
    rtt.back_off()
    assert rtt.timeout() == pytest.approx(1.0)
    rtt.sample(0.1)  # a new sample ends the backoff
    assert rtt.timeout() < 0.3


def test_congestion_window_aimd() -> None:
    w = CongestionWindow(initial=2, ssthresh=8, maximum=100)
    for _ in range(6):
        w.on_answer()
    assert w.size == 8  # slow start
    for _ in range(9):  # 1/cwnd per answer: one window's worth adds one
        w.on_answer()
    assert w.size == 9  # +1 per window
    w.on_loss(now=1.0, rtt=0.1)
    assert w.size == 4
    w.on_loss(now=1.05, rtt=0.1)  # same loss event
    assert w.size == 4
    w.on_loss(now=1.2, rtt=0.1)
    assert w.size == 2


async def test_fetch_pipeline_through_any_endpoint(tmp_path) -> None:
    key = Ed25519Key.generate(Name("/node/t"))
    blob = os.urandom(9 * 1024 + 3)
    store = ObjectStore(str(tmp_path), 1 << 20)
    m = upload(store, "/files/b", blob, 1024, 4096, key)
    ep = StoreEndpoint(store, key)
    seen: list[tuple[int, int]] = []
    fetched = await fetch_object(ep, "/files/b", progress=lambda done, total: seen.append((done, total)))  # type: ignore[arg-type]
    assert fetched == blob
    assert ep.sent == m.segments and seen[-1] == (len(blob), len(blob)) and not ep.streams
    into = bytearray(b"old")
    assert await fetch_object(ep, m.manifest_name()[:-1], out=into) is into and into == blob  # type: ignore[arg-type]
    with pytest.raises(NotFound, match="no such object: nobody serves it"):  # after waiting for a route
        await fetch_object(ep, "/files/nothing", timeout=0.3)  # type: ignore[arg-type]
    # a segment that never matches the manifest: refused after MAX_CORRUPT_ATTEMPTS copies, named
    bad = StoreEndpoint(store, key, corrupt=frozenset({3}))
    with pytest.raises(VerificationError, match="seg=3: content does not match"):
        await fetch_object(bad, "/files/b")  # type: ignore[arg-type]
    assert bad.sent == m.segments - 1 + MAX_CORRUPT_ATTEMPTS
    store.close()
