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


def test_the_package_registers_every_strategy_file_by_name():
    assert {"best-route", "multicast", "load-balance", "round-robin"} <= set(STRATEGIES)
    assert all(cls.name == name for name, cls in STRATEGIES.items())


def test_a_strategy_registers_itself_where_it_is_defined_and_is_reached_by_name():
    """A new strategy needs its file only: no table to edit; the forwarder reaches it by name."""
    from icnd.core.fw.forwarder import Forwarder
    from icnd.core.fw.strategy import Strategy
    from icnd.packet import Interest

    seen: list[str] = []

    class Recording(Strategy):
        name = "test-recording"

        def after_receive_interest(self, fw, entry, in_face, interest, fib_entry, now):
            seen.append(interest.name.to_uri())
            fw.send_interest(entry, fw.eligible_nexthops(entry, in_face, fib_entry)[0], interest, now)

    try:
        assert STRATEGIES["test-recording"] is Recording
        fw = Forwarder()
        fw.add_face(1)
        fw.add_face(2)
        fw.add_route(Name("/r"), 2)
        fw.strategies.set(Name("/r"), "test-recording")
        out = fw.on_packet(1, Interest(Name("/r/x"), nonce=7), 0.0)
        assert seen == ["/r/x"] and [a.face for a in out] == [2]
    finally:
        del STRATEGIES["test-recording"]


def test_a_second_strategy_with_a_taken_name_is_refused():
    from icnd.core.fw.strategy import Strategy

    with pytest.raises(ValueError, match="two strategies are named 'best-route'"):
        class Impostor(Strategy):
            name = "best-route"
    assert STRATEGIES["best-route"] is BestRoute
