"""Unit tests for the dead-nonce list (icnd.core.tables.dnl)."""

from __future__ import annotations

from icnd.core.tables.dnl import DeadNonceList
from icnd.name import Name

A = Name("/a").comps
B = Name("/b").comps


def test_empty_has_nothing():
    dnl = DeadNonceList()
    assert len(dnl) == 0
    assert not dnl.has(A, 1, 0.0)


def test_add_then_has_until_expiry():
    dnl = DeadNonceList(lifetime=2.0)
    dnl.add(A, 7, 10.0)
    assert len(dnl) == 1
    assert dnl.has(A, 7, 10.0)
    assert dnl.has(A, 7, 11.999)
    assert not dnl.has(A, 7, 12.0)  # lives exactly `lifetime` seconds
    assert not dnl.has(A, 7, 13.0)


def test_keyed_by_name_and_nonce():
    dnl = DeadNonceList()
    dnl.add(A, 7, 0.0)
    assert not dnl.has(A, 8, 0.0)
    assert not dnl.has(B, 7, 0.0)
    dnl.add(B, 7, 0.0)
    assert dnl.has(B, 7, 0.0)
    assert len(dnl) == 2


def test_evict_expired_removes_only_expired():
    dnl = DeadNonceList(lifetime=1.0)
    dnl.add(A, 1, 0.0)
    dnl.add(A, 2, 0.5)
    dnl.add(A, 3, 2.0)
    dnl.evict_expired(1.0)
    assert len(dnl) == 2
    assert not dnl.has(A, 1, 0.9)
    assert dnl.has(A, 2, 1.0)
    dnl.evict_expired(1.5)
    assert len(dnl) == 1
    assert dnl.has(A, 3, 1.5)
    dnl.evict_expired(100.0)
    assert len(dnl) == 0
    dnl.evict_expired(200.0)  # empty: no error
    assert len(dnl) == 0


def test_capacity_evicts_oldest():
    dnl = DeadNonceList(lifetime=100.0, capacity=3)
    dnl.add(A, 1, 0.0)
    dnl.add(A, 2, 1.0)
    dnl.add(A, 3, 2.0)
    dnl.add(A, 4, 3.0)
    assert len(dnl) == 3
    assert not dnl.has(A, 1, 3.0)
    assert dnl.has(A, 2, 3.0) and dnl.has(A, 3, 3.0) and dnl.has(A, 4, 3.0)
    dnl.add(B, 5, 4.0)
    assert len(dnl) == 3
    assert not dnl.has(A, 2, 4.0)
    assert dnl.has(B, 5, 4.0)


def test_readd_refreshes_expiry_and_recency():
    dnl = DeadNonceList(lifetime=2.0, capacity=3)
    dnl.add(A, 1, 0.0)
    dnl.add(A, 2, 0.5)
    dnl.add(A, 1, 1.0)  # refresh: new expiry 3.0, moved to the back
    assert len(dnl) == 2
    assert dnl.has(A, 1, 2.5)  # would have expired at 2.0 without the refresh
    assert not dnl.has(A, 2, 2.5)
    dnl.add(A, 3, 1.0)
    dnl.add(A, 4, 1.0)  # full: the oldest is now nonce 2, not nonce 1
    assert len(dnl) == 3
    assert not dnl.has(A, 2, 1.0)
    assert dnl.has(A, 1, 1.0)


def test_readd_at_capacity_does_not_evict_others():
    dnl = DeadNonceList(lifetime=10.0, capacity=2)
    dnl.add(A, 1, 0.0)
    dnl.add(A, 2, 0.0)
    dnl.add(A, 2, 1.0)
    assert len(dnl) == 2
    assert dnl.has(A, 1, 1.0)
    assert dnl.has(A, 2, 1.0)


def test_evict_expired_after_refresh_keeps_insertion_order_as_expiry_order():
    dnl = DeadNonceList(lifetime=1.0)
    dnl.add(A, 1, 0.0)
    dnl.add(A, 2, 0.2)
    dnl.add(A, 1, 0.5)  # now expires at 1.5, after nonce 2 (1.2)
    dnl.evict_expired(1.3)
    assert len(dnl) == 1
    assert dnl.has(A, 1, 1.3)
    assert not dnl.has(A, 2, 1.3)
