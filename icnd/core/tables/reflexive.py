"""Reflexive forwarding (draft-irtf-icnrg-reflexive-forwarding): the rules and
the reflexive table.

A consumer's *trigger Interest* (TI) ends in a fresh 16-byte reflexive name
prefix, ``/.../rnp=R``.  The producer answers with *reflexive Interests* (RI)
``/rnp=R/...`` that retrace the TI's path back to the consumer, which answers
them with reflexive Data (RD); the *trigger Data* (TD) named like the TI ends
the exchange.  A forwarder keeps one `ReflexiveEntry` per RNP it forwarded a
TI for.  The rules, all applied by the forwarder's pipelines
(`icnd.core.fw.forwarder`), in one place:

1. Placement.  A name holds at most one ``rnp=`` component (16 bytes), and
   only as its first component (an RI) or its last (a TI, at least two
   components).  Anything else -- two RNPs (an RI that is also a TI:
   recursive RF), an RNP in the middle, a wrong length -- is Nacked
   *malformed*.  A route (`Fib.add`) may not contain an RNP: RIs are never
   forwarded by the FIB.
2. TI.  Loop checks and PIT as for any Interest.  The Content Store cannot
   answer it (rule 4), which lets the forwarder test for an RNP only after a
   Content Store miss.  The strategy sends it to ONE next hop: a multi-path
   strategy (multicast) is replaced by best-route for TIs; best-route may
   still fail over on a Nack or retransmit as usual.  The entry is created
   (before the TI is sent, so `TableFull` can still refuse it with Nack
   *no-resources*) or refreshed by a retransmission: consumer faces = the
   TI's in-faces, producer faces = the faces it went out on.  A live entry
   of the same RNP belonging to another TI (another name or other
   selectors) makes the new TI a collision: Nack *prohibited*, the old entry
   stays.  A TI retransmission never shortens a lifetime an RI extended.
3. RI.  Looked up here by RNP only, never by FIB.  No live entry (never
   created, closed by TD, TI expired) or a *prohibited* one: Nack
   *no-route* to the producer.  Arrived on a face the TI was not forwarded
   on: dropped silently (counted) -- off-path RI injection.  More than
   ``max_ri_per_ti`` RIs forwarded under one RNP: Nack *prohibited*.
   Otherwise PIT insert or aggregate as usual and send to the consumer
   faces.  Each accepted RI extends the TI PIT entry to
   ``max(current, now + 1.5 x RI lifetime)``, at most ``max_extended``
   seconds after the TI entry was created (`extend`).
4. RD is never cached, nor is any Data with an ``rnp=`` component: the
   simplest way to guarantee that reflexive Data is never served outside
   its exchange (nothing to purge on TD or TI expiry; no Interest with an
   RNP can hit the Content Store).  The cost: an RI retransmitted after a lost RD travels to the
   consumer again instead of being answered one hop away.
5. TD satisfies the TI like any Data (never cached); removing the TI PIT
   entry for any reason -- TD, expiry, every upstream Nacked, last in-face
   down -- removes its reflexive entry.
6. A Nack *prohibited* on an RI from a consumer face sets `prohibited`
   (the consumer's kill switch: later RIs get Nack no-route, so a producer
   can no longer keep the TI alive); the Nack goes on toward the producer as
   usual.
7. Face down: the face leaves every entry's producer faces and consumer
   faces; an entry left without consumer faces is removed (its TI PIT entry
   has lost its last in-record too).

Invariants of `ReflexiveTable`:
- at most one entry per RNP (key: the RNP's wire-form component), and an
  entry exists exactly while its TI PIT entry is in the PIT
  (``not rf.ti_entry.removed``);
- ``rf.consumer_faces == set(rf.ti_entry.in_records)``; no face is a
  consumer face of more than ``max_per_face`` entries, and there are at most
  ``max_entries`` entries (`insert` and `add_consumer` raise `TableFull`);
  `per_face` (a `FaceQuota`, read-only for callers) counts the entries each
  face is a consumer face of;
- ``rf.expiry == rf.ti_entry.expiry + grace`` whenever the forwarder has
  changed the TI's expiry (arrival, extension, Nack, face down): the Cefore
  buffer; it only matters for an RI that arrives before the TI's expiry
  timer has run.
"""

from __future__ import annotations

from typing import Iterator

from icnd.core.tables.fib import TableFull
from icnd.core.tables.pit import PitEntry
from icnd.core.tables.quota import FaceQuota
from icnd.name import T_RNP

RF_GRACE = 1.0  # entry expiry = TI expiry + 1 s
TI_MAX_EXTENDED_LIFETIME = 60.0  # RIs keep a TI alive at most this long after it arrived
RI_EXTENSION_FACTOR = 1.5
MAX_RI_PER_TI = 4096


class ReflexiveEntry:
    """The state one forwarder keeps for one RNP (the draft's t-PIT)."""

    __slots__ = ("rnp", "ti_entry", "consumer_faces", "producer_faces", "expiry", "created",
                 "ri_count", "prohibited")

    def __init__(self, rnp: bytes, ti_entry: PitEntry, created: float, expiry: float) -> None:
        self.rnp = rnp  # wire form: T_RNP then the 16 value bytes
        self.ti_entry = ti_entry
        self.consumer_faces: set[int] = set()  # the TI's in-faces: where RIs go
        self.producer_faces: set[int] = set()  # where the TI went: where RIs may come from
        self.expiry = expiry
        self.created = created
        self.ri_count = 0  # RIs forwarded under this RNP
        self.prohibited = False  # the consumer Nacked an RI *prohibited*

    def __repr__(self) -> str:
        return (f"<ReflexiveEntry {self.rnp[1:].hex()} ti={self.ti_entry.interest.name} "
                f"consumers={sorted(self.consumer_faces)} producers={sorted(self.producer_faces)}"
                f"{' prohibited' if self.prohibited else ''}>")

    def live(self, now: float) -> bool:
        """RIs may be forwarded through this entry."""
        return not self.prohibited and now < self.expiry


class ReflexiveTable:
    def __init__(self, max_entries: int = 65536, max_per_face: int = 256, *, grace: float = RF_GRACE,
                 max_extended: float = TI_MAX_EXTENDED_LIFETIME, max_ri_per_ti: int = MAX_RI_PER_TI) -> None:
        self.max_entries = max_entries
        self.grace = grace
        self.max_extended = max_extended
        self.max_ri_per_ti = max_ri_per_ti
        self.entries: dict[bytes, ReflexiveEntry] = {}
        self.per_face = FaceQuota(max_per_face, "reflexive entries")

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[ReflexiveEntry]:
        return iter(self.entries.values())

    def get(self, rnp: bytes) -> ReflexiveEntry | None:
        """The entry for `rnp` (wire form), live or not."""
        return self.entries.get(rnp)

    def face_entries(self, face: int) -> int:
        """How many entries have `face` as a consumer face."""
        return self.per_face.get(face, 0)

    def insert(self, rnp: bytes, ti_entry: PitEntry, now: float) -> ReflexiveEntry:
        """A new entry for the TI `ti_entry` (which has its in-records)."""
        if rnp in self.entries:
            raise ValueError(f"reflexive entry {rnp[1:].hex()} exists")
        if len(self.entries) >= self.max_entries:
            raise TableFull(f"reflexive table is full ({self.max_entries} entries)")
        faces = tuple(ti_entry.in_records)
        per_face = self.per_face
        for face in faces:
            per_face.check(face)
        rf = ReflexiveEntry(rnp, ti_entry, now, ti_entry.expiry + self.grace)
        for face in faces:
            per_face.take(face)
            rf.consumer_faces.add(face)
        self.entries[rnp] = rf
        return rf

    def add_consumer(self, rf: ReflexiveEntry, face: int) -> None:
        if face not in rf.consumer_faces:
            self.per_face.take(face)
            rf.consumer_faces.add(face)

    def remove_consumer(self, rf: ReflexiveEntry, face: int) -> None:
        if face in rf.consumer_faces:
            rf.consumer_faces.discard(face)
            self.per_face.release(face)

    def update(self, rf: ReflexiveEntry) -> None:
        """After the TI was (re)sent or refreshed: its out-faces become
        producer faces, and the entry expires `grace` after it."""
        rf.producer_faces.update(rf.ti_entry.out_records)
        rf.expiry = rf.ti_entry.expiry + self.grace

    def extend(self, rf: ReflexiveEntry, ri_lifetime: float, now: float) -> bool:
        """Rule 3: an accepted RI of `ri_lifetime` seconds keeps the TI alive
        until ``max(current, now + 1.5 x ri_lifetime)``, never beyond
        ``created + max_extended``.  True if the TI's expiry moved."""
        ti = rf.ti_entry
        until = min(now + RI_EXTENSION_FACTOR * ri_lifetime, rf.created + self.max_extended)
        if until <= ti.expiry:
            return False
        ti.extend_to(until)
        rf.expiry = ti.expiry + self.grace
        return True

    def remove(self, rf: ReflexiveEntry) -> None:
        if self.entries.get(rf.rnp) is rf:
            del self.entries[rf.rnp]
            for face in rf.consumer_faces:
                self.per_face.release(face)
            rf.consumer_faces = set()

    def remove_face(self, face: int) -> list[ReflexiveEntry]:
        """Rule 7; returns the entries removed (left without consumers)."""
        removed: list[ReflexiveEntry] = []
        for rf in list(self.entries.values()):
            rf.producer_faces.discard(face)
            if face in rf.consumer_faces:
                self.remove_consumer(rf, face)
                if not rf.consumer_faces:
                    self.remove(rf)
                    removed.append(rf)
        return removed


NOT_REFLEXIVE, TRIGGER, REFLEXIVE, MALFORMED = "none", "trigger", "reflexive", "malformed"
RNP_WIRE_LEN = 17  # type byte + 16 value bytes


def has_rnp(comps: tuple[bytes, ...]) -> bool:
    return any(c[0] == T_RNP for c in comps)


def classify(comps: tuple[bytes, ...]) -> tuple[str, str]:
    """Rule 1: (kind, why) for a name; `why` explains MALFORMED.

    The slow path: the forwarder calls it only for names with a component of
    type >= ``T_RNP`` (one ``max(comps)`` on the fast path)."""
    found = [i for i, c in enumerate(comps) if c[0] == T_RNP]
    if not found:
        return NOT_REFLEXIVE, ""
    if len(found) > 1:
        return MALFORMED, "more than one rnp= component (recursive reflexive forwarding is refused)"
    i = found[0]
    if len(comps[i]) != RNP_WIRE_LEN:
        return MALFORMED, f"an rnp= component holds 16 bytes, not {len(comps[i]) - 1}"
    if i == 0:
        return REFLEXIVE, ""
    if i == len(comps) - 1:
        return TRIGGER, ""
    return MALFORMED, "an rnp= component must be the first or the last"
