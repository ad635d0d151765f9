"""The forwarder's timer queue: lanes for in-order timers, a heap for the rest."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from icnd.core.timers import MAX_LANES, TimerQueue


def test_lane_and_heap_timers_fire_in_due_order_once() -> None:
    q = TimerQueue()
    fired: list[tuple[str, float, float]] = []

    def cb(arg: str, due: float, now: float) -> None:
        fired.append((arg, due, now))

    q.push(4.0, cb, "lane-a", lane=4.0)
    q.push(5.0, cb, "lane-b", lane=4.0)
    q.push(4.5, cb, "early-in-lane-goes-to-heap", lane=4.0)  # earlier than the lane's tail
    q.push(1.0, cb, "heap")
    assert q.next_due() == 1.0 and len(q) == 4
    q.run_due(4.2)
    assert [f[0] for f in fired] == ["heap", "lane-a"]
    assert all(now == 4.2 for _, _, now in fired)
    q.run_due(10.0)
    assert [f[0] for f in fired] == ["heap", "lane-a", "early-in-lane-goes-to-heap", "lane-b"]
    assert q.next_due() is None and len(q) == 0


def test_pushed_min_reports_the_earliest_push() -> None:
    q = TimerQueue()
    q.push(3.0, lambda *a: None, None, lane=1.0)
    q.push(2.0, lambda *a: None, None)
    assert q.pushed_min == 2.0


def test_a_lane_belongs_to_one_callback() -> None:
    q = TimerQueue()
    got: list[str] = []
    q.push(1.0, lambda arg, due, now: got.append("x" + arg), "1", lane=4.0)
    q.push(2.0, lambda arg, due, now: got.append("y" + arg), "2", lane=4.0)
    q.run_due(5.0)
    assert got == ["x1", "y2"]


@settings(max_examples=200, deadline=None)
@given(
    pushes=st.lists(
        st.tuples(st.floats(0, 100, allow_nan=False), st.sampled_from([None, 1.0, 2.0, *range(3, 3 + MAX_LANES)])),
        max_size=60,
    ),
    checks=st.lists(st.floats(0, 120, allow_nan=False), max_size=8),
)
def test_every_timer_fires_once_not_early_in_due_order(pushes, checks) -> None:
    q = TimerQueue()
    fired: list[tuple[float, int, float]] = []
    def one(arg: int, d: float, now: float) -> None:
        fired.append((d, arg, now))

    def other(arg: int, d: float, now: float) -> None:
        fired.append((d, arg, now))

    for n, (due, lane) in enumerate(pushes):
        q.push(due, other if n % 3 == 0 else one, n, lane=lane)
    for now in sorted(checks) + [200.0]:
        before = len(fired)
        q.run_due(now)
        assert all(d <= now for d, _, _ in fired[before:])
        nxt = q.next_due()
        assert nxt is None or nxt > now
    assert sorted(arg for _, arg, _ in fired) == list(range(len(pushes)))
    dues = [d for d, _, _ in fired]
    assert dues == sorted(dues)
    assert len(q) == 0
