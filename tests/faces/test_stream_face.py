import errno
import os
import random
import shutil
import socket
import struct
import tempfile
from collections.abc import Iterator

import pytest
import trio

from icnd.codec import MAX_PACKET_SIZE
from icnd.faces import Face, NativeLinkService, StreamFace, StreamListener, connect_stream, open_stream_listener


@pytest.fixture
def short_tmp() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="icnd-t-")  # Unix socket paths must stay short
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(params=["tcp", "unix"])
def listen_uri(request: pytest.FixtureRequest, short_tmp: str) -> str:
    return "tcp://127.0.0.1:0" if request.param == "tcp" else f"unix://{short_tmp}/s.sock"


class Collector:
    def __init__(self) -> None:
        self.packets: list[bytes] = []

    def __call__(self, face: Face, packet: bytes) -> None:
        self.packets.append(packet)

    async def wait(self, n: int) -> None:
        while len(self.packets) < n:
            await trio.sleep(0.001)


async def open_pair(uri: str, **client_options: int) -> tuple[StreamListener, StreamFace, StreamFace]:
    """A listener, a client face connected to it, and the server face it accepted (none running)."""
    accepted: list[Face] = []
    listener = await open_stream_listener(uri, on_new_face=accepted.append)
    client = await connect_stream(_connect_uri(listener), **client_options)
    # Accept synchronously: the listener's run loop is not needed for one connection.
    async with trio.open_nursery() as nursery:
        nursery.start_soon(listener.run)
        while not accepted:
            await trio.sleep(0.001)
        nursery.cancel_scope.cancel()
    (server,) = accepted
    assert isinstance(server, StreamFace)
    return listener, client, server


def _connect_uri(listener: StreamListener) -> str:
    return listener.local_uri


async def echoed(uri: str, packets: list[bytes], *,
                 hand_over: bool = False) -> tuple[Collector, Collector, StreamFace, StreamFace]:
    """Send `packets` from a client face to a server face that echoes them:
    (what the server got, what came back, client, server), both faces closed.
    `hand_over`: both faces have icnd's link service (which takes large Data as views)."""
    listener, client, server = await open_pair(uri)
    if hand_over:
        NativeLinkService(client)
        NativeLinkService(server)
    there, back = Collector(), Collector()

    def echo(face: Face, packet: bytes) -> None:
        there(face, packet)
        face.send(packet)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.run, echo)
        nursery.start_soon(client.run, back)
        for p in packets:
            client.send(p)
        await back.wait(len(packets))
        await client.aclose()
    await listener.aclose()
    return there, back, client, server


async def test_many_small_packets_round_trip(listen_uri: str):
    rng = random.Random(1)
    packets = [rng.randbytes(rng.randrange(0, 300)) for _ in range(20000)]
    with trio.fail_after(4):
        _, back, client, server = await echoed(listen_uri, packets)
    assert back.packets == packets
    total = sum(map(len, packets))
    assert client.counters.out_packets == server.counters.in_packets == len(packets)
    assert client.counters.out_bytes == server.counters.in_bytes == total
    assert server.counters.out_bytes == client.counters.in_bytes == total
    assert client.counters.send_drops == server.counters.send_drops == 0


async def test_large_packets_byte_exact_both_ways(listen_uri: str):
    rng = random.Random(2)
    packets = []
    for _ in range(3):
        packets.append(rng.randbytes(4 * 1024 * 1024))
        packets.append(rng.randbytes(rng.randrange(1, 100)))
    with trio.fail_after(4):
        there, back, client, server = await echoed(listen_uri, packets)
    assert there.packets == packets
    assert back.packets == packets
    assert client.counters.send_drops == server.counters.send_drops == 0


async def test_frames_split_across_reads_are_reassembled(listen_uri: str):
    frames = b"".join(struct.pack(">I", len(p)) + p for p in (b"alpha", b"", b"b" * 1000))
    with trio.fail_after(3):
        accepted: list[Face] = []
        listener = await open_stream_listener(listen_uri, on_new_face=accepted.append)
        raw = _raw_connect(listener)
        got = Collector()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(listener.run)
            while not accepted:
                await trio.sleep(0.001)
            nursery.start_soon(accepted[0].run, got)
            for i in range(0, len(frames), 3):
                raw.sendall(frames[i : i + 3])
                await trio.sleep(0.001 if i < 30 else 0)  # let the face read partial frames
            await got.wait(3)
            raw.close()
            await listener.aclose()
    assert got.packets == [b"alpha", b"", b"b" * 1000]


async def test_huge_length_header_is_a_framing_error_and_closes_the_face(listen_uri: str):
    with trio.fail_after(3):
        accepted: list[Face] = []
        listener = await open_stream_listener(listen_uri, on_new_face=accepted.append)
        raw = _raw_connect(listener)
        raw.sendall(struct.pack(">I", 2) + b"ok" + struct.pack(">I", MAX_PACKET_SIZE + 1) + b"junk")
        got = Collector()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(listener.run)
            while not accepted:
                await trio.sleep(0.001)
            server = accepted[0]
            await server.run(got)  # returns by itself
            await listener.aclose()
    assert got.packets == [b"ok"]
    assert server.closed and server.counters.framing_errors == 1
    assert server.close_reason is not None and server.close_reason.startswith("framing error")
    raw.settimeout(2)
    assert raw.recv(10) == b""  # the server closed the connection
    raw.close()


async def test_peer_close_ends_run(listen_uri: str):
    with trio.fail_after(3):
        listener, client, server = await open_pair(listen_uri)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.run, Collector())
            client.send(b"last words")
            got = Collector()
            nursery.start_soon(server.run, got)
            await got.wait(1)
            await client.aclose()
        await listener.aclose()
    assert server.closed and server.close_reason == "peer closed"
    assert client.closed and client.close_reason == "closed locally"
    server.send(b"too late")
    assert server.counters.send_drops == 1


async def test_connection_reset_closes_only_that_face():
    with trio.fail_after(3):
        accepted: list[Face] = []
        listener = await open_stream_listener("tcp://127.0.0.1:0", on_new_face=accepted.append)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(listener.run)
            raw = _raw_connect(listener)
            while not accepted:
                await trio.sleep(0.001)
            server = accepted[0]
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            raw.close()  # RST
            await server.run(Collector())
            assert server.closed and not listener.closed
            # The listener still accepts.
            raw2 = _raw_connect(listener)
            while len(accepted) < 2:
                await trio.sleep(0.001)
            raw2.close()
            await listener.aclose()


async def test_send_queue_bound_drops_and_counts_when_peer_never_reads(short_tmp: str):
    with trio.fail_after(3):
        listener, client, server = await open_pair(f"unix://{short_tmp}/q.sock", max_send_queue=1024 * 1024)
        packet = b"z" * 65536
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.run, Collector())  # the server never runs, so never reads
            for _ in range(200):
                client.send(packet)
            await trio.sleep(0.01)
            assert client.counters.send_drops > 0
            assert client.counters.out_packets + client.counters.send_drops == 200
            assert 1024 * 1024 - 65540 < client.send_queue_bytes <= 1024 * 1024
            await client.aclose()
        await server.aclose()
        await listener.aclose()


async def test_uris_flags_and_persistence(short_tmp: str):
    with trio.fail_after(3):
        listener, client, server = await open_pair("tcp://127.0.0.1:0")
        assert listener.local_uri.startswith("tcp://127.0.0.1:")
        assert client.remote_uri == listener.local_uri == server.local_uri
        assert server.remote_uri == client.local_uri
        assert client.persistent and not server.persistent
        assert not client.local and not server.local
        for face in (client, server, listener):
            await face.aclose()

        path = f"{short_tmp}/u.sock"
        listener, client, server = await open_pair(f"unix://{path}")
        assert listener.local_uri == f"unix://{path}" == client.remote_uri == server.local_uri
        assert server.remote_uri.startswith("fd://")
        assert client.local and server.local
        assert client.persistent and not server.persistent
        for face in (client, server, listener):
            await face.aclose()
        assert not os.path.exists(path)  # the listener removed its socket file


async def test_unix_listener_replaces_only_stale_socket_files(short_tmp: str):
    path = f"{short_tmp}/stale.sock"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(path)
    dead.close()  # leaves the file behind, nobody listening
    listener = await open_stream_listener(f"unix://{path}", on_new_face=lambda face: None)
    with pytest.raises(OSError) as info:
        await open_stream_listener(f"unix://{path}", on_new_face=lambda face: None)
    assert info.value.errno == errno.EADDRINUSE
    await listener.aclose()
    assert not os.path.exists(path)

    regular = f"{short_tmp}/file"
    with open(regular, "w") as f:
        f.write("keep me")
    with pytest.raises(OSError, match="not a socket"):
        await open_stream_listener(f"unix://{regular}", on_new_face=lambda face: None)
    with open(regular) as f:
        assert f.read() == "keep me"


async def test_connect_failures_raise_oserror(short_tmp: str):
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    with trio.fail_after(3):
        with pytest.raises(OSError, match="cannot connect"):
            await connect_stream(f"tcp://127.0.0.1:{port}")
        with pytest.raises(OSError):
            await connect_stream(f"unix://{short_tmp}/nobody.sock")
        with pytest.raises(ValueError):
            await connect_stream("udp://127.0.0.1:1")


async def test_listener_aclose_ends_run_and_accepted_faces_survive(listen_uri: str):
    with trio.fail_after(3):
        listener, client, server = await open_pair(listen_uri)
        got = Collector()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(listener.run)
            nursery.start_soon(server.run, got)
            nursery.start_soon(client.run, Collector())
            await listener.aclose()
            client.send(b"after listener closed")
            await got.wait(1)
            await server.aclose()
        assert client.closed  # the server's close reached the client: its run returned


def _raw_connect(listener: StreamListener) -> socket.socket:
    if isinstance(listener.local_address, str):
        raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    else:
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    raw.connect(listener.local_address)
    return raw


async def test_mixed_sizes_exercise_buffer_growth_and_compaction(listen_uri: str):
    rng = random.Random(3)
    sizes = [rng.choice((0, 7, 300, 70_000, 250_000, 1_100_000)) for _ in range(120)]
    packets = [rng.randbytes(n) for n in sizes]
    with trio.fail_after(4):
        listener, client, server = await open_pair(listen_uri)
        got = Collector()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.run, got)
            nursery.start_soon(client.run, Collector())
            for p in packets:
                while client.send_queue_bytes > 8 * 1024 * 1024:  # stay under the queue bound
                    await trio.sleep(0.001)
                client.send(p)
            await got.wait(len(packets))
            await client.aclose()
        await listener.aclose()
    assert client.counters.send_drops == 0
    assert got.packets == packets


async def test_ipv6_tcp_face():
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        listener, client, server = await open_pair("tcp://[::1]:0")
    except OSError:
        pytest.skip("no IPv6 loopback")
    assert listener.local_uri.startswith("tcp://[::1]:") and client.remote_uri == listener.local_uri
    got = Collector()
    with trio.fail_after(3):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.run, got)
            client.send(b"over v6")
            await got.wait(1)
            await server.aclose()
    assert got.packets == [b"over v6"]
    await client.aclose()
    await listener.aclose()


async def test_a_large_data_is_handed_over_in_its_own_buffer_everything_else_copied(listen_uri: str):
    """Issue #18: a large Data frame given a buffer of its own reaches on_receive
    as a read-only view of that buffer (decoded without a copy: its encoding
    is the view, its content a view of it); smaller frames, and large frames
    that are not Data, come as bytes; echoing the views back is byte-exact.
    Whether a frame is a Data is the link service's call (issue #28): the
    faces here have icnd's."""
    from icnd.codec import decode, encode
    from icnd.packet import Data

    rng = random.Random(3)
    big = [Data(f"/big/{i}", rng.randbytes(3 * 1024 * 1024 + i)) for i in range(3)]
    packets = [encode(big[0]), rng.randbytes(50), encode(big[1]), rng.randbytes(2 * 1024 * 1024),
               encode(Data("/small", b"x" * 100)), encode(big[2])]
    with trio.fail_after(10):
        there, back, client, server = await echoed(listen_uri, packets, hand_over=True)
    kinds = [type(p).__name__ for p in there.packets]
    assert kinds == ["memoryview", "bytes", "memoryview", "bytes", "bytes", "memoryview"]
    assert [bytes(p) for p in there.packets] == packets == [bytes(p) for p in back.packets]
    view = there.packets[0]
    assert view.readonly
    data = decode(view)
    assert data == big[0] and data.wire is view and data.content.obj is view.obj  # nothing copied
    assert client.counters.send_drops == server.counters.send_drops == 0
    total = sum(map(len, packets))
    assert server.counters.in_packets == client.counters.in_packets == len(packets)
    assert server.counters.in_bytes == client.counters.in_bytes == total


async def test_a_face_without_a_link_service_that_takes_views_copies_every_frame(listen_uri: str):
    """Issue #28: the transport no longer reads codec bytes to pick the frames it
    hands over; without a link service saying which (``face.hand_over``), a
    large Data arrives as bytes like every other frame, and its budget share
    is given back all the same."""
    from icnd.codec import encode
    from icnd.packet import Data

    rng = random.Random(4)
    packets = [encode(Data("/big", rng.randbytes(3 * 1024 * 1024))), rng.randbytes(50)]
    with trio.fail_after(10):
        there, back, client, server = await echoed(listen_uri, packets)
    assert [type(p).__name__ for p in there.packets] == ["bytes", "bytes"]
    assert there.packets == packets == back.packets
    assert server.eager_frames.used == client.eager_frames.used == 0


async def test_the_budget_of_frame_sized_buffers_belongs_to_the_listener(listen_uri: str):
    """Issue #28: no process-wide budget; a listener's faces share the listener's
    (one given to `open_stream_listener`, or its own), a connected face has its own."""
    from icnd.faces.stream import ByteBudget

    budget = ByteBudget(1024 * 1024)
    accepted: list[Face] = []
    listener = await open_stream_listener(listen_uri, on_new_face=accepted.append, eager_frames=budget)
    other = await open_stream_listener("tcp://127.0.0.1:0", on_new_face=accepted.append)
    clients = [await connect_stream(_connect_uri(listener)) for _ in range(2)]
    with trio.fail_after(3):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(listener.run)
            while len(accepted) < 2:
                await trio.sleep(0.001)
            nursery.cancel_scope.cancel()
    assert listener.eager_frames is budget
    assert all(isinstance(f, StreamFace) and f.eager_frames is budget for f in accepted)
    assert other.eager_frames is not budget
    assert clients[0].eager_frames is not clients[1].eager_frames
    for face in [*clients, *accepted]:
        await face.aclose()
    await listener.aclose()
    await other.aclose()
