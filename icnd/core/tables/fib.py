"""Forwarding Information Base: name prefix -> next hops with costs.

Invariants:
- an entry exists only while it has at least one next hop;
- no prefix contains an ``rnp=`` component (`add` raises ValueError):
  reflexive Interests are forwarded only through the reflexive table;
- at most ``max_entries`` entries and ``max_nexthops`` next hops per entry
  (`add` raises `TableFull` beyond them, nothing is silently dropped);
- `nexthops` of an entry are sorted by (cost, face id), so strategies take
  the cheapest first and ties break deterministically;
- `_lengths` counts the entries per prefix length, so longest-prefix match
  probes only lengths that exist (one dict lookup per distinct length).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from icnd.errors import Error
from icnd.name import T_RNP, Name


class TableFull(Error):
    """A table refused an insertion because it is at its bound."""


@dataclass(slots=True)
class FibEntry:
    prefix: Name
    costs: dict[int, int] = field(default_factory=dict)  # face id -> cost
    nexthops: tuple[tuple[int, int], ...] = ()  # (face, cost), cheapest first
    faces: tuple[int, ...] = ()  # the faces of `nexthops`, in the same order

    def _resort(self) -> None:
        self.nexthops = tuple(sorted(self.costs.items(), key=lambda fc: (fc[1], fc[0])))
        self.faces = tuple(f for f, _ in self.nexthops)


class Fib:
    def __init__(self, max_entries: int = 1_000_000, max_nexthops: int = 64) -> None:
        self.max_entries = max_entries
        self.max_nexthops = max_nexthops
        self._entries: dict[tuple[bytes, ...], FibEntry] = {}
        self._lengths: dict[int, int] = {}
        self._probe: tuple[int, ...] = ()  # distinct prefix lengths, longest first

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[FibEntry]:
        return iter(self._entries.values())

    def add(self, prefix: Name, face: int, cost: int = 0) -> FibEntry:
        if cost < 0:
            raise ValueError("route cost must be >= 0")
        key = prefix.comps
        if any(c[0] == T_RNP for c in key):
            raise ValueError(f"{prefix}: a route may not contain an rnp= component "
                             "(reflexive names are never routed)")
        entry = self._entries.get(key)
        if entry is None:
            if len(self._entries) >= self.max_entries:
                raise TableFull(f"FIB is full ({self.max_entries} entries)")
            entry = self._entries[key] = FibEntry(prefix)
            self._count_length(len(key), +1)
        elif face not in entry.costs and len(entry.costs) >= self.max_nexthops:
            raise TableFull(f"{prefix} already has {self.max_nexthops} next hops")
        entry.costs[face] = cost
        entry._resort()
        return entry

    def remove(self, prefix: Name, face: int) -> bool:
        entry = self._entries.get(prefix.comps)
        if entry is None or face not in entry.costs:
            return False
        del entry.costs[face]
        if entry.costs:
            entry._resort()
        else:
            self._drop(prefix.comps)
        return True

    def remove_face(self, face: int) -> int:
        """Remove every next hop through `face`; returns how many were removed."""
        removed = 0
        for key, entry in list(self._entries.items()):
            if face in entry.costs:
                del entry.costs[face]
                removed += 1
                if entry.costs:
                    entry._resort()
                else:
                    self._drop(key)
        return removed

    def get(self, prefix: Name) -> FibEntry | None:
        return self._entries.get(prefix.comps)

    def longest_match(self, comps: tuple[bytes, ...]) -> FibEntry | None:
        n = len(comps)
        entries = self._entries
        for length in self._probe:
            if length <= n:
                entry = entries.get(comps[:length] if length < n else comps)
                if entry is not None:
                    return entry
        return None

    def _drop(self, key: tuple[bytes, ...]) -> None:
        del self._entries[key]
        self._count_length(len(key), -1)

    def _count_length(self, length: int, delta: int) -> None:
        count = self._lengths.get(length, 0) + delta
        if count:
            self._lengths[length] = count
        else:
            self._lengths.pop(length, None)
        self._probe = tuple(sorted(self._lengths, reverse=True))
