"""Unit tests for the Pending Interest Table (icnd.core.tables.pit)."""

from __future__ import annotations

import pytest

from icnd.codec import full_name
from icnd.core.tables.fib import TableFull
from icnd.core.fw.forwarder import Forwarder
from icnd.core.tables.pit import OutRecord, Pit, PitFull
from icnd.name import Name
from icnd.packet import Data, Interest


def interest(uri: str | Name, nonce: int = 1, cbp: bool = False, mbf: bool = False, lifetime_ms: int = 4000):
    name = uri if isinstance(uri, Name) else Name(uri)
    return Interest(name, nonce=nonce, lifetime_ms=lifetime_ms, can_be_prefix=cbp, must_be_fresh=mbf)


def ids(entries) -> set[int]:
    return {id(e) for e in entries}


# --- insert / find -------------------------------------------------------------


def test_insert_then_find():
    pit = Pit()
    i = interest("/a/b")
    assert pit.find(i) is None
    e = pit.insert(i)
    assert len(pit) == 1
    assert pit.find(i) is e
    # a different nonce / lifetime is the same entry
    assert pit.find(interest("/a/b", nonce=99, lifetime_ms=100)) is e
    assert pit.find(interest("/a")) is None
    assert pit.find(interest("/a/b/c")) is None
    assert list(pit) == [e]
    assert e.comps == Name("/a/b").comps
    assert e.selectors() == (False, False)


def test_selectors_make_distinct_entries():
    pit = Pit()
    entries = {}
    for cbp in (False, True):
        for mbf in (False, True):
            i = interest("/a", cbp=cbp, mbf=mbf)
            assert pit.find(i) is None
            entries[cbp, mbf] = pit.insert(i)
    assert len(pit) == 4
    assert len(ids(entries.values())) == 4
    for (cbp, mbf), e in entries.items():
        assert pit.find(interest("/a", nonce=5, cbp=cbp, mbf=mbf)) is e
        assert e.selectors() == (cbp, mbf)
    assert ids(pit) == ids(entries.values())


def test_remove_entry():
    pit = Pit()
    e1 = pit.insert(interest("/a"))
    e2 = pit.insert(interest("/a", cbp=True))
    pit.remove(e1)
    assert e1.removed
    assert len(pit) == 1
    assert pit.find(interest("/a")) is None
    assert pit.find(interest("/a", cbp=True)) is e2
    pit.remove(e1)  # idempotent
    assert len(pit) == 1
    pit.remove(e2)
    assert len(pit) == 0
    assert list(pit) == []
    assert pit.find(interest("/a", cbp=True)) is None


# --- in-records and expiry --------------------------------------------------------


def test_in_record_add_sets_expiry():
    pit = Pit()
    i = interest("/a", nonce=1)
    e = pit.insert(i)
    pit.add_in_record(e, 1, i, 5.0)
    assert e.expiry == 5.0
    rec = e.in_records[1]
    assert (rec.nonce, rec.expiry, rec.interest) == (1, 5.0, i)
    assert pit.face_records(1) == 1


def test_in_record_refresh_updates_record_and_raises_expiry():
    pit = Pit()
    i1 = interest("/a", nonce=1)
    e = pit.insert(i1)
    pit.add_in_record(e, 1, i1, 5.0)
    i2 = interest("/a", nonce=2)
    pit.add_in_record(e, 1, i2, 8.0)
    assert len(e.in_records) == 1
    assert pit.face_records(1) == 1  # a refresh is not a new record
    rec = e.in_records[1]
    assert (rec.nonce, rec.expiry, rec.interest) == (2, 8.0, i2)
    assert e.expiry == 8.0


def test_entry_expiry_is_monotonic_and_covers_every_in_record():
    pit = Pit()
    i = interest("/a")
    e = pit.insert(i)
    pit.add_in_record(e, 1, i, 5.0)
    pit.add_in_record(e, 2, i, 3.0)  # earlier in-record from another face
    assert e.expiry == 5.0
    pit.add_in_record(e, 3, i, 9.0)
    assert e.expiry == 9.0
    pit.add_in_record(e, 2, i, 7.0)
    assert e.expiry == 9.0
    assert all(e.expiry >= r.expiry for r in e.in_records.values())
    assert e.expiry == max(r.expiry for r in e.in_records.values())


# --- bounds ------------------------------------------------------------------------


def test_global_bound_raises_table_full():
    pit = Pit(max_entries=2)
    pit.insert(interest("/a"))
    e = pit.insert(interest("/b"))
    with pytest.raises(TableFull):
        pit.insert(interest("/c"))
    assert len(pit) == 2
    assert pit.find(interest("/c")) is None
    pit.remove(e)
    pit.insert(interest("/c"))
    assert len(pit) == 2


def test_per_face_bound_raises_table_full():
    pit = Pit(max_per_face=2)
    ea, eb, ec = (pit.insert(interest(u)) for u in ("/a", "/b", "/c"))
    pit.add_in_record(ea, 1, ea.interest, 1.0)
    pit.add_in_record(eb, 1, eb.interest, 1.0)
    with pytest.raises(TableFull):
        pit.add_in_record(ec, 1, ec.interest, 1.0)
    assert 1 not in ec.in_records
    assert ec.expiry == 0.0
    assert pit.face_records(1) == 2
    # refreshing an existing record at the bound is fine
    pit.add_in_record(ea, 1, interest("/a", nonce=9), 2.0)
    assert pit.face_records(1) == 2
    # another face has its own budget
    pit.add_in_record(ec, 2, ec.interest, 1.0)
    assert pit.face_records(2) == 1


def test_remove_releases_per_face_counts():
    pit = Pit(max_per_face=1)
    ea = pit.insert(interest("/a"))
    pit.add_in_record(ea, 1, ea.interest, 1.0)
    pit.add_in_record(ea, 2, ea.interest, 1.0)
    assert pit.face_records(1) == pit.face_records(2) == 1
    pit.remove(ea)
    assert pit.face_records(1) == pit.face_records(2) == 0
    assert ea.in_records == {}
    eb = pit.insert(interest("/b"))
    pit.add_in_record(eb, 1, eb.interest, 1.0)  # the slot is free again
    assert pit.face_records(1) == 1
    pit.remove(ea)  # removing twice must not release twice
    assert pit.face_records(1) == 1


def test_remove_in_record_releases_count():
    pit = Pit(max_per_face=1)
    ea = pit.insert(interest("/a"))
    eb = pit.insert(interest("/b"))
    pit.add_in_record(ea, 1, ea.interest, 1.0)
    pit.add_in_record(ea, 2, ea.interest, 1.0)
    pit.remove_in_record(ea, 1)
    assert pit.face_records(1) == 0
    assert list(ea.in_records) == [2]
    pit.remove_in_record(ea, 1)  # absent: no-op
    assert pit.face_records(1) == 0
    pit.add_in_record(eb, 1, eb.interest, 1.0)
    assert pit.face_records(1) == 1
    pit.remove(ea)
    assert pit.face_records(2) == 0
    assert pit.face_records(1) == 1


# --- Data matching -------------------------------------------------------------------


def test_match_data_exact():
    pit = Pit()
    exact = pit.insert(interest("/a/b"))
    fresh = pit.insert(interest("/a/b", mbf=True))
    pit.insert(interest("/a"))  # exact-only: does not match a longer Data
    pit.insert(interest("/a/b/c"))  # longer than the Data
    pit.insert(interest("/a/c"))
    assert ids(pit.match_data(Data(Name("/a/b"), b"x"))) == ids([exact, fresh])
    assert pit.match_data(Data(Name("/z"), b"x")) == []


def test_match_data_can_be_prefix():
    pit = Pit()
    root = pit.insert(interest("/", cbp=True))
    a = pit.insert(interest("/a", cbp=True))
    ab = pit.insert(interest("/a/b", cbp=True))
    abc = pit.insert(interest("/a/b/c", cbp=True))  # longer than the Data
    exact_a = pit.insert(interest("/a"))
    other = pit.insert(interest("/x", cbp=True))
    sibling = pit.insert(interest("/ab", cbp=True))  # not a component-wise prefix
    found = pit.match_data(Data(Name("/a/b"), b"x"))
    assert ids(found) == ids([root, a, ab])
    assert len(found) == 3  # no entry twice
    assert not ids([abc, exact_a, other, sibling]) & ids(found)


def test_match_data_implicit_digest():
    pit = Pit()
    data = Data(Name("/a/b"), b"payload", freshness_ms=1000)
    full = full_name(data)
    assert len(full) == len(data.name) + 1
    by_digest = pit.insert(interest(full))
    wrong = pit.insert(interest(Name("/a/b").append("sha256digest=" + "00" * 32)))
    other = Data(Name("/a/b"), b"other payload")
    assert ids(pit.match_data(data)) == ids([by_digest])
    assert ids(pit.match_data(other)) == set()
    assert wrong not in pit.match_data(data)
    # exact and digest entries together
    exact = pit.insert(interest("/a/b"))
    assert ids(pit.match_data(data)) == ids([by_digest, exact])
    pit.remove(by_digest)
    assert ids(pit.match_data(data)) == ids([exact])


def test_match_data_after_removal():
    pit = Pit()
    e = pit.insert(interest("/a", cbp=True))
    pit.remove(e)
    assert pit.match_data(Data(Name("/a/b"), b"")) == []


# --- Nack matching -------------------------------------------------------------------


def test_match_nack_by_out_record_nonce():
    pit = Pit()
    e1 = pit.insert(interest("/a"))
    e2 = pit.insert(interest("/a", cbp=True))
    e1.out_records[5] = OutRecord(nonce=111, sent_at=0.0, expiry=4.0)
    e2.out_records[5] = OutRecord(nonce=222, sent_at=0.0, expiry=4.0)
    e2.out_records[6] = OutRecord(nonce=111, sent_at=0.0, expiry=4.0)
    comps = Name("/a").comps
    assert pit.match_nack(comps, 5, 111) is e1
    assert pit.match_nack(comps, 5, 222) is e2
    assert pit.match_nack(comps, 6, 111) is e2
    assert pit.match_nack(comps, 6, 222) is None  # wrong nonce for that face
    assert pit.match_nack(comps, 7, 111) is None  # no out-record on that face
    assert pit.match_nack(Name("/b").comps, 5, 111) is None
    assert pit.match_nack(Name("/a/b").comps, 5, 111) is None


# --- through the forwarder ------------------------------------------------------------


def test_forwarder_entry_does_not_outlive_its_last_in_record():
    """The PIT docstring: the timer removes an entry once now >= entry.expiry,
    "so no entry outlives its last in-record".  A downstream that refreshes its
    in-record with a shorter lifetime must not keep the entry alive until the
    old, longer expiry."""
    fw = Forwarder()
    fw.add_face(1)
    fw.add_face(2)
    fw.add_route(Name("/a"), 2)
    fw.on_packet(1, interest("/a", nonce=1, lifetime_ms=4000), 0.0)
    # same downstream face, new nonce (a retransmission), much shorter lifetime
    fw.on_packet(1, interest("/a", nonce=2, lifetime_ms=100), 1.0)
    (entry,) = list(fw.pit)
    last_in_record = max(r.expiry for r in entry.in_records.values())
    assert last_in_record == pytest.approx(1.1)
    now = 2.0  # the only in-record expired at 1.1
    deadline = fw.next_deadline()
    if deadline is not None and now >= deadline:
        fw.on_timer(now)
    assert len(fw.pit) == 0, (
        f"entry still pending at t={now} with expiry {entry.expiry} although "
        f"its last in-record expired at {last_in_record}"
    )


def test_forwarder_entry_does_not_outlive_remaining_in_records_after_face_down():
    """Same invariant through `on_face_down`: when the downstream holding the
    latest in-record goes away, the entry must expire with the in-records
    that remain, not with the one that was removed."""
    fw = Forwarder()
    for f in (1, 2, 3):
        fw.add_face(f)
    fw.add_route(Name("/a"), 3)
    fw.on_packet(1, interest("/a", nonce=1, lifetime_ms=20_000), 0.0)
    fw.on_packet(2, interest("/a", nonce=2, lifetime_ms=1000), 0.0)
    fw.on_face_down(1, 0.5)
    (entry,) = list(fw.pit)
    assert list(entry.in_records) == [2]
    last_in_record = entry.in_records[2].expiry
    assert last_in_record == pytest.approx(1.0)
    now = 5.0
    deadline = fw.next_deadline()
    if deadline is not None and now >= deadline:
        fw.on_timer(now)
    assert len(fw.pit) == 0, (
        f"entry still pending at t={now} with expiry {entry.expiry} although "
        f"its last in-record expired at {last_in_record}"
    )


# --- local reserve, fair shares, parameter bytes (issue 15: D3, D4) ------------------


def test_local_reserve_is_kept_for_local_faces():
    pit = Pit(max_entries=100, local_reserve=0.1)
    pit.local_faces.add(1)
    assert pit.pool == 90
    for k in range(90):  # non-local faces 10..19 fill the pool (9 each: under any fair share)
        e = pit.insert(interest(f"/n/{k}"))
        pit.add_in_record(e, 10 + k % 10, e.interest, 1.0)
    e = pit.insert(interest("/n/more"))
    with pytest.raises(PitFull) as info:
        pit.add_in_record(e, 10, e.interest, 1.0)
    assert info.value.counter == "pit_local_reserve"
    # an existing entry still takes another non-local in-record (no new entry)
    pit.add_in_record(pit.find(interest("/n/0")), 11, interest("/n/0", nonce=5), 1.0)
    # the local face has the reserve
    pit.add_in_record(e, 1, e.interest, 1.0)
    for k in range(9):
        le = pit.insert(interest(f"/l/{k}"))
        pit.add_in_record(le, 1, le.interest, 1.0)
    assert len(pit) == 100
    with pytest.raises(PitFull) as info:
        pit.insert(interest("/l/full"))
    assert info.value.counter == "pit_full"


def test_fair_share_only_above_half_the_pool():
    pit = Pit(max_entries=200, local_reserve=0.0)  # pool 200, calm below 100 entries
    for k in range(100):  # one face alone, below half: no fair share
        e = pit.insert(interest(f"/a/{k}"))
        pit.add_in_record(e, 10, e.interest, 1.0)
    assert pit.face_records(10) == 100
    e = pit.insert(interest("/a/over"))  # above half: face 10's share is 200 // (1 + 1) = 100
    with pytest.raises(PitFull) as info:
        pit.add_in_record(e, 10, e.interest, 1.0)
    assert info.value.counter == "pit_fair_share"
    pit.add_in_record(e, 11, e.interest, 1.0)  # another face is welcome


def test_parameter_bytes_are_bounded_and_released():
    pit = Pit(max_bytes=1000, max_bytes_per_face=300, local_reserve=0.1)
    pit.local_faces.add(1)

    def with_params(uri: str, n: int, nonce: int = 1) -> Interest:
        return Interest(Name(uri), nonce=nonce, app_params=b"x" * n)

    a = pit.insert(with_params("/a", 200))
    pit.add_in_record(a, 10, a.interest, 1.0)
    assert pit.bytes_used == 200 and pit.face_bytes == {10: 200}
    b = pit.insert(with_params("/b", 200))
    with pytest.raises(PitFull) as info:  # face 10 would hold 400 > 300
        pit.add_in_record(b, 10, b.interest, 1.0)
    assert info.value.counter == "pit_bytes_full" and pit.bytes_used == 200
    pit.add_in_record(b, 1, b.interest, 1.0)  # a local face: only the global bound
    # a retransmission replaces the entry's Interest and is not counted twice
    again = with_params("/a", 200, nonce=2)
    pit.add_in_record(a, 10, again, 2.0)
    assert a.interest is again and pit.bytes_used == 400
    # another face aggregates; when the first face's record goes, the entry
    # holds the remaining record's Interest
    other = with_params("/a", 200, nonce=3)
    pit.add_in_record(a, 11, other, 2.0)
    assert pit.bytes_used == 600
    pit.remove_in_record(a, 10)
    assert a.interest is other and pit.bytes_used == 400 and pit.face_bytes == {1: 200, 11: 200}
    pit.remove(a)
    pit.remove(b)
    assert pit.bytes_used == 0 and pit.face_bytes == {}


def test_local_reserve_of_parameter_bytes():
    pit = Pit(max_bytes=1000, max_bytes_per_face=10_000, local_reserve=0.2)
    pit.local_faces.add(1)
    assert pit.bytes_pool == 800
    for k, face in enumerate((10, 11, 12, 13)):
        e = pit.insert(Interest(Name(f"/p/{k}"), app_params=b"x" * 200))
        pit.add_in_record(e, face, e.interest, 1.0)
    e = pit.insert(Interest(Name("/p/more"), app_params=b"x" * 100))
    with pytest.raises(PitFull):
        pit.add_in_record(e, 14, e.interest, 1.0)
    pit.add_in_record(e, 1, e.interest, 1.0)
    assert pit.bytes_used == 900
