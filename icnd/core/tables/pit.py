"""Pending Interest Table.

An entry stands for one pending Interest name + selectors (can_be_prefix,
must_be_fresh).  It remembers who asked (in-records, one per downstream face)
and where it was sent (out-records, one per upstream face).

Invariants:
- entries are unique per (name, can_be_prefix, must_be_fresh);
- an entry has at least one in-record while it is in the table (the pipeline
  removes it when the last one goes);
- ``entry.expiry`` is the latest in-record expiry (recomputed when an
  in-record is refreshed or removed; `PitEntry.extend_to` moves records and
  entry together); the forwarder's timer removes the entry once
  ``now >= entry.expiry``, so no entry outlives its last in-record;
- at most ``max_entries`` entries in all and ``max_per_face`` in-records per
  downstream face (`insert` raises `TableFull`);
- `_cbp` counts can_be_prefix entries and `_digest` entries whose name ends
  in an implicit digest, so Data matching skips the prefix and digest probes
  when there are none.
"""

from __future__ import annotations

from dataclasses import dataclass

from icnd.name import T_DIGEST

_INF = float("inf")
from icnd.packet import Data, Interest, NackReason
from icnd.core.tables.fib import TableFull


@dataclass(slots=True)
class InRecord:
    nonce: int
    expiry: float
    interest: Interest


@dataclass(slots=True)
class OutRecord:
    nonce: int
    sent_at: float
    expiry: float
    nacked: NackReason | None = None


class PitEntry:
    """One pending Interest (a plain slotted class: created per Interest, so
    its constructor is kept cheaper than a dataclass with factories)."""

    __slots__ = ("interest", "comps", "expiry", "in_records", "out_records", "timer_at",
                 "last_forwarded", "suppress", "removed")

    def __init__(self, interest: Interest) -> None:
        self.interest = interest  # the first Interest: name and selectors
        self.comps: tuple[bytes, ...] = interest.name.comps
        self.expiry = 0.0
        self.in_records: dict[int, InRecord] = {}
        self.out_records: dict[int, OutRecord] = {}
        self.timer_at = _INF  # when the forwarder's authoritative expiry timer fires
        self.last_forwarded = -_INF
        self.suppress = 0.0
        self.removed = False

    def __repr__(self) -> str:
        return f"<PitEntry {self.interest.name} in={sorted(self.in_records)} out={sorted(self.out_records)}>"

    def selectors(self) -> tuple[bool, bool]:
        return (self.interest.can_be_prefix, self.interest.must_be_fresh)

    def has_pending_out(self, now: float) -> bool:
        return any(o.nacked is None and o.expiry > now for o in self.out_records.values())

    def all_out_nacked(self) -> bool:
        return bool(self.out_records) and all(o.nacked is not None for o in self.out_records.values())

    def extend_to(self, until: float) -> None:
        """Keep the entry pending at least until `until`: every in-record
        (so Data still reaches every downstream) and every un-Nacked
        out-record live that long.  Used by reflexive forwarding, whose RIs
        keep their trigger Interest alive."""
        for rec in self.in_records.values():
            if rec.expiry < until:
                rec.expiry = until
        for out in self.out_records.values():
            if out.nacked is None and out.expiry < until:
                out.expiry = until
        if self.expiry < until:
            self.expiry = until


class Pit:
    def __init__(self, max_entries: int = 100_000, max_per_face: int = 50_000) -> None:
        self.max_entries = max_entries
        self.max_per_face = max_per_face
        self._by_name: dict[tuple[bytes, ...], list[PitEntry]] = {}
        self._count = 0
        self._cbp = 0
        self._digest = 0
        self._per_face: dict[int, int] = {}

    def __len__(self) -> int:
        return self._count

    def __iter__(self):
        for entries in self._by_name.values():
            yield from entries

    def find(self, interest: Interest) -> PitEntry | None:
        entries = self._by_name.get(interest.name.comps)
        if entries:
            cbp, mbf = interest.can_be_prefix, interest.must_be_fresh
            for e in entries:
                if e.interest.can_be_prefix == cbp and e.interest.must_be_fresh == mbf:
                    return e
        return None

    def insert(self, interest: Interest) -> PitEntry:
        if self._count >= self.max_entries:
            raise TableFull(f"PIT is full ({self.max_entries} entries)")
        entry = PitEntry(interest)
        comps = interest.name.comps
        self._by_name.setdefault(comps, []).append(entry)
        self._count += 1
        if interest.can_be_prefix:
            self._cbp += 1
        if comps and comps[-1][0] == T_DIGEST:
            self._digest += 1
        return entry

    def add_in_record(self, entry: PitEntry, face: int, interest: Interest, expiry: float) -> None:
        record = entry.in_records.get(face)
        if record is None:
            held = self._per_face.get(face, 0)
            if held >= self.max_per_face:
                raise TableFull(f"face {face} has {self.max_per_face} pending Interests")
            self._per_face[face] = held + 1
            entry.in_records[face] = InRecord(interest.nonce, expiry, interest)
            if expiry > entry.expiry:
                entry.expiry = expiry
        else:
            record.nonce = interest.nonce
            record.expiry = expiry
            record.interest = interest
            entry.expiry = max(r.expiry for r in entry.in_records.values())

    def remove_in_record(self, entry: PitEntry, face: int) -> None:
        if entry.in_records.pop(face, None) is not None:
            self._release(face)
            if entry.in_records:
                entry.expiry = max(r.expiry for r in entry.in_records.values())

    def _release(self, face: int) -> None:
        left = self._per_face[face] - 1
        if left:
            self._per_face[face] = left
        else:
            del self._per_face[face]

    def remove(self, entry: PitEntry) -> None:
        if entry.removed:
            return
        entry.removed = True
        comps = entry.comps
        entries = self._by_name[comps]
        if len(entries) == 1:
            del self._by_name[comps]
        else:
            entries.remove(entry)
        self._count -= 1
        if entry.interest.can_be_prefix:
            self._cbp -= 1
        if comps and comps[-1][0] == T_DIGEST:
            self._digest -= 1
        per_face = self._per_face
        for face in entry.in_records:  # _release, inlined: every satisfied entry comes here
            left = per_face[face] - 1
            if left:
                per_face[face] = left
            else:
                del per_face[face]
        entry.in_records.clear()
        entry.out_records.clear()

    def match_data(self, data: Data) -> list[PitEntry]:
        """Every entry the Data satisfies (exact, can_be_prefix, implicit digest)."""
        comps = data.name.comps
        by_name = self._by_name
        found = list(by_name.get(comps, ()))
        if self._cbp:
            for n in range(len(comps)):
                for e in by_name.get(comps[:n], ()):
                    if e.interest.can_be_prefix:
                        found.append(e)
        if self._digest:
            full = data.full_name().comps
            found.extend(by_name.get(full, ()))
        return found

    def match_nack(self, comps: tuple[bytes, ...], face: int, nonce: int) -> PitEntry | None:
        """The entry whose out-record on `face` carries `nonce`."""
        for e in self._by_name.get(comps, ()):
            out = e.out_records.get(face)
            if out is not None and out.nonce == nonce:
                return e
        return None

    def face_records(self, face: int) -> int:
        return self._per_face.get(face, 0)
