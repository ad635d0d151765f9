"""Per-face quotas: how many records each face holds against one bound.

The PIT bounds the in-records of each downstream face and the reflexive
table the entries each consumer face is in, so one face cannot fill a table
shared by all.  Both count with a `FaceQuota`.

Invariants: a `FaceQuota` is a dict face -> count that holds no zero (a face
that holds nothing is absent), and no count exceeds ``limit``: `take` raises
`TableFull` instead.  It is a plain dict underneath so that a hot path may
inline `take` and `release` against it at the cost of a dict (the PIT does,
for the in-record of every new Interest and every satisfied entry); every
other caller goes through the methods.
"""

from __future__ import annotations

from icnd.core.tables.fib import TableFull


class FaceQuota(dict[int, int]):
    __slots__ = ("limit", "what")

    def __init__(self, limit: int, what: str) -> None:
        """`what` names the records counted, for `TableFull` messages
        ("face 3 has 256 reflexive entries")."""
        super().__init__()
        self.limit = limit
        self.what = what

    def held(self, face: int) -> int:
        """How many records `face` holds."""
        return self.get(face, 0)

    def full(self, face: int) -> TableFull:
        """The error for `face` being at the limit."""
        return TableFull(f"face {face} has {self.limit} {self.what}")

    def check(self, face: int) -> None:
        """Raise `TableFull` unless `face` may take one more record."""
        if self.get(face, 0) >= self.limit:
            raise self.full(face)

    def take(self, face: int) -> None:
        """Count one more record for `face`; `TableFull` at the limit."""
        held = self.get(face, 0)
        if held >= self.limit:
            raise self.full(face)
        self[face] = held + 1

    def release(self, face: int) -> None:
        """Count one record less for `face` (which holds at least one)."""
        left = self[face] - 1
        if left:
            self[face] = left
        else:
            del self[face]
