"""TCP and Unix stream faces: each packet is framed as a 4-byte big-endian length, then the packet.

How packets are delimited on the stream is the face's `Framing`, the one
thing a stream face's wire format changes: `LENGTH_PREFIX` here (icnd's
format); `icnd.ndn.face.NdnStreamFace` is a `StreamFace` with NDN's framing
(TLV blocks delimit themselves: no header at all).

Reading: one receive buffer per face (`icnd.faces.recvbuf.ReceiveBuffer`);
after each readability wakeup the reader ``recv_into``s large chunks until the
socket would block (or a per-wakeup budget is spent, so one busy face cannot
starve the others) and delivers every complete frame, copied out of the
buffer once -- except a large frame that was given a buffer of its own, which
is handed over as a read-only memoryview when the face's link service says so
(``face.hand_over``: `icnd.faces.service.NativeLinkService` takes icnd Data;
such a view is not hashable).  Buffers sized to a frame's announced length
come from a byte budget (`ByteBudget`) shared by the faces of one listener
(``StreamListener.eager_frames``; a face it did not accept has its own).
The read loop does the buffer's common case inline (a read into free room,
the frames out of a buffer that cannot hand one over) and calls its
methods for the rest: a small packet costs no extra Python call for having
a buffer class (issue #28; ``inline_reads``, checked against the general
path by ``tests/property/test_stream_read_props.py``).
A length above `icnd.codec.MAX_PACKET_SIZE` (or whatever the framing finds
invalid) is a framing error: the stream cannot be resynchronised, so the face
counts it and closes.  A partial frame must complete within
``frame_timeout`` seconds (`icnd.faces.base.FaceLimits`; the clock restarts
whenever a frame is delivered), else the face counts ``frame_timeouts`` and
closes: a peer cannot hold a buffer by sending a header and stopping.

Limits (`StreamListener`): open connections per listener and per source
address (TCP) are bounded; a connection beyond either is accepted and closed
at once, counted in the listener's `ListenerCounters` and logged at most once
per interval.  The node's local Unix listener has its own budget.

Descriptors (issue #18): a Unix stream face also receives file descriptors
passed with ``SCM_RIGHTS`` (``recvmsg_into``): a local application hands its
node a sealed shared-memory segment this way (`icnd.shm`).  The kernel
delivers a descriptor with the first byte of the ``sendmsg`` that carried it,
so descriptors are held in arrival order and a command takes the oldest
(`take_fd`).  At most `MAX_HELD_FDS` are held per face (more are closed at
once and counted in ``fds_refused``, as are any the kernel cut off for lack of
room, ``MSG_CTRUNC``); whatever is still held when the face closes is closed.
`send_with_fds` is the sending side.

Writing: `StreamFace.send` writes straight to the socket when nothing is
queued (header and payload in one ``sendmsg``, no concatenation of large
packets) and queues whatever the kernel did not take.  The queue is a deque of
``bytes``/``memoryview`` bounded in bytes; the writer task
(`icnd.faces.base.QueueWriter`) drains it with scatter-gather ``sendmsg``
calls on writability.
"""

from __future__ import annotations

import array
import errno
import itertools
import logging
import os
import socket
import stat
import struct
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import trio

from icnd.codec import MAX_PACKET_SIZE
from icnd.faces.base import (
    DEFAULT_LIMITS,
    Face,
    FaceLimits,
    Listener,
    ListenerCounters,
    OnNewFace,
    OnReceive,
    QueueWriter,
    close_socket,
)
from icnd.faces.recvbuf import EAGER_FRAMES_BYTES, MIN_READ, RECV_CHUNK, ByteBudget, ReceiveBuffer
from icnd.faces.uri import FaceUri, format_inet_uri, parse_face_uri
from icnd.ratelog import RateLimitedLog

DEFAULT_MAX_SEND_QUEUE = 16 * 1024 * 1024
READS_PER_WAKEUP = 64  # then wait for readability again, letting other tasks run
SMALL_PACKET = 16 * 1024  # below this, header + payload are concatenated (cheaper than an iovec)
MAX_HELD_FDS = 8  # descriptors a Unix face holds for commands still to come; more are closed
MAX_FDS_PER_MSG = 4
_ANC_SPACE = socket.CMSG_SPACE(MAX_FDS_PER_MSG * array.array("i").itemsize)
# A plain int: with the enum.IntFlag `socket.MSG_CTRUNC` on the right, `flags & ...` runs
# enum's Python-level operators (__rand__, __call__, __new__) on every read of a Unix face.
_MSG_CTRUNC = int(socket.MSG_CTRUNC)

_HEADER = struct.Struct(">I")
_IOV_MAX = min(os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024, 1024)
_TRANSIENT_ACCEPT_ERRORS = {errno.ECONNABORTED, errno.EPROTO, errno.EPERM, errno.EINTR}
_RESOURCE_ACCEPT_ERRORS = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}

log = logging.getLogger("icnd.faces")
_timeout_log = RateLimitedLog(log)


class FramingError(Exception):
    """The byte stream cannot be split into packets any more (the face closes)."""


@dataclass(frozen=True, slots=True)
class Framing:
    """How packets are delimited on a byte stream.

    ``header(n)``: the bytes sent before a packet of ``n`` bytes (``header_size``
    long, possibly empty); ``max_packet``: larger packets are dropped by
    `StreamFace.send`; ``frame(view, start, end)``: where the frame at
    ``start`` of the receive buffer lies, as (packet start, frame end), or
    None while its header is incomplete -- the frame end may lie beyond
    ``end`` (the rest has not arrived); raises `FramingError` for a frame that
    can never be valid.
    """

    header: Callable[[int], bytes]
    header_size: int
    max_packet: int
    frame: Callable[[memoryview, int, int], tuple[int, int] | None]


def _length_prefixed_frame(view: memoryview, start: int, end: int) -> tuple[int, int] | None:
    if end - start < 4:
        return None
    length = _HEADER.unpack_from(view, start)[0]
    if length > MAX_PACKET_SIZE:
        raise FramingError(f"frame length {length} exceeds {MAX_PACKET_SIZE}")
    return start + 4, start + 4 + length


# icnd's own framing: a 4-byte big-endian length, then the packet.
LENGTH_PREFIX = Framing(_HEADER.pack, _HEADER.size, MAX_PACKET_SIZE, _length_prefixed_frame)


class StreamFace(Face):
    """A face over a connected, non-blocking ``SOCK_STREAM`` socket (TCP or Unix)."""

    framing: ClassVar[Framing] = LENGTH_PREFIX

    def __init__(
        self,
        sock: socket.socket,
        *,
        remote_uri: str,
        local_uri: str,
        local: bool,
        persistent: bool,
        max_send_queue: int = DEFAULT_MAX_SEND_QUEUE,
        eager_frames: ByteBudget | None = None,
    ) -> None:
        super().__init__(remote_uri=remote_uri, local_uri=local_uri, local=local, persistent=persistent)
        sock.setblocking(False)
        # what buffers sized to a frame's header may take: the accepting listener's, else the face's own
        self.eager_frames = eager_frames if eager_frames is not None else ByteBudget(EAGER_FRAMES_BYTES)
        self._sock = sock
        self._queue: deque[bytes | memoryview] = deque()
        self._queued_bytes = 0
        self.max_send_queue = max_send_queue
        self._writer = QueueWriter()
        self._running = False
        framing = self.framing  # read per packet by send: kept on the instance
        self._header = framing.header
        self._header_size = framing.header_size
        self._max_packet = framing.max_packet
        self.frame_timeout = DEFAULT_LIMITS.frame_timeout  # seconds a partial frame may take
        self._listener_counters: ListenerCounters | None = None  # the accepting listener's, if any
        self._on_release: Callable[[], None] | None = None  # the accepting listener's bookkeeping
        self._fd_capable = sock.family == socket.AF_UNIX
        self._held_fds: deque[int] = deque()  # received with SCM_RIGHTS, oldest first
        # queued packets with descriptors to send: id(first queued item) -> (that item, our copies)
        self._attached: dict[int, tuple[bytes, list[int]]] = {}
        # the read loop does the receive buffer's common case inline (`_read_loop`); False: every read
        # through `ReceiveBuffer.room` and `split`, the general path a hypothesis test compares it with
        self.inline_reads = True

    @property
    def send_queue_bytes(self) -> int:
        """Bytes accepted by `send` but not yet taken by the kernel."""
        return self._queued_bytes

    def send(self, wire: bytes) -> None:
        counters = self.counters
        n = len(wire)
        if self.closed or n > self._max_packet:
            counters.send_drops += 1
            return
        header = self._header(n)
        framed = self._header_size + n
        if self._queue:
            if self._queued_bytes + framed > self.max_send_queue:
                counters.send_drops += 1
                return
            if n <= SMALL_PACKET:
                self._queue.append(header + wire)  # (an empty header: wire itself, no copy)
            else:
                self._queue.append(header)
                self._queue.append(wire)
            self._queued_bytes += framed
        else:
            try:
                if n <= SMALL_PACKET:
                    sent = self._sock.send(header + wire)
                else:
                    sent = self._sock.sendmsg((header, wire))
            except BlockingIOError:
                sent = 0
            except OSError as exc:
                counters.send_drops += 1
                self._close_now(_describe(exc))
                return
            if sent < framed:
                self._queue_rest(header, wire, sent)
        counters.out_packets += 1
        counters.out_bytes += n

    def _queue_rest(self, header: bytes, wire: bytes, sent: int) -> None:
        """Queue what the kernel did not take of a packet sent directly (`sent` bytes of header + wire)."""
        size = self._header_size
        if sent < size:
            self._queue.append(memoryview(header)[sent:])
            self._queue.append(wire)
        else:
            self._queue.append(memoryview(wire)[sent - size :])
        self._queued_bytes += size + len(wire) - sent
        self._writer.wake()

    def reliable_state(self) -> tuple[int, bool] | None:
        """One connection, delivered in order while it lasts (a stream face is never reconnected)."""
        return (0, not self.closed)

    async def run(self, on_receive: OnReceive) -> None:
        if self._running:
            raise RuntimeError(f"{self!r} is already running")
        self._running = True
        if self.closed:
            return
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._write_loop)
                await self._read_loop(on_receive)  # returns once the face is closed
                nursery.cancel_scope.cancel()
        finally:
            self._close_now(self.close_reason or "run() ended")

    @property
    def can_pass_fds(self) -> bool:
        """A Unix stream face: descriptors can travel over it (`send_with_fds`, `take_fd`)."""
        return self._fd_capable

    def take_fd(self) -> int | None:
        """The oldest descriptor received and not yet taken (the caller owns
        it from now on and must close it), or None."""
        return self._held_fds.popleft() if self._held_fds else None

    def _hold_fds(self, ancillary: list[tuple[int, int, bytes]], flags: int) -> None:
        counters = self.counters
        if flags & _MSG_CTRUNC:
            counters.fds_refused += 1  # the kernel closed what did not fit
        for level, kind, data in ancillary:
            if level != socket.SOL_SOCKET or kind != socket.SCM_RIGHTS:
                continue
            fds = array.array("i")
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
            for fd in fds:
                if len(self._held_fds) < MAX_HELD_FDS and not self.closed:
                    self._held_fds.append(fd)
                    counters.fds_received += 1
                else:
                    os.close(fd)
                    counters.fds_refused += 1

    def send_with_fds(self, wire: bytes, fds: list[int]) -> None:
        """Send one packet with `fds` attached (Unix faces only), in order
        with everything else sent: straight away when nothing is queued,
        else queued with copies of the descriptors (`os.dup`) that the writer
        attaches to the packet's first byte and closes once sent (or when the
        face closes).  Never waits: the writer task is the only one waiting
        on the socket.  The caller keeps (and closes) its own descriptors."""
        if not self._fd_capable or not fds or len(fds) > MAX_FDS_PER_MSG:
            raise ValueError("descriptors go over a Unix stream face, 1..%d per packet" % MAX_FDS_PER_MSG)
        n = len(wire)
        if n > self._max_packet:
            raise ValueError(f"packet of {n} bytes exceeds {self._max_packet}")
        if self.closed:
            raise trio.ClosedResourceError(f"{self.remote_uri} is closed")
        header = self._header(n)
        sent = 0
        if not self._queue:
            try:
                sent = self._sock.sendmsg((header, wire), _rights(fds))
            except BlockingIOError:
                sent = 0
            except OSError as exc:
                self._close_now(_describe(exc))
                raise trio.ClosedResourceError(f"{self.remote_uri}: {exc}") from None
        if sent:  # the descriptors went with the first byte
            if sent < self._header_size + n:
                self._queue_rest(header, wire, sent)
        else:
            first = bytes(header)  # its own object: the key of its attachment
            self._attached[id(first)] = (first, [os.dup(fd) for fd in fds])
            self._queue.append(first)
            self._queue.append(wire)
            self._queued_bytes += self._header_size + n
            self._writer.wake()
        self.counters.out_packets += 1
        self.counters.out_bytes += n

    def _release(self) -> None:
        while self._held_fds:
            os.close(self._held_fds.popleft())
        for _, dups in self._attached.values():
            for fd in dups:
                os.close(fd)
        self._attached.clear()
        self._queue.clear()
        self._queued_bytes = 0
        self._writer.wake()
        close_socket(self._sock)
        on_release, self._on_release = self._on_release, None
        if on_release is not None:
            on_release()

    def _frame_timed_out(self) -> None:
        self.counters.frame_timeouts += 1
        if self._listener_counters is not None:
            self._listener_counters.frame_timeouts += 1
        _timeout_log.warning(time.monotonic(), "closing %s: a partial frame did not complete in %gs",
                             self.remote_uri, self.frame_timeout)
        self._close_now(f"partial frame timed out after {self.frame_timeout:g}s")

    async def _write_loop(self) -> None:
        await self._writer.run(self._sock, closed=lambda: self.closed, queued=lambda: bool(self._queue),
                               flush=self._flush)

    def _flush(self) -> None:
        """Write queued bytes until the queue is empty or the socket would block.
        A queued packet with descriptors attached (`send_with_fds`) starts a
        ``sendmsg`` of its own, which carries them; they are closed once sent."""
        queue = self._queue
        attached = self._attached
        while queue:
            anc: list[tuple[int, int, bytes]] = []
            if attached:
                head = attached.get(id(queue[0]))
                if head is not None and head[0] is queue[0]:
                    anc = _rights(head[1])
                batch = [queue[0]]
                for item in itertools.islice(queue, 1, _IOV_MAX):
                    if id(item) in attached:
                        break  # the next packet with descriptors starts its own sendmsg
                    batch.append(item)
            else:
                batch = list(itertools.islice(queue, _IOV_MAX))
            try:
                sent = self._sock.sendmsg(batch, anc) if anc else self._sock.sendmsg(batch)
            except BlockingIOError:
                return
            except OSError as exc:
                self._close_now(_describe(exc))
                return
            if anc and sent:
                _, dups = attached.pop(id(queue[0]))
                for fd in dups:
                    os.close(fd)
            self._queued_bytes -= sent
            while sent:
                head_len = len(queue[0])
                if sent >= head_len:
                    queue.popleft()
                    sent -= head_len
                else:
                    queue[0] = memoryview(queue[0])[sent:]
                    sent = 0

    async def _read_loop(self, on_receive: OnReceive) -> None:
        sock = self._sock
        counters = self.counters
        frame = self.framing.frame
        fd_capable = self._fd_capable
        hand_over = self.hand_over  # the link service's: which large frames it takes as views (ReceiveBuffer.split)
        inline = self.inline_reads
        received = ReceiveBuffer(self.eager_frames)
        need = 1  # bytes needed at received.start before the next frame can be parsed
        deadline = 0.0  # while bytes are pending: when the partial frame times out

        def deliver(packet: bytes, size: int) -> bool:
            counters.in_packets += 1
            counters.in_bytes += size
            on_receive(self, packet)
            return self.closed

        try:
            while True:
                try:
                    if received.start == received.end:
                        await trio.lowlevel.wait_readable(sock)
                    else:
                        with trio.move_on_at(deadline):
                            await trio.lowlevel.wait_readable(sock)
                        if trio.current_time() >= deadline:
                            self._frame_timed_out()
                            return
                except trio.ClosedResourceError:
                    return
                delivered = counters.in_packets
                for _ in range(READS_PER_WAKEUP):
                    # The common case inline, on the buffer's attributes (`icnd.faces.recvbuf`: its
                    # methods on every read were a tenth of a small packet's calls): read into the
                    # free tail when `room` would leave the buffer as it is ...
                    size = len(received.buf)
                    if inline and received.start + need <= size and size - received.end >= MIN_READ:
                        into = received.view[received.end:]
                    else:
                        into = received.room(need)
                    try:
                        if fd_capable:
                            got, ancillary, flags, _ = sock.recvmsg_into((into,), _ANC_SPACE)
                            if ancillary or flags & _MSG_CTRUNC:
                                self._hold_fds(ancillary, flags)
                        else:
                            got = sock.recv_into(into)
                    except BlockingIOError:
                        break
                    except OSError as exc:
                        self._close_now(_describe(exc))
                        return
                    if not got:
                        self._close_now("peer closed")
                        return
                    try:
                        if inline and not received.eager:
                            # ... and take every complete frame out of a buffer that cannot hand one
                            # over: `split` without the hand-over, leaving the buffer as `split` would
                            view = received.view
                            start = received.start
                            end = received.end + got
                            while end - start >= need:
                                bounds = frame(view, start, end)
                                if bounds is None:
                                    need = end - start + 1
                                    break
                                packet_start, frame_end = bounds
                                if frame_end > end:
                                    need = frame_end - start
                                    break
                                packet = bytes(view[packet_start:frame_end])
                                start = frame_end
                                need = 1
                                counters.in_packets += 1
                                counters.in_bytes += len(packet)
                                on_receive(self, packet)
                                if self.closed:
                                    return
                            if start == end:
                                start = end = 0  # everything delivered: the next bytes go to the front
                            received.start = start
                            received.end = end
                        else:
                            need = received.split(got, frame, need, hand_over, deliver)
                    except FramingError as exc:
                        counters.framing_errors += 1
                        self._close_now(f"framing error: {exc}")
                        return
                    if not need:
                        return  # closed while delivering
                if received.start == received.end:
                    deadline = 0.0
                    if len(received.buf) > RECV_CHUNK:
                        received.shrink()
                elif counters.in_packets != delivered or not deadline:
                    deadline = trio.current_time() + self.frame_timeout  # a new partial frame
        finally:
            received.release()


class StreamListener(Listener):
    """Accepts TCP or Unix stream connections; each becomes an on-demand `StreamFace`.

    At most ``limits.max_connections`` (Unix: ``limits.unix_max_connections``)
    faces of this listener are open at once, and at most
    ``limits.max_per_source`` from one remote address (TCP); a connection
    beyond either is closed at once and counted in ``counters``.
    """

    def __init__(
        self, sock: socket.socket, uri: FaceUri, on_new_face: OnNewFace, *, limits: FaceLimits = DEFAULT_LIMITS,
        eager_frames: ByteBudget | None = None,
    ) -> None:
        sock.setblocking(False)
        self._sock = sock
        self.limits = limits
        # buffers sized to a frame's header, all this listener's faces together (`icnd.faces.recvbuf`)
        self.eager_frames = eager_frames if eager_frames is not None else ByteBudget(EAGER_FRAMES_BYTES)
        self.counters = ListenerCounters()
        self._open = 0  # faces of this listener not yet closed
        self._per_source: dict[str, int] = {}  # remote address -> open faces (TCP)
        self._refusals = RateLimitedLog(log)
        self._on_new_face = on_new_face
        self._unix_path = uri.path if uri.scheme == "unix" else None
        self._scheme = uri.scheme
        if self._unix_path is None:
            host, port = sock.getsockname()[:2]
            self.local_address: tuple[str, int] | str = (host, port)
            self.local_uri = format_inet_uri("tcp", host, port)
        else:
            self.local_address = self._unix_path
            self.local_uri = f"unix://{self._unix_path}"
        self.closed = False

    async def run(self) -> None:
        """Accept connections until `aclose`; hand each new face to ``on_new_face``.

        Leaving ``run`` (cancellation, an error in ``on_new_face``) closes the listener.
        """
        sock = self._sock
        try:
            while not self.closed:
                try:
                    await trio.lowlevel.wait_readable(sock)
                except trio.ClosedResourceError:
                    return
                await self._accept_all()
        finally:
            self._close_now()

    async def _accept_all(self) -> None:
        while True:
            try:
                conn, addr = self._sock.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                if self.closed:
                    return
                if exc.errno in _RESOURCE_ACCEPT_ERRORS:
                    await trio.sleep(0.1)  # out of descriptors or memory: let faces close first
                    return
                if exc.errno in _TRANSIENT_ACCEPT_ERRORS:
                    continue
                raise
            source = "" if self._unix_path is not None else str(addr[0])  # "": a local Unix peer
            if not self._admit(source):
                conn.close()
                continue
            face = self._make_face(conn, addr)
            face.frame_timeout = self.limits.frame_timeout
            face.eager_frames = self.eager_frames
            face._listener_counters = self.counters
            face._on_release = lambda source=source: self._forget(source)
            self._open += 1
            if source:
                self._per_source[source] = self._per_source.get(source, 0) + 1
            self._on_new_face(face)

    def listener_counters(self) -> dict[str, int]:
        return self.counters.as_dict()

    @property
    def open_connections(self) -> int:
        """Faces of this listener that are not closed yet."""
        return self._open

    def _admit(self, source: str) -> bool:
        limits = self.limits
        cap = limits.max_connections if source else limits.unix_max_connections
        if self._open >= cap:
            self.counters.connections_refused_listener += 1
            self._refusals.warning(time.monotonic(), "%s: refusing a connection: %d connections open (limit)",
                                   self.local_uri, cap)
            return False
        if source and self._per_source.get(source, 0) >= limits.max_per_source:
            self.counters.connections_refused_source += 1
            self._refusals.warning(time.monotonic(),
                                   "%s: refusing a connection from %s: %d connections open from it (limit)",
                                   self.local_uri, source, limits.max_per_source)
            return False
        return True

    def _forget(self, source: str) -> None:
        self._open -= 1
        if source:
            left = self._per_source[source] - 1
            if left:
                self._per_source[source] = left
            else:
                del self._per_source[source]

    def _make_face(self, conn: socket.socket, addr: Any) -> StreamFace:
        if self._unix_path is None:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            host, port = addr[:2]
            remote = format_inet_uri("tcp", host, port)
            local = False
        else:
            remote = f"fd://{conn.fileno()}"
            local = True
        return StreamFace(conn, remote_uri=remote, local_uri=self.local_uri, local=local, persistent=False)

    async def aclose(self) -> None:
        self._close_now()
        await trio.lowlevel.checkpoint()

    def _close_now(self) -> None:
        if self.closed:
            return
        self.closed = True
        close_socket(self._sock)
        if self._unix_path is not None:
            try:
                os.unlink(self._unix_path)
            except FileNotFoundError:
                pass


async def open_stream_listener(
    uri: str | FaceUri, *, on_new_face: OnNewFace, backlog: int = 128, limits: FaceLimits = DEFAULT_LIMITS,
    eager_frames: ByteBudget | None = None,
) -> StreamListener:
    """Listen on ``tcp://HOST:PORT`` (port 0: ephemeral) or ``unix:///path``.

    A Unix socket file left behind by a dead process is replaced; one with a
    live listener behind it, or any non-socket file, raises `OSError`.
    `eager_frames`: the budget of receive buffers sized to a frame's header
    (`icnd.faces.recvbuf`) this listener's faces share (default: a budget of
    its own, `EAGER_FRAMES_BYTES`); pass one budget to several listeners to
    bound them together.
    """
    parsed = parse_face_uri(uri) if isinstance(uri, str) else uri
    if parsed.scheme == "unix":
        _remove_stale_unix_socket(parsed.path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(parsed.path)
            sock.listen(backlog)
        except BaseException:
            sock.close()
            raise
        return StreamListener(sock, parsed, on_new_face, limits=limits, eager_frames=eager_frames)
    if parsed.scheme != "tcp":
        raise ValueError(f"not a stream URI: {parsed}")
    infos = await trio.socket.getaddrinfo(
        parsed.host or None, parsed.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    family, type_, proto, _, sockaddr = infos[0]
    sock = socket.socket(family, type_, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(sockaddr)
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise
    return StreamListener(sock, parsed, on_new_face, limits=limits, eager_frames=eager_frames)


def _remove_stale_unix_socket(path: str) -> None:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise OSError(errno.EEXIST, f"{path} exists and is not a socket; refusing to replace it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.setblocking(False)
    try:
        err = probe.connect_ex(path)
    finally:
        probe.close()
    if err == errno.ECONNREFUSED:
        os.unlink(path)  # nobody listens: a leftover of a dead process
    elif err in (0, errno.EAGAIN, errno.EINPROGRESS):
        raise OSError(errno.EADDRINUSE, f"{path} is in use by a running listener")
    else:
        raise OSError(err, f"cannot probe {path}: {os.strerror(err)}")


async def connect_stream(uri: str | FaceUri, *, max_send_queue: int = DEFAULT_MAX_SEND_QUEUE) -> StreamFace:
    """Connect to ``tcp://HOST:PORT`` or ``unix:///path``; the face is persistent."""
    parsed = parse_face_uri(uri) if isinstance(uri, str) else uri
    if parsed.scheme == "unix":
        sock = await _connect(socket.AF_UNIX, socket.SOCK_STREAM, 0, parsed.path)
        return StreamFace(
            sock,
            remote_uri=str(parsed),
            local_uri=f"fd://{sock.fileno()}",
            local=True,
            persistent=True,
            max_send_queue=max_send_queue,
        )
    if parsed.scheme != "tcp":
        raise ValueError(f"not a stream URI: {parsed}")
    infos = await trio.socket.getaddrinfo(parsed.host, parsed.port, type=socket.SOCK_STREAM)
    errors: list[str] = []
    for family, type_, proto, _, sockaddr in infos:
        try:
            sock = await _connect(family, type_, proto, sockaddr)
        except OSError as exc:
            errors.append(f"{sockaddr[0]}: {_describe(exc)}")
            continue
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        host, port = sock.getsockname()[:2]
        return StreamFace(
            sock,
            remote_uri=format_inet_uri("tcp", str(sockaddr[0]), int(sockaddr[1])),
            local_uri=format_inet_uri("tcp", host, port),
            local=False,
            persistent=True,
            max_send_queue=max_send_queue,
        )
    raise OSError(errno.ECONNREFUSED, f"cannot connect to {parsed}: {'; '.join(errors) or 'no address'}")


async def _connect(family: int, type_: int, proto: int, address: str | tuple[Any, ...]) -> socket.socket:
    sock = socket.socket(family, type_, proto)
    try:
        sock.setblocking(False)
        err = sock.connect_ex(address)
        if err == errno.EINPROGRESS:
            await trio.lowlevel.wait_writable(sock)
            err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            raise OSError(err, f"connect to {address}: {os.strerror(err)}")
    except BaseException:
        sock.close()
        raise
    return sock


def _rights(fds: list[int]) -> list[tuple[int, int, bytes]]:
    """The ancillary data that passes `fds` (SCM_RIGHTS)."""
    return [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())]


def _describe(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    return f"{name}: {exc.strerror or exc}"
