"""UDP faces: one datagram carries one packet, or one fragment of a large one.

A packet up to the listener's ``mtu`` (default 60,000 bytes) travels as one
datagram, exactly its bytes.  A larger one, up to ``MAX_PACKET_SIZE``, is
split into fragments by the face's `Fragmenter` and put back together by the
receiving face's `Reassembler`, which delivers the whole packet or nothing
(see `icnd.faces.fragment` for the wire format).  The default MTU suits
loopback and hosts that let the kernel fragment IP; on real networks pass a
smaller one, e.g. ``open_udp_listener(..., mtu=1400)``, so that no datagram
needs IP fragmentation (one lost IP fragment loses the whole datagram).

Fragments are the link's business only: a fragmented packet counts once in
``out_packets``/``in_packets``, its fragments in ``fragments_out`` /
``fragments_in`` (`UdpFaceCounters`).  `send` admits a fragmented packet only
when the face's send queue has room for all its fragments (so it never sends
a useless part of one); the queue bound counts datagrams, and by default has
room for two packets of ``MAX_PACKET_SIZE`` at the face's MTU.

UDP has no flow control, and a socket whose receive buffer is full drops
datagrams (and a lost fragment loses its whole packet).  So a listener sends at
most ``burst_bytes`` of fragments and queued datagrams per turn of the event
loop (directly from `send`, then from its writer after each wait for the
socket): by default a quarter of its own socket receive buffer, assuming its
peers' are alike.  That gives a reader in the same process (tests, loopback
benchmarks) a turn to drain its socket between bursts; across processes or
hosts it only bounds bursts.  Packets within the MTU are not metered.

A `UdpListener` owns one socket.  Its receive loop demultiplexes datagrams by
source address into `UdpFace` objects, one per remote address: a datagram from
an unknown address creates an on-demand face, reported through
``on_new_face(face)`` before its first packet is delivered.  `face_to` makes a
persistent face toward a given address (or promotes the existing one).

The faces share the listener's socket, so the listener also owns the one
writer task and the one send queue (FIFO over all its faces, with a bound per
face).  A `UdpFace`'s ``run`` therefore only delivers packets handed to it by
the listener and waits until the face closes; packets that arrive before
``run`` starts are held (bounded) and delivered first.  Closing a face only
forgets the address: a later datagram from it creates a fresh on-demand face.
Closing the listener closes all its faces.

`connect_udp` makes a standalone face on its own ephemeral socket (a private
listener that accepts no other peers); that face runs its listener inside its
own ``run``.

Limits (`icnd.faces.base.FaceLimits`): a listener holds at most
``udp_max_faces`` on-demand faces.  A datagram from a new address when they
are all taken evicts the on-demand face silent the longest, if it has been
silent for ``udp_evict_idle`` seconds (``udp_faces_evicted``); otherwise the
datagram is dropped (``udp_faces_refused``).  Persistent faces are never
evicted nor counted.  Reassembly holds at most ``reassembly_per_source``
bytes per face and ``reassembly_bytes`` over all the listener's faces (a
shared `ReassemblyBudget`: beyond it the face holding the most loses its
oldest partial packet).  Activity is sampled by the expiry task once per
tick, from the faces' counters, not per datagram.

ICMP errors (port unreachable and the like) reported on the shared socket are
ignored: they say nothing reliable about which face they concern and must not
kill the listener.
"""

from __future__ import annotations

import errno
import logging
import random
import socket
import time
from collections import deque
from dataclasses import dataclass

import trio

from icnd.codec import MAX_PACKET_SIZE
from icnd.faces.base import (
    DEFAULT_LIMITS,
    Face,
    FaceCounters,
    FaceLimits,
    Listener,
    ListenerCounters,
    OnNewFace,
    OnReceive,
    QueueWriter,
    close_socket,
)
from icnd.faces.fragment import DEFAULT_MTU, MIN_MTU, Fragmenter, ReassemblyBudget, Reassembler, fragment_count
from icnd.faces.uri import FaceUri, format_inet_uri, parse_face_uri
from icnd.ratelog import RateLimitedLog

MAX_DATAGRAM = 65507  # largest UDP payload over IPv4
RECV_SIZE = 65536
DEFAULT_MAX_SEND_QUEUE = 1024  # datagrams per face (at least room for two largest packets' fragments)
MAX_HELD = 1024  # packets held for a face whose run() has not started yet
MAX_HELD_BYTES = 32 * 1024 * 1024  # ... and their bytes
DATAGRAMS_PER_WAKEUP = 256
SOCKET_BUFFER = 1024 * 1024
SEND_BURST = 256 * 1024  # at most this many bytes of fragments and queued datagrams per event-loop turn
DATAGRAM_OVERHEAD = 1024  # what a datagram costs a kernel socket buffer beyond its bytes, roughly
REASSEMBLY_TIMEOUT = 2.0  # seconds a partial packet waits for its next fragment
REASSEMBLY_MAX_PACKETS = 64  # partial packets per face
REASSEMBLY_MAX_BYTES = 32 * 1024 * 1024  # buffered fragment bytes per face (at most; see FaceLimits)

log = logging.getLogger("icnd.faces")

_ICMP_ERRORS = {
    errno.ECONNREFUSED,
    errno.ECONNRESET,
    errno.EHOSTUNREACH,
    errno.ENETUNREACH,
    errno.EHOSTDOWN,
    errno.ENETDOWN,
    errno.EMSGSIZE,
}


@dataclass(slots=True)
class UdpFaceCounters(FaceCounters):
    """`FaceCounters` plus the fragmentation counters of a UDP face (see `icnd.faces.fragment`)."""

    fragments_out: int = 0  # fragment datagrams of packets accepted by send
    fragments_in: int = 0
    packets_reassembled: int = 0
    reassembly_timeouts: int = 0
    reassembly_evictions: int = 0
    malformed_fragments: int = 0
    duplicate_fragments: int = 0
    late_fragments: int = 0


SockAddr = tuple[str, int] | tuple[str, int, int, int]
"""A peer's socket address as `recvfrom` reports it and `sendto` takes it:
(host, port) on an IPv4 socket, (host, port, flowinfo, scope id) on an IPv6
one; faces are keyed by it."""


class UdpFace(Face):
    """One remote address on a `UdpListener`'s socket."""

    counters: UdpFaceCounters

    def __init__(self, listener: UdpListener, address: SockAddr, *, persistent: bool) -> None:
        super().__init__(
            remote_uri=_address_uri(address), local_uri=listener.local_uri, local=False, persistent=persistent
        )
        self.counters = UdpFaceCounters()
        self.address = address  # socket address as recvfrom reports it
        mtu = listener.mtu
        self._mtu = mtu
        # In datagrams: a fragmented packet takes one slot per fragment.
        self.max_send_queue = max(DEFAULT_MAX_SEND_QUEUE, 2 * fragment_count(MAX_PACKET_SIZE, mtu))
        self._fragmenter = Fragmenter(mtu, first_sequence=random.getrandbits(32))
        self._reassembler = Reassembler(
            REASSEMBLY_MAX_PACKETS,
            min(REASSEMBLY_MAX_BYTES, listener.limits.reassembly_per_source),
            REASSEMBLY_TIMEOUT,
            counters=self.counters,
            budget=listener._budget,
        )
        self._activity = -1  # counters sampled by the listener's expiry task ...
        self._idle_since = trio.current_time()  # ... and when they last changed
        self._held_bytes = 0
        self._listener = listener
        self._queued = 0
        self._on_receive: OnReceive | None = None
        self._held: deque[bytes] = deque()
        self._closed_event = trio.Event()
        self._running = False
        self._owned_listener: UdpListener | None = None

    def send(self, wire: bytes) -> None:
        counters = self.counters
        if self.closed:
            counters.send_drops += 1
            return
        n = len(wire)
        if n > self._mtu or (n and wire[0] == 0xC1):  # fragment.MAGIC, inlined
            self._send_fragments(wire)
            return
        listener = self._listener
        if not listener._queue:
            try:
                listener._sock.sendto(wire, self.address)
            except BlockingIOError:
                pass
            except OSError:
                counters.send_drops += 1
                return
            else:
                counters.out_packets += 1
                counters.out_bytes += n
                return
        if self._queued >= self.max_send_queue:
            counters.send_drops += 1
            return
        self._queued += 1
        listener._enqueue(self, wire)
        counters.out_packets += 1
        counters.out_bytes += n

    @property
    def mtu(self) -> int:
        """The largest datagram this face sends (its listener's ``mtu`` when the face was made)."""
        return self._mtu

    def _send_fragments(self, wire: bytes) -> None:
        """`send` for a packet over the MTU (or starting with the magic byte): all fragments or none."""
        counters = self.counters
        if len(wire) > MAX_PACKET_SIZE:
            counters.send_drops += 1
            return
        datagrams = self._fragmenter.split(wire)
        count = len(datagrams)
        if self._queued + count > self.max_send_queue:
            counters.send_drops += 1
            return
        listener = self._listener
        sent = 0
        if not listener._queue:
            sendto = listener._sock.sendto
            address = self.address
            left = listener._burst_left
            try:
                while sent < count:
                    datagram = datagrams[sent]
                    cost = len(datagram) + DATAGRAM_OVERHEAD
                    if cost > left:
                        break  # the rest waits for the writer's next turn
                    sendto(datagram, address)
                    left -= cost
                    sent += 1
            except BlockingIOError:
                pass
            except OSError:
                counters.send_drops += 1
                return
            finally:
                listener._burst_left = left
        if sent < count:
            self._queued += count - sent
            listener._enqueue_many(self, datagrams, sent)
        counters.out_packets += 1
        counters.out_bytes += len(wire)
        counters.fragments_out += count

    def _deliver(self, data: bytes) -> None:
        if data and data[0] == 0xC1:  # fragment.MAGIC, inlined: the one check on the fast path
            whole = self._reassembler.feed(data, trio.current_time())
            if whole is None:
                return
            data = whole
        counters = self.counters
        on_receive = self._on_receive
        if on_receive is not None:
            counters.in_packets += 1
            counters.in_bytes += len(data)
            on_receive(self, data)
        elif len(self._held) < MAX_HELD and self._held_bytes + len(data) <= MAX_HELD_BYTES:
            counters.in_packets += 1
            counters.in_bytes += len(data)
            self._held.append(data)
            self._held_bytes += len(data)
        else:
            counters.recv_drops += 1

    async def run(self, on_receive: OnReceive) -> None:
        if self._running:
            raise RuntimeError(f"{self!r} is already running")
        self._running = True
        try:
            held = self._held
            while held and not self.closed:
                on_receive(self, held.popleft())
            self._held_bytes = 0
            if self.closed:
                return
            self._on_receive = on_receive
            if self._owned_listener is None:
                await self._closed_event.wait()
            else:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._owned_listener.run)
                    await self._closed_event.wait()
                    nursery.cancel_scope.cancel()
        finally:
            self._on_receive = None
            self._close_now(self.close_reason or "run() ended")

    def _release(self) -> None:
        self._held.clear()
        self._held_bytes = 0
        self._reassembler.clear()
        self._closed_event.set()
        listener = self._listener
        if listener._faces.get(self.address) is self:
            del listener._faces[self.address]
        if self._owned_listener is not None:
            self._owned_listener._close_now()


class UdpListener(Listener):
    """A bound UDP socket and the faces of the peers it talks to."""

    def __init__(
        self,
        sock: socket.socket,
        *,
        on_new_face: OnNewFace | None,
        mtu: int = DEFAULT_MTU,
        limits: FaceLimits = DEFAULT_LIMITS,
    ) -> None:
        if type(mtu) is not int or not MIN_MTU <= mtu <= MAX_DATAGRAM:
            raise ValueError(f"udp mtu must be an int in [{MIN_MTU}, {MAX_DATAGRAM}], not {mtu!r}")
        self._mtu = mtu
        try:
            rcvbuf = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        except OSError:
            rcvbuf = 4 * SEND_BURST
        self._burst_bytes = self._burst_left = max(mtu + DATAGRAM_OVERHEAD, min(SEND_BURST, rcvbuf // 4))
        sock.setblocking(False)
        self._sock = sock
        self._on_new_face = on_new_face
        self._faces: dict[SockAddr, UdpFace] = {}
        self.limits = limits
        self.counters = ListenerCounters()
        self._budget = ReassemblyBudget(limits.reassembly_bytes)
        self._refusals = RateLimitedLog(log)
        self._full_until = 0.0  # while on-demand faces are full: no face can be evicted before then
        self._queue: deque[tuple[UdpFace, bytes]] = deque()
        self._writer = QueueWriter()
        self._running = False
        host, port = sock.getsockname()[:2]
        self.local_address: tuple[str, int] = (host, port)
        self.local_uri = format_inet_uri("udp", host, port)
        self.closed = False

    @property
    def mtu(self) -> int:
        """The largest datagram this listener's faces send; larger packets are fragmented."""
        return self._mtu

    @property
    def burst_bytes(self) -> int:
        """Bytes of fragments and queued datagrams sent per event-loop turn (see the module docstring)."""
        return self._burst_bytes

    @burst_bytes.setter
    def burst_bytes(self, value: int) -> None:
        if value < 1:
            raise ValueError("burst_bytes must be positive")
        self._burst_bytes = self._burst_left = value

    @property
    def faces(self) -> list[UdpFace]:
        """The open faces on this listener (a snapshot)."""
        return list(self._faces.values())

    async def face_to(self, host: str, port: int) -> UdpFace:
        """The persistent face toward ``host:port`` (an existing face is promoted to persistent)."""
        if self.closed:
            raise trio.ClosedResourceError(f"{self!r} is closed")
        family = self._sock.family
        flags = socket.AI_V4MAPPED if family == socket.AF_INET6 else 0
        try:
            infos = await trio.socket.getaddrinfo(host, port, family=family, type=socket.SOCK_DGRAM, flags=flags)
        except socket.gaierror as exc:
            raise OSError(f"cannot reach udp host {host!r} from {self.local_uri}: {exc.strerror}") from exc
        address = infos[0][4]
        if isinstance(address[0], int):  # typeshed also allows (int, bytes), which an IP socket never gives
            raise OSError(f"cannot reach udp host {host!r} from {self.local_uri}: not an IP address")
        face = self._faces.get(address)
        if face is None:
            face = UdpFace(self, address, persistent=True)
            self._faces[address] = face
        face.persistent = True
        return face

    async def run(self) -> None:
        """Receive and demultiplex datagrams, and drain the send queue, until `aclose`."""
        if self._running:
            raise RuntimeError(f"{self!r} is already running")
        self._running = True
        if self.closed:  # closed before it ran: its socket is gone
            return
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._write_loop)
                nursery.start_soon(self._expire_loop)
                await self._read_loop()
                nursery.cancel_scope.cancel()
        finally:
            self._close_now()

    async def aclose(self) -> None:
        self._close_now()
        await trio.lowlevel.checkpoint()

    def _close_now(self) -> None:
        if self.closed:
            return
        self.closed = True
        close_socket(self._sock)
        self._queue.clear()
        self._writer.wake()
        for face in list(self._faces.values()):
            face._close_now("listener closed")

    def _enqueue(self, face: UdpFace, wire: bytes) -> None:
        self._queue.append((face, wire))
        self._writer.wake()

    def _enqueue_many(self, face: UdpFace, datagrams: list[bytes], start: int) -> None:
        self._queue.extend([(face, datagrams[i]) for i in range(start, len(datagrams))])
        self._writer.wake()

    @property
    def reassembly_bytes(self) -> int:
        """Bytes of partial packets held by all this listener's faces."""
        return self._budget.used

    def listener_counters(self) -> dict[str, int]:
        """This listener's refusal counters (`ListenerCounters`), for the node's status."""
        self.counters.reassembly_budget_evictions = self._budget.evictions
        return self.counters.as_dict()

    async def _expire_loop(self) -> None:
        """Drop partial packets that stopped receiving fragments, even if their peer fell silent;
        sample each face's activity (for evicting idle on-demand faces)."""
        while True:
            await trio.sleep(REASSEMBLY_TIMEOUT / 2)
            self._tick(trio.current_time())

    def _tick(self, now: float) -> None:
        for face in self._faces.values():
            reassembler = face._reassembler
            if reassembler.pending_packets:
                reassembler.expire(now)
            c = face.counters
            activity = c.in_packets + c.fragments_in + c.recv_drops + c.out_packets
            if activity != face._activity:
                face._activity = activity
                face._idle_since = now

    def _make_room(self) -> bool:
        """At the on-demand face limit: evict the face idle the longest if idle long enough."""
        now = trio.current_time()
        if now < self._full_until:
            return False
        limits = self.limits
        on_demand = [face for face in self._faces.values() if not face.persistent]
        if len(on_demand) < limits.udp_max_faces:
            return True
        self._tick(now)
        oldest = min(on_demand, key=lambda face: face._idle_since)
        if now - oldest._idle_since < limits.udp_evict_idle:
            self._full_until = oldest._idle_since + limits.udp_evict_idle
            return False
        self.counters.udp_faces_evicted += 1
        oldest._close_now("evicted: idle, its slot went to a new peer")
        return True

    def _new_face(self, address: SockAddr) -> UdpFace | None:
        if self._on_new_face is None:
            return None  # a standalone face's socket talks to its one peer only
        if len(self._faces) >= self.limits.udp_max_faces and not self._make_room():
            self.counters.udp_faces_refused += 1
            self._refusals.warning(time.monotonic(),
                                   "%s: dropping datagrams from new peer %s: %d on-demand faces, none idle (limit)",
                                   self.local_uri, _address_uri(address), self.limits.udp_max_faces)
            return None
        face = UdpFace(self, address, persistent=False)
        self._faces[address] = face
        self._on_new_face(face)
        return None if face.closed else face

    async def _read_loop(self) -> None:
        sock = self._sock
        recvfrom = sock.recvfrom
        faces = self._faces
        while True:
            try:
                await trio.lowlevel.wait_readable(sock)
            except trio.ClosedResourceError:
                return
            for _ in range(DATAGRAMS_PER_WAKEUP):
                try:
                    data, address = recvfrom(RECV_SIZE)
                except BlockingIOError:
                    break
                except OSError as exc:
                    if self.closed:
                        return
                    if exc.errno in _ICMP_ERRORS:
                        continue
                    raise
                face = faces.get(address)
                if face is None:
                    face = self._new_face(address)
                    if face is None:
                        continue
                face._deliver(data)
                if self.closed:
                    return

    async def _write_loop(self) -> None:
        await self._writer.run(self._sock, closed=lambda: self.closed, queued=lambda: bool(self._queue),
                               flush=self._flush, on_idle=self._refill_burst)

    def _refill_burst(self) -> None:
        """Nothing queued: the next burst may be a whole one."""
        self._burst_left = self._burst_bytes

    def _flush(self) -> None:
        """Send queued datagrams: at most ``burst_bytes`` (but at least one) this turn."""
        queue = self._queue
        sendto = self._sock.sendto
        full = self._burst_bytes
        left = full
        try:
            while queue:
                face, wire = queue[0]
                if not face.closed:
                    cost = len(wire) + DATAGRAM_OVERHEAD
                    if cost > left and left < full:
                        return  # the rest after the next wait: readers get a turn
                    try:
                        sendto(wire, face.address)
                    except BlockingIOError:
                        return
                    except OSError:
                        face.counters.send_drops += 1
                    left -= cost
                face._queued -= 1
                queue.popleft()
        finally:
            self._burst_left = max(left, 0)


async def open_udp_listener(
    host: str, port: int, *, on_new_face: OnNewFace | None, mtu: int = DEFAULT_MTU,
    limits: FaceLimits = DEFAULT_LIMITS,
) -> UdpListener:
    """Bind a UDP socket on ``host:port`` (port 0: ephemeral; ``"::"``: dual-stack).

    ``on_new_face=None`` refuses on-demand faces: datagrams from addresses
    without a face (see `UdpListener.face_to`) are dropped.  Packets over
    ``mtu`` bytes (largest datagram sent; default 60,000, good for loopback;
    use ~1400 on real networks to avoid IP fragmentation) are fragmented.
    """
    if type(mtu) is not int or not MIN_MTU <= mtu <= MAX_DATAGRAM:
        raise ValueError(f"udp mtu must be an int in [{MIN_MTU}, {MAX_DATAGRAM}], not {mtu!r}")
    try:
        infos = await trio.socket.getaddrinfo(host or None, port, type=socket.SOCK_DGRAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise OSError(f"cannot listen on udp host {host!r}: {exc.strerror}") from exc
    family, type_, proto, _, sockaddr = infos[0]
    sock = socket.socket(family, type_, proto)
    try:
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        for option in (socket.SO_RCVBUF, socket.SO_SNDBUF):
            try:
                sock.setsockopt(socket.SOL_SOCKET, option, SOCKET_BUFFER)
            except OSError:
                pass  # keep the system default
        sock.bind(sockaddr)
    except BaseException:
        sock.close()
        raise
    return UdpListener(sock, on_new_face=on_new_face, mtu=mtu, limits=limits)


async def connect_udp(uri: str | FaceUri, *, mtu: int = DEFAULT_MTU) -> UdpFace:
    """A persistent face to ``udp://HOST:PORT`` on its own ephemeral socket (see `open_udp_listener` for ``mtu``)."""
    parsed = parse_face_uri(uri) if isinstance(uri, str) else uri
    if parsed.scheme != "udp" or parsed.port is None:
        raise ValueError(f"not a udp URI: {parsed}")
    infos = await trio.socket.getaddrinfo(parsed.host, parsed.port, type=socket.SOCK_DGRAM)
    wildcard = "::" if infos[0][0] == socket.AF_INET6 else "0.0.0.0"
    listener = await open_udp_listener(wildcard, 0, on_new_face=None, mtu=mtu)
    try:
        face = await listener.face_to(str(infos[0][4][0]), parsed.port)
    except BaseException:
        await listener.aclose()
        raise
    face._owned_listener = listener
    return face


def _address_uri(address: SockAddr) -> str:
    host = address[0]
    if host.startswith("::ffff:") and "." in host:
        host = host[7:]  # an IPv4 peer on a dual-stack socket
    return format_inet_uri("udp", host, address[1])
