"""NDN TLV primitives (NDN packet format v0.3, ``tlv.rst``).

A TLV element is ``TLV-TYPE TLV-LENGTH TLV-VALUE``; TYPE and LENGTH are
VAR-NUMBERs:

==========  =============================================
first byte  value
==========  =============================================
0x00-0xFC   the byte itself
0xFD        the next 2 bytes, big-endian
0xFE        the next 4 bytes, big-endian
0xFF        the next 8 bytes, big-endian
==========  =============================================

`write_varnum` always writes the shortest form.  `read_varnum` also accepts
a longer-than-necessary form (``FD 00 05`` for 5): older NDN libraries were
lenient here, a non-minimal number is unambiguous, and re-encoding a decoded
packet yields the minimal form anyway.

Every reader here raises `icnd.errors.DecodeError` (and nothing else) on
malformed input; writers raise `ValueError` on values they cannot encode.
"""

from __future__ import annotations

from typing import Iterator

from icnd.errors import DecodeError

MAX_NDN_PACKET = 8800
"""Largest NDN packet (the whole outermost TLV) icnd sends or accepts (ndn-cxx MAX_NDN_PACKET_SIZE)."""

MAX_TLV_TYPE = (1 << 32) - 1
_U64 = (1 << 64) - 1

Buffer = bytes | bytearray | memoryview


def read_varnum(buf: Buffer, offset: int) -> tuple[int, int]:
    """Read one VAR-NUMBER at `offset`; returns ``(value, offset after it)``.

    Raises `DecodeError` when the buffer ends inside the number.
    """
    try:
        first = buf[offset]
    except IndexError:
        raise DecodeError(f"truncated VAR-NUMBER at offset {offset}") from None
    if first < 0xFD:
        return first, offset + 1
    size = 2 if first == 0xFD else 4 if first == 0xFE else 8
    end = offset + 1 + size
    if end > len(buf):
        raise DecodeError(f"truncated {size}-byte VAR-NUMBER at offset {offset}")
    return int.from_bytes(buf[offset + 1 : end], "big"), end


def write_varnum(n: int) -> bytes:
    """The shortest VAR-NUMBER encoding of `n` (0 <= n < 2**64)."""
    if n < 0xFD:
        if n < 0:
            raise ValueError(f"VAR-NUMBER must not be negative: {n}")
        return bytes((n,))
    if n <= 0xFFFF:
        return b"\xfd" + n.to_bytes(2, "big")
    if n <= 0xFFFFFFFF:
        return b"\xfe" + n.to_bytes(4, "big")
    if n <= _U64:
        return b"\xff" + n.to_bytes(8, "big")
    raise ValueError(f"VAR-NUMBER out of range: {n}")


def encode_tlv(tlv_type: int, value: bytes) -> bytes:
    """One TLV element; `tlv_type` must be in 1 .. 2**32-1."""
    if not 0 < tlv_type <= MAX_TLV_TYPE:
        raise ValueError(f"TLV-TYPE out of range: {tlv_type}")
    if tlv_type < 0xFD and len(value) < 0xFD:  # the common case, without the helper calls
        return bytes((tlv_type, len(value))) + value
    return write_varnum(tlv_type) + write_varnum(len(value)) + value


def read_tl(buf: Buffer, offset: int, end: int) -> tuple[int, int, int]:
    """Read a TLV header at `offset` inside ``buf[:end]``.

    Returns ``(type, value_start, value_end)``.  Raises `DecodeError` if the
    header is truncated, the type is 0 or above 2**32-1, or the value runs past
    `end`.
    """
    try:  # the common case first: one-byte TYPE (not 0) and LENGTH, the value inside the range
        if offset + 1 < end:
            t = buf[offset]
            length = buf[offset + 1]
            if 0 < t < 0xFD and length < 0xFD and offset + 2 + length <= end:
                return t, offset + 2, offset + 2 + length
    except IndexError:
        pass  # `end` beyond the buffer: the general path below says what is wrong
    t, pos = read_varnum(buf, offset)
    if pos > end:
        raise DecodeError(f"truncated TLV-TYPE at offset {offset}")
    if t == 0 or t > MAX_TLV_TYPE:
        raise DecodeError(f"invalid TLV-TYPE {t} at offset {offset}")
    length, pos = read_varnum(buf, pos)
    if pos + length > end:
        raise DecodeError(f"TLV of type {t} at offset {offset}: length {length} runs past the end of its container")
    return t, pos, pos + length


def iter_tlvs(buf: Buffer, start: int, end: int) -> Iterator[tuple[int, int, int]]:
    """Yield ``(type, value_start, value_end)`` for each TLV in ``buf[start:end]``.

    The TLVs must exactly fill the range; anything else raises `DecodeError`
    (lazily, when the iteration reaches the bad element).
    """
    pos = start
    while pos < end:
        t, vstart, vend = read_tl(buf, pos, end)
        yield t, vstart, vend
        pos = vend


def frame_length(buf: Buffer) -> int | None:
    """Total length of the first TLV in `buf`, for stream framing.

    Returns None while the TYPE and LENGTH are not both complete (the value
    need not have arrived yet).  Raises `DecodeError` for an invalid type (0 or
    above 2**32-1) or when the element would exceed `MAX_NDN_PACKET` bytes, so
    a stream face can give up on a peer at once instead of buffering.
    """
    return frame_length_at(buf, 0, len(buf))


def frame_length_at(buf: Buffer, start: int, end: int) -> int | None:
    """`frame_length` of ``buf[start:end]`` without slicing it (a stream face's
    receive buffer, once per packet)."""
    n = end - start
    if n <= 0:
        return None
    first = buf[start]
    if first < 0xFD:
        if n >= 2:  # the common case: one-byte TYPE and LENGTH
            length = buf[start + 1]
            if length < 0xFD:
                if first == 0:
                    raise DecodeError("invalid TLV-TYPE 0 at the start of a frame")
                return length + 2
        t, pos = first, start + 1
    else:
        size = 2 if first == 0xFD else 4 if first == 0xFE else 8
        if n < 1 + size:
            return None
        t, pos = int.from_bytes(buf[start + 1 : start + 1 + size], "big"), start + 1 + size
    if t == 0 or t > MAX_TLV_TYPE:
        raise DecodeError(f"invalid TLV-TYPE {t} at the start of a frame")
    if pos >= end:
        return None
    first = buf[pos]
    if first < 0xFD:
        length, pos = first, pos + 1
    else:
        size = 2 if first == 0xFD else 4 if first == 0xFE else 8
        if end < pos + 1 + size:
            return None
        length, pos = int.from_bytes(buf[pos + 1 : pos + 1 + size], "big"), pos + 1 + size
    total = pos - start + length
    if total > MAX_NDN_PACKET:
        raise DecodeError(f"frame of {total} bytes exceeds the NDN limit of {MAX_NDN_PACKET}")
    return total


def is_critical(tlv_type: int) -> bool:
    """NDN v0.3 rule: an unrecognized element is critical if its type is < 32 or odd."""
    return tlv_type < 32 or tlv_type & 1 == 1


def decode_nni(buf: Buffer, start: int, end: int) -> int:
    """A NonNegativeInteger value (1, 2, 4 or 8 bytes, big-endian)."""
    size = end - start
    if size not in (1, 2, 4, 8):
        raise DecodeError(f"NonNegativeInteger of {size} bytes (must be 1, 2, 4 or 8)")
    if size == 1:
        return buf[start]
    return int.from_bytes(buf[start:end], "big")


def encode_nni(n: int) -> bytes:
    """The shortest NonNegativeInteger encoding of `n`."""
    if n < 0x100:
        if n < 0:
            raise ValueError(f"NonNegativeInteger must not be negative: {n}")
        return bytes((n,))
    for size in (2, 4, 8):
        if n < 1 << (8 * size):
            return n.to_bytes(size, "big")
    raise ValueError(f"NonNegativeInteger out of range: {n}")


def nni_tlv(tlv_type: int, n: int) -> bytes:
    """A TLV whose value is the NonNegativeInteger `n`."""
    return encode_tlv(tlv_type, encode_nni(n))
