import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icnd.codec import MAX_PACKET_SIZE
from icnd.faces.fragment import (
    FRAGMENT_OVERHEAD,
    HEADER,
    HEADER_SIZE,
    MAGIC,
    MAX_FRAGMENTS,
    MIN_MTU,
    Fragmenter,
    Reassembler,
    ReassemblyCounters,
    fragment_count,
)

MTU = 60_000
MIB = 1024 * 1024


def blob(size: int, seed: int = 0) -> bytes:
    return random.Random(seed).randbytes(size)


def feed_all(r: Reassembler, datagrams, now: float = 0.0) -> list[bytes]:
    return [p for p in (r.feed(d, now) for d in datagrams) if p is not None]


def frag(seq: int, index: int, count: int, total: int, payload: bytes) -> bytes:
    return HEADER.pack(MAGIC, seq, index, count, total) + payload


def test_header_layout():
    assert HEADER_SIZE == 13 and MAGIC == 0xC1
    assert frag(0x01020304, 5, 6, 0x0A0B0C0D, b"") == bytes.fromhex("c1 01020304 0005 0006 0a0b0c0d")


def test_magic_never_starts_an_icnd_packet():
    from icnd import codec
    from icnd.name import Name
    from icnd.packet import Data, Interest, Nack, NackReason

    packets = (Interest(Name("/a")), Data(Name("/a"), b"x" * 100_000), Nack(Name("/a"), 1, NackReason.DUPLICATE))
    assert all(codec.encode(p)[0] in range(0x90, 0xA0) for p in packets)


@pytest.mark.parametrize("size", [0, 1, MTU - 1, MTU, MTU + 1, 2 * (MTU - HEADER_SIZE), MIB, 8 * MIB, MAX_PACKET_SIZE])
def test_round_trip_around_the_boundaries(size):
    f, r = Fragmenter(MTU), Reassembler()
    packet = blob(size, size)
    datagrams = f.split(packet)
    assert len(datagrams) == fragment_count(size, MTU)
    assert all(len(d) <= MTU for d in datagrams)
    if size <= MTU:
        assert datagrams == [packet] and datagrams[0] is packet  # as is: no header, no copy
    else:
        assert len(datagrams) == -(-size // (MTU - HEADER_SIZE))
        assert {len(d) for d in datagrams[:-1]} == {MTU}
        assert all(d[0] == MAGIC for d in datagrams)
    assert feed_all(r, datagrams) == [packet]
    assert r.pending_packets == 0 and r.buffered_bytes == 0


def test_sequence_increments_per_fragmented_packet_and_wraps():
    f = Fragmenter(MIN_MTU, first_sequence=0xFFFFFFFF)
    seqs = []
    for n in (1000, 10, 1000, 1000):
        datagrams = f.split(b"\x90" * n)
        seqs.append({HEADER.unpack_from(d)[1] for d in datagrams} if len(datagrams) > 1 else None)
    assert seqs == [{0xFFFFFFFF}, None, {0}, {1}]


def test_smallest_mtu_still_carries_the_largest_packet():
    f, r = Fragmenter(MIN_MTU), Reassembler()
    packet = blob(MAX_PACKET_SIZE, 1)
    datagrams = f.split(packet)
    assert len(datagrams) <= MAX_FRAGMENTS
    assert feed_all(r, datagrams) == [packet]
    with pytest.raises(ValueError):
        Fragmenter(MIN_MTU - 1)
    with pytest.raises(ValueError):
        f.split(packet + b"x")


def test_out_of_order_and_duplicates():
    f, r = Fragmenter(1000), Reassembler()
    packet = blob(20_000, 2)
    datagrams = f.split(packet)
    shuffled = datagrams + datagrams[3:9]
    random.Random(5).shuffle(shuffled)
    # The packet is whole once every index is in; later copies are late, not new partial packets.
    got = feed_all(r, shuffled + datagrams[:2])
    assert got == [packet]
    c = r.counters
    assert c.fragments_in == len(shuffled) + 2 and c.packets_reassembled == 1
    assert c.duplicate_fragments + c.late_fragments == 8 and c.malformed_fragments == 0
    assert r.pending_packets == 0 and r.buffered_bytes == 0


def test_interleaved_packets_from_one_sender():
    f, r = Fragmenter(500), Reassembler()
    packets = [blob(n, n) for n in (3000, 100, 7000, 501, 1200)]
    per_packet = [f.split(p) for p in packets]
    mixed = [d for group in zip(*[g + [None] * 20 for g in per_packet]) for d in group if d is not None]
    assert sorted(feed_all(r, mixed)) == sorted(packets)


def test_magic_prefixed_packet_is_wrapped_and_restored():
    f, r = Fragmenter(1000), Reassembler()
    for packet in (b"\xc1", b"\xc1" + b"x" * 986, b"\xc1" + b"x" * 987, b"\xc1" * 5000):
        datagrams = f.split(packet)
        assert all(d[0] == MAGIC for d in datagrams)
        assert feed_all(r, datagrams) == [packet]


def test_non_fragment_passthrough_is_identity():
    r = Reassembler()
    for datagram in (b"", b"\x90", b"\x93\x01\x02\x03", b"\xff garbage", bytes(65_507)):
        assert r.feed(datagram, 0.0) is datagram
    assert r.counters.fragments_in == 0


def test_lost_fragment_delivers_nothing_and_times_out():
    f, r = Fragmenter(1000), Reassembler(timeout=2.0)
    datagrams = f.split(blob(5000))
    del datagrams[2]
    assert feed_all(r, datagrams, now=10.0) == []
    assert r.pending_packets == 1 and r.buffered_bytes > 0
    assert r.expire(11.9) == 0  # idle for 1.9 s: kept
    assert r.expire(12.5) == 1
    assert r.counters.reassembly_timeouts == 1 and r.pending_packets == 0 and r.buffered_bytes == 0


def test_timeout_counts_from_the_latest_fragment_and_expires_on_feed():
    f, r = Fragmenter(1000), Reassembler(timeout=2.0)
    slow = f.split(blob(5000, 1))
    for i, d in enumerate(slow[:-1]):
        assert r.feed(d, float(i)) is None  # one fragment a second: never idle for 2 s
    fast = f.split(blob(3000, 2))
    assert r.feed(fast[0], 5.0) is None
    # Next feed at t=6.5: the slow packet (last fragment at 3.0) is expired first, the other is not.
    assert r.feed(slow[-1], 6.5) is None
    assert r.counters.reassembly_timeouts == 1 and r.counters.late_fragments == 1
    assert feed_all(r, fast[1:], now=6.5) == [blob(3000, 2)]


def test_max_packets_evicts_the_oldest_partial():
    f, r = Fragmenter(1000), Reassembler(max_packets=3)
    groups = [f.split(blob(3000, i)) for i in range(5)]
    for t, g in enumerate(groups):
        assert r.feed(g[0], float(t) / 10) is None
    assert r.pending_packets == 3 and r.counters.reassembly_evictions == 2
    # Packets 0 and 1 were evicted: their later fragments are dropped as late.
    assert feed_all(r, groups[0][1:] + groups[1][1:]) == []
    assert r.counters.late_fragments == 6
    assert feed_all(r, [d for g in groups[2:] for d in g[1:]]) == [blob(3000, i) for i in (2, 3, 4)]
    assert r.buffered_bytes == 0


def test_max_bytes_evicts_the_oldest_partial_and_bounds_memory():
    payload = 1000 - HEADER_SIZE
    per_fragment = payload + FRAGMENT_OVERHEAD
    f, r = Fragmenter(1000), Reassembler(max_bytes=10 * per_fragment)
    a, b = f.split(blob(8 * payload, 1)), f.split(blob(8 * payload, 2))
    feed_all(r, a[:6] + b[:4])
    assert r.buffered_bytes == 10 * per_fragment and r.counters.reassembly_evictions == 0
    r.feed(b[4], 0.0)  # over the bound: a, the least recently active, goes
    assert r.counters.reassembly_evictions == 1 and r.pending_packets == 1
    assert r.buffered_bytes == 5 * per_fragment
    assert feed_all(r, b[5:]) == [blob(8 * payload, 2)]
    # A packet that alone can never fit is dropped as soon as it overflows.
    big = f.split(blob(20 * payload, 3))
    assert feed_all(r, big) == []
    assert r.counters.reassembly_evictions == 2 and r.buffered_bytes <= r.max_bytes


def test_tiny_fragments_are_charged_overhead():
    r = Reassembler(max_bytes=100 * FRAGMENT_OVERHEAD)
    for i in range(1000):
        r.feed(frag(1, i, 60_000, MAX_PACKET_SIZE, b"x"), 0.0)
    assert r.buffered_bytes <= r.max_bytes and r.counters.reassembly_evictions == 1


@pytest.mark.parametrize(
    "datagram",
    [
        b"\xc1",
        b"\xc1\x00\x00",
        HEADER.pack(MAGIC, 1, 0, 2, 10),  # no payload
        frag(1, 0, 0, 10, b"x"),  # count 0
        frag(1, 2, 2, 10, b"x"),  # index >= count
        frag(1, 0, 2, 0, b"x"),  # total 0
        frag(1, 0, 3, 2, b"x"),  # total < count
        frag(1, 0, 2, MAX_PACKET_SIZE + 1, b"x"),  # beyond the packet limit
        frag(1, 0, 2, 3, b"xxxx"),  # payload longer than total
        frag(1, 0, 1, 5, b"xxx"),  # single fragment shorter than total
        frag(1, 0, 2, 3, b"xxx"),  # fills total with one of two fragments
    ],
)
def test_malformed_fragment_is_counted_never_raised(datagram):
    r = Reassembler()
    assert r.feed(datagram, 0.0) is None
    assert r.counters.malformed_fragments == 1 and r.pending_packets == 0 and r.buffered_bytes == 0


def test_inconsistent_fragments_of_one_sequence():
    r = Reassembler()
    assert r.feed(frag(9, 0, 3, 30, b"a" * 10), 0.0) is None
    assert r.feed(frag(9, 1, 4, 30, b"b" * 10), 0.0) is None  # count differs: dropped, partial kept
    assert r.feed(frag(9, 1, 3, 31, b"b" * 10), 0.0) is None  # total differs
    assert r.counters.malformed_fragments == 2 and r.pending_packets == 1
    # All fragments in but the lengths do not add up: the partial packet goes.
    assert r.feed(frag(9, 1, 3, 30, b"b" * 5), 0.0) is None
    assert r.feed(frag(9, 2, 3, 30, b"c" * 5), 0.0) is None
    assert r.counters.malformed_fragments == 3 and r.pending_packets == 0 and r.buffered_bytes == 0


def test_reassembler_counters_can_be_any_object_and_validate_arguments():
    class Counters:
        fragments_in = packets_reassembled = reassembly_timeouts = reassembly_evictions = 0
        malformed_fragments = duplicate_fragments = late_fragments = 0

    shared = Counters()
    r = Reassembler(counters=shared)
    feed_all(r, Fragmenter(500).split(b"\x90" * 1000))
    assert shared.fragments_in == 3 and shared.packets_reassembled == 1
    assert ReassemblyCounters().as_dict()["malformed_fragments"] == 0
    for bad in ({"max_packets": 0}, {"max_bytes": 0}, {"timeout": 0}):
        with pytest.raises(ValueError):
            Reassembler(**bad)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=64), max_size=30), st.integers(0, 3))
def test_fuzz_feed_never_raises_and_stays_bounded(tails, seq_bits):
    r = Reassembler(max_packets=4, max_bytes=4096, timeout=1.0)
    for i, tail in enumerate(tails):
        # Random bytes after the magic byte, with the sequence squeezed so that fragments collide.
        datagram = bytes([MAGIC]) + tail
        if len(datagram) >= 5:
            datagram = datagram[:1] + struct.pack(">I", int.from_bytes(datagram[1:5], "big") & seq_bits) + datagram[5:]
        out = r.feed(datagram, i * 0.3)
        assert out is None or isinstance(out, bytes)
        assert r.pending_packets <= 4 and 0 <= r.buffered_bytes <= 4096
    c = r.counters
    assert c.fragments_in == len(tails)
    r.expire(1e9)
    assert r.pending_packets == 0 and r.buffered_bytes == 0


@settings(max_examples=200, deadline=None)
@given(
    st.integers(MIN_MTU, 2000),
    st.lists(st.integers(0, 20_000), min_size=1, max_size=8),
    st.randoms(use_true_random=False),
    st.booleans(),
)
def test_fuzz_round_trips_any_order(mtu, sizes, rnd, with_dups):
    f, r = Fragmenter(mtu), Reassembler()
    packets = [bytes([0x90 + i % 16]) * n for i, n in enumerate(sizes)]
    datagrams = [d for p in packets for d in f.split(p)]
    fragments = [d for d in datagrams if d and d[0] == MAGIC]
    if with_dups:
        datagrams += rnd.sample(fragments, len(fragments) // 2)
    rnd.shuffle(datagrams)
    assert sorted(feed_all(r, datagrams)) == sorted(packets)
    assert r.pending_packets == 0 and r.buffered_bytes == 0 and r.counters.malformed_fragments == 0
