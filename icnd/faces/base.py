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
  A packet is ``bytes``, except that a stream face hands a large frame that
  filled a buffer of its own over as a read-only ``memoryview`` of that
  buffer (no copy) when ``face.hand_over(view)`` says so: the face's link
  service sets ``hand_over``, and `icnd.faces.service.NativeLinkService`
  takes icnd Data that way (`icnd.codec.decode` takes either; such a view,
  and a Data decoded from it, is not hashable).
- Tasks a face needs (its writer) live inside ``run``'s own nursery, so a face
  never leaks a task past ``run``.
- Packets still queued when a face closes are discarded.
- ``reliable_state()`` says whether what the face accepted arrives:
  None for a face that may lose packets (datagrams); for a stream, which
  delivers in order everything it accepted while its connection lasts,
  ``(connection, up)``: the connection's number, which changes whenever a
  new connection replaces a lost one (a permanent face's reconnect), and
  whether one is up.  A packet sent on a connection that is no longer the
  face's may be lost (`icnd.reduction.aggregate` asks again then, and only then).
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
    frame_timeouts: int = 0  # a stream's partial frame did not complete in time (the face then closes)
    fds_received: int = 0  # file descriptors a local application passed (SCM_RIGHTS; shared memory)
    fds_refused: int = 0  # descriptors closed unused: beyond the face's bound, or cut off (MSG_CTRUNC)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class FaceLimits:
    """What a listener lets peers make the node hold (see docs/configuration.md).

    Stream listeners: ``max_connections`` open connections per TCP listener,
    ``max_per_source`` per remote IP address, ``unix_max_connections`` per
    Unix listener (local applications: a separate budget, so a network flood
    never takes their slots); a partial frame must complete within
    ``frame_timeout`` seconds of its first byte, else the face closes.  UDP
    listeners: at most ``udp_max_faces`` on-demand faces (the one idle the
    longest is evicted for a new peer once it has been idle
    ``udp_evict_idle`` seconds, else the datagram is refused); fragment
    reassembly holds at most ``reassembly_bytes`` over all the listener's
    faces and ``reassembly_per_source`` per face.
    """

    max_connections: int = 1024
    max_per_source: int = 64
    unix_max_connections: int = 1024
    frame_timeout: float = 30.0
    udp_max_faces: int = 1024
    udp_evict_idle: float = 10.0
    reassembly_bytes: int = 64 * 1024 * 1024
    reassembly_per_source: int = 8 * 1024 * 1024

    def __post_init__(self) -> None:
        for name in self.__slots__:
            if not getattr(self, name) > 0:
                raise ValueError(f"face limit {name} must be > 0")


DEFAULT_LIMITS = FaceLimits()


@dataclass(slots=True)
class ListenerCounters:
    """What a listener refused or cut (monotonic); summed into the node's status counters."""

    connections_refused_listener: int = 0  # a listener's max_connections reached
    connections_refused_source: int = 0  # one source address's max_per_source reached
    frame_timeouts: int = 0  # faces of this listener closed for a partial frame too old
    udp_faces_refused: int = 0  # datagrams from a new peer dropped: on-demand faces full, none idle
    udp_faces_evicted: int = 0  # idle on-demand faces closed to make room for a new peer
    reassembly_budget_evictions: int = 0  # partial packets dropped to keep the listener's reassembly budget

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class QueueWriter:
    """The one writer task of a send queue (a stream face's, a UDP listener's).

    ``send`` never waits: what the socket does not take at once is queued and
    the queue's owner calls `wake`.  `run` sleeps until woken while nothing is
    queued (``on_idle()`` first, if given), otherwise waits until the socket
    is writable and calls ``flush()``, which sends what the socket takes; it
    returns once ``closed()`` or when the socket is closed under it.
    """

    __slots__ = ("_wake",)

    def __init__(self) -> None:
        self._wake = trio.Event()

    def wake(self) -> None:
        """Something was queued, or the owner closed: `run` looks again."""
        self._wake.set()

    async def run(self, sock: socket.socket, *, closed: Callable[[], bool], queued: Callable[[], bool],
                  flush: Callable[[], None], on_idle: Callable[[], None] | None = None) -> None:
        while not closed():
            if not queued():
                if on_idle is not None:
                    on_idle()
                await self._wake.wait()
                self._wake = trio.Event()
                continue
            try:
                await trio.lowlevel.wait_writable(sock)
            except trio.ClosedResourceError:
                return
            flush()


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
    # Which packets this face may hand over as read-only views of a buffer of their own instead of
    # copies (a stream face's large frames, `icnd.faces.recvbuf`): set by the face's link service,
    # which knows its format (`icnd.faces.service.NativeLinkService`: icnd Data); None: copy them all.
    hand_over: Callable[[memoryview], bool] | None

    def __init__(self, *, remote_uri: str, local_uri: str, local: bool, persistent: bool) -> None:
        self.hand_over = None
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

    def reliable_state(self) -> tuple[int, bool] | None:
        """None: packets the face accepted may be lost; else (connection number, up) (module docstring)."""
        return None

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

    def listener_counters(self) -> dict[str, int]:
        """What this listener refused or cut (`ListenerCounters` fields), for the node's status."""
        return {}

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
