"""The contribution store's byte bound across groups and epochs (sans-IO):
the rounds stored longest ago go first, whatever their numbers, so a
collective's parts in use are not evicted for an older group's."""

from __future__ import annotations

import numpy as np

from icnd.reduction.contrib import EPOCH_BITS, ContributionStore, GroupTable
from icnd.reduction.group import GroupDescriptor, contribution_data
from icnd.reduction.segment import SegmentMeta, pack


def _segment(group: str, member: str, rnd: int, nbytes: int):
    arr = np.zeros(nbytes, np.uint8)
    return contribution_data("a", member, group, rnd, 0, pack(SegmentMeta("|u1", (nbytes,), 1, 0), arr))


def test_bytes_evict_the_oldest_rounds_not_the_lowest_numbers() -> None:
    groups = GroupTable()
    for g in ("old", "new"):
        groups.add_config(GroupDescriptor.create(g, ["m1@a", "m2@a"], seg_bytes=65536))
    store = ContributionStore(groups, "a", max_bytes=100_000)
    high = 7 << EPOCH_BITS  # an older job's rounds with high numbers (a later group version)
    store.add(_segment("old", "m1", high, 30_000))
    store.add(_segment("old", "m2", high, 30_000))
    store.add(_segment("new", "m1", 1 << EPOCH_BITS, 30_000))
    store.add(_segment("new", "m2", 1 << EPOCH_BITS, 30_000))  # full: the old group's first round goes
    assert store.newest("new", "m1") == 1 << EPOCH_BITS and store.newest("new", "m2") == 1 << EPOCH_BITS
    kept = {(k, r) for k, rounds in store._store.items() for r in rounds}
    assert (("new", "m1"), 1 << EPOCH_BITS) in kept and (("new", "m2"), 1 << EPOCH_BITS) in kept
    assert (("old", "m1"), high) not in kept


def test_a_later_epoch_starts_afresh_within_the_ahead_bound() -> None:
    groups = GroupTable()
    groups.add_config(GroupDescriptor.create("g", ["m1@a"], seg_bytes=65536))
    store = ContributionStore(groups, "a", max_ahead=4)
    store.add(_segment("g", "m1", 1 << EPOCH_BITS, 10))
    store.add(_segment("g", "m1", 2 << EPOCH_BITS, 10))  # a new version's round 0: not "too far ahead"
    try:
        store.add(_segment("g", "m1", (2 << EPOCH_BITS) + 9, 10))  # 9 ahead within the epoch: refused
    except Exception as exc:
        assert "too far ahead" in str(exc)
    else:
        raise AssertionError("a round 9 ahead within one epoch must be refused (max_ahead 4)")
