"""What a face tells the aggregator about its reliability (issue #30):
`Face.reliable_state`, on real sockets bound to 127.0.0.1.

A stream face delivers what it accepted while its one connection lasts; a
permanent TCP face numbers its connections, so a sub-request sent before a
reconnect is known lost; a UDP face may lose anything (None), and so may a
permanent face before its first connection (nothing known yet)."""

from __future__ import annotations

from collections.abc import Callable

import trio

from icnd.faces import Face, PermanentFace, ReconnectPolicy, connect_face, open_stream_listener, open_udp_listener

FAST = ReconnectPolicy(initial=0.05, maximum=0.2, connect_timeout=2.0, jitter=0.0)


async def wait_for(predicate: Callable[[], bool], what: str) -> None:
    with trio.move_on_after(5):
        while not predicate():
            await trio.sleep(0.005)
        return
    raise AssertionError(f"waited 5 s for {what}")


async def test_a_stream_face_is_one_reliable_connection() -> None:
    accepted: list[Face] = []
    listener = await open_stream_listener("tcp://127.0.0.1:0", on_new_face=accepted.append)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(listener.run)
        face = await connect_face(listener.local_uri)
        assert face.reliable_state() == (0, True)
        await wait_for(lambda: bool(accepted), "the accepted face")
        assert accepted[0].reliable_state() == (0, True)
        await face.aclose()
        assert face.reliable_state() == (0, False)
        await listener.aclose()
        nursery.cancel_scope.cancel()


async def test_a_permanent_tcp_face_numbers_its_connections() -> None:
    accepted: list[Face] = []
    listener = await open_stream_listener("tcp://127.0.0.1:0", on_new_face=accepted.append)
    uri = listener.local_uri
    face = PermanentFace(uri, lambda: connect_face(uri), policy=FAST)
    assert face.reliable_state() is None  # never connected: nothing known
    async with trio.open_nursery() as nursery:
        nursery.start_soon(listener.run)
        nursery.start_soon(face.run, lambda f, p: None)
        await wait_for(lambda: face.connected, "the first connection")
        assert face.reliable_state() == (1, True)
        await wait_for(lambda: bool(accepted), "the accepted face")
        await accepted[0].aclose()  # the peer drops the connection
        await wait_for(lambda: not face.connected or face.connects > 1, "the drop")
        state = face.reliable_state()
        assert state in ((1, False), (2, True))  # down, or already reconnected
        await wait_for(lambda: face.connected and face.connects == 2, "the reconnect")
        assert face.reliable_state() == (2, True)  # a new connection: what the first carried may be lost
        await face.aclose()
        await listener.aclose()
        nursery.cancel_scope.cancel()


async def test_a_udp_face_may_lose_packets() -> None:
    faces: list[Face] = []
    listener = await open_udp_listener("127.0.0.1", 0, on_new_face=faces.append)
    try:
        face = await listener.face_to("127.0.0.1", 9)
        assert face.reliable_state() is None
    finally:
        await listener.aclose()
