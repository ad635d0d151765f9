"""In-memory face pairs: the same contract as socket faces, without sockets.

For tests and in-process simulation.  ``a.send(p)`` appends ``p`` to ``b``'s
inbox (bounded in bytes and in packets; when full the packet is dropped and
counted in ``a``'s ``send_drops``); ``b.run`` drains the inbox, one batch per
wakeup.  Closing either face closes both at once, discarding what is queued.
"""

from __future__ import annotations

import itertools
from collections import deque

import trio

from icnd.faces.base import Face, OnReceive

DEFAULT_MAX_QUEUE_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_QUEUE_PACKETS = 65536

_pair_ids = itertools.count(1)


class MemoryFace(Face):
    """One end of an in-memory pair; see `memory_face_pair`."""

    def __init__(
        self, *, remote_uri: str, local_uri: str, local: bool, max_queue_bytes: int, max_queue_packets: int
    ) -> None:
        super().__init__(remote_uri=remote_uri, local_uri=local_uri, local=local, persistent=True)
        self.max_queue_bytes = max_queue_bytes
        self.max_queue_packets = max_queue_packets
        self._peer: MemoryFace | None = None
        self._inbox: deque[bytes] = deque()
        self._inbox_bytes = 0
        self._wake = trio.Event()
        self._running = False

    def send(self, wire: bytes) -> None:
        peer = self._peer
        n = len(wire)
        if (
            self.closed
            or peer is None
            or peer._inbox_bytes + n > self.max_queue_bytes
            or len(peer._inbox) >= self.max_queue_packets
        ):
            self.counters.send_drops += 1
            return
        peer._inbox.append(wire)
        peer._inbox_bytes += n
        peer._wake.set()
        self.counters.out_packets += 1
        self.counters.out_bytes += n

    async def run(self, on_receive: OnReceive) -> None:
        if self._running:
            raise RuntimeError(f"{self!r} is already running")
        self._running = True
        counters = self.counters
        inbox = self._inbox
        try:
            while not self.closed:
                if not inbox:
                    await self._wake.wait()
                    self._wake = trio.Event()
                    continue
                for _ in range(len(inbox)):
                    wire = inbox.popleft()
                    self._inbox_bytes -= len(wire)
                    counters.in_packets += 1
                    counters.in_bytes += len(wire)
                    on_receive(self, wire)
                    if self.closed:
                        return
                await trio.lowlevel.checkpoint()  # one batch per wakeup: let other tasks run
        finally:
            self._close_now("run() ended")

    def _release(self) -> None:
        self._inbox.clear()
        self._inbox_bytes = 0
        self._wake.set()
        if self._peer is not None:
            self._peer._close_now("peer closed")


def memory_face_pair(
    local: bool = False,
    *,
    max_queue_bytes: int = DEFAULT_MAX_QUEUE_BYTES,
    max_queue_packets: int = DEFAULT_MAX_QUEUE_PACKETS,
) -> tuple[MemoryFace, MemoryFace]:
    """Two connected faces; ``local=True`` makes both local (allowed ``/localhost``)."""
    n = next(_pair_ids)
    a_uri, b_uri = f"memory://{n}-a", f"memory://{n}-b"
    limits = {"max_queue_bytes": max_queue_bytes, "max_queue_packets": max_queue_packets}
    a = MemoryFace(remote_uri=b_uri, local_uri=a_uri, local=local, **limits)
    b = MemoryFace(remote_uri=a_uri, local_uri=b_uri, local=local, **limits)
    a._peer, b._peer = b, a
    return a, b
