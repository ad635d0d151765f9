"""D1: stream faces must not hold what a peer merely announces, nor hold it forever, nor accept without limit.

The attack (issue 15): idle TCP connections, then connections that send only
a frame header announcing ~8 MiB.  Before the fix each header made the face
allocate the announced size at once and hold it forever (partial frames never
timed out), and a listener accepted any number of connections.  Now the
receive buffer grows with the bytes actually received, a partial frame times
out (the face closes, counted), and connections per listener and per source
address are limited (refusals counted); the local Unix listener has its own
budget.
"""

from __future__ import annotations

import shutil
import socket
import struct
import tempfile
import tracemalloc

import trio

from icnd.codec import MAX_PACKET_SIZE
from icnd.faces import Face, FaceLimits, StreamListener, open_stream_listener
from icnd.faces import stream

ANNOUNCED = min(8 * 1024 * 1024, MAX_PACKET_SIZE)
HEADER_ONLY = struct.pack(">I", ANNOUNCED) + b"\x93"  # a header and one byte of a frame that never completes


def _port(listener: StreamListener) -> int:
    address = listener.local_address
    assert isinstance(address, tuple)
    return address[1]


async def _connect(port: int, source: str = "127.0.0.1") -> trio.socket.SocketType:
    sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    await sock.bind((source, 0))
    await sock.connect(("127.0.0.1", port))
    return sock


async def _wait(predicate, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    with trio.fail_after(timeout):
        while not predicate():
            await trio.sleep(0.01)


async def _peer_closed(sock: trio.socket.SocketType) -> bool:
    with trio.move_on_after(2.0):
        try:
            return await sock.recv(1) == b""
        except ConnectionResetError:
            return True
    return False


async def test_a_frame_header_alone_does_not_allocate_the_announced_size() -> None:
    # Frames may get their announced size at once only from a bounded budget
    # shared by all faces (here: two frames' worth); past it, buffers follow the
    # bytes received.
    budget = stream.ByteBudget(2 * (ANNOUNCED + 64))  # a frame's own size; the header is not counted in ANNOUNCED
    faces: list[Face] = []
    listener = await open_stream_listener("tcp://127.0.0.1:0", on_new_face=faces.append, eager_frames=budget)
    n = 8
    tracemalloc.start()
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(listener.run)
            base = tracemalloc.get_traced_memory()[0]
            clients = [await _connect(_port(listener)) for _ in range(n)]
            await _wait(lambda: len(faces) == n)
            for face in faces:
                nursery.start_soon(face.run, lambda f, p: None)
            for client in clients:
                await client.send(HEADER_ONLY)
            await trio.sleep(0.3)  # every face has read its header
            grown = tracemalloc.get_traced_memory()[0] - base
            # Before the fix: n x 8 MiB (64 MiB).  Now: the budget plus a receive chunk each.
            assert budget.used > budget.limit - 256 and budget.used <= budget.limit
            assert grown < budget.limit + n * 2 * stream.RECV_CHUNK, f"{grown} bytes held for {n} header-only frames"
            for client in clients:
                client.close()
            await _wait(lambda: all(f.closed for f in faces))
            await _wait(lambda: budget.used == 0)  # given back when the faces close
            nursery.cancel_scope.cancel()
    finally:
        tracemalloc.stop()
        await listener.aclose()


async def test_a_face_holding_a_large_buffer_keeps_it_counted_when_the_budget_is_short() -> None:
    # A face whose buffer was sized for one large frame, asked for a larger one
    # the budget cannot cover, keeps its share: the buffer it goes on holding
    # stays counted (it must not give the share back before it lets the buffer go).
    mib = 1024 * 1024
    budget = stream.ByteBudget(3 * mib)
    assert budget.take(mib // 2)  # another face's share
    faces: list[Face] = []
    got: list[int] = []
    listener = await open_stream_listener("tcp://127.0.0.1:0", on_new_face=faces.append, eager_frames=budget)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(listener.run)
            client = await _connect(_port(listener))
            await _wait(lambda: len(faces) == 1)
            nursery.start_soon(faces[0].run, lambda f, p: got.append(len(p)))
            # a large frame (not a Data: copied out), and in the same burst the start of a larger
            # one the budget cannot cover: the face goes on holding the first one's buffer
            first = b"\x93" + bytes(2 * mib - 1)
            second = struct.pack(">I", 2 * mib + 600 * 1024) + b"\x93" * 1000
            await client.send(struct.pack(">I", len(first)) + first + second)
            await _wait(lambda: got == [2 * mib])
            await trio.sleep(0.3)
            assert budget.used >= mib // 2 + 2 * mib  # that buffer is counted
            held = budget.used
            await client.send(b"\x93" * 100_000)  # more of the second frame
            await trio.sleep(0.3)
            assert budget.used == held  # nothing given back or taken twice meanwhile
            client.close()
            await _wait(lambda: faces[0].closed)
            await _wait(lambda: budget.used == mib // 2)  # given back once, when the face closed
            nursery.cancel_scope.cancel()
    finally:
        await listener.aclose()


async def test_a_partial_frame_times_out_and_closes_the_face() -> None:
    faces: list[Face] = []
    limits = FaceLimits(frame_timeout=0.3)
    listener = await open_stream_listener("tcp://127.0.0.1:0", on_new_face=faces.append, limits=limits)
    got: list[bytes] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(listener.run)
        slow = await _connect(_port(listener))
        fine = await _connect(_port(listener))
        await _wait(lambda: len(faces) == 2)
        for face in faces:
            nursery.start_soon(face.run, lambda f, p: got.append(p))
        await slow.send(HEADER_ONLY)
        # A peer that keeps completing frames (each within the deadline) is not cut.
        for _ in range(5):
            await fine.send(struct.pack(">I", 3) + b"\x93\x01\x02")
            await trio.sleep(0.1)
        await _wait(lambda: faces[0].closed, timeout=3.0)
        assert faces[0].counters.frame_timeouts == 1
        assert "partial frame" in (faces[0].close_reason or "")
        assert not faces[1].closed
        assert listener.counters.frame_timeouts == 1
        assert listener.listener_counters()["frame_timeouts"] == 1
        assert await _peer_closed(slow)
        assert len(got) == 5
        fine.close()
        slow.close()
        nursery.cancel_scope.cancel()
    await listener.aclose()


async def test_connections_are_limited_per_source_and_per_listener() -> None:
    faces: list[Face] = []
    limits = FaceLimits(max_connections=5, max_per_source=3)
    listener = await open_stream_listener("tcp://127.0.0.1:0", on_new_face=faces.append, limits=limits)
    port = _port(listener)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(listener.run)
        first = [await _connect(port, "127.0.0.1") for _ in range(5)]
        await _wait(lambda: listener.counters.connections_refused_source == 2)
        assert len(faces) == 3
        assert [await _peer_closed(s) for s in first[3:]] == [True, True]
        second = [await _connect(port, "127.0.0.2") for _ in range(3)]
        await _wait(lambda: listener.counters.connections_refused_listener == 1)
        assert len(faces) == 5
        assert await _peer_closed(second[2])
        assert listener.open_connections == 5
        # A peer that goes away frees its slots: nothing leaks.
        for face in faces:
            nursery.start_soon(face.run, lambda f, p: None)
        for s in first + second:
            s.close()
        await _wait(lambda: listener.open_connections == 0)
        again = [await _connect(port, "127.0.0.1") for _ in range(3)]
        await _wait(lambda: len(faces) == 8)
        assert listener.counters.connections_refused_source == 2
        assert listener.counters.connections_refused_listener == 1
        for s in again:
            s.close()
        nursery.cancel_scope.cancel()
    await listener.aclose()


async def test_the_local_unix_listener_has_its_own_budget() -> None:
    tmp = tempfile.mkdtemp(prefix="icnd-d1-")
    try:
        faces: list[Face] = []
        limits = FaceLimits(max_connections=1, max_per_source=1, unix_max_connections=3)
        tcp = await open_stream_listener("tcp://127.0.0.1:0", on_new_face=faces.append, limits=limits)
        unix = await open_stream_listener(f"unix://{tmp}/s.sock", on_new_face=faces.append, limits=limits)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(tcp.run)
            nursery.start_soon(unix.run)
            remote = [await _connect(_port(tcp)) for _ in range(3)]  # the network fills its listener ...
            local = []
            for _ in range(4):
                sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                await sock.connect(f"{tmp}/s.sock")
                local.append(sock)
            await _wait(lambda: unix.counters.connections_refused_listener == 1)
            assert tcp.counters.connections_refused_source + tcp.counters.connections_refused_listener == 2
            assert unix.open_connections == 3  # ... local applications still get theirs
            for s in remote + local:
                s.close()
            nursery.cancel_scope.cancel()
        await tcp.aclose()
        await unix.aclose()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


async def test_ndn_listeners_have_the_same_connection_limits() -> None:
    from icnd.ndn.face import NdnStreamFace, open_ndn_listener

    faces: list[Face] = []
    limits = FaceLimits(max_connections=5, max_per_source=2, frame_timeout=7.0)
    listener = await open_ndn_listener("tcp://127.0.0.1:0", on_new_face=faces.append, limits=limits)
    port = _port(listener)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(listener.run)
        socks = [await _connect(port, "127.0.0.1") for _ in range(3)]
        await _wait(lambda: listener.counters.connections_refused_source == 1)
        assert len(faces) == 2 and all(type(f) is NdnStreamFace for f in faces)
        assert all(f.frame_timeout == 7.0 for f in faces)
        assert await _peer_closed(socks[2])
        for s in socks:
            s.close()
        nursery.cancel_scope.cancel()
    await listener.aclose()
