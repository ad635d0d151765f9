"""The byte layout of one rank's part in a data-moving collective (sans-IO).

``bcast``, ``gather``, ``allgather``, ``scatter`` and ``alltoall`` move values,
not sums: each taking part rank makes one contribution to the call's round
(`icnd.reduction` stores and serves it, segment by segment, holding early
Interests until it is there), and the others fetch what they need of it.
That contribution is a byte string laid out as::

    u32 big-endian H | header (msgpack, H bytes) | value 0 | value 1 | ...

header = ``["icnd-coll", 1, kind, root, [len(value 0), len(value 1), ...]]``;
each value is one function value encoded by `icnd.compute.values`
(`encode_value`: arrays as raw bytes with dtype and shape, never pickled).
``bcast``, ``gather`` and ``allgather`` carry one value; ``scatter`` and
``alltoall`` carry one per destination rank, in rank order, so rank d fetches
only the segments that hold bytes ``span(d)``: segment 0 for the header (every
receiver shares it), then those its own slice covers.

The header names the collective and its root, so a rank that called a
different collective than the one fetching from it, or with another root,
is an error naming that rank, never a wrong answer (`Header.check`).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Sequence

import msgpack

from icnd.errors import Error

MAGIC = "icnd-coll"
FORMAT = 1
LENGTH = struct.Struct(">I")
MAX_HEADER = 64 * 1024  # 256 ranks' lengths take < 3 KiB
KINDS = ("bcast", "gather", "allgather", "scatter", "alltoall")


class PackingError(Error, ValueError):
    """A rank's part that does not match this call: malformed, or another collective's."""


@dataclass(frozen=True, slots=True)
class Header:
    kind: str
    root: int  # -1 where the collective has none (allgather, alltoall)
    lengths: tuple[int, ...]
    start: int  # where value 0 begins: 4 + H

    @property
    def total(self) -> int:
        return self.start + sum(self.lengths)

    def span(self, i: int) -> tuple[int, int]:
        """Bytes [a, b) of value `i`."""
        a = self.start + sum(self.lengths[:i])
        return a, a + self.lengths[i]

    def check(self, kind: str, root: int, count: int, whose: str) -> None:
        """Refuse a part not made by the same collective call (kind, root, number of values)."""
        if self.kind != kind or self.root != root:
            mine = f"{kind}" + (f" (root {root})" if root >= 0 else "")
            theirs = f"{self.kind}" + (f" (root {self.root})" if self.root >= 0 else "")
            raise PackingError(f"{whose} called {theirs} where this rank called {mine}: every rank must call "
                               "the same collectives in the same order")
        if len(self.lengths) != count:
            raise PackingError(f"{whose} sent {len(self.lengths)} values to {kind}; {count} expected "
                               "(one per rank)" if count > 1 else f"{whose} sent {len(self.lengths)} values; 1 expected")


def pack(kind: str, root: int, values: Sequence[bytes]) -> tuple[bytes, int]:
    """The part's prefix (length and header) and its total size; the values follow it in order."""
    if kind not in KINDS:
        raise ValueError(f"unknown collective {kind!r}")
    header = msgpack.packb([MAGIC, FORMAT, kind, root, [len(v) for v in values]])
    if len(header) > MAX_HEADER:
        raise ValueError(f"{len(values)} values make a {len(header)}-byte header (at most {MAX_HEADER})")
    prefix = LENGTH.pack(len(header)) + header
    return prefix, len(prefix) + sum(len(v) for v in values)


def header_length(prefix: bytes | memoryview) -> int:
    """How many leading bytes hold the header (length included); needs 4."""
    if len(prefix) < LENGTH.size:
        raise PackingError(f"a collective part of {len(prefix)} bytes has no header")
    (n,) = LENGTH.unpack_from(prefix)
    if not 0 < n <= MAX_HEADER:
        raise PackingError(f"a collective part's header of {n} bytes (at most {MAX_HEADER})")
    return LENGTH.size + n


def parse(prefix: bytes | memoryview, total: int) -> Header:
    """The header of a part of `total` bytes whose first `header_length` bytes are `prefix`."""
    end = header_length(prefix)
    if len(prefix) < end:
        raise PackingError(f"header of {end} bytes, only {len(prefix)} given")
    try:
        fields = msgpack.unpackb(bytes(prefix[LENGTH.size:end]), raw=False, strict_map_key=True)
    except (ValueError, msgpack.UnpackException) as exc:
        raise PackingError(f"malformed collective header: {exc}") from None
    if not (isinstance(fields, list) and len(fields) == 5 and fields[0] == MAGIC):
        raise PackingError("not a collective part (no icnd-coll header): the rank took part in a reduction "
                           "where this rank called a collective that moves values")
    _, fmt, kind, root, lengths = fields
    if fmt != FORMAT or kind not in KINDS or type(root) is not int or not isinstance(lengths, list) \
            or not all(type(n) is int and n > 0 for n in lengths) or not lengths:
        raise PackingError(f"malformed collective header: {fields!r:.200}")
    header = Header(kind, root, tuple(lengths), end)
    if header.total != total:
        raise PackingError(f"the header describes {header.total} bytes, the part has {total}")
    return header
