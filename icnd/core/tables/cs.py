"""Content Store: a byte-bounded cache of Data.

Invariants:
- ``bytes_used`` is the sum of the stored Data's sizes (`data_size`: the
  encoding plus the content, the two buffers a Data holds) and never
  exceeds ``capacity_bytes`` after an insertion returns (least recently used
  entries are evicted first; a Data larger than the whole store is refused);
- `by_name` holds every stored name in recency order (least recently used
  first); `_index` (names in sorted order, for can_be_prefix lookups,
  erase-by-prefix and listing), when it exists, holds exactly the same names.  The index is built on the first
  ordered query and dropped again after ``INDEX_IDLE_LIMIT`` insertions
  without one, so exact-match-only traffic never pays for keeping it sorted;
- a Data is *fresh* until ``inserted + freshness_ms``; stale Data still
  answers Interests without must_be_fresh.
Lookups with an implicit digest as last component match the Data whose full
name (name + sha256digest) equals the Interest name.

`by_name` (name components -> `CsEntry`) is public, read-only for callers,
so the forwarder can test whether an exact name is stored at the cost of a
dict probe before it pays for `lookup`; only this class changes it.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Iterator

from sortedcontainers import SortedList

from icnd.codec import encode, implicit_digest
from icnd.name import T_DIGEST
from icnd.packet import Data, Interest

MAX_PREFIX_SCAN = 64  # can_be_prefix + must_be_fresh: stale entries skipped at most
INDEX_IDLE_LIMIT = 200_000


@dataclass(slots=True)
class CsEntry:
    data: Data
    size: int
    fresh_until: float
    digest: bytes | None = None

    def full_digest(self) -> bytes:
        if self.digest is None:
            self.digest = implicit_digest(self.data)
        return self.digest


def data_size(data: Data) -> int:
    """The memory a stored Data holds: its encoding and its content (separate buffers)."""
    return len(encode(data)) + len(data.content)


class ContentStore:
    def __init__(self, capacity_bytes: int = 64 * 1024 * 1024) -> None:
        self.capacity_bytes = capacity_bytes
        self.bytes_used = 0
        self.evictions = 0
        self.evicted_unverified = 0  # Data removed by `discard_exact` (failed a consumer's verification)
        self.by_name: OrderedDict[tuple[bytes, ...], CsEntry] = OrderedDict()
        self._index: SortedList | None = None
        self._index_idle = 0

    def __len__(self) -> int:
        return len(self.by_name)

    def insert(self, data: Data, now: float) -> bool:
        """Store (or refresh) `data`; False if it cannot fit at all."""
        size = len(encode(data)) + len(data.content)  # data_size, inlined: the hot path
        if size > self.capacity_bytes:
            return False
        key = data.name.comps
        index = self._index
        old = self.by_name.pop(key, None)
        if old is not None:
            self.bytes_used -= old.size
        elif index is not None:
            index.add(key)
            self._index_idle += 1
            if self._index_idle > INDEX_IDLE_LIMIT:
                self._index = index = None
        self.by_name[key] = CsEntry(data, size, now + data.freshness_ms / 1000.0)
        self.bytes_used += size
        while self.bytes_used > self.capacity_bytes:
            victim, entry = self.by_name.popitem(last=False)
            if index is not None:
                index.remove(victim)
            self.bytes_used -= entry.size
            self.evictions += 1
        return True

    def _ordered(self) -> SortedList:
        index = self._index
        if index is None:
            index = self._index = SortedList(self.by_name)
        self._index_idle = 0
        return index

    def lookup(self, interest: Interest, now: float) -> Data | None:
        comps = interest.name.comps
        lru = self.by_name
        if not interest.can_be_prefix:
            entry = lru.get(comps)
            if entry is None and comps and comps[-1][0] == T_DIGEST:
                entry = lru.get(comps[:-1])
                if entry is not None and entry.full_digest() != comps[-1][1:]:
                    entry = None
            if entry is None or (interest.must_be_fresh and entry.fresh_until <= now):
                return None
            lru.move_to_end(entry.data.name.comps)
            return entry.data
        n = len(comps)
        index = self._ordered()
        pos = index.bisect_left(comps)
        for i in range(pos, min(pos + MAX_PREFIX_SCAN, len(index))):
            key = index[i]
            if key[:n] != comps:
                break
            entry = lru[key]
            if interest.must_be_fresh and entry.fresh_until <= now:
                continue
            lru.move_to_end(key)
            return entry.data
        return None

    def discard(self, comps: tuple[bytes, ...]) -> bool:
        """Remove the Data named exactly `comps`, if stored."""
        entry = self.by_name.pop(comps, None)
        if entry is None:
            return False
        if self._index is not None:
            self._index.remove(comps)
        self.bytes_used -= entry.size
        return True

    def discard_exact(self, full: tuple[bytes, ...]) -> bool:
        """Remove the Data whose full name (name + implicit digest) is `full`,
        if stored: a Data with the same name but other bytes is kept.  For a
        consumer that found a stored Data failing verification [issue #15, D8]."""
        if not full or full[-1][0] != T_DIGEST:
            return False
        entry = self.by_name.get(full[:-1])
        if entry is None or entry.full_digest() != full[-1][1:]:
            return False
        self.evicted_unverified += 1
        return self.discard(full[:-1])

    def erase(self, prefix: tuple[bytes, ...]) -> int:
        """Remove every Data under `prefix`; returns how many."""
        n = len(prefix)
        index = self._ordered()
        pos = index.bisect_left(prefix)
        victims = []
        for i in range(pos, len(index)):
            key = index[i]
            if key[:n] != prefix:
                break
            victims.append(key)
        for key in victims:
            index.remove(key)
            self.bytes_used -= self.by_name.pop(key).size
        return len(victims)

    def entries(self, prefix: tuple[bytes, ...] = ()) -> Iterator[CsEntry]:
        """Iterate stored Data under `prefix` in name order."""
        n = len(prefix)
        index = self._ordered()
        for i in range(index.bisect_left(prefix), len(index)):
            key = index[i]
            if key[:n] != prefix:
                break
            yield self.by_name[key]
