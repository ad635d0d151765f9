"""The forwarder's one timer mechanism.

Most timers are PIT expiries at ``now + lifetime`` with a handful of distinct
lifetimes (4 s by default), so their due times arrive in order.  Such a timer
goes at the tail of a FIFO *lane* (O(1) push and pop) when it is not earlier
than the lane's tail; anything else goes to a heap.  Popping merges the lane
heads and the heap head.  A lane belongs to one (lane key, callback) pair and
holds ``(due, arg)`` pairs: with an `arg` of plain values (the forwarder
passes a name's components) such a pair holds no reference the cyclic
garbage collector has to follow, so the collector stops scanning it after
its first pass.

Invariants:
- every lane is sorted by due time (a push that would break the order goes
  to the heap instead), so the earliest timer is always a lane head or the
  heap head;
- timers due at the same time fire in push order within a lane or the heap;
- ``pushed_min`` is the earliest due time pushed since the owner last reset
  it, so a shell can learn cheaply that its wake-up must move earlier;
- there is no cancellation: a callback finds out itself whether its timer
  still matters (the forwarder's look the name up in the PIT and compare
  the due time with the entry's ``timer_at``).
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from typing import Any, Callable

Callback = Callable[[Any, float, float], None]
# How late a shell may run due timers (`icnd.daemon.node.Node` wakes its timer task
# at the earliest deadline plus this): the timers due meanwhile are handled in
# one pass instead of one wake-up each.  PIT expiries, retransmissions and
# deadlines happen up to this late; the simulator keeps exact times.
TIMER_SLACK = 0.002
MAX_LANES = 8
_INF = float("inf")


class TimerQueue:
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Callback, Any]] = []
        self._lanes: dict[tuple[float, Callback], deque[tuple[float, Any]]] = {}
        self._seq = itertools.count()
        self.pushed_min = _INF

    def __len__(self) -> int:
        return len(self._heap) + sum(len(lane) for lane in self._lanes.values())

    def push(self, due: float, callback: Callback, arg: Any = None, lane: float | None = None) -> None:
        """Schedule ``callback(arg, due, now)``; `lane` groups timers that
        usually arrive in due order (e.g. the Interest lifetime)."""
        if due < self.pushed_min:
            self.pushed_min = due
        if lane is not None:
            key = (lane, callback)
            q = self._lanes.get(key)
            if q is None and len(self._lanes) < MAX_LANES:
                q = self._lanes[key] = deque()
            if q is not None and (not q or q[-1][0] <= due):
                q.append((due, arg))
                return
        heapq.heappush(self._heap, (due, next(self._seq), callback, arg))

    def next_due(self) -> float | None:
        best = self._heap[0][0] if self._heap else _INF
        for q in self._lanes.values():
            if q and q[0][0] < best:
                best = q[0][0]
        return None if best == _INF else best

    def run_due(self, now: float) -> None:
        """Fire every timer due at or before `now`, earliest first."""
        heap = self._heap
        lanes = [(q, key[1]) for key, q in self._lanes.items() if q]
        while True:
            best_q: deque[tuple[float, Any]] | None = None
            best_cb: Callback | None = None
            best = heap[0][0] if heap else _INF
            for q, cb in lanes:
                if q and q[0][0] < best:
                    best, best_q, best_cb = q[0][0], q, cb
            if best > now:
                return
            if best_q is None:
                due, _, callback, arg = heapq.heappop(heap)
            else:
                assert best_cb is not None  # set with best_q
                callback = best_cb
                # the common case: one lane, heap empty or later: drain it in a tight loop
                limit = min(now, heap[0][0]) if heap else now
                if len(lanes) == 1:
                    popleft = best_q.popleft
                    while best_q and best_q[0][0] <= limit:
                        due, arg = popleft()
                        callback(arg, due, now)
                    continue
                due, arg = best_q.popleft()
            callback(arg, due, now)
