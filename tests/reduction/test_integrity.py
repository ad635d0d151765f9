"""What is verified where on the reduction data path (issue #18,
docs/reduction.md "Integrity"): the rendezvous signs each aggregate segment
(Ed25519 over SHA-256), every consumer verifies each segment; partial sums
between forwarders are per hop (`SigType.PER_HOP`): never cached, never
accepted by a consumer."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import trio

from icnd import Name
from icnd.codec import decode, encode
from icnd.core.tables.cs import ContentStore
from icnd.errors import VerificationError
from icnd.packet import ContentType, Data, Interest, SigType
from icnd.reduction import consumer
from icnd.reduction.group import GroupDescriptor
from icnd.reduction.segment import SegmentMeta, pack
from icnd.security import Ed25519Key, KeyChain
from tests.fakes import FakeNodeEndpoint

KEY = Ed25519Key.generate(Name("/node/r"))
CHAIN = KeyChain()
CHAIN.add_trusted(KEY.name, KEY.verify_key())
ARRAY = np.arange(2 * 1024, dtype=np.float32)  # 2 segments of 4 KiB


def _desc() -> tuple[GroupDescriptor, bytes]:
    desc = GroupDescriptor.create("g", ["w1", "w2"], seg_bytes=4096)
    return desc, encode(desc.to_data())


def _segment(interest: Interest, s: int) -> Data:
    part = ARRAY[s * 1024:(s + 1) * 1024]
    content = pack(SegmentMeta("<f4", ARRAY.shape, 2, s, members=(0, 1)), part)
    return KEY.sign(Data(interest.name, content, ContentType.AGGREGATE, freshness_ms=3_600_000))


def _verifies(data: Data) -> bool:
    try:
        CHAIN.verify(decode(encode(data)))  # as received: from its wire bytes
    except VerificationError:
        return False
    return True


def _seg_of(interest: Interest) -> int:
    return int.from_bytes(interest.name.comps[4][1:], "big")


async def test_a_segment_tampered_after_signing_is_caught() -> None:
    def tamper(data: Data) -> Data:  # an on-path forwarder flips one value, keeps the signature
        content = bytearray(data.content)
        content[-1] ^= 0x40
        return dataclasses.replace(data, content=bytes(content))

    def rendezvous(interest: Interest) -> Data:
        data = _segment(interest, _seg_of(interest))
        return tamper(data) if _seg_of(interest) == 1 else data

    ep = FakeNodeEndpoint(rendezvous, _verifies)
    desc, wire = _desc()
    fetcher = consumer._Fetcher(ep, desc, wire, "sum", 1, False, trio.current_time() + 2.0)  # type: ignore[arg-type]
    meta, view = await fetcher.segment(0)
    assert np.array_equal(view, ARRAY[:1024])
    with pytest.raises(VerificationError):
        await fetcher.segment(1)
    assert ep.cs.evicted_unverified >= 1  # the bad copy was not left in the cache


async def test_a_per_hop_partial_is_never_accepted_by_a_consumer_nor_cached() -> None:
    def forger(interest: Interest) -> Data:  # a forwarder answers with an unsigned "aggregate"
        content = pack(SegmentMeta("<f4", ARRAY.shape, 2, 0, members=(0, 1)), ARRAY[:1024])
        return Data(interest.name, content, ContentType.AGGREGATE, sig_type=SigType.PER_HOP)

    assert not _verifies(forger(Interest(Name("/x"))))
    ep = FakeNodeEndpoint(forger, _verifies)
    desc, wire = _desc()
    fetcher = consumer._Fetcher(ep, desc, wire, "sum", 1, False, trio.current_time() + 2.0)  # type: ignore[arg-type]
    with pytest.raises(VerificationError):
        await fetcher.segment(0)
    # and a forwarder's Content Store does not keep per-hop Data (icnd.core.fw.forwarder: uncached)
    from icnd.core.fw.forwarder import Forwarder

    fw = Forwarder()
    fw.add_face(1, local=True)
    fw.add_face(2)
    fw.add_route(Name("/p"), 2)
    for n, sig_type in enumerate((SigType.PER_HOP, SigType.DIGEST_SHA256)):
        interest = Interest(Name(f"/p/{n}"), nonce=n + 1)
        sent = fw.on_packet(1, interest, 0.0)
        assert sent  # toward face 2
        data = Data(interest.name, b"partial", sig_type=sig_type)
        back = fw.on_packet(2, data, 0.001)
        assert [(s.face, s.packet.name) for s in back] == [(1, interest.name)]  # delivered either way
    assert isinstance(fw.cs, ContentStore)
    assert [Name.from_wire(k).to_uri() for k in fw.cs.by_name] == ["/p/1"]  # the per-hop one was not kept
