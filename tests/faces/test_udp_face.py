import random
import socket

import pytest
import trio

from icnd.codec import MAX_PACKET_SIZE
from icnd.faces import MAX_DATAGRAM, Face, UdpFace, connect_udp, open_udp_listener, udp
from icnd.faces.fragment import HEADER, MAGIC


class Peer:
    """A listener plus the faces it reported and the packets they received, in order."""

    def __init__(self, nursery: trio.Nursery) -> None:
        self.nursery = nursery
        self.events: list[tuple[str, Face, bytes | None]] = []
        self.new_faces: list[Face] = []

    def on_new_face(self, face: Face) -> None:
        self.events.append(("new", face, None))
        self.new_faces.append(face)
        self.nursery.start_soon(face.run, self.on_receive)

    def on_receive(self, face: Face, packet: bytes) -> None:
        self.events.append(("packet", face, packet))

    def packets(self) -> list[bytes]:
        return [p for kind, _, p in self.events if kind == "packet"]

    async def wait_packets(self, n: int) -> None:
        while len(self.packets()) < n:
            await trio.sleep(0.001)


async def test_round_trip_between_two_listeners_and_on_demand_face():
    with trio.fail_after(3):
        async with trio.open_nursery() as nursery:
            pa, pb = Peer(nursery), Peer(nursery)
            la = await open_udp_listener("127.0.0.1", 0, on_new_face=pa.on_new_face)
            lb = await open_udp_listener("127.0.0.1", 0, on_new_face=pb.on_new_face)
            nursery.start_soon(la.run)
            nursery.start_soon(lb.run)
            host, port = lb.local_address
            assert port != 0 and lb.local_uri == f"udp://127.0.0.1:{port}"

            fa = await la.face_to(host, port)
            assert fa.persistent and fa.remote_uri == lb.local_uri and fa.local_uri == la.local_uri
            assert await la.face_to(host, port) is fa
            nursery.start_soon(fa.run, pa.on_receive)
            for i in range(100):
                fa.send(b"ping %d" % i)
            await pb.wait_packets(100)

            # The on-demand face was reported before its first packet was delivered.
            assert pb.events[0][0] == "new"
            (fb,) = pb.new_faces
            assert isinstance(fb, UdpFace) and not fb.persistent and not fb.local
            assert fb.remote_uri == la.local_uri and fb.local_uri == lb.local_uri
            assert all(face is fb for kind, face, _ in pb.events[1:])
            assert pb.packets() == [b"ping %d" % i for i in range(100)]

            fb.send(b"pong")
            await pa.wait_packets(1)
            assert pa.packets() == [b"pong"] and pa.new_faces == []
            assert fa.counters.out_packets == 100 and fb.counters.in_packets == 100
            assert fb.counters.in_bytes == sum(len(b"ping %d" % i) for i in range(100))
            assert fb.counters.out_packets == 1 and fa.counters.in_packets == 1

            # face_to an address that already has an on-demand face promotes it.
            assert await lb.face_to(*la.local_address) is fb and fb.persistent

            await la.aclose()
            await lb.aclose()
    assert fa.closed and fb.closed and fb.close_reason == "listener closed"


async def test_closed_face_is_forgotten_and_next_datagram_makes_a_new_one():
    with trio.fail_after(3):
        async with trio.open_nursery() as nursery:
            peer = Peer(nursery)
            listener = await open_udp_listener("127.0.0.1", 0, on_new_face=peer.on_new_face)
            nursery.start_soon(listener.run)
            raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            raw.bind(("127.0.0.1", 0))
            raw.sendto(b"one", listener.local_address)
            await peer.wait_packets(1)
            first = peer.new_faces[0]
            await first.aclose()
            assert listener.faces == []
            raw.sendto(b"two", listener.local_address)
            await peer.wait_packets(2)
            assert len(peer.new_faces) == 2 and peer.new_faces[1] is not first
            raw.close()
            await listener.aclose()


async def test_garbage_and_empty_datagrams_are_delivered_as_bytes():
    with trio.fail_after(3):
        async with trio.open_nursery() as nursery:
            peer = Peer(nursery)
            listener = await open_udp_listener("127.0.0.1", 0, on_new_face=peer.on_new_face)
            nursery.start_soon(listener.run)
            raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            raw.sendto(b"\xff\x00garbage", listener.local_address)
            raw.sendto(b"", listener.local_address)
            big = bytes(range(256)) * 255
            raw.sendto(big, listener.local_address)
            await peer.wait_packets(3)
            assert peer.packets() == [b"\xff\x00garbage", b"", big]
            raw.close()
            await listener.aclose()


async def test_oversize_packet_is_dropped_and_counted():
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            peer = Peer(nursery)
            listener = await open_udp_listener("127.0.0.1", 0, on_new_face=peer.on_new_face)
            nursery.start_soon(listener.run)
            face = await listener.face_to(*listener.local_address)  # talk to ourselves
            nursery.start_soon(face.run, peer.on_receive)
            face.send(b"x" * (MAX_PACKET_SIZE + 1))
            face.send(b"y" * (MAX_DATAGRAM + 1))  # over one datagram: fragmented, no longer dropped
            await peer.wait_packets(1)
            assert peer.packets() == [b"y" * (MAX_DATAGRAM + 1)]
            assert face.counters.send_drops == 1 and face.counters.out_packets == 1
            assert face.counters.fragments_out == 2 and face.counters.packets_reassembled == 1
            await listener.aclose()


async def test_icmp_port_unreachable_does_not_kill_the_listener():
    dead = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dead.bind(("127.0.0.1", 0))
    dead_port = dead.getsockname()[1]
    dead.close()
    with trio.fail_after(3):
        async with trio.open_nursery() as nursery:
            peer = Peer(nursery)
            listener = await open_udp_listener("127.0.0.1", 0, on_new_face=peer.on_new_face)
            nursery.start_soon(listener.run)
            to_dead = await listener.face_to("127.0.0.1", dead_port)
            nursery.start_soon(to_dead.run, peer.on_receive)
            for _ in range(5):
                to_dead.send(b"anyone?")
                await trio.sleep(0.001)
            assert not listener.closed and not to_dead.closed
            raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            raw.sendto(b"still alive", listener.local_address)
            await peer.wait_packets(1)
            raw.close()
            await listener.aclose()


async def test_packets_before_run_are_held_then_delivered():
    faces: list[Face] = []
    with trio.fail_after(3):
        async with trio.open_nursery() as nursery:
            listener = await open_udp_listener("127.0.0.1", 0, on_new_face=faces.append)
            nursery.start_soon(listener.run)
            raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            for i in range(3):
                raw.sendto(b"%d" % i, listener.local_address)
            while not faces or faces[0].counters.in_packets < 3:
                await trio.sleep(0.001)
            got: list[bytes] = []
            nursery.start_soon(faces[0].run, lambda face, p: got.append(p))
            while len(got) < 3:
                await trio.sleep(0.001)
            assert got == [b"0", b"1", b"2"]
            raw.close()
            await listener.aclose()


async def test_listener_without_on_new_face_ignores_strangers():
    listener = await open_udp_listener("127.0.0.1", 0, on_new_face=None)
    with trio.fail_after(3):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(listener.run)
            raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            raw.sendto(b"who?", listener.local_address)
            await trio.sleep(0.05)
            assert listener.faces == []
            raw.close()
            await listener.aclose()


async def test_standalone_udp_face_on_its_own_socket():
    with trio.fail_after(3):
        async with trio.open_nursery() as nursery:
            peer = Peer(nursery)
            listener = await open_udp_listener("127.0.0.1", 0, on_new_face=peer.on_new_face)
            nursery.start_soon(listener.run)
            face = await connect_udp(listener.local_uri)
            assert face.persistent and face.remote_uri == listener.local_uri
            got: list[bytes] = []
            nursery.start_soon(face.run, lambda f, p: got.append(p))
            face.send(b"hello")
            await peer.wait_packets(1)
            peer.new_faces[0].send(b"back")
            while not got:
                await trio.sleep(0.001)
            assert got == [b"back"]
            await face.aclose()
            assert face._owned_listener is not None and face._owned_listener.closed
            await listener.aclose()


async def test_dual_stack_listener_reports_ipv4_peers_as_ipv4():
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    with trio.fail_after(3):
        async with trio.open_nursery() as nursery:
            peer = Peer(nursery)
            try:
                listener = await open_udp_listener("::", 0, on_new_face=peer.on_new_face)
            except OSError:
                pytest.skip("cannot bind ::")
            nursery.start_soon(listener.run)
            raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            raw.bind(("127.0.0.1", 0))
            raw.sendto(b"v4", ("127.0.0.1", listener.local_address[1]))
            await peer.wait_packets(1)
            face = peer.new_faces[0]
            assert face.remote_uri == f"udp://127.0.0.1:{raw.getsockname()[1]}"
            assert await listener.face_to("127.0.0.1", raw.getsockname()[1]) is face
            raw.close()
            await listener.aclose()


async def test_run_returns_when_face_closed_and_aclose_is_idempotent():
    listener = await open_udp_listener("127.0.0.1", 0, on_new_face=None)
    face = await listener.face_to("127.0.0.1", 9)
    with trio.fail_after(2):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(face.run, lambda f, p: None)
            await trio.sleep(0)
            await face.aclose()
            await face.aclose()
    face.send(b"late")
    assert face.counters.send_drops == 1
    await listener.aclose()


class _BlockedSocket:
    """Stands in for a socket whose send buffer is full (loopback UDP never reports that)."""

    def __init__(self, real: socket.socket) -> None:
        self.family = real.family

    def sendto(self, data: bytes, address: object) -> int:
        raise BlockingIOError


async def test_send_queue_is_bounded_per_face():
    listener = await open_udp_listener("127.0.0.1", 0, on_new_face=None)
    face = await listener.face_to("127.0.0.1", 9)
    face.max_send_queue = 10
    real, listener._sock = listener._sock, _BlockedSocket(listener._sock)  # type: ignore[assignment]  # a socket stand-in that blocks sends
    try:
        for _ in range(25):
            face.send(b"x")
    finally:
        listener._sock = real
    assert face.counters.out_packets == 10 and face.counters.send_drops == 15
    await listener.aclose()


# --- fragmentation --------------------------------------------------------------


async def _listener_pair(nursery: trio.Nursery, *, mtu: int | None = None) -> tuple[Peer, Peer, UdpFace]:
    """Two running listeners; returns their peers and a running face from the first to the second."""
    kwargs = {} if mtu is None else {"mtu": mtu}
    pa, pb = Peer(nursery), Peer(nursery)
    la = await open_udp_listener("127.0.0.1", 0, on_new_face=pa.on_new_face, **kwargs)
    lb = await open_udp_listener("127.0.0.1", 0, on_new_face=pb.on_new_face, **kwargs)
    nursery.start_soon(la.run)
    nursery.start_soon(lb.run)
    fa = await la.face_to(*lb.local_address)
    nursery.start_soon(fa.run, pa.on_receive)
    return pa, pb, fa


def _blob(size: int, seed: int = 0) -> bytes:
    return random.Random(seed).randbytes(size)


@pytest.mark.parametrize("size", [1024 * 1024, 4 * 1024 * 1024])
async def test_large_packets_are_fragmented_and_arrive_byte_exact(size):
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            pa, pb, fa = await _listener_pair(nursery)
            packet = _blob(size, size)
            fa.send(packet)
            await pb.wait_packets(1)
            assert pb.packets() == [packet]
            (fb,) = pb.new_faces
            fragments = -(-size // (fa.mtu - HEADER.size))
            assert fa.counters.out_packets == 1 and fa.counters.out_bytes == size
            assert fa.counters.fragments_out == fragments and fa.counters.send_drops == 0
            assert fb.counters.in_packets == 1 and fb.counters.in_bytes == size
            assert fb.counters.fragments_in == fragments and fb.counters.packets_reassembled == 1
            assert fb.counters.as_dict()["packets_reassembled"] == 1
            # And back the other way, on the on-demand face.
            fb.send(packet[::-1])
            await pa.wait_packets(1)
            assert pa.packets() == [packet[::-1]]
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("mtu", [None, 1400])
async def test_many_mixed_sizes_interleaved_arrive_in_order(mtu):
    rng = random.Random(7)
    sizes = [0, 1, 100, 1399, 1400, 1401, 59_999, 60_000, 60_001, 65_507, 200_000, 1024 * 1024]
    sizes += [rng.choice([rng.randrange(1, 2000), rng.randrange(2000, 300_000)]) for _ in range(60)]
    rng.shuffle(sizes)
    packets = [_blob(n, i) for i, n in enumerate(sizes)]
    packets.append(b"\xc1 starts with the magic byte")
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            pa, pb, fa = await _listener_pair(nursery, mtu=mtu)
            for i, packet in enumerate(packets):
                fa.send(packet)
                if i % 10 == 9:
                    await trio.sleep(0)  # a forwarder yields now and then
            await pb.wait_packets(len(packets))
            assert pb.packets() == packets
            (fb,) = pb.new_faces
            assert fa.counters.out_packets == len(packets) and fa.counters.send_drops == 0
            assert fb.counters.in_packets == len(packets)
            assert fb.counters.malformed_fragments == 0 and fb.counters.reassembly_timeouts == 0
            nursery.cancel_scope.cancel()


async def test_small_packet_takes_the_fast_path_unchanged_on_the_wire():
    raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    raw.bind(("127.0.0.1", 0))
    raw.settimeout(2)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            listener = await open_udp_listener("127.0.0.1", 0, on_new_face=None, mtu=1000)
            nursery.start_soon(listener.run)
            face = await listener.face_to(*raw.getsockname())
            small = b"\x93\x01\x02" + b"s" * 997  # exactly the MTU
            face.send(small)
            assert raw.recvfrom(65536)[0] == small
            assert face.counters.fragments_out == 0

            # One byte more: two fragments with the header, payloads that join up.
            big = small + b"!"
            face.send(big)
            datagrams = [raw.recvfrom(65536)[0] for _ in range(2)]
            headers = [HEADER.unpack_from(d) for d in datagrams]
            assert all(len(d) <= 1000 for d in datagrams)
            assert [(h[0], h[2], h[3], h[4]) for h in headers] == [(MAGIC, 0, 2, 1001), (MAGIC, 1, 2, 1001)]
            assert headers[0][1] == headers[1][1]
            assert b"".join(d[HEADER.size :] for d in datagrams) == big

            # A short packet that starts with the magic byte is wrapped in one fragment.
            face.send(b"\xc1x")
            wrapped = raw.recvfrom(65536)[0]
            assert HEADER.unpack_from(wrapped)[2:] == (0, 1, 2) and wrapped[HEADER.size :] == b"\xc1x"
            assert face.counters.out_packets == 3 and face.counters.fragments_out == 3
            await listener.aclose()
    raw.close()


async def test_fragments_from_a_raw_peer_out_of_order_duplicated_and_malformed():
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            peer = Peer(nursery)
            listener = await open_udp_listener("127.0.0.1", 0, on_new_face=peer.on_new_face)
            nursery.start_soon(listener.run)
            raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            raw.bind(("127.0.0.1", 0))
            packet = _blob(3000, 3)
            frags = [HEADER.pack(MAGIC, 99, i, 3, 3000) + packet[i * 1000 : (i + 1) * 1000] for i in range(3)]
            bad_index = HEADER.pack(MAGIC, 99, 5, 3, 3000) + b"z"
            for datagram in [frags[2], b"\xc1", frags[0], frags[0], bad_index, frags[1]]:
                raw.sendto(datagram, listener.local_address)
            raw.sendto(b"\x91\x01", listener.local_address)
            await peer.wait_packets(2)
            assert peer.packets() == [packet, b"\x91\x01"]
            c = peer.new_faces[0].counters
            assert (c.fragments_in, c.packets_reassembled, c.malformed_fragments, c.duplicate_fragments) == (6, 1, 2, 1)
            assert c.in_packets == 2
            raw.close()
            await listener.aclose()


async def test_lost_fragment_delivers_nothing_and_times_out(monkeypatch):
    monkeypatch.setattr(udp, "REASSEMBLY_TIMEOUT", 0.05)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            peer = Peer(nursery)
            listener = await open_udp_listener("127.0.0.1", 0, on_new_face=peer.on_new_face)
            nursery.start_soon(listener.run)
            raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            packet = _blob(3000, 4)
            for i in (0, 2):  # fragment 1 is lost
                fragment = HEADER.pack(MAGIC, 7, i, 3, 3000) + packet[i * 1000 : (i + 1) * 1000]
                raw.sendto(fragment, listener.local_address)
            while not peer.new_faces or peer.new_faces[0].counters.reassembly_timeouts == 0:
                await trio.sleep(0.01)  # the listener's sweep expires it though nothing else arrives
            face = peer.new_faces[0]
            assert peer.packets() == [] and face.counters.in_packets == 0
            assert face._reassembler.pending_packets == 0 and face._reassembler.buffered_bytes == 0
            raw.close()
            await listener.aclose()


async def test_fragmented_packet_is_dropped_whole_when_the_queue_cannot_take_it():
    listener = await open_udp_listener("127.0.0.1", 0, on_new_face=None, mtu=1013)  # 1000-byte payloads
    face = await listener.face_to("127.0.0.1", 9)
    face.max_send_queue = 10
    real, listener._sock = listener._sock, _BlockedSocket(listener._sock)  # type: ignore[assignment]  # a socket stand-in that blocks sends
    try:
        face.send(b"a" * 11_000)  # 11 fragments: can never fit
        assert face.counters.send_drops == 1 and face.counters.out_packets == 0 and not listener._queue
        face.send(b"b" * 6000)  # 6 fragments, queued
        face.send(b"c" * 5000)  # 5 more: 11 > 10, dropped whole
        face.send(b"d" * 4000)  # 4 more: exactly 10
        face.send(b"e")  # the queue is full
    finally:
        listener._sock = real
    c = face.counters
    assert (c.out_packets, c.send_drops, c.fragments_out, face._queued) == (2, 3, 10, 10)
    assert [w[HEADER.size :][:1] for _, w in listener._queue] == [b"b"] * 6 + [b"d"] * 4
    await listener.aclose()


async def test_mtu_is_validated_and_per_listener():
    with pytest.raises(ValueError):
        await open_udp_listener("127.0.0.1", 0, on_new_face=None, mtu=100)
    with pytest.raises(ValueError):
        await open_udp_listener("127.0.0.1", 0, on_new_face=None, mtu=MAX_DATAGRAM + 1)
    listener = await open_udp_listener("127.0.0.1", 0, on_new_face=None, mtu=1400)
    face = await listener.face_to("127.0.0.1", 9)
    assert listener.mtu == face.mtu == 1400
    # Room for two largest packets' fragments, whatever the MTU.
    assert face.max_send_queue >= 2 * -(-MAX_PACKET_SIZE // (1400 - HEADER.size))
    await listener.aclose()
    standalone = await connect_udp("udp://127.0.0.1:9", mtu=1200)
    assert standalone.mtu == 1200
    await standalone.aclose()


async def test_fragments_leave_in_bursts_and_the_writer_sends_the_rest():
    raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024 * 1024)
    raw.bind(("127.0.0.1", 0))
    raw.setblocking(False)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            listener = await open_udp_listener("127.0.0.1", 0, on_new_face=None, mtu=1013)
            listener.burst_bytes = 10 * (1013 + udp.DATAGRAM_OVERHEAD)
            nursery.start_soon(listener.run)
            await trio.sleep(0)
            face = await listener.face_to(*raw.getsockname())
            packet = _blob(100 * 1000, 9)
            face.send(packet)
            assert len(listener._queue) == 90 and face._queued == 90  # ten went out at once
            small = b"\x91\x07"
            face.send(small)  # queued behind the fragments: order is kept
            received: list[bytes] = []
            while len(received) < 101:
                await trio.lowlevel.wait_readable(raw)
                while True:
                    try:
                        received.append(raw.recv(2048))
                    except BlockingIOError:
                        break
            assert received[-1] == small and b"".join(d[HEADER.size :] for d in received[:-1]) == packet
            assert face._queued == 0 and face.counters.fragments_out == 100 and face.counters.out_packets == 2
            await listener.aclose()
    raw.close()
