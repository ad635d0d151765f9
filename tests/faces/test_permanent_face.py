"""Permanent faces (`icnd.faces.permanent`): reconnect with backoff, one id, counters kept."""

from __future__ import annotations

import socket

import pytest
import trio
import trio.testing

from icnd.faces import (
    Face,
    MemoryFace,
    PermanentFace,
    ReconnectPolicy,
    connect_face,
    memory_face_pair,
    open_stream_listener,
)

NO_JITTER = ReconnectPolicy(initial=0.1, maximum=10.0, connect_timeout=5.0, jitter=0.0)


class Collector:
    def __init__(self) -> None:
        self.packets: list[tuple[Face, bytes]] = []

    def __call__(self, face: Face, packet: bytes) -> None:
        self.packets.append((face, packet))

    async def wait(self, n: int) -> None:
        while len(self.packets) < n:
            await trio.sleep(0.001)


class MemoryPeer:
    """A connect callable over memory pairs: refuses while ``up`` is False; keeps the peer ends."""

    def __init__(self) -> None:
        self.up = False
        self.calls: list[float] = []
        self.ends: list[MemoryFace] = []

    async def __call__(self) -> Face:
        self.calls.append(trio.current_time())
        await trio.lowlevel.checkpoint()
        if not self.up:
            raise OSError("connection refused")
        ours, theirs = memory_face_pair()
        self.ends.append(theirs)
        return ours


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_backoff_doubles_to_the_maximum_and_every_wait_is_bounded(autojump_clock: trio.testing.MockClock) -> None:
    peer = MemoryPeer()
    face = PermanentFace("memory://peer", peer, policy=ReconnectPolicy(initial=0.1, maximum=1.0, jitter=0.0))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(face.run, Collector())
        await trio.sleep(5.0)
        gaps = [round(b - a, 6) for a, b in zip(peer.calls, peer.calls[1:])]
        assert gaps[:6] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
        assert face.connect_failures == len(peer.calls) and face.state == "down"
        assert face.last_error == "connection refused"
        await face.aclose()
    assert face.closed


async def test_send_while_down_drops_and_counts_never_raises(autojump_clock: trio.testing.MockClock) -> None:
    face = PermanentFace("memory://peer", MemoryPeer(), policy=NO_JITTER)
    face.send(b"x")  # not even running yet
    async with trio.open_nursery() as nursery:
        nursery.start_soon(face.run, Collector())
        await trio.sleep(0.05)
        face.send(b"y")
        assert face.counters.send_drops == 2 and face.counters.out_packets == 0
        await face.aclose()


async def test_reconnects_after_the_peer_goes_keeping_counters_and_reporting_state(
        autojump_clock: trio.testing.MockClock) -> None:
    peer = MemoryPeer()
    face = PermanentFace("memory://peer", peer, policy=NO_JITTER)
    states: list[bool] = []
    face.on_state = states.append
    got = Collector()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(face.run, got)
        await trio.sleep(1.0)
        assert face.state == "down" and not peer.ends
        face.send(b"lost")
        peer.up = True
        with trio.fail_after(0.1 * 2**4 + 0.01):  # within one backoff step of coming up
            while not face.connected:
                await trio.sleep(0.01)
        face.send(b"one")
        first = peer.ends[-1]
        inbox = Collector()
        nursery.start_soon(first.run, inbox)
        await inbox.wait(1)
        first.send(b"hello")
        await got.wait(1)
        assert got.packets[0] == (face, b"hello")  # delivered as the permanent face's own
        await first.aclose()  # the peer goes away: a reset
        peer.up = False
        while face.connected:
            await trio.sleep(0.01)
        assert face.last_error == "peer closed"
        await trio.sleep(2.0)
        peer.up = True
        while not face.connected:
            await trio.sleep(0.01)
        face.send(b"two")
        second = peer.ends[-1]
        assert second is not first
        inbox2 = Collector()
        nursery.start_soon(second.run, inbox2)
        await inbox2.wait(1)
        c = face.counters
        assert (c.out_packets, c.send_drops, c.in_packets) == (2, 1, 1)  # across both connections
        assert face.connects == 2 and states == [True, False, True]
        await face.aclose()
    assert second.closed and states == [True, False, True, False]


async def test_backoff_resets_only_after_a_connection_longer_than_the_maximum(
        autojump_clock: trio.testing.MockClock) -> None:
    peer = MemoryPeer()
    face = PermanentFace("memory://peer", peer, policy=ReconnectPolicy(initial=0.1, maximum=1.0, jitter=0.0))

    async def outage_then_connection(lasting: float) -> float:
        """Refuse long enough for the backoff to reach its maximum, then connect for `lasting`
        seconds and drop: the wait before the next attempt."""
        peer.up = False
        await trio.sleep(4.0)
        peer.up = True
        while not face.connected:
            await trio.sleep(0.001)
        await trio.sleep(lasting)
        peer.up = False
        n = len(peer.calls)
        await peer.ends[-1].aclose()
        dropped = trio.current_time()
        while len(peer.calls) == n:
            await trio.sleep(0.001)
        return peer.calls[n] - dropped

    async with trio.open_nursery() as nursery:
        nursery.start_soon(face.run, Collector())
        assert await outage_then_connection(0.5) == pytest.approx(1.0)  # a flapping peer: still backed off
        assert await outage_then_connection(5.0) == pytest.approx(0.1)  # a connection that held: reset
        await face.aclose()


async def test_a_hanging_connect_times_out_and_is_retried(autojump_clock: trio.testing.MockClock) -> None:
    calls = 0

    async def hang() -> Face:
        nonlocal calls
        calls += 1
        await trio.sleep_forever()
        raise AssertionError

    face = PermanentFace("memory://peer", hang, policy=ReconnectPolicy(initial=0.1, maximum=1.0,
                                                                      connect_timeout=2.0, jitter=0.0))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(face.run, Collector())
        await trio.sleep(4.5)
        assert calls == 3 and face.connect_failures == 2 and face.last_error == "timed out"
        await face.aclose()


async def test_aclose_stops_the_retries_and_closes_the_connection(autojump_clock: trio.testing.MockClock) -> None:
    peer = MemoryPeer()
    peer.up = True
    face = PermanentFace("memory://peer", peer, policy=NO_JITTER)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(face.run, Collector())
        while not face.connected:
            await trio.sleep(0.01)
        await face.aclose()
    assert face.closed and peer.ends[0].closed and not face.connected
    n = len(peer.calls)
    await trio.sleep(30)
    assert len(peer.calls) == n
    with pytest.raises(RuntimeError):
        await face.run(Collector())  # a face is never reopened


async def test_a_failing_state_hook_does_not_end_the_face(autojump_clock: trio.testing.MockClock) -> None:
    peer = MemoryPeer()
    peer.up = True
    face = PermanentFace("memory://peer", peer, policy=NO_JITTER)

    def broken(up: bool) -> None:
        raise KeyError(up)

    face.on_state = broken
    async with trio.open_nursery() as nursery:
        nursery.start_soon(face.run, Collector())
        while not face.connected:
            await trio.sleep(0.01)
        await peer.ends[0].aclose()
        while face.connects < 2:
            await trio.sleep(0.01)
        await face.aclose()


def test_policy_rejects_nonsense() -> None:
    for bad in ({"initial": 0}, {"initial": 5, "maximum": 1}, {"connect_timeout": 0}, {"jitter": 2}):
        with pytest.raises(ValueError):
            ReconnectPolicy(**bad)


async def test_tcp_connects_once_a_listener_appears_and_again_after_it_restarts() -> None:
    """Real sockets: a port nobody listens on, then a listener, then that listener's restart."""
    port = free_tcp_port()
    uri = f"tcp://127.0.0.1:{port}"
    face = PermanentFace(uri, lambda: connect_face(uri), policy=NO_JITTER)
    got = Collector()
    accepted: list[Face] = []
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(face.run, got)
            await trio.sleep(0.5)
            assert face.state == "down" and face.connect_failures >= 2
            assert "ECONNREFUSED" in (face.last_error or "")
            for round_ in range(2):
                inbox = Collector()

                def on_new_face(f: Face) -> None:
                    accepted.append(f)
                    nursery.start_soon(f.run, inbox)

                listener = await open_stream_listener(uri, on_new_face=on_new_face)
                nursery.start_soon(listener.run)
                while not face.connected:
                    await trio.sleep(0.01)
                face.send(b"ping %d" % round_)
                await inbox.wait(1)
                assert inbox.packets[0][1] == b"ping %d" % round_
                accepted[-1].send(b"pong %d" % round_)
                await got.wait(round_ + 1)
                assert got.packets[round_] == (face, b"pong %d" % round_)
                await listener.aclose()
                await accepted[-1].aclose()  # the peer's process ends: its connections go
                while face.connected:
                    await trio.sleep(0.01)
            assert face.connects == 2 and face.counters.in_packets == 2 and face.counters.out_packets == 2
            await face.aclose()


async def test_every_connection_takes_large_frames_as_its_link_service_says(
        autojump_clock: trio.testing.MockClock) -> None:
    """Issue #28: which large frames a stream face hands over without a copy is
    its link service's call (``face.hand_over``), made on the permanent face
    the node knows: each new inner connection gets it."""
    from icnd.faces import NativeLinkService

    peer = MemoryPeer()
    peer.up = True
    face = PermanentFace("memory://peer", peer, policy=NO_JITTER)
    NativeLinkService(face)
    assert face.hand_over is not None
    async with trio.open_nursery() as nursery:
        nursery.start_soon(face.run, Collector())
        for connection in range(2):
            while len(peer.ends) <= connection or not face.connected:
                await trio.sleep(0.01)
            inner = face._inner
            assert inner is not None and inner.hand_over is face.hand_over
            await peer.ends[connection].aclose()
            while face.connected:
                await trio.sleep(0.01)
        await face.aclose()
