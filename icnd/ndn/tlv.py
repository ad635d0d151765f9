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

# --- TLV-TYPE numbers: the one table (ndn-cxx encoding/tlv.hpp, lp/tlv.hpp, tlv-nfd.hpp) ------------------
# A number means something only inside its parent element, so different elements reuse numbers
# (0x80 is FaceStatus in a faces dataset and NfdVersion in the forwarder's status).

# packet format v0.3 (`icnd.ndn.codec`)
T_INTEREST = 0x05
T_DATA = 0x06
T_NAME = 0x07
T_CAN_BE_PREFIX = 0x21
T_MUST_BE_FRESH = 0x12
T_FORWARDING_HINT = 0x1E
T_NONCE = 0x0A
T_INTEREST_LIFETIME = 0x0C
T_HOP_LIMIT = 0x22
T_APP_PARAMS = 0x24
T_INTEREST_SIG_INFO = 0x2C
T_INTEREST_SIG_VALUE = 0x2E
T_META_INFO = 0x14
T_CONTENT_TYPE = 0x18
T_FRESHNESS_PERIOD = 0x19
T_FINAL_BLOCK_ID = 0x1A
T_CONTENT = 0x15
T_SIG_INFO = 0x16
T_SIG_VALUE = 0x17
T_SIG_TYPE = 0x1B
T_KEY_LOCATOR = 0x1C
T_KEY_DIGEST = 0x1D
T_SIG_NONCE = 0x26
T_SIG_TIME = 0x28
T_SIG_SEQ_NUM = 0x2A
T_VALIDITY_PERIOD = 0xFD

# NDNLPv2 (`icnd.ndn.codec`)
T_LP_PACKET = 0x64
T_FRAGMENT = 0x50
T_SEQUENCE = 0x51
T_FRAG_INDEX = 0x52
T_FRAG_COUNT = 0x53
T_PIT_TOKEN = 0x62
T_NACK = 0x0320
T_NACK_REASON = 0x0321
T_INCOMING_FACE_ID = 0x032C
T_NEXT_HOP_FACE_ID = 0x0330
T_CONGESTION_MARK = 0x0340

# NFD management: ControlParameters and ControlResponse (`icnd.ndn.nfdmgmt`)
T_CONTROL_PARAMETERS = 0x68
T_FACE_ID = 0x69
T_COST = 0x6A
T_STRATEGY = 0x6B
T_FLAGS = 0x6C
T_EXPIRATION_PERIOD = 0x6D
T_ORIGIN = 0x6F
T_MASK = 0x70
T_URI = 0x72
T_LOCAL_URI = 0x81
T_CAPACITY = 0x83
T_COUNT = 0x84
T_FACE_PERSISTENCY = 0x85
T_BASE_CONGESTION_MARKING_INTERVAL = 0x87
T_DEFAULT_CONGESTION_THRESHOLD = 0x88
T_MTU = 0x89
T_CONTROL_RESPONSE = 0x65
T_STATUS_CODE = 0x66
T_STATUS_TEXT = 0x67

# NFD management datasets: faces/list (FaceStatus) and status/general (`icnd.ndn.management`);
# FaceId, Uri, LocalUri, FacePersistency and Flags are the ControlParameters numbers above
T_FACE_STATUS = 0x80
T_FACE_SCOPE = 0x84
T_LINK_TYPE = 0x86
T_N_IN_INTERESTS = 0x90
T_N_IN_DATA = 0x91
T_N_OUT_INTERESTS = 0x92
T_N_OUT_DATA = 0x93
T_N_IN_BYTES = 0x94
T_N_OUT_BYTES = 0x95
T_N_IN_NACKS = 0x97
T_N_OUT_NACKS = 0x98
T_NFD_VERSION = 0x80
T_START_TIMESTAMP = 0x81
T_CURRENT_TIMESTAMP = 0x82
T_N_NAME_TREE_ENTRIES = 0x83
T_N_FIB_ENTRIES = 0x84
T_N_PIT_ENTRIES = 0x85
T_N_MEASUREMENTS_ENTRIES = 0x86
T_N_CS_ENTRIES = 0x87
T_N_SATISFIED_INTERESTS = 0x99
T_N_UNSATISFIED_INTERESTS = 0x9A

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
