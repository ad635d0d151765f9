import trio

from icnd.faces import Face, memory_face_pair


async def test_round_trip_and_counters():
    a, b = memory_face_pair()
    got_a: list[bytes] = []
    got_b: list[bytes] = []

    def on_b(face: Face, packet: bytes) -> None:
        got_b.append(packet)
        face.send(packet[::-1])  # echo from inside the callback

    with trio.fail_after(2):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(a.run, lambda face, p: got_a.append(p))
            nursery.start_soon(b.run, on_b)
            for i in range(1000):
                a.send(b"p%d" % i)
            while len(got_a) < 1000:
                await trio.sleep(0.001)
            await a.aclose()
    assert got_b == [b"p%d" % i for i in range(1000)]
    assert got_a == [(b"p%d" % i)[::-1] for i in range(1000)]
    assert a.counters.out_packets == b.counters.in_packets == 1000
    assert a.counters.out_bytes == b.counters.in_bytes == sum(len(b"p%d" % i) for i in range(1000))
    assert a.closed and b.closed and b.close_reason == "peer closed"
    assert not a.local and a.persistent
    assert a.remote_uri == b.local_uri and b.remote_uri == a.local_uri


async def test_local_flag():
    a, b = memory_face_pair(local=True)
    assert a.local and b.local


async def test_bounded_queue_drops_when_peer_never_reads():
    a, b = memory_face_pair(max_queue_bytes=1000, max_queue_packets=5)
    for _ in range(10):
        a.send(b"x" * 100)
    assert a.counters.out_packets == 5 and a.counters.send_drops == 5
    a2, _ = memory_face_pair(max_queue_bytes=1000)
    for _ in range(20):
        a2.send(b"x" * 100)
    assert a2.counters.out_packets == 10 and a2.counters.send_drops == 10


async def test_packets_sent_before_run_are_delivered():
    a, b = memory_face_pair()
    a.send(b"early")
    got: list[bytes] = []
    with trio.fail_after(2):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(b.run, lambda face, p: got.append(p))
            while not got:
                await trio.sleep(0.001)
            await b.aclose()
    assert got == [b"early"]


async def test_aclose_ends_run_and_send_after_close_drops():
    a, b = memory_face_pair()
    with trio.fail_after(2):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(a.run, lambda face, p: None)
            nursery.start_soon(b.run, lambda face, p: None)
            await trio.sleep(0)
            await b.aclose()
    assert a.closed and b.closed
    a.send(b"late")
    assert a.counters.send_drops == 1
