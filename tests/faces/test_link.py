import math

import pytest
import trio
import trio.testing

from icnd.faces import Face, memory_face_pair
from icnd.faces.link import LinkModel, LinkParams, ShapedFace, ShapedSender

# --- LinkParams -------------------------------------------------------------------------------


def test_params_defaults_are_passthrough():
    p = LinkParams()
    assert p.passthrough
    assert (p.delay_ms, p.loss, p.bandwidth_mbps, p.queue_bytes, p.up) == (0, 0.0, 0, 1_000_000, True)
    assert not LinkParams(delay_ms=1).passthrough
    assert not LinkParams(up=False).passthrough


@pytest.mark.parametrize(
    "kwargs",
    [
        {"delay_ms": -1},
        {"loss": -0.1},
        {"loss": 1.5},
        {"loss": math.nan},
        {"bandwidth_mbps": -1},
        {"delay_ms": math.inf},
        {"queue_bytes": 0},
        {"queue_bytes": -5},
    ],
)
def test_params_validation_values(kwargs):
    with pytest.raises(ValueError):
        LinkParams(**kwargs)


@pytest.mark.parametrize("kwargs", [{"delay_ms": "5"}, {"queue_bytes": 1.5}, {"up": 1}, {"loss": True}])
def test_params_validation_types(kwargs):
    with pytest.raises(TypeError):
        LinkParams(**kwargs)


def test_params_edges_accepted():
    LinkParams(delay_ms=0, loss=0, bandwidth_mbps=0, queue_bytes=1)
    LinkParams(loss=1.0, delay_ms=0.5, bandwidth_mbps=0.001)


# --- LinkModel --------------------------------------------------------------------------------


def test_model_passthrough_fast_path():
    m = LinkModel(LinkParams(), seed=1)
    assert m.offer(100, 12.5) == 12.5
    assert m.offered == m.delivered == 1
    assert m.stats() == {"offered": 1, "delivered": 1, "dropped_loss": 0, "dropped_queue": 0, "dropped_down": 0}


def test_model_delay_exact():
    m = LinkModel(LinkParams(delay_ms=25), seed=0)
    assert m.offer(100, 1.0) == 1.0 + 0.025
    assert m.offer(1_000_000, 2.0) == 2.0 + 0.025  # no bandwidth limit: size does not matter


def test_model_loss_rate_and_reproducible():
    def run(seed: int) -> list[float | None]:
        m = LinkModel(LinkParams(loss=0.2), seed=seed)
        return [m.offer(100, i * 0.001) for i in range(20_000)]

    a, b, c = run(42), run(42), run(7)
    assert a == b
    assert a != c
    lost = sum(x is None for x in a)
    assert abs(lost / len(a) - 0.2) < 0.015
    m = LinkModel(LinkParams(loss=0.2), seed=42)
    for i in range(20_000):
        m.offer(100, i * 0.001)
    assert m.dropped_loss == lost and m.delivered == 20_000 - lost and m.offered == 20_000


def test_model_loss_extremes():
    m = LinkModel(LinkParams(loss=1.0), seed=3)
    assert all(m.offer(10, 0.0) is None for _ in range(100))
    assert m.dropped_loss == 100
    m = LinkModel(LinkParams(loss=0.0, delay_ms=1), seed=3)
    assert all(m.offer(10, 0.0) is not None for _ in range(100))


def test_model_bandwidth_serialization():
    # 1 Mbps, 1250 bytes = 10 000 bits = 10 ms each; 10 packets → last one done at 100 ms.
    m = LinkModel(LinkParams(bandwidth_mbps=1), seed=0)
    times = [m.offer(1250, 0.0) for _ in range(10)]
    assert times == pytest.approx([0.01 * (i + 1) for i in range(10)])
    assert times[-1] == 0.1  # bits are summed per busy period: no float drift
    m = LinkModel(LinkParams(bandwidth_mbps=1, delay_ms=5), seed=0)
    times = [m.offer(1250, 0.0) for _ in range(10)]
    assert times[-1] == pytest.approx(0.105)
    assert m.dropped_queue == 0


def test_model_bandwidth_idle_gap_restarts_queue():
    m = LinkModel(LinkParams(bandwidth_mbps=1), seed=0)
    assert m.offer(1250, 0.0) == pytest.approx(0.01)
    assert m.offer(1250, 0.005) == pytest.approx(0.02)  # queued behind the first
    assert m.backlog_bytes(0.005) == pytest.approx(1250 + 625)
    assert m.offer(1250, 1.0) == pytest.approx(1.01)  # idle again: starts at once
    assert m.backlog_bytes(2.0) == 0


def test_model_queue_tail_drop():
    m = LinkModel(LinkParams(bandwidth_mbps=1, queue_bytes=5000), seed=0)
    results = [m.offer(1250, 0.0) for _ in range(10)]
    accepted = [r for r in results if r is not None]
    assert len(accepted) == 4  # 4 x 1250 = 5000 waiting: exactly full
    assert results[4:] == [None] * 6  # tail drop
    assert m.dropped_queue == 6 and m.delivered == 4 and m.offered == 10
    # 10 ms later one packet has left the queue: room for exactly one more.
    assert m.offer(1250, 0.01) == pytest.approx(0.05)
    assert m.offer(1250, 0.01) is None
    assert m.dropped_queue == 7


def test_model_idle_link_accepts_packet_larger_than_queue():
    m = LinkModel(LinkParams(bandwidth_mbps=8, queue_bytes=1000), seed=0)
    assert m.offer(2000, 0.0) == pytest.approx(0.002)
    assert m.offer(10, 0.0) is None  # but nothing may queue behind it


def test_model_down_drops_all_and_heal_restores():
    m = LinkModel(LinkParams(delay_ms=10), seed=0)
    assert m.offer(100, 0.0) == pytest.approx(0.01)
    gen = m.generation
    m.set_params(LinkParams(delay_ms=10, up=False))
    assert m.generation == gen + 1
    assert all(m.offer(100, 1.0) is None for _ in range(50))
    assert m.dropped_down == 50
    m.set_params(LinkParams(delay_ms=10, up=True))
    assert m.generation == gen + 1  # healing is not a cut
    assert m.offer(100, 2.0) == pytest.approx(2.01)
    assert m.offered == 52 and m.delivered == 2


def test_model_down_draws_no_randomness():
    # A cut does not consume random draws: the loss pattern after healing is the same.
    a = LinkModel(LinkParams(loss=0.5), seed=9)
    b = LinkModel(LinkParams(loss=0.5), seed=9)
    b.set_params(LinkParams(loss=0.5, up=False))
    for _ in range(10):
        b.offer(10, 0.0)
    b.set_params(LinkParams(loss=0.5))
    assert [a.offer(10, 0.0) for _ in range(200)] == [b.offer(10, 0.0) for _ in range(200)]


def test_model_cut_flushes_queue():
    m = LinkModel(LinkParams(bandwidth_mbps=1, queue_bytes=2500), seed=0)
    assert m.offer(1250, 0.0) is not None
    assert m.offer(1250, 0.0) is not None
    m.set_params(LinkParams(bandwidth_mbps=1, queue_bytes=2500, up=False))
    m.set_params(LinkParams(bandwidth_mbps=1, queue_bytes=2500))
    assert m.backlog_bytes(0.0) == 0
    assert m.offer(1250, 0.0) == pytest.approx(0.01)


def test_model_params_back_to_zero_is_passthrough():
    m = LinkModel(LinkParams(delay_ms=50, loss=0.3, bandwidth_mbps=1), seed=5)
    for i in range(20):
        m.offer(1000, 0.0)
    m.set_params(LinkParams())
    assert m.offer(1000, 0.0) == 0.0
    assert m.offer(10**6, 3.0) == 3.0


def test_model_bandwidth_change_keeps_queued_timing():
    m = LinkModel(LinkParams(bandwidth_mbps=1), seed=0)
    assert m.offer(1250, 0.0) == pytest.approx(0.01)
    m.set_params(LinkParams(bandwidth_mbps=10))
    assert m.offer(1250, 0.0) == pytest.approx(0.011)  # after the first, at the new rate


def test_model_deterministic_sequence():
    def trace(seed: int) -> list[float | None]:
        m = LinkModel(LinkParams(delay_ms=3, loss=0.1, bandwidth_mbps=2, queue_bytes=8000), seed=seed)
        return [m.offer(500 + (i % 7) * 100, i * 0.0005) for i in range(2000)]

    assert trace(11) == trace(11)


def test_model_rejects_non_params():
    m = LinkModel(LinkParams(), seed=0)
    with pytest.raises(TypeError):
        m.set_params({"delay_ms": 1})  # type: ignore[arg-type]  # a wrong type on purpose: refused


# --- ShapedSender -----------------------------------------------------------------------------


async def test_sender_delay_exact(autojump_clock):
    got: list[tuple[float, bytes]] = []
    sender = ShapedSender(LinkModel(LinkParams(delay_ms=10), seed=0), lambda w: got.append((trio.current_time(), w)))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sender.run)
        t0 = trio.current_time()
        sender.send(b"a")
        await trio.sleep(0.003)
        sender.send(b"b")
        await trio.sleep(1)
        nursery.cancel_scope.cancel()
    assert got == [(t0 + 0.01, b"a"), (t0 + 0.003 + 0.01, b"b")]


async def test_sender_passthrough_delivers_immediately(autojump_clock):
    got: list[bytes] = []
    sender = ShapedSender(LinkModel(LinkParams(), seed=0), got.append)
    sender.send(b"x")  # no run() needed
    assert got == [b"x"] and sender.pending == 0


async def test_sender_order_preserved_for_equal_times(autojump_clock):
    got: list[bytes] = []
    sender = ShapedSender(LinkModel(LinkParams(delay_ms=5), seed=0), got.append)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sender.run)
        for i in range(200):
            sender.send(b"%d" % i)  # same now → same due time
        assert sender.pending == 200
        await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    assert got == [b"%d" % i for i in range(200)]


async def test_sender_wakes_early_for_sooner_packet(autojump_clock):
    got: list[tuple[float, bytes]] = []
    model = LinkModel(LinkParams(delay_ms=1000), seed=0)
    sender = ShapedSender(model, lambda w: got.append((trio.current_time(), w)))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sender.run)
        t0 = trio.current_time()
        sender.send(b"slow")  # due at t0 + 1 s
        await trio.sleep(0.1)  # run() is now asleep until t0 + 1 s
        model.set_params(LinkParams(delay_ms=10))
        sender.send(b"fast")  # due at t0 + 0.11 s: must wake run() early
        await trio.sleep(2)
        nursery.cancel_scope.cancel()
    assert got == [(t0 + 0.1 + 0.01, b"fast"), (t0 + 1.0, b"slow")]


async def test_sender_immediate_packet_after_overdue_ones(autojump_clock):
    # Packets due before an immediate one are delivered first even if run() is not running.
    got: list[bytes] = []
    model = LinkModel(LinkParams(delay_ms=10), seed=0)
    sender = ShapedSender(model, got.append)
    sender.send(b"1")
    sender.send(b"2")
    await trio.sleep(0.05)
    assert got == []
    model.set_params(LinkParams())
    sender.send(b"3")
    assert got == [b"1", b"2", b"3"]


async def test_sender_bandwidth_last_delivered_at_100ms(autojump_clock):
    got: list[float] = []
    model = LinkModel(LinkParams(bandwidth_mbps=1, delay_ms=5), seed=0)
    sender = ShapedSender(model, lambda w: got.append(trio.current_time()))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sender.run)
        t0 = trio.current_time()
        for _ in range(10):
            sender.send(b"x" * 1250)
        await trio.sleep(1)
        nursery.cancel_scope.cancel()
    assert len(got) == 10
    assert [t - t0 for t in got] == pytest.approx([0.005 + 0.01 * (i + 1) for i in range(10)])


async def test_sender_cut_drops_in_flight_and_heal_restores(autojump_clock):
    got: list[bytes] = []
    model = LinkModel(LinkParams(delay_ms=50), seed=0)
    sender = ShapedSender(model, got.append)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sender.run)
        sender.send(b"lost-in-flight")
        await trio.sleep(0.01)
        model.set_params(LinkParams(delay_ms=50, up=False))
        sender.send(b"dropped-at-offer")
        await trio.sleep(0.01)
        model.set_params(LinkParams(delay_ms=50))  # healed before the first packet was due
        sender.send(b"after-heal")
        await trio.sleep(1)
        nursery.cancel_scope.cancel()
    assert got == [b"after-heal"]
    assert sender.dropped_in_flight == 1
    assert model.dropped_down == 1 and model.delivered == 2


async def test_sender_run_twice_is_an_error():
    sender = ShapedSender(LinkModel(LinkParams(), seed=0), lambda w: None)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sender.run)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(RuntimeError):
            await sender.run()
        nursery.cancel_scope.cancel()


async def test_sender_idle_run_sleeps_forever(autojump_clock):
    sender = ShapedSender(LinkModel(LinkParams(delay_ms=1), seed=0), lambda w: None)
    with trio.move_on_after(100) as scope:
        await sender.run()
    assert scope.cancelled_caught


# --- ShapedFace -------------------------------------------------------------------------------


async def test_shaped_face_over_memory_pair_delays(autojump_clock):
    a, b = memory_face_pair()
    sa = ShapedFace(a, LinkModel(LinkParams(delay_ms=20), seed=0))
    got_b: list[tuple[float, bytes]] = []
    got_a: list[tuple[Face, float, bytes]] = []

    def on_b(face: Face, wire: bytes) -> None:
        got_b.append((trio.current_time(), wire))
        face.send(wire.upper())  # b's direction is not shaped

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sa.run, lambda f, w: got_a.append((f, trio.current_time(), w)))
        nursery.start_soon(b.run, on_b)
        await trio.sleep(0)
        t0 = trio.current_time()
        sa.send(b"hello")
        sa.send(b"world")
        await trio.sleep(0.019)
        assert got_b == []
        await trio.sleep(0.002)
        assert [w for _, w in got_b] == [b"hello", b"world"]
        assert got_b[0][0] == pytest.approx(t0 + 0.02)
        await trio.sleep(0.01)
        await sa.aclose()
    assert [w for _, _, w in got_a] == [b"HELLO", b"WORLD"]
    assert all(f is sa for f, _, _ in got_a)  # on_receive sees the wrapper
    assert got_a[0][1] == pytest.approx(t0 + 0.02)  # the echo came back without extra delay
    assert sa.closed and b.closed and sa.close_reason == a.close_reason
    assert sa.counters is a.counters and a.counters.out_packets == 2


async def test_shaped_face_delegates_identity():
    a, b = memory_face_pair(local=True)
    sa = ShapedFace(a, LinkModel(LinkParams(), seed=0))
    sa.id = 7
    assert a.id == 7 and sa.id == 7
    assert sa.remote_uri == a.remote_uri and sa.local_uri == a.local_uri
    assert sa.local and sa.persistent
    sa.persistent = False
    assert not a.persistent
    assert not sa.closed and sa.close_reason is None
    assert "ShapedFace id=7" in repr(sa)
    await sa.aclose()
    assert a.closed and sa.closed and sa.close_reason == "closed locally"


async def test_shaped_face_set_link_cut_heal_and_passthrough(autojump_clock):
    a, b = memory_face_pair()
    sa = ShapedFace(a, LinkModel(LinkParams(delay_ms=10), seed=0))
    got: list[bytes] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sa.run, lambda f, w: None)
        nursery.start_soon(b.run, lambda f, w: got.append(w))
        sa.send(b"1")
        await trio.sleep(0.05)
        sa.set_link(LinkParams(up=False))
        assert sa.link.up is False
        for _ in range(5):
            sa.send(b"cut")
        await trio.sleep(0.05)
        sa.set_link(LinkParams())  # healed, pass-through
        sa.send(b"2")
        assert a.counters.out_packets == 2  # handed to the inner face at once
        await trio.sleep(0.01)
        await sa.aclose()
    assert got == [b"1", b"2"]
    stats = sa.link_stats()
    assert stats["dropped_down"] == 5 and stats["offered"] == 7 and stats["delivered"] == 2
    assert stats["pending"] == 0


async def test_shaped_face_run_returns_when_peer_closes_and_discards_pending(autojump_clock):
    a, b = memory_face_pair()
    sa = ShapedFace(a, LinkModel(LinkParams(delay_ms=100), seed=0))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(b.run, lambda f, w: None)

        async def close_peer_soon() -> None:
            await trio.sleep(0.01)
            await b.aclose()

        nursery.start_soon(close_peer_soon)
        sa.send(b"never")
        assert sa.sender.pending == 1
        with trio.fail_after(1):
            await sa.run(lambda f, w: None)  # returns when the inner face closes
    assert sa.closed and sa.sender.pending == 0
    sa.send(b"late")  # closed: a send drop on the inner face
    assert a.counters.send_drops == 1 and a.counters.out_packets == 0


async def test_shaped_face_loss_over_memory_pair_is_reproducible(autojump_clock):
    async def run_once(seed: int) -> list[bytes]:
        a, b = memory_face_pair()
        sa = ShapedFace(a, LinkModel(LinkParams(delay_ms=1, loss=0.3), seed=seed))
        got: list[bytes] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sa.run, lambda f, w: None)
            nursery.start_soon(b.run, lambda f, w: got.append(w))
            for i in range(500):
                sa.send(b"%d" % i)
            await trio.sleep(0.1)
            await sa.aclose()
        assert len(got) == sa.model.delivered == 500 - sa.model.dropped_loss
        return got

    first = await run_once(123)
    assert first == await run_once(123)
    assert 500 * 0.6 < len(first) < 500 * 0.8


async def test_mock_clock_passed_explicitly():
    # The driver works with a MockClock given to trio.run directly, too.
    def main() -> list[float]:
        got: list[float] = []

        async def inner() -> None:
            sender = ShapedSender(LinkModel(LinkParams(delay_ms=250), seed=0), lambda w: got.append(trio.current_time()))
            async with trio.open_nursery() as nursery:
                nursery.start_soon(sender.run)
                sender.send(b"x")
                await trio.sleep(1)
                nursery.cancel_scope.cancel()

        trio.run(inner, clock=trio.testing.MockClock(autojump_threshold=0))
        return got

    got = await trio.to_thread.run_sync(main)
    assert got == [0.25]


def test_a_shaped_face_hands_its_link_services_choice_to_the_face_it_wraps() -> None:
    """Issue #28: the link service sets ``hand_over`` on the face the node knows;
    the emulated link's wrapper passes it to the transport that receives."""
    from icnd.faces import NativeLinkService

    a, _ = memory_face_pair()
    shaped = ShapedFace(a, LinkModel(LinkParams(), seed=0))
    NativeLinkService(shaped)
    assert a.hand_over is not None and shaped.hand_over is a.hand_over
