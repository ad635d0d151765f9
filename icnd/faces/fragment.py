"""Hop-by-hop fragmentation for datagram faces (after NDNLPv2), sans-IO.

A packet larger than a link's MTU is split into fragments; the receiving face
reassembles them and delivers the whole packet, or nothing.  Nothing here
touches a socket or reads a clock: the caller passes the time in.

Wire format of a fragment datagram (all integers big-endian)::

    offset  size  field
    0       1     magic 0xC1
    1       4     sequence  u32: per sending face, +1 per fragmented packet (wraps)
    5       2     index     u16: 0 .. count-1
    7       2     count     u16: 1 .. 65535, the number of fragments of the packet
    9       4     total     u32: length of the whole packet, 1 .. MAX_PACKET_SIZE
    13      ...   payload   bytes [index * P, index * P + len) of the packet

Every fragment of a packet carries the same payload size ``P = mtu - 13``
except the last, which carries the rest; a receiver does not need to know
``P``: it keeps the payloads by index and joins them in order, and the packet
is complete when all ``count`` fragments are in and their lengths add up to
``total``.

0xC1 is the one byte msgpack never uses, so it never starts an icnd packet
(an array: 0x90-0x9f, 0xdc, 0xdd); any other first byte means "a whole packet,
no header".  A packet that fits the MTU goes out as it is.  So that a face
stays transparent to *any* bytes, a packet that itself starts with 0xC1 is
always sent as fragments (a single one, ``count`` 1, if it fits).

A datagram that starts with 0xC1 and fails any check (short header, count 0,
index >= count, total 0 or > MAX_PACKET_SIZE, total < count, empty payload,
payload longer than total, count or total differing from earlier fragments
of the same sequence, lengths not adding up to total) is counted in
``malformed_fragments`` and dropped; `Reassembler.feed` never raises on
input.  Partial packets are bounded (`Reassembler` arguments) and dropped
after ``timeout`` seconds without a new fragment.  Reassemblers of several
faces (one UDP listener's) may share a `ReassemblyBudget`: one byte budget
over all of them, on top of each one's own ``max_bytes`` share.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from dataclasses import asdict, dataclass
from typing import Any

from icnd.codec import MAX_PACKET_SIZE

MAGIC = 0xC1
HEADER = struct.Struct(">BIHHI")
HEADER_SIZE = HEADER.size  # 13
MAX_FRAGMENTS = 0xFFFF
# The smallest MTU at which a MAX_PACKET_SIZE packet still fits in MAX_FRAGMENTS fragments.
MIN_MTU = HEADER_SIZE + -(-MAX_PACKET_SIZE // MAX_FRAGMENTS)
DEFAULT_MTU = 60_000
# Bookkeeping charged to each buffered fragment on top of its payload
# (memoryview, bytes object header, dict slot), so that floods of tiny
# fragments are bounded by ``max_bytes`` too.
FRAGMENT_OVERHEAD = 256
_U32 = 0xFFFFFFFF
_FINISHED_MEMORY = 256  # sequences remembered after completion or abandonment


def fragment_count(size: int, mtu: int) -> int:
    """How many datagrams a packet of ``size`` bytes takes at ``mtu``."""
    if size <= mtu:
        return 1
    return -(-size // (mtu - HEADER_SIZE))


class Fragmenter:
    """Splits packets for one sending face (it owns the sequence numbers)."""

    __slots__ = ("mtu", "payload_size", "sequence")

    def __init__(self, mtu: int = DEFAULT_MTU, *, first_sequence: int = 0) -> None:
        if type(mtu) is not int or mtu < MIN_MTU:
            raise ValueError(f"mtu must be an int >= {MIN_MTU}, not {mtu!r}")
        self.mtu = mtu
        self.payload_size = mtu - HEADER_SIZE
        self.sequence = first_sequence & _U32  # the sequence of the next fragmented packet

    def split(self, wire: bytes) -> list[bytes]:
        """The datagrams that carry ``wire``: ``[wire]`` itself when it fits, else fragments.

        Raises `ValueError` for a packet longer than ``MAX_PACKET_SIZE``.
        """
        n = len(wire)
        if n <= self.mtu and (n == 0 or wire[0] != MAGIC):
            return [wire]
        if n > MAX_PACKET_SIZE:
            raise ValueError(f"packet of {n} bytes exceeds {MAX_PACKET_SIZE}")
        p = self.payload_size
        count = -(-n // p)
        seq = self.sequence
        self.sequence = (seq + 1) & _U32
        mv = memoryview(wire)
        pack = HEADER.pack
        join = b"".join
        return [join((pack(MAGIC, seq, i, count, n), mv[off : off + p])) for i, off in enumerate(range(0, n, p))]


@dataclass(slots=True)
class ReassemblyCounters:
    """What a `Reassembler` counts (monotonic).  Any object with these attributes will do."""

    fragments_in: int = 0  # datagrams that started with the magic byte
    packets_reassembled: int = 0  # whole packets returned from fragments
    reassembly_timeouts: int = 0  # partial packets dropped: no fragment for `timeout` seconds
    reassembly_evictions: int = 0  # partial packets dropped to stay within max_packets / max_bytes
    malformed_fragments: int = 0  # fragments (or, at completion, partial packets) failing a check
    duplicate_fragments: int = 0  # an index already held for its partial packet
    late_fragments: int = 0  # for a packet already completed or abandoned

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class ReassemblyBudget:
    """One byte budget shared by several `Reassembler`s (e.g. every face of a UDP listener).

    When the bytes held by all of them exceed ``max_bytes``, the reassembler
    holding the most bytes drops its partial packet idle the longest (counted
    in its ``reassembly_evictions`` and in ``evictions`` here), until the
    total fits again: one source can never take more than its own share, and
    many sources together never more than ``max_bytes``.
    """

    __slots__ = ("max_bytes", "used", "evictions", "_members")

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be positive")
        self.max_bytes = max_bytes
        self.used = 0
        self.evictions = 0
        self._members: set[Reassembler] = set()  # those holding bytes

    def _reclaim(self) -> None:
        members = self._members
        while self.used > self.max_bytes and members:
            victim = max(members, key=_held_bytes)
            victim._evict_oldest()
            self.evictions += 1


def _held_bytes(reassembler: Reassembler) -> int:
    return reassembler._bytes


class _Partial:
    __slots__ = ("count", "total", "size", "parts", "last")

    def __init__(self, count: int, total: int, now: float) -> None:
        self.count = count
        self.total = total
        self.size = 0  # payload bytes held
        self.parts: dict[int, memoryview] = {}
        self.last = now  # time of the latest new fragment


class Reassembler:
    """Reassembles the fragments received on one face.

    At most ``max_packets`` partial packets and ``max_bytes`` buffered bytes
    (payloads plus `FRAGMENT_OVERHEAD` per fragment) are held; beyond either
    bound the partial packet idle the longest is dropped first
    (``reassembly_evictions``).  A partial packet with no new fragment for
    ``timeout`` seconds is dropped (``reassembly_timeouts``) by the next
    `feed` or `expire`.  Fragments of a sequence recently completed or
    abandoned are dropped (``late_fragments``) rather than starting a
    partial packet that could never complete.
    """

    def __init__(
        self,
        max_packets: int = 64,
        max_bytes: int = 32 * 1024 * 1024,
        timeout: float = 2.0,
        *,
        counters: Any = None,
        budget: ReassemblyBudget | None = None,
    ) -> None:
        if max_packets < 1 or max_bytes < 1 or not timeout > 0:
            raise ValueError("max_packets, max_bytes and timeout must be positive")
        self.max_packets = max_packets
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.counters = ReassemblyCounters() if counters is None else counters
        self._partials: OrderedDict[int, _Partial] = OrderedDict()  # least recently active first
        self._finished: OrderedDict[int, None] = OrderedDict()
        self._bytes = 0
        self.budget = budget

    def _charge(self, delta: int) -> None:
        """Change the bytes held, keeping the shared budget's total (and membership) in step."""
        self._bytes += delta
        budget = self.budget
        if budget is not None:
            budget.used += delta
            if self._bytes:
                budget._members.add(self)
            else:
                budget._members.discard(self)

    @property
    def pending_packets(self) -> int:
        """Partial packets held."""
        return len(self._partials)

    @property
    def buffered_bytes(self) -> int:
        """Bytes charged against ``max_bytes``."""
        return self._bytes

    def feed(self, datagram: bytes, now: float) -> bytes | None:
        """One received datagram in; the whole packet out when there is one.

        A datagram not starting with the magic byte is a whole packet and is
        returned as it is.  A fragment returns the reassembled packet when it
        was the last one missing, else None.  Never raises on input.
        """
        if not datagram or datagram[0] != MAGIC:
            return datagram
        c = self.counters
        c.fragments_in += 1
        partials = self._partials
        if partials:
            self.expire(now)
        n = len(datagram)
        if n <= HEADER_SIZE:
            c.malformed_fragments += 1
            return None
        _, seq, index, count, total = HEADER.unpack_from(datagram)
        length = n - HEADER_SIZE
        if index >= count or total > MAX_PACKET_SIZE or total < count or length > total:
            c.malformed_fragments += 1  # count 0 fails index >= count, total 0 fails total < count
            return None
        if count == 1:
            if length != total:
                c.malformed_fragments += 1
                return None
            c.packets_reassembled += 1
            return bytes(memoryview(datagram)[HEADER_SIZE:])

        partial = partials.get(seq)
        if partial is None:
            if seq in self._finished:
                c.late_fragments += 1
                return None
            if len(partials) >= self.max_packets:
                self._evict_oldest()
            partial = partials[seq] = _Partial(count, total, now)
        elif partial.count != count or partial.total != total:
            c.malformed_fragments += 1
            return None
        else:
            parts = partial.parts
            if index in parts:
                c.duplicate_fragments += 1
                return None
            partials.move_to_end(seq)
            partial.last = now
        parts = partial.parts
        size = partial.size + length
        if size > total or (size == total) != (len(parts) + 1 == count):
            # The payload lengths cannot add up to total: the partial packet is garbage.
            c.malformed_fragments += 1
            self._drop(seq, partial)
            return None
        parts[index] = memoryview(datagram)[HEADER_SIZE:]
        if size == total:
            del partials[seq]
            self._charge(-(partial.size + FRAGMENT_OVERHEAD * (count - 1)))
            self._remember(seq)
            c.packets_reassembled += 1
            return b"".join([parts[i] for i in range(count)])
        partial.size = size
        self._charge(length + FRAGMENT_OVERHEAD)
        while self._bytes > self.max_bytes:  # the current packet, most recent, goes last
            self._evict_oldest()
        budget = self.budget
        if budget is not None and budget.used > budget.max_bytes:
            budget._reclaim()
        return None

    def expire(self, now: float) -> int:
        """Drop the partial packets idle for more than ``timeout``; returns how many."""
        partials = self._partials
        deadline = now - self.timeout
        dropped = 0
        while partials:
            seq, partial = next(iter(partials.items()))
            if partial.last >= deadline:
                break
            self._drop(seq, partial)
            dropped += 1
        self.counters.reassembly_timeouts += dropped
        return dropped

    def clear(self) -> None:
        """Forget every partial packet (uncounted), e.g. when the face closes."""
        self._partials.clear()
        self._finished.clear()
        self._charge(-self._bytes)

    def _evict_oldest(self) -> None:
        seq, partial = next(iter(self._partials.items()))
        self._drop(seq, partial)
        self.counters.reassembly_evictions += 1

    def _drop(self, seq: int, partial: _Partial) -> None:
        del self._partials[seq]
        self._charge(-(partial.size + FRAGMENT_OVERHEAD * len(partial.parts)))
        self._remember(seq)

    def _remember(self, seq: int) -> None:
        finished = self._finished
        finished[seq] = None
        if len(finished) > _FINISHED_MEMORY:
            finished.popitem(last=False)
