"""The face contract: a face moves whole packets (``bytes``) and nothing else.

A face is a *transport* (NFD's term): it knows nothing about packets or the
forwarder.  Its owner (the node) gives it an id, runs ``await
face.run(on_receive)`` in a nursery, calls ``face.send(wire)`` to transmit,
and ``await face.aclose()`` to tear it down.  Turning those bytes into
packets and back is the job of the face's *link service*
(`icnd.faces.service`), which the owner picks by the face's ``wire_format``.

Invariants every transport keeps:

- ``send`` never blocks and never awaits.  It hands the packet to the socket
  at once when the socket takes it, else appends it to a bounded send queue
  drained by the face's own writer; when that queue is full (or the face is
  closed, or the packet can never be sent) the packet is dropped and
  ``counters.send_drops`` goes up.  ``out_packets``/``out_bytes`` count
  packets accepted (sent or queued); a queued datagram whose later ``sendto``
  fails is also counted in ``send_drops``.
- ``run`` calls ``on_receive(face, packet)`` synchronously, once per complete
  packet, in arrival order, and returns when the face closes: the peer
  closed, a socket error, a framing error, or ``aclose()``.  Leaving ``run``
  (including by cancellation) closes the face; a face is never reopened.
- Tasks a face needs (its writer) live inside ``run``'s own nursery, so a face
  never leaks a task past ``run``.
- Packets still queued when a face closes are discarded.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import asdict, dataclass
from types import TracebackType
from typing import ClassVar

import trio

OnReceive = Callable[["Face", bytes], None]
OnNewFace = Callable[["Face"], None]


@dataclass(slots=True)
class FaceCounters:
    """Per-face traffic counters (monotonic; never reset)."""

    in_packets: int = 0
    out_packets: int = 0
    in_bytes: int = 0
    out_bytes: int = 0
    send_drops: int = 0  # send queue full, face closed, packet too large, send error
    decode_errors: int = 0  # incremented by the owner, who decodes
    framing_errors: int = 0  # stream framing broken (the face then closes)
    recv_drops: int = 0  # packets received before run() started, beyond the holding bound

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class Face:
    """Base of every face.  Subclasses implement `send`, `run` and `_release`."""

    # The packet format of the bytes this face carries (its framing follows
    # from it): "icnd" (msgpack, `icnd.codec`) or "ndn" (`icnd.ndn`).
    wire_format: ClassVar[str] = "icnd"
    id: int
    remote_uri: str
    local_uri: str
    local: bool
    persistent: bool
    counters: FaceCounters
    closed: bool
    close_reason: str | None

    def __init__(self, *, remote_uri: str, local_uri: str, local: bool, persistent: bool) -> None:
        self.id = 0  # 0 until the owner assigns one
        self.remote_uri = remote_uri
        self.local_uri = local_uri
        self.local = local
        self.persistent = persistent
        self.counters = FaceCounters()
        self.closed = False
        self.close_reason = None

    def send(self, wire: bytes) -> None:
        raise NotImplementedError

    async def run(self, on_receive: OnReceive) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        self._close_now("closed locally")
        await trio.lowlevel.checkpoint()

    def _close_now(self, reason: str) -> None:
        """Close at once (also from `send`, on a fatal socket error); idempotent."""
        if self.closed:
            return
        self.closed = True
        self.close_reason = reason
        self._release()

    def _release(self) -> None:
        """Drop queued packets, wake the face's tasks, close its socket."""
        raise NotImplementedError

    async def __aenter__(self) -> Face:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        state = f"closed: {self.close_reason}" if self.closed else "open"
        return f"<{type(self).__name__} id={self.id} {self.local_uri} -> {self.remote_uri} ({state})>"


class Listener:
    """Accepts or demultiplexes peers and reports each new face through ``on_new_face``.

    The owner runs ``await listener.run()`` in a nursery and runs every face it
    is handed (``face.run(on_receive)``) itself: a listener never runs faces.
    """

    local_uri: str
    closed: bool

    async def run(self) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Listener:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.local_uri}{' closed' if self.closed else ''}>"


def close_socket(sock: socket.socket) -> None:
    """Close a socket other tasks may be waiting on: they wake with `trio.ClosedResourceError`.

    Synchronous, so `send` can tear a face down on a fatal socket error.
    """
    if sock.fileno() < 0:
        return
    try:
        trio.lowlevel.notify_closing(sock)
    except RuntimeError:  # not inside trio.run: nobody can be waiting
        pass
    sock.close()
