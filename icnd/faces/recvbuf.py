"""A stream face's receive buffer: the bytes received and not yet delivered.

``buf[start:end]`` holds them; the face reads into `ReceiveBuffer.room`
and has every complete frame taken out and delivered with
`ReceiveBuffer.split`, told how many bytes it read (its framing says where
frames lie).  ``start != end`` says bytes are pending; the face tests it on
the attributes, and calls `shrink` only when the buffer is larger than
`RECV_CHUNK`.

These methods are the general path and the definition.  Calling them on
every read (`room` per read, `split` per read with bytes, its ``deliver``
per packet) was about a tenth of a small packet's Python calls through a
node (issue #28: 8 of 73 per exchange at window 1), so
`icnd.faces.stream.StreamFace`'s read loop does the common case inline on
the attributes -- reading into the free tail when `room` would leave the
buffer as it is, and taking the frames out when the buffer holds no share
of the budget (``eager == 0``: no hand-over possible) -- and calls
these methods for everything else; a hypothesis test
(``tests/property/test_stream_read_props.py``) checks the two give the same
packets, counters and budget.  A change to the rules here is a change to
that inline copy too.

A frame is copied out of the buffer exactly once (into the ``bytes`` the
face hands on), except a frame that fills a buffer of its own: that buffer
may be handed over instead (below).  The buffer is compacted only when its
free tail gets short, and then only the partial frame moves, so the cost
stays linear.  It grows to hold a large frame and shrinks back when it runs
empty (`ReceiveBuffer.shrink`).  The buffer grows with the bytes actually
received (at most doubling, up to the frame's announced size), never with
a header's claim alone, and it is only allocated once the first bytes
arrive (an idle connection holds no buffer).

A frame larger than the buffer may get a buffer of exactly its announced
size at once, from a `ByteBudget` shared by the faces of one listener (a
face holding a share for a smaller frame takes only the difference; the
share is given back when the buffer is handed over, shrinks, or the face
closes: `ReceiveBuffer.release`).  A complete frame in such a buffer, when
the caller's ``hand_over(packet)`` accepts it (the face's link service
decides: `icnd.faces.service.NativeLinkService` takes icnd Data), is
returned as a read-only memoryview of that buffer, not copied (issue #18);
the packet is then accounted by whatever keeps it, as a copied one is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

RECV_CHUNK = 256 * 1024  # default receive buffer; reads are at least MIN_READ long
MIN_READ = 64 * 1024
EAGER_FRAMES_BYTES = 64 * 1024 * 1024  # buffers allocated at a frame's announced size (a node: all its listeners)


class ByteBudget:
    """A count of bytes shared by many holders, never above `limit`."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self, n: int) -> bool:
        """Reserve `n` bytes if they fit; False (nothing reserved) otherwise."""
        if self.used + n > self.limit:
            return False
        self.used += n
        return True

    def give(self, n: int) -> None:
        self.used -= n


class ReceiveBuffer:
    """The bytes one stream face received and has not delivered (module docstring)."""

    __slots__ = ("buf", "view", "start", "end", "eager", "_budget")

    def __init__(self, budget: ByteBudget) -> None:
        self.buf: Any = bytearray()  # a bytearray, or a numpy array for a frame's own buffer
        self.view = memoryview(self.buf)
        self.start = 0  # buf[start:end]: received, not yet delivered
        self.end = 0
        self.eager = 0  # bytes of `budget` this buffer holds (0: a plain buffer; the face's inline path tests it)
        self._budget = budget

    def room(self, need: int) -> memoryview:
        """The free tail to receive into, once there is room for `need` bytes
        from `start` (the frame being received)."""
        buf = self.buf
        start = self.start
        eager = self.eager
        if start + need > len(buf) or (len(buf) - self.end < MIN_READ and not eager):
            # (a frame's own buffer, sized to the frame, is read into to its very end)
            # Make room: move the partial frame to the front, growing if there is not
            # MIN_READ free behind it -- by at most doubling, so the buffer follows the
            # bytes received, not the size the frame's header announces.
            view = self.view
            pending = self.end - start
            grow = pending + MIN_READ > len(buf)
            # the fast path: the whole frame's buffer at once, from a bounded budget; a
            # buffer holding a share for a smaller frame takes only the difference, and
            # keeps its share (it stays counted) if the budget has no more
            own = need > max(len(buf), RECV_CHUNK) and self._budget.take(need - eager)
            size = 0
            if own:
                self.eager = size = need
                grow = True
            elif grow:
                size = min(need + RECV_CHUNK, max(2 * len(buf), pending + MIN_READ, RECV_CHUNK))
            if grow:
                # a frame's own buffer is not zeroed first (the kernel writes every byte
                # of it), and numpy asks for huge pages when it is large: fresh memory
                # costs a fault per 2 MiB instead of per 4 KiB (issue #18)
                new: Any = np.empty(size, np.uint8) if own else bytearray(size)
                fresh = memoryview(new)
                fresh[:pending] = view[start:self.end]
                view.release()
                self.buf, self.view = new, fresh
            elif start:
                view[:pending] = view[start:self.end]
            self.start, self.end = 0, pending
        return self.view[self.end:]

    def split(self, got: int, frame: Callable[[memoryview, int, int], tuple[int, int] | None], need: int,
              hand_over: Callable[[memoryview], bool] | None, deliver: Callable[[bytes, int], bool]) -> int:
        """`got` more bytes were read into `room`: take every complete frame out, in order, and ``deliver(packet,
        packet size)`` it (True: stop, the face closed); `frame` is the
        face's framing (it may raise `icnd.faces.stream.FramingError`), `need`
        the bytes the frame at `start` needs before it can be parsed.  Returns
        the bytes the next frame needs (0 once `deliver` said stop).

        A packet is a copy, except a frame that fills a buffer of its own and
        that `hand_over` accepts: that buffer is handed over as a read-only
        view (its budget share given back) and this one starts afresh."""
        view = self.view
        start = self.start
        end = self.end + got
        try:
            while end - start >= need:
                bounds = frame(view, start, end)
                if bounds is None:
                    need = end - start + 1
                    break
                packet_start, frame_end = bounds
                if frame_end > end:
                    need = frame_end - start
                    break
                if self.eager and hand_over is not None and frame_end == len(self.buf) and not start \
                        and hand_over(view[packet_start:frame_end]):
                    packet = cast(bytes, view[packet_start:frame_end].toreadonly())  # (stands for bytes: base.py)
                    view.release()
                    self.buf = bytearray(RECV_CHUNK)
                    self.view = view = memoryview(self.buf)
                    self.release()
                    end = frame_end = 0
                else:
                    packet = bytes(view[packet_start:frame_end])
                start = frame_end
                need = 1
                if deliver(packet, len(packet)):
                    return 0
            if start == end:
                start = end = 0  # everything delivered: the next bytes go to the front
            return need
        finally:
            self.start = start
            self.end = end

    def shrink(self) -> None:
        """Empty, after a wakeup's reads: a large buffer gives way to a small
        one (its budget share given back)."""
        if len(self.buf) > RECV_CHUNK:
            self.view.release()
            self.buf = bytearray(RECV_CHUNK)
            self.view = memoryview(self.buf)
            self.release()

    def release(self) -> None:
        """Give back the budget share this buffer holds (the face closes, or it shrank)."""
        if self.eager:
            self._budget.give(self.eager)
            self.eager = 0
