"""Unit tests for the Forwarding Information Base (icnd.core.tables.fib)."""

from __future__ import annotations

import pytest

from icnd.core.tables.fib import Fib, TableFull
from icnd.name import Name


def lm(fib: Fib, uri: str):
    return fib.longest_match(Name(uri).comps)


def prefix_of(entry) -> str | None:
    return None if entry is None else entry.prefix.to_uri()


# --- longest-prefix match ----------------------------------------------------


def test_empty_fib_matches_nothing():
    fib = Fib()
    assert len(fib) == 0
    assert lm(fib, "/a/b") is None
    assert lm(fib, "/") is None


def test_root_prefix_matches_everything():
    fib = Fib()
    fib.add(Name("/"), 1)
    assert prefix_of(lm(fib, "/")) == "/"
    assert prefix_of(lm(fib, "/a")) == "/"
    assert prefix_of(lm(fib, "/a/b/c/d")) == "/"


def test_deeper_prefix_wins_over_shallower():
    fib = Fib()
    fib.add(Name("/"), 1)
    fib.add(Name("/a"), 2)
    fib.add(Name("/a/b/c"), 3)
    assert prefix_of(lm(fib, "/a/b/c/d")) == "/a/b/c"
    assert prefix_of(lm(fib, "/a/b/c")) == "/a/b/c"
    # /a/b has no entry of its own: the next shorter one wins
    assert prefix_of(lm(fib, "/a/b")) == "/a"
    assert prefix_of(lm(fib, "/a/x/c")) == "/a"
    assert prefix_of(lm(fib, "/a")) == "/a"
    assert prefix_of(lm(fib, "/b")) == "/"
    assert prefix_of(lm(fib, "/")) == "/"


def test_no_match_without_root():
    fib = Fib()
    fib.add(Name("/a/b"), 1)
    assert lm(fib, "/a") is None  # shorter than every prefix
    assert lm(fib, "/a/c") is None
    assert lm(fib, "/b/a/b") is None  # a prefix is anchored at the start
    assert lm(fib, "/") is None
    assert prefix_of(lm(fib, "/a/b")) == "/a/b"


def test_match_is_component_wise_not_string_wise():
    fib = Fib()
    fib.add(Name("/ab"), 1)
    assert lm(fib, "/a") is None
    assert lm(fib, "/a/b") is None
    assert lm(fib, "/abc") is None
    assert prefix_of(lm(fib, "/ab/c")) == "/ab"


def test_typed_components_are_distinct_from_generic():
    fib = Fib()
    fib.add(Name("/a/seg=1"), 1)
    assert lm(fib, "/a/%01") is None  # same value bytes, generic type
    assert prefix_of(lm(fib, "/a/seg=1/x")) == "/a/seg=1"


def test_get_is_exact():
    fib = Fib()
    fib.add(Name("/a"), 1)
    assert fib.get(Name("/a")) is not None
    assert fib.get(Name("/a/b")) is None
    assert fib.get(Name("/")) is None


# --- next hops -------------------------------------------------------------


def test_nexthops_sorted_by_cost_then_face():
    fib = Fib()
    p = Name("/a")
    fib.add(p, 7, 10)
    fib.add(p, 3, 20)
    fib.add(p, 9, 5)
    fib.add(p, 2, 10)
    entry = fib.get(p)
    assert entry.nexthops == ((9, 5), (2, 10), (7, 10), (3, 20))
    assert len(fib) == 1


def test_default_cost_is_zero():
    fib = Fib()
    fib.add(Name("/a"), 4)
    assert fib.get(Name("/a")).nexthops == ((4, 0),)


def test_add_same_face_updates_cost_and_resorts():
    fib = Fib()
    p = Name("/a")
    fib.add(p, 1, 10)
    fib.add(p, 2, 20)
    fib.add(p, 2, 5)
    entry = fib.get(p)
    assert entry.nexthops == ((2, 5), (1, 10))
    assert entry.costs == {1: 10, 2: 5}
    fib.add(p, 2, 50)
    assert fib.get(p).nexthops == ((1, 10), (2, 50))


def test_add_returns_the_entry():
    fib = Fib()
    e1 = fib.add(Name("/a"), 1)
    e2 = fib.add(Name("/a"), 2)
    assert e1 is e2 is fib.get(Name("/a"))


def test_remove_one_nexthop_keeps_entry():
    fib = Fib()
    p = Name("/a")
    fib.add(p, 1, 1)
    fib.add(p, 2, 2)
    assert fib.remove(p, 1) is True
    assert fib.get(p).nexthops == ((2, 2),)
    assert len(fib) == 1


def test_remove_last_nexthop_removes_entry():
    fib = Fib()
    fib.add(Name("/"), 9)
    p = Name("/a/b")
    fib.add(p, 1)
    assert fib.remove(p, 1) is True
    assert fib.get(p) is None
    assert len(fib) == 1
    # longest match falls back to the root now
    assert prefix_of(lm(fib, "/a/b/c")) == "/"
    assert list(fib) == [fib.get(Name("/"))]


def test_remove_unknown_returns_false():
    fib = Fib()
    fib.add(Name("/a"), 1)
    assert fib.remove(Name("/a"), 2) is False
    assert fib.remove(Name("/b"), 1) is False
    assert fib.get(Name("/a")).nexthops == ((1, 0),)


def test_removed_length_is_not_probed_anymore():
    fib = Fib()
    fib.add(Name("/a/b/c"), 1)
    fib.add(Name("/a"), 2)
    fib.remove(Name("/a/b/c"), 1)
    assert prefix_of(lm(fib, "/a/b/c/d")) == "/a"
    # re-adding the same length works again
    fib.add(Name("/x/y/z"), 3)
    assert prefix_of(lm(fib, "/x/y/z/w")) == "/x/y/z"
    assert prefix_of(lm(fib, "/a/b/c")) == "/a"


def test_remove_face_across_entries():
    fib = Fib()
    fib.add(Name("/"), 1, 3)
    fib.add(Name("/a"), 1, 1)
    fib.add(Name("/a"), 2, 2)
    fib.add(Name("/b"), 1)
    fib.add(Name("/c"), 3)
    assert fib.remove_face(1) == 3
    assert fib.get(Name("/")) is None  # its only next hop was face 1
    assert fib.get(Name("/b")) is None
    assert fib.get(Name("/a")).nexthops == ((2, 2),)
    assert fib.get(Name("/c")).nexthops == ((3, 0),)
    assert len(fib) == 2
    assert lm(fib, "/b/x") is None
    assert prefix_of(lm(fib, "/a/x")) == "/a"
    assert fib.remove_face(1) == 0
    assert fib.remove_face(42) == 0


# --- bounds -----------------------------------------------------------------


def test_max_entries_raises_table_full():
    fib = Fib(max_entries=2)
    fib.add(Name("/a"), 1)
    fib.add(Name("/b"), 1)
    with pytest.raises(TableFull):
        fib.add(Name("/c"), 1)
    assert len(fib) == 2
    assert fib.get(Name("/c")) is None
    assert lm(fib, "/c") is None
    # adding next hops to an existing entry is still allowed
    fib.add(Name("/a"), 2)
    assert fib.get(Name("/a")).nexthops == ((1, 0), (2, 0))
    # and a freed slot can be reused
    fib.remove(Name("/b"), 1)
    fib.add(Name("/c"), 1)
    assert len(fib) == 2


def test_max_nexthops_raises_table_full():
    fib = Fib(max_nexthops=2)
    p = Name("/a")
    fib.add(p, 1, 1)
    fib.add(p, 2, 2)
    with pytest.raises(TableFull):
        fib.add(p, 3, 0)
    assert fib.get(p).nexthops == ((1, 1), (2, 2))
    # updating an existing next hop at the bound is fine
    fib.add(p, 2, 0)
    assert fib.get(p).nexthops == ((2, 0), (1, 1))
    # other entries have their own budget
    fib.add(Name("/b"), 3)
    fib.add(Name("/b"), 4)


def test_negative_cost_raises_value_error():
    fib = Fib()
    with pytest.raises(ValueError):
        fib.add(Name("/a"), 1, -1)
    assert len(fib) == 0
    assert fib.get(Name("/a")) is None
    assert lm(fib, "/a") is None
    fib.add(Name("/a"), 1, 5)
    with pytest.raises(ValueError):
        fib.add(Name("/a"), 1, -5)
    assert fib.get(Name("/a")).nexthops == ((1, 5),)
