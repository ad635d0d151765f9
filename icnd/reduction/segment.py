"""Segments of contributions and aggregates, and the arithmetic on them.

An array of ``dtype`` and ``shape`` is flattened (C order) and cut into
segments of ``seg_elems = seg_bytes // itemsize`` elements (the last one may
be shorter; an array needs at least one element).  A segment's content is::

    u32 header length (big-endian) | msgpack header | raw little-endian bytes

The header: ``t`` dtype (numpy ``dtype.str``, e.g. ``"<f4"``), ``s`` the
whole array's shape, ``n`` the number of segments, ``i`` this segment's
index, ``m`` the contributors (member indices, sorted; empty in a member's own
contribution), ``p`` partial, ``x`` non-finite values present, ``o`` integer
overflow happened.  Only numeric dtypes (kinds f, i, u) are accepted, never
object dtypes, and nothing is ever unpickled; every length is checked against
the header and the header against the group's limits *before* the payload is
viewed (`np.frombuffer`, no copy).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import msgpack
import numpy as np

from icnd.errors import Error

HEADER = struct.Struct(">I")
MAX_HEADER = 8192
MAX_HEAD = HEADER.size + MAX_HEADER  # the most bytes a segment's header takes
MAX_NDIM = 32
KINDS = "fiu"


class SegmentError(Error, ValueError):
    """A segment that cannot be used: malformed, or not what the group expects."""


def check_dtype(dtype: Any) -> np.dtype:
    """The little-endian form of a numeric dtype; SegmentError for anything else."""
    try:
        dt = np.dtype(dtype)
    except Exception as exc:  # numpy parses strings with several parsers: TypeError, ValueError, SyntaxError
        raise SegmentError(f"not a dtype: {dtype!r} ({exc.__class__.__name__}: {exc})") from None
    if dt.kind not in KINDS or dt.itemsize > 16 or dt.fields is not None or dt.subdtype is not None:
        raise SegmentError(f"dtype {dt} cannot be reduced: only integer and floating-point arrays can")
    return dt.newbyteorder("<") if dt.byteorder == ">" else dt


def plan(dtype: np.dtype, shape: tuple[int, ...], seg_bytes: int) -> tuple[int, int, int]:
    """(elements per segment, number of segments, total elements)."""
    total = 1
    for d in shape:
        total *= d
    seg_elems = max(1, seg_bytes // dtype.itemsize)
    return seg_elems, max(1, -(-total // seg_elems)), total


@dataclass(slots=True)
class SegmentMeta:
    dtype: str
    shape: tuple[int, ...]
    nseg: int
    seg: int
    members: tuple[int, ...] = ()
    partial: bool = False
    nonfinite: bool = False
    overflow: bool = False

    def layout(self) -> tuple[str, tuple[int, ...]]:
        """What contributions must agree on."""
        return self.dtype, self.shape

    def describe(self) -> str:
        return f"{np.dtype(self.dtype)} {self.shape}"


def segment_head(meta: SegmentMeta) -> bytes:
    """What precedes a segment's payload: the header's length and the header."""
    header = msgpack.packb({"t": meta.dtype, "s": list(meta.shape), "n": meta.nseg, "i": meta.seg,
                            "m": list(meta.members), "p": meta.partial, "x": meta.nonfinite, "o": meta.overflow})
    return HEADER.pack(len(header)) + header


def pack(meta: SegmentMeta, payload: Any) -> bytes:
    return b"".join((segment_head(meta), memoryview(payload).cast("B")))


def unpack(content: bytes | memoryview, *, seg_bytes: int, max_bytes: int, n_members: int) -> tuple[SegmentMeta, np.ndarray]:
    """The header and a read-only view of the payload; SegmentError if anything is off."""
    meta, offset, count = unpack_head(content, len(content), seg_bytes=seg_bytes, max_bytes=max_bytes,
                                      n_members=n_members)
    view = np.frombuffer(content, dtype=np.dtype(meta.dtype), count=count, offset=offset)
    return meta, view


def unpack_head(head: bytes | memoryview, length: int, *, seg_bytes: int, max_bytes: int,
                n_members: int) -> tuple[SegmentMeta, int, int]:
    """The header of a `length`-byte segment whose first bytes are `head`
    (at least `MAX_HEAD` of them, or all `length`), checked as `unpack`
    checks it, with the payload's offset and element count: a segment's
    layout, judged without reading its payload.  SegmentError if anything is off."""
    if length < HEADER.size or len(head) < HEADER.size:
        raise SegmentError("segment shorter than its header")
    (hlen,) = HEADER.unpack_from(head)
    if hlen > MAX_HEADER or HEADER.size + hlen > min(length, len(head)):
        raise SegmentError(f"segment header of {hlen} bytes does not fit")
    try:
        h = msgpack.unpackb(head[HEADER.size:HEADER.size + hlen], raw=False, max_bin_len=0,
                            max_str_len=16, max_array_len=max(MAX_NDIM, n_members), max_map_len=16)
    except Exception as exc:
        raise SegmentError(f"malformed segment header: {exc}") from None
    if not isinstance(h, dict):
        raise SegmentError("malformed segment header: not a map")
    dt = check_dtype(h.get("t")) if isinstance(h.get("t"), str) else None
    if dt is None or dt.str != h["t"]:
        raise SegmentError(f"segment dtype {h.get('t')!r} is not a little-endian numeric dtype")
    shape, nseg, seg, members = h.get("s"), h.get("n"), h.get("i"), h.get("m", [])
    flags = [h.get(k, False) for k in "pxo"]
    if (not isinstance(shape, list) or len(shape) > MAX_NDIM or any(type(d) is not int or d < 0 for d in shape)
            or type(nseg) is not int or type(seg) is not int or not isinstance(members, list)
            or any(type(f) is not bool for f in flags)):
        raise SegmentError("malformed segment header: wrong field types")
    shape_t = tuple(shape)
    seg_elems, want_nseg, total = plan(dt, shape_t, seg_bytes)
    if total == 0 or total * dt.itemsize > max_bytes:
        raise SegmentError(f"array of {total * dt.itemsize} bytes is outside the group's limit (1..{max_bytes})")
    if nseg != want_nseg or not 0 <= seg < nseg:
        raise SegmentError(f"segment {seg} of {nseg} does not fit {dt} {shape_t} in {seg_bytes}-byte segments")
    if (any(type(i) is not int for i in members) or members != sorted(set(members))
            or (members and (members[0] < 0 or members[-1] >= n_members))):
        raise SegmentError("malformed segment header: contributors must be sorted, distinct member indices")
    start = seg * seg_elems
    count = min(total, start + seg_elems) - start
    offset = HEADER.size + hlen
    if length - offset != count * dt.itemsize:
        raise SegmentError(f"segment {seg} carries {length - offset} bytes; {count * dt.itemsize} expected")
    return SegmentMeta(dt.str, shape_t, nseg, seg, tuple(members), *flags), offset, count


def combine(op: str, acc: np.ndarray, x: np.ndarray) -> bool:
    """acc = op(acc, x) in place; True if an integer sum or product overflowed."""
    if op == "max":
        np.maximum(acc, x, out=acc)
    elif op == "min":
        np.minimum(acc, x, out=acc)
    elif acc.dtype.kind == "f":
        (np.multiply if op == "prod" else np.add)(acc, x, out=acc)
    elif op == "prod":
        with np.errstate(all="ignore"):
            total = acc * x
            back = np.floor_divide(total, np.where(x != 0, x, 1))
        # exact: a product overflowed iff dividing it back does not give the factor (or -1 * MIN)
        nz = x != 0
        overflow = bool((nz & ((back != acc) | ((x == -1) & (acc == total) & (acc != 0)))).any())
        acc[...] = total
        return overflow
    else:
        total = acc + x
        if acc.dtype.kind == "i":
            overflow = bool((((acc ^ total) & (x ^ total)) < 0).any())
        else:
            overflow = bool((total < acc).any())
        acc[...] = total
        return overflow
    return False


def nonfinite(acc: np.ndarray) -> bool:
    return acc.dtype.kind == "f" and not bool(np.isfinite(acc).all())
