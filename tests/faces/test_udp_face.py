import socket

import pytest
import trio

from icnd.codec import MAX_PACKET_SIZE
from icnd.faces import MAX_DATAGRAM, Face, UdpFace, connect_udp, open_udp_listener
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
    real, listener._sock = listener._sock, _BlockedSocket(listener._sock)  # type: ignore[assignment]
    try:
        for _ in range(25):
            face.send(b"x")
    finally:
        listener._sock = real
    assert face.counters.out_packets == 10 and face.counters.send_drops == 15
    await listener.aclose()
