"""Descriptors over a Unix stream face (issue #18): sent with a packet, in
order with everything else, also when the socket is full -- the writer task
stays the only one waiting on the socket (a second waiter used to raise
trio's BusyResourceError and end the face's run, and with it the node)."""

from __future__ import annotations

import os
import socket

import trio

from icnd.faces import shm
from icnd.faces.stream import MAX_HELD_FDS, StreamFace
from icnd.testing.processes import memfds


def _pair() -> tuple[StreamFace, StreamFace]:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    mk = lambda s, n: StreamFace(s, remote_uri=f"fd://{n}", local_uri="unix:///x", local=True, persistent=False)
    return mk(a, 1), mk(b, 2)




def _memfd(tag: bytes) -> int:
    return shm.create_sealed(len(tag), lambda fd: shm.write_all(fd, [tag], 0))


async def test_descriptors_queued_behind_a_full_socket_arrive_with_their_packet() -> None:
    sender, receiver = _pair()
    got: list[tuple[bytes, bytes | None]] = []
    done = trio.Event()

    def on_receive(face: StreamFace, packet: bytes) -> None:
        fd = face.take_fd() if packet.startswith(b"fd") else None
        tag = None
        if fd is not None:
            tag = os.pread(fd, 16, 0)
            os.close(fd)
        got.append((packet[:8], tag))
        if len(got) == 4:
            done.set()

    big = b"x" * 300_000
    sender.send(b"plain-1-" + big)  # fills the socket: what follows is queued
    first, second = _memfd(b"first"), _memfd(b"second")
    sender.send_with_fds(b"fd-one--" + big, [first])
    sender.send(b"plain-2-")  # a plain send after a queued one with descriptors: no second waiter
    sender.send_with_fds(b"fd-two--", [second])
    for fd in (first, second):
        os.close(fd)  # the face holds its own copies until they are sent
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sender.run, lambda f, p: None)
            nursery.start_soon(receiver.run, on_receive)
            await done.wait()
            nursery.cancel_scope.cancel()
    assert got == [(b"plain-1-", None), (b"fd-one--", b"first"), (b"plain-2-", None), (b"fd-two--", b"second")]
    assert receiver.counters.fds_received == 2 and receiver.counters.fds_refused == 0


async def test_descriptors_nobody_takes_are_bounded_and_closed_with_the_face() -> None:
    sender, receiver = _pair()
    arrived = trio.Event()
    n = 0

    def on_receive(face: StreamFace, packet: bytes) -> None:
        nonlocal n
        n += 1
        if n == MAX_HELD_FDS + 4:
            arrived.set()

    for _ in range(MAX_HELD_FDS + 4):
        fd = _memfd(b"z")
        sender.send_with_fds(b"p", [fd])
        os.close(fd)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sender.run, lambda f, p: None)
            nursery.start_soon(receiver.run, on_receive)
            await arrived.wait()
            assert receiver.counters.fds_received == MAX_HELD_FDS and receiver.counters.fds_refused == 4
            assert memfds() == MAX_HELD_FDS  # held, the rest closed at once
            await receiver.aclose()
            nursery.cancel_scope.cancel()
    assert memfds() == 0  # closed with the face
