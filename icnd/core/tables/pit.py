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
- at most ``max_entries`` entries in all (`insert` raises `TableFull`) and
  ``max_per_face`` in-records per downstream face (`per_face`, a
  `FaceQuota`: `add_in_record` raises `TableFull`);
- local faces keep headroom (`local_faces`, kept by the forwarder): a
  non-local face may not create an entry beyond ``pool = max_entries -
  int(max_entries * local_reserve)``, and while the PIT holds more than half the pool a
  non-local face holds at most its fair share of in-records, ``max(FAIR_FLOOR,
  pool // (faces holding in-records + 1))`` (the ``+ 1`` leaves a
  newcomer room); these checks run only above half the pool, so normal
  traffic pays one comparison per new in-record;
- the application parameters the in-records' Interests carry are counted
  in bytes (`bytes_used`, `face_bytes`, a face -> bytes dict holding no
  zero): at most ``max_bytes`` in all, of which a non-local face may use
  at most ``bytes_pool`` (the same reserve taken off) together and ``max_bytes_per_face``
  (and, above half that pool, its fair share) each.  ``entry.interest`` is
  always the Interest of one of the entry's in-records (or of none once the
  last went), so the counted bytes are the bytes held.  Every refusal is a
  `PitFull` naming the forwarder counter it feeds;
- `prefix_entries` counts can_be_prefix entries and `digest_entries`
  entries whose name ends in an implicit digest, so Data matching skips the
  prefix and digest probes when there are none.

Read-only for callers: `by_name` (name components -> the entries of that
name, selectors aside), `prefix_entries`, `digest_entries` and `per_face`
are public so the forwarder's inlined fast paths can test them at the cost
of an attribute; only this class changes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from icnd.codec import full_name
from icnd.core.tables.fib import TableFull
from icnd.core.tables.quota import FaceQuota
from icnd.name import T_DIGEST
from icnd.packet import Data, Interest, NackReason

_INF = float("inf")


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


FAIR_FLOOR = 16  # in-records a non-local face may always hold (within the pool)
FAIR_FLOOR_BYTES = 1024 * 1024  # parameter bytes likewise


class PitFull(TableFull):
    """A PIT bound refused an entry or in-record; `counter` names the
    forwarder counter that counts it (``pit_full``, ``pit_local_reserve``,
    ``pit_fair_share``, ``pit_bytes_full``)."""

    def __init__(self, counter: str, message: str) -> None:
        super().__init__(message)
        self.counter = counter


def _params_len(interest: Interest) -> int:
    p = interest.app_params
    return len(p) if p else 0


class Pit:
    def __init__(self, max_entries: int = 100_000, max_per_face: int = 50_000, *,
                 local_reserve: float = 0.1, max_bytes: int = 256 * 1024 * 1024,
                 max_bytes_per_face: int = 64 * 1024 * 1024) -> None:
        """`local_reserve`: the share (0..0.9) of `max_entries` and of
        `max_bytes` only local faces may use."""
        if not 0.0 <= local_reserve <= 0.9:
            raise ValueError(f"local_reserve must be within 0..0.9, not {local_reserve}")
        self.max_entries = max_entries
        self.by_name: dict[tuple[bytes, ...], list[PitEntry]] = {}
        self.prefix_entries = 0
        self.digest_entries = 0
        self.per_face = FaceQuota(max_per_face, "pending Interests")
        self._count = 0
        self.local_faces: set[int] = set()
        # entries non-local faces may fill; above `_calm` the slow admission checks run
        self.pool = max_entries - int(max_entries * local_reserve)
        self._calm = self.pool // 2
        self.max_bytes = max_bytes
        self.max_bytes_per_face = max_bytes_per_face
        self.bytes_pool = max_bytes - int(max_bytes * local_reserve)
        self.bytes_used = 0
        self.face_bytes: dict[int, int] = {}

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[PitEntry]:
        for entries in self.by_name.values():
            yield from entries

    def find(self, interest: Interest) -> PitEntry | None:
        entries = self.by_name.get(interest.name.comps)
        if entries:
            cbp, mbf = interest.can_be_prefix, interest.must_be_fresh
            for e in entries:
                if e.interest.can_be_prefix == cbp and e.interest.must_be_fresh == mbf:
                    return e
        return None

    def insert(self, interest: Interest) -> PitEntry:
        if self._count >= self.max_entries:
            raise PitFull("pit_full", f"PIT is full ({self.max_entries} entries)")
        entry = PitEntry(interest)
        comps = interest.name.comps
        self.by_name.setdefault(comps, []).append(entry)
        self._count += 1
        if interest.can_be_prefix:
            self.prefix_entries += 1
        if comps and comps[-1][0] == T_DIGEST:
            self.digest_entries += 1
        return entry

    def add_in_record(self, entry: PitEntry, face: int, interest: Interest, expiry: float) -> None:
        record = entry.in_records.get(face)
        if record is None:
            per_face = self.per_face  # FaceQuota.take, inlined: every new Interest comes here
            held = per_face.get(face, 0)
            if held >= per_face.limit:
                raise PitFull("pit_full", f"face {face} has {per_face.limit} pending Interests")
            if self._count > self._calm:  # the slow path: local reserve and fair shares
                self._admit(entry, face, held)
            if interest.app_params:
                self._take_bytes(face, len(interest.app_params))
            per_face[face] = held + 1
            entry.in_records[face] = InRecord(interest.nonce, expiry, interest)
            if expiry > entry.expiry:
                entry.expiry = expiry
        else:
            old = record.interest
            if old.app_params or interest.app_params:
                grow = _params_len(interest) - _params_len(old)
                if grow > 0:
                    self._take_bytes(face, grow)
                elif grow < 0:
                    self._release_bytes(face, -grow)
            if old is entry.interest:  # same name and selectors: hold one Interest, not two
                entry.interest = interest
            record.nonce = interest.nonce
            record.expiry = expiry
            record.interest = interest
            entry.expiry = max(r.expiry for r in entry.in_records.values())

    def _admit(self, entry: PitEntry, face: int, held: int) -> None:
        """Above half the pool: a non-local face may not take the local
        reserve nor more than its fair share (`PitFull` otherwise)."""
        if face in self.local_faces:
            return
        if not entry.in_records and self._count > self.pool:  # `insert` counted this entry
            raise PitFull("pit_local_reserve",
                          f"PIT is full for non-local faces ({self.pool} of {self.max_entries} entries; "
                          "the rest is reserved for local faces)")
        share = max(FAIR_FLOOR, self.pool // (len(self.per_face) + 1))
        if held >= share:
            raise PitFull("pit_fair_share",
                          f"face {face} has its fair share of the PIT ({held} pending Interests)")

    def _take_bytes(self, face: int, n: int) -> None:
        """Count `n` more parameter bytes for `face`, or raise `PitFull`."""
        used = self.bytes_used
        held = self.face_bytes.get(face, 0)
        if face in self.local_faces:
            if used + n > self.max_bytes:
                raise PitFull("pit_bytes_full",
                              f"PIT holds {used} bytes of Interest parameters (bound {self.max_bytes})")
        else:
            pool = self.bytes_pool
            if used + n > pool:
                raise PitFull("pit_bytes_full",
                              f"PIT holds {used} bytes of Interest parameters (non-local faces' bound {pool}; "
                              "the rest is reserved for local faces)")
            if held + n > self.max_bytes_per_face:
                raise PitFull("pit_bytes_full",
                              f"face {face} holds {held} bytes of Interest parameters in the PIT "
                              f"(bound {self.max_bytes_per_face})")
            if used + n > pool // 2 and held + n > max(FAIR_FLOOR_BYTES, pool // (len(self.face_bytes) + 1)):
                raise PitFull("pit_fair_share",
                              f"face {face} has its fair share of the PIT's parameter bytes ({held} bytes)")
        self.bytes_used = used + n
        self.face_bytes[face] = held + n

    def _release_bytes(self, face: int, n: int) -> None:
        self.bytes_used -= n
        left = self.face_bytes[face] - n
        if left:
            self.face_bytes[face] = left
        else:
            del self.face_bytes[face]

    def remove_in_record(self, entry: PitEntry, face: int) -> None:
        record = entry.in_records.pop(face, None)
        if record is not None:
            self.per_face.release(face)
            if record.interest.app_params:
                self._release_bytes(face, len(record.interest.app_params))
            if entry.in_records:
                entry.expiry = max(r.expiry for r in entry.in_records.values())
                if record.interest is entry.interest:  # keep holding only counted Interests
                    entry.interest = next(iter(entry.in_records.values())).interest

    def remove(self, entry: PitEntry) -> None:
        if entry.removed:
            return
        entry.removed = True
        comps = entry.comps
        entries = self.by_name[comps]
        if len(entries) == 1:
            del self.by_name[comps]
        else:
            entries.remove(entry)
        self._count -= 1
        if entry.interest.can_be_prefix:
            self.prefix_entries -= 1
        if comps and comps[-1][0] == T_DIGEST:
            self.digest_entries -= 1
        per_face = self.per_face
        for face in entry.in_records:  # FaceQuota.release, inlined: every satisfied entry comes here
            left = per_face[face] - 1
            if left:
                per_face[face] = left
            else:
                del per_face[face]
        if self.bytes_used:  # parameter bytes: only while some are held
            for face, record in entry.in_records.items():
                if record.interest.app_params:
                    self._release_bytes(face, len(record.interest.app_params))
        entry.in_records.clear()
        entry.out_records.clear()

    def match_data(self, data: Data) -> list[PitEntry]:
        """Every entry the Data satisfies (exact, can_be_prefix, implicit digest)."""
        comps = data.name.comps
        by_name = self.by_name
        found = list(by_name.get(comps, ()))
        if self.prefix_entries:
            for n in range(len(comps)):
                for e in by_name.get(comps[:n], ()):
                    if e.interest.can_be_prefix:
                        found.append(e)
        if self.digest_entries:
            full = full_name(data).comps
            found.extend(by_name.get(full, ()))
        return found

    def match_nack(self, comps: tuple[bytes, ...], face: int, nonce: int) -> PitEntry | None:
        """The entry whose out-record on `face` carries `nonce`."""
        for e in self.by_name.get(comps, ()):
            out = e.out_records.get(face)
            if out is not None and out.nonce == nonce:
                return e
        return None

    def face_records(self, face: int) -> int:
        """How many in-records `face` holds."""
        return self.per_face.get(face, 0)
