"""The face table's permanent faces (`FaceTable.open(uri, permanent=True)`), on real loopback sockets."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable

import pytest
import trio

from icnd.daemon.faces import FaceTable
from icnd.daemon.mgmt.faces import FaceManager
from icnd.faces import Face, LinkService, OnReceive, PermanentFace, ReconnectPolicy, UdpFace, open_udp_listener

FAST = ReconnectPolicy(initial=0.05, maximum=0.2, connect_timeout=2.0, jitter=0.0)


class Harness:
    """A FaceTable with one UDP listener on loopback, recording what its owner would be told."""

    def __init__(self) -> None:
        self.received: list[tuple[Face, bytes]] = []
        self.up: list[Face] = []
        self.down: list[Face] = []
        self.table = FaceTable(first_id=2, receiver=self._receiver, on_up=self.up.append, on_down=self.down.append)
        self.table.reconnect = FAST

    def _receiver(self, face: Face, link: LinkService) -> OnReceive:
        def on_receive(f: Face, wire: bytes) -> None:
            self.received.append((f, wire))

        return on_receive


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    h = Harness()
    async with trio.open_nursery() as nursery:
        def on_new_face(face: Face) -> None:
            h.table.add(face)

        listener = await open_udp_listener("127.0.0.1", 0, on_new_face=on_new_face)
        h.table.udp_listeners.append(listener)
        h.table.start(nursery)
        nursery.start_soon(listener.run)
        yield h
        await h.table.aclose()
        await listener.aclose()
        nursery.cancel_scope.cancel()


def unused_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    with trio.fail_after(timeout):
        while not predicate():
            await trio.sleep(0.01)


async def test_a_tcp_face_to_a_peer_that_is_down_is_added_at_once_and_destroy_stops_it(harness: Harness) -> None:
    uri = f"tcp://127.0.0.1:{unused_tcp_port()}"
    with trio.fail_after(1):
        face = await harness.table.open(uri, permanent=True)
    assert isinstance(face, PermanentFace) and face.id in harness.table and face in harness.up
    info = FaceManager(harness.table).info(face)
    assert info["permanent"] is True and info["state"] == "down" and info["persistent"] is True
    await wait_for(lambda: face.connect_failures >= 3)
    assert harness.down == []  # the owner never hears of a peer's absence
    assert await harness.table.open(uri, permanent=True) is face  # one permanent face per URI
    assert await harness.table.open(uri) is face  # `face create` of the same URI finds it
    assert await harness.table.destroy(face.id)
    await wait_for(lambda: face in harness.down)
    attempts = face.connect_failures
    await trio.sleep(0.5)
    assert face.connect_failures == attempts and face.id not in harness.table


async def test_udp_permanent_face_takes_over_the_peers_on_demand_face(harness: Harness) -> None:
    table = harness.table
    ours = table.udp_listeners[0]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer:
        peer.bind(("127.0.0.1", 0))
        peer.setblocking(False)
        peer_uri = f"udp://127.0.0.1:{peer.getsockname()[1]}"
        peer.sendto(b"first", ours.local_address)
        await wait_for(lambda: len(harness.received) == 1)
        on_demand = harness.received[0][0]
        assert isinstance(on_demand, UdpFace) and not on_demand.persistent
        face = await table.open(peer_uri, permanent=True)
        assert isinstance(face, PermanentFace)
        await wait_for(lambda: face.connected)
        assert on_demand.closed and on_demand in harness.down
        assert table.find(peer_uri) is face and len(table) == 1
        peer.sendto(b"second", ours.local_address)
        await wait_for(lambda: len(harness.received) == 2)
        assert harness.received[1] == (face, b"second")  # no new on-demand face: the permanent one's
        face.send(b"back")
        with trio.fail_after(2):
            await trio.lowlevel.wait_readable(peer)
        assert peer.recv(100) == b"back"
        assert FaceManager(table).info(face)["state"] == "up"
        assert await table.open(peer_uri) is face


async def test_a_permanent_udp_face_survives_idle_sweeps(harness: Harness) -> None:
    table = harness.table
    ours = table.udp_listeners[0]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as a, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as b:
        a.bind(("127.0.0.1", 0))
        b.bind(("127.0.0.1", 0))
        permanent = await table.open(f"udp://127.0.0.1:{a.getsockname()[1]}", permanent=True)
        b.sendto(b"hello", ours.local_address)  # an on-demand face, then silence from both
        await wait_for(lambda: len(table) == 2)
        on_demand = next(f for f in table if f is not permanent)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(table.close_idle, 0.1)
            await wait_for(lambda: on_demand.closed)  # the sweep runs ...
            await trio.sleep(0.5)  # ... and runs again
            nursery.cancel_scope.cancel()
        assert not permanent.closed and permanent.id in table and list(table) == [permanent]
