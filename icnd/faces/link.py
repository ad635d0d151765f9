"""User-space link emulation: delay, loss, bandwidth, queue and cuts, in the face layer.

The kernel here has no netem, so impairments are emulated on the sending side
of a face.  Three layers:

- `LinkParams` / `LinkModel`: a pure, deterministic model (no trio, no clock
  reads).  ``model.offer(size, now)`` says when a packet of ``size`` bytes
  offered at ``now`` reaches the far end, or ``None`` if the link drops it.
- `ShapedSender`: the trio driver.  ``send(wire)`` never blocks: it asks the
  model and either delivers at once or pushes the packet onto a heap; one
  task (``run``) sleeps until the earliest due packet and delivers everything
  due.  One task per link, never a task per packet.
- `ShapedFace`: a `Face` wrapper whose outgoing traffic goes through a
  `ShapedSender` into the inner face.  Only the sending direction is shaped:
  each side of a link shapes its own outgoing traffic.

Model semantics, in order, for each offered packet:

1. link down (``up=False``) → drop (``dropped_down``);
2. random loss with probability ``loss`` (one draw of ``random.Random(seed)``
   per packet offered while ``0 < loss``) → drop (``dropped_loss``);
3. bandwidth (``bandwidth_mbps > 0``): a FIFO serialization queue.  The
   packet starts transmitting at ``max(now, busy_until)`` and takes
   ``size * 8 / (bandwidth_mbps * 1e6)`` seconds.  If the link is busy and
   the bytes still waiting at ``now`` (including the untransmitted part of the
   packet on the wire) plus ``size`` would exceed ``queue_bytes`` → tail drop
   (``dropped_queue``).  An idle link always accepts one packet, even one
   larger than ``queue_bytes`` (the transmitter holds it), so big segments
   are never starved by a small queue;
4. delivery time = transmit end + ``delay_ms / 1000``.

With everything at zero and the link up the model is a pass-through:
``offer`` returns ``now`` on a fast path.

Cutting a link (``up`` going from True to False) also flushes the
serialization queue and bumps `LinkModel.generation`: packets already in
flight on a cut link are lost.  `ShapedSender` drops them at their due time
(``dropped_in_flight``), even if the link has healed by then.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable
from dataclasses import dataclass

import trio

from icnd.faces.base import Face, FaceCounters, OnReceive

# Tolerance, in bytes, for queue-occupancy comparisons: occupancy is derived
# from float times, so an exactly-full queue must not be judged over-full by
# rounding error (times can be ~1e5 s on trio's clock).
_QUEUE_EPS_BYTES = 0.5


@dataclass(frozen=True, slots=True)
class LinkParams:
    """Impairments of one direction of a link.  All zero (and up) = pass-through.

    ``delay_ms``: one-way propagation delay; ``loss``: drop probability per
    packet; ``bandwidth_mbps``: serialization rate in 10^6 bit/s (0 = unlimited);
    ``queue_bytes``: bound on bytes waiting for serialization (used only when
    bandwidth is limited); ``up``: False cuts the link (every packet dropped).
    """

    delay_ms: float = 0
    loss: float = 0.0
    bandwidth_mbps: float = 0
    queue_bytes: int = 1_000_000
    up: bool = True

    def __post_init__(self) -> None:
        for field_name in ("delay_ms", "loss", "bandwidth_mbps"):
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{field_name} must be a number, not {type(value).__name__}")
            if not math.isfinite(value):
                raise ValueError(f"{field_name} must be finite, got {value!r}")
        if self.delay_ms < 0:
            raise ValueError(f"delay_ms must be >= 0, got {self.delay_ms!r}")
        if not 0.0 <= self.loss <= 1.0:
            raise ValueError(f"loss must be in [0, 1], got {self.loss!r}")
        if self.bandwidth_mbps < 0:
            raise ValueError(f"bandwidth_mbps must be >= 0 (0 = unlimited), got {self.bandwidth_mbps!r}")
        if isinstance(self.queue_bytes, bool) or not isinstance(self.queue_bytes, int):
            raise TypeError(f"queue_bytes must be an int, not {type(self.queue_bytes).__name__}")
        if self.queue_bytes <= 0:
            raise ValueError(f"queue_bytes must be > 0, got {self.queue_bytes!r}")
        if not isinstance(self.up, bool):
            raise TypeError(f"up must be a bool, not {type(self.up).__name__}")

    @property
    def passthrough(self) -> bool:
        """True when the link neither delays, loses, limits nor is cut."""
        return self.up and self.delay_ms == 0 and self.loss == 0 and self.bandwidth_mbps == 0


class LinkModel:
    """Deterministic model of one link direction; see the module docstring.

    Pure: it never reads a clock; callers pass ``now`` (seconds, monotonic).
    Same seed + same sequence of ``offer``/``set_params`` calls → same answers.
    """

    __slots__ = (
        "params",
        "seed",
        "generation",
        "offered",
        "delivered",
        "dropped_loss",
        "dropped_queue",
        "dropped_down",
        "_rng",
        "_passthrough",
        "_delay_s",
        "_rate_bps",
        "_busy_until",
        "_period_start",
        "_period_bits",
    )

    def __init__(self, params: LinkParams | None = None, seed: int = 0) -> None:
        self.seed = seed
        self._rng = random.Random(seed)
        self.generation = 0  # bumped each time the link is cut
        self.offered = 0
        self.delivered = 0  # accepted for delivery (offer returned a time)
        self.dropped_loss = 0
        self.dropped_queue = 0
        self.dropped_down = 0
        # Serialization queue: a busy period started at _period_start and has
        # carried _period_bits so far; summing bits (not adding per-packet
        # durations) keeps times exact, e.g. 10 x 10 ms = 0.1 s on the dot.
        self._busy_until = -math.inf
        self._period_start = -math.inf
        self._period_bits = 0
        self.params = LinkParams()
        self._apply(params if params is not None else LinkParams())

    # --- configuration ----------------------------------------------------------------------
    def set_params(self, params: LinkParams) -> None:
        """Change the link at runtime (cut: ``up=False``; heal: ``up=True``).

        Packets already accepted keep their delivery times, except on a cut:
        the queue is flushed and `generation` goes up (in-flight packets lost).
        A bandwidth change starts a new busy period at the current end of the
        queue, so bytes already queued keep their old timing.
        """
        self._apply(params)

    def _apply(self, params: LinkParams) -> None:
        if not isinstance(params, LinkParams):
            raise TypeError(f"expected LinkParams, got {type(params).__name__}")
        old = self.params
        if old.up and not params.up:
            self.generation += 1
            self._busy_until = -math.inf
            self._period_start = -math.inf
            self._period_bits = 0
        elif params.bandwidth_mbps != old.bandwidth_mbps and self._period_bits:
            self._period_start = self._busy_until
            self._period_bits = 0
        self.params = params
        self._passthrough = params.passthrough
        self._delay_s = params.delay_ms / 1000.0
        self._rate_bps = params.bandwidth_mbps * 1e6

    # --- the model --------------------------------------------------------------------------
    def offer(self, size: int, now: float) -> float | None:
        """Delivery time at the far end of a ``size``-byte packet offered at ``now``, or None if dropped."""
        self.offered += 1
        if self._passthrough:
            self.delivered += 1
            return now
        params = self.params
        if not params.up:
            self.dropped_down += 1
            return None
        if params.loss and self._rng.random() < params.loss:
            self.dropped_loss += 1
            return None
        rate = self._rate_bps
        if rate:
            if now >= self._busy_until:  # idle: a new busy period starts now
                self._period_start = now
                self._period_bits = 0
            else:
                waiting = (self._busy_until - now) * rate / 8.0
                if waiting > _QUEUE_EPS_BYTES and waiting + size > params.queue_bytes + _QUEUE_EPS_BYTES:
                    self.dropped_queue += 1
                    return None
            self._period_bits += size * 8
            self._busy_until = self._period_start + self._period_bits / rate
            sent_at = self._busy_until
        else:
            sent_at = now
        self.delivered += 1
        return sent_at + self._delay_s

    def backlog_bytes(self, now: float) -> float:
        """Bytes still waiting for serialization at ``now`` (0 when unlimited or idle)."""
        if not self._rate_bps or now >= self._busy_until:
            return 0.0
        return (self._busy_until - now) * self._rate_bps / 8.0

    def busy_until(self) -> float:
        """When the serialization queue drains (-inf if it never was busy)."""
        return self._busy_until

    def stats(self) -> dict[str, int]:
        return {
            "offered": self.offered,
            "delivered": self.delivered,
            "dropped_loss": self.dropped_loss,
            "dropped_queue": self.dropped_queue,
            "dropped_down": self.dropped_down,
        }

    def __repr__(self) -> str:
        return f"<LinkModel {self.params} seed={self.seed} {self.stats()}>"


class ShapedSender:
    """Trio driver of a `LinkModel`: non-blocking ``send`` + one delivery task (``run``).

    ``deliver`` is called synchronously with each packet at its delivery time
    (it must not block, e.g. an inner face's ``send``).  Packets are delivered
    in delivery-time order, ties in the order they were sent.  Packets sent
    while ``run`` is not running wait in the heap; those already due are
    delivered when ``run`` starts (or by the next immediate ``send``).
    """

    def __init__(self, model: LinkModel, deliver: Callable[[bytes], None]) -> None:
        self.model = model
        self._deliver = deliver
        self._heap: list[tuple[float, int, bytes, int]] = []  # (due, seq, wire, generation)
        self._seq = 0
        self._scope: trio.CancelScope | None = None
        self._running = False
        self.dropped_in_flight = 0  # accepted, then lost because the link was cut before delivery

    @property
    def pending(self) -> int:
        """Packets accepted by the model and not yet delivered."""
        return len(self._heap)

    def send(self, wire: bytes) -> None:
        """Offer ``wire`` to the link; never blocks (must run inside trio for the clock)."""
        now = trio.current_time()
        due = self.model.offer(len(wire), now)
        if due is None:
            return
        if due <= now:
            if self._heap and self._heap[0][0] <= now:
                self._deliver_due(now)  # earlier-due packets first
            self._deliver(wire)
            return
        self._seq += 1
        heapq.heappush(self._heap, (due, self._seq, wire, self.model.generation))
        scope = self._scope
        if scope is not None and due < scope.deadline:
            scope.deadline = due  # wake run() early

    def clear(self) -> int:
        """Discard every pending packet; returns how many were discarded."""
        n = len(self._heap)
        self._heap.clear()
        return n

    def _deliver_due(self, now: float) -> None:
        heap = self._heap
        generation = self.model.generation
        deliver = self._deliver
        while heap and heap[0][0] <= now:
            _, _, wire, gen = heapq.heappop(heap)
            if gen != generation:
                self.dropped_in_flight += 1
                continue
            deliver(wire)

    async def run(self) -> None:
        """Deliver packets at their due times, forever (cancel to stop)."""
        if self._running:
            raise RuntimeError("ShapedSender.run is already running")
        self._running = True
        try:
            while True:
                self._deliver_due(trio.current_time())
                deadline = self._heap[0][0] if self._heap else math.inf
                with trio.CancelScope(deadline=deadline) as scope:
                    self._scope = scope
                    await trio.sleep_forever()
                self._scope = None
        finally:
            self._scope = None
            self._running = False


class ShapedFace(Face):
    """A face whose outgoing packets cross an emulated link before reaching ``inner``.

    Identity, flags, counters and state delegate to ``inner`` (its counters
    count what the link delivered to it; link drops are in `model`'s
    counters and ``sender.dropped_in_flight``).  ``on_receive`` is called with
    this wrapper as the face.  Pending packets are discarded when it closes.
    """

    def __init__(self, inner: Face, model: LinkModel) -> None:
        # Deliberately no Face.__init__: every attribute delegates to inner.
        self.inner = inner
        self.model = model
        self.sender = ShapedSender(model, inner.send)

    # --- delegated identity and state (reads and writes go to inner) -------------------
    @property
    def id(self) -> int:
        return self.inner.id

    @id.setter
    def id(self, value: int) -> None:
        self.inner.id = value

    @property
    def hand_over(self) -> Callable[[memoryview], bool] | None:
        return self.inner.hand_over

    @hand_over.setter
    def hand_over(self, value: Callable[[memoryview], bool] | None) -> None:
        self.inner.hand_over = value

    @property
    def remote_uri(self) -> str:
        return self.inner.remote_uri

    @remote_uri.setter
    def remote_uri(self, value: str) -> None:
        self.inner.remote_uri = value

    @property
    def local_uri(self) -> str:
        return self.inner.local_uri

    @local_uri.setter
    def local_uri(self, value: str) -> None:
        self.inner.local_uri = value

    @property
    def local(self) -> bool:
        return self.inner.local

    @local.setter
    def local(self, value: bool) -> None:
        self.inner.local = value

    @property
    def persistent(self) -> bool:
        return self.inner.persistent

    @persistent.setter
    def persistent(self, value: bool) -> None:
        self.inner.persistent = value

    @property
    def counters(self) -> FaceCounters:
        return self.inner.counters

    @counters.setter
    def counters(self, value: FaceCounters) -> None:
        self.inner.counters = value

    @property
    def closed(self) -> bool:
        return self.inner.closed

    @closed.setter
    def closed(self, value: bool) -> None:
        self.inner.closed = value

    @property
    def close_reason(self) -> str | None:
        return self.inner.close_reason

    @close_reason.setter
    def close_reason(self, value: str | None) -> None:
        self.inner.close_reason = value

    # --- link control -----------------------------------------------------------------------
    @property
    def link(self) -> LinkParams:
        return self.model.params

    def set_link(self, params: LinkParams) -> None:
        """Change the outgoing link at runtime (cut, heal, new delay/loss/bandwidth)."""
        self.model.set_params(params)

    def link_stats(self) -> dict[str, int]:
        return {**self.model.stats(), "dropped_in_flight": self.sender.dropped_in_flight, "pending": self.sender.pending}

    # --- the face contract ------------------------------------------------------------------
    def send(self, wire: bytes) -> None:
        if self.inner.closed:
            self.inner.send(wire)  # counted as a send drop by the inner face
            return
        self.sender.send(wire)

    async def run(self, on_receive: OnReceive) -> None:
        def receive(_inner: Face, wire: bytes) -> None:
            on_receive(self, wire)

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self.sender.run)
                await self.inner.run(receive)
                nursery.cancel_scope.cancel()
        finally:
            self.sender.clear()

    async def aclose(self) -> None:
        self.sender.clear()
        await self.inner.aclose()
