"""Unit tests for the per-prefix strategy choice (icnd.core.fw.strategy_choice)."""

from __future__ import annotations

import pytest

from icnd.core.tables.fib import TableFull
from icnd.core.fw.best_route import BestRoute
from icnd.core.fw.multicast import Multicast
from icnd.core.fw.strategy_choice import STRATEGIES, StrategyChoice
from icnd.name import Name


def find(sc: StrategyChoice, uri: str) -> str:
    return sc.find(Name(uri).comps).name


def test_default_root_strategy():
    sc = StrategyChoice()
    assert find(sc, "/") == "best-route"
    assert find(sc, "/a/b/c") == "best-route"
    assert isinstance(sc.find(()), BestRoute)
    assert sc.items() == [(Name("/"), "best-route")]


def test_other_default():
    sc = StrategyChoice(default="multicast")
    assert isinstance(sc.find(Name("/x").comps), Multicast)


def test_unknown_default_raises():
    with pytest.raises(ValueError):
        StrategyChoice(default="no-such-strategy")


def test_longest_match_wins():
    sc = StrategyChoice()
    sc.set(Name("/a"), "multicast")
    sc.set(Name("/a/b/c"), "best-route")
    assert find(sc, "/a") == "multicast"
    assert find(sc, "/a/b") == "multicast"
    assert find(sc, "/a/b/c") == "best-route"
    assert find(sc, "/a/b/c/d") == "best-route"
    assert find(sc, "/ab") == "best-route"  # component-wise, not string-wise
    assert find(sc, "/b/a") == "best-route"
    assert find(sc, "/") == "best-route"


def test_set_root_replaces_default():
    sc = StrategyChoice()
    sc.set(Name("/"), "multicast")
    assert find(sc, "/anything") == "multicast"
    sc.set(Name("/a"), "best-route")
    assert find(sc, "/a/x") == "best-route"
    assert find(sc, "/b/x") == "multicast"


def test_set_overwrites_existing_prefix():
    sc = StrategyChoice()
    sc.set(Name("/a"), "multicast")
    sc.set(Name("/a"), "best-route")
    assert find(sc, "/a/b") == "best-route"
    assert len(sc.items()) == 2


def test_unknown_strategy_raises_value_error_naming_known_ones():
    sc = StrategyChoice()
    with pytest.raises(ValueError) as info:
        sc.set(Name("/a"), "no-such-strategy")
    for known in STRATEGIES:
        assert known in str(info.value)
    # nothing was recorded
    assert sc.items() == [(Name("/"), "best-route")]
    assert find(sc, "/a") == "best-route"


def test_unset():
    sc = StrategyChoice()
    sc.set(Name("/a"), "multicast")
    assert sc.unset(Name("/a")) is True
    assert find(sc, "/a/b") == "best-route"
    assert sc.unset(Name("/a")) is False
    assert sc.unset(Name("/never")) is False


def test_root_cannot_be_unset():
    sc = StrategyChoice()
    sc.set(Name("/"), "multicast")
    assert sc.unset(Name("/")) is False
    assert find(sc, "/x") == "multicast"
    assert (Name("/"), "multicast") in sc.items()


def test_items_sorted_by_name():
    sc = StrategyChoice()
    sc.set(Name("/b"), "multicast")
    sc.set(Name("/a/b"), "multicast")
    sc.set(Name("/a"), "best-route")
    assert [n.to_uri() for n, _ in sc.items()] == ["/", "/a", "/a/b", "/b"]


def test_instances_are_shared():
    sc = StrategyChoice()
    sc.set(Name("/a"), "multicast")
    sc.set(Name("/b"), "multicast")
    assert sc.find(Name("/a").comps) is sc.find(Name("/b").comps)


def test_max_entries():
    sc = StrategyChoice(max_entries=2)
    sc.set(Name("/a"), "multicast")
    with pytest.raises(TableFull):
        sc.set(Name("/b"), "multicast")
    sc.set(Name("/a"), "best-route")  # overwriting is not a new entry
    sc.set(Name("/"), "multicast")
    assert find(sc, "/b") == "multicast"
