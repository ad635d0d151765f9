"""Placement near the data (icnd.core.routing.placement, `Router.place`): explicit
graphs, an independent brute-force ranking under hypothesis, and the router's
view of announced prefixes on a converged explicit-time network."""

from __future__ import annotations

import functools
import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icnd.core.routing.placement import MAX_HOSTS, MAX_REFS, Placement, place
from icnd.name import Name

from tests.core.routing.routing_net import Net

Adj = dict[str, dict[str, int]]


def undirected(*edges: tuple[str, str, int]) -> Adj:
    adj: Adj = {}
    for a, b, c in edges:
        adj.setdefault(a, {})[b] = c
        adj.setdefault(b, {})[a] = c
    return adj


LINE = undirected(("a", "b", 1), ("b", "c", 1))


def test_on_a_line_the_host_holding_the_data_wins() -> None:
    hosts = {"b": (4, 0), "c": (4, 3)}  # c busier: cost decides before load
    got = place(LINE, hosts, [["c"]], caller="a")
    assert got == [Placement("c", 0, 4, 3), Placement("b", 1, 4, 0)]


def test_costs_add_up_over_refs_and_take_the_nearest_producer_of_each() -> None:
    adj = undirected(("a", "b", 1), ("b", "c", 1), ("c", "d", 1), ("d", "e", 2))
    # ref 1 at a or e (anycast), ref 2 at d: b = min(1, 4) + 2, d = min(3, 2) + 0
    got = place(adj, {"b": (1, 0), "d": (1, 0)}, [["a", "e"], ["d"]])
    assert [(p.node, p.cost) for p in got] == [("d", 2), ("b", 3)]


def test_distance_runs_from_host_to_producer() -> None:
    adj: Adj = {"h": {"p": 1, "g": 1}, "p": {"h": 9, "g": 1}, "g": {"h": 1, "p": 5}}
    got = place(adj, {"h": (1, 0), "g": (1, 0)}, [["p"]])
    assert [(p.node, p.cost) for p in got] == [("h", 1), ("g", 2)]  # g->h->p = 2 beats g->p = 5


def test_equal_costs_go_to_the_lower_load_relative_to_capacity() -> None:
    adj = undirected(("b", "c", 1), ("c", "d", 1))
    hosts = {"b": (4, 3), "d": (8, 4), "e": (None, 0), "f": (0, 0), "g": (2, None)}
    for h in "efg":
        adj[h] = {"c": 1}
        adj["c"][h] = 1
    got = place(adj, hosts, [["c"]])
    # d 4/8 < b 3/4; g no load = 0/2 first; f capacity 0 after those with room; e no capacity last
    assert [p.node for p in got] == ["g", "d", "b", "f", "e"]
    assert {p.cost for p in got} == {1}


def test_same_ratio_same_cost_goes_by_name() -> None:
    got = place(undirected(("x", "y", 1)), {"y": (2, 1), "x": (4, 2)}, [])
    assert [p.node for p in got] == ["x", "y"]


def test_a_host_that_cannot_reach_a_producer_is_listed_last_without_cost() -> None:
    adj = undirected(("a", "b", 1), ("b", "c", 1), ("x", "y", 1))  # x-y cut off from a-b-c
    got = place(adj, {"b": (1, 1), "x": (1, 0)}, [["c"]])
    assert got == [Placement("b", 1, 1, 1), Placement("x", None, 1, 0)]
    # with the data on both sides, each side has a cost; the caller's side decides who is reachable
    got = place(adj, {"b": (1, 1), "x": (1, 0)}, [["c", "y"]], caller="a")
    assert got == [Placement("b", 1, 1, 1), Placement("x", None, 1, 0)]
    got = place(adj, {"b": (1, 1), "x": (1, 0)}, [["c", "y"]])
    assert got == [Placement("x", 1, 1, 0), Placement("b", 1, 1, 1)]


def test_without_refs_every_reachable_host_costs_nothing() -> None:
    got = place(LINE, {"a": (1, 1), "b": (2, 0), "c": (None, None)}, [], caller="a")
    assert got == [Placement("b", 0, 2, 0), Placement("a", 0, 1, 1), Placement("c", 0, None, None)]


def test_a_ref_nobody_announces_changes_nothing() -> None:
    hosts = {"b": (1, 0), "c": (1, 0)}
    assert place(LINE, hosts, [[], ["c"], []]) == place(LINE, hosts, [["c"]])


def test_an_unknown_producer_is_unreachable() -> None:
    assert place(LINE, {"b": (1, 0)}, [["nowhere"]]) == [Placement("b", None, 1, 0)]


def test_bounds() -> None:
    with pytest.raises(ValueError):
        place(LINE, {"b": (1, 0)}, [["c"]] * (MAX_REFS + 1))
    assert len(place(LINE, {"b": (1, 0)}, [["c"]] * MAX_REFS)) == 1
    many = {f"h{i:03}": (100, MAX_HOSTS + 10 - i) for i in range(MAX_HOSTS + 10)}  # later names less loaded
    adj = {h: {"hub": 1} for h in many} | {"hub": {h: 1 for h in many}}
    got = place(adj, many, [["hub"]])
    assert len(got) == MAX_HOSTS
    assert {p.node for p in got} == {f"h{i:03}" for i in range(10, MAX_HOSTS + 10)}  # the least loaded ones


# --- against an independent ranking ----------------------------------------------------------

def floyd(adj: Adj, nodes: list[str]) -> dict[tuple[str, str], float]:
    d = {(u, v): (0.0 if u == v else adj.get(u, {}).get(v, math.inf)) for u in nodes for v in nodes}
    for k, i, j in itertools.product(nodes, nodes, nodes):
        if d[i, k] + d[k, j] < d[i, j]:
            d[i, j] = d[i, k] + d[k, j]
    return d


def expected(adj: Adj, nodes: list[str], hosts: dict[str, tuple[int | None, int | None]],
             producers: list[list[str]], caller: str) -> list[tuple[str, int | None]]:
    d = floyd(adj, nodes)
    costs: dict[str, int | None] = {}
    for h in hosts:
        total = 0.0 if d[caller, h] < math.inf else math.inf
        for ps in producers:
            if ps:
                total += min(d[h, p] for p in ps)
        costs[h] = None if total == math.inf else int(total)

    def compare(x: str, y: str) -> int:
        cx, cy = costs[x], costs[y]
        if (cx is None) != (cy is None):
            return 1 if cx is None else -1
        if cx is not None and cy is not None and cx != cy:
            return -1 if cx < cy else 1
        (capx, ldx), (capy, ldy) = hosts[x], hosts[y]
        gx = 2 if capx is None else 1 if capx == 0 else 0
        gy = 2 if capy is None else 1 if capy == 0 else 0
        if gx != gy:
            return -1 if gx < gy else 1
        if gx == 0:
            assert capx and capy
            lhs, rhs = (ldx or 0) * capy, (ldy or 0) * capx  # load_x / cap_x vs load_y / cap_y
            if lhs != rhs:
                return -1 if lhs < rhs else 1
        return -1 if x < y else 1

    return [(h, costs[h]) for h in sorted(hosts, key=functools.cmp_to_key(compare))]


@st.composite
def cases(draw: st.DrawFn) -> tuple[Adj, list[str], dict[str, tuple[int | None, int | None]], list[list[str]], str]:
    n = draw(st.integers(2, 9))
    nodes = [f"n{i}" for i in range(n)]
    adj: Adj = {u: {} for u in nodes}
    for u, v, c in draw(st.lists(st.tuples(st.sampled_from(nodes), st.sampled_from(nodes), st.integers(1, 6)),
                                 max_size=3 * n)):
        if u != v:
            adj[u][v] = c  # directed, possibly asymmetric or one-way
    attrs = st.tuples(st.none() | st.integers(0, 4), st.none() | st.integers(0, 6))
    hosts = draw(st.dictionaries(st.sampled_from(nodes), attrs, min_size=1))
    producers = draw(st.lists(st.lists(st.sampled_from(nodes), max_size=3), max_size=5))
    return adj, nodes, hosts, producers, draw(st.sampled_from(nodes))


@settings(max_examples=300, deadline=None)
@given(cases())
def test_ranking_matches_a_brute_force_one(case: tuple[Adj, list[str], dict[str, tuple[int | None, int | None]],
                                                        list[list[str]], str]) -> None:
    adj, nodes, hosts, producers, caller = case
    got = place(adj, hosts, producers, caller=caller)
    assert [(p.node, p.cost) for p in got] == expected(adj, nodes, hosts, producers, caller)
    assert all((p.capacity, p.load) == hosts[p.node] for p in got)


# --- the router: announced prefixes, longest match, the graph of its database -------------------

def converged_line() -> Net:
    """a - b - c; /fn/x hosted at b and c, /data/A published at c."""
    net = Net()
    for n in "abc":
        net.add(n)
    net.announce("a", {"/node/a": (None, None)})
    net.announce("b", {"/node/b": (None, None), "/fn/x": (4, 0)})
    net.announce("c", {"/node/c": (None, None), "/fn/x": (4, 3), "/data/A": (None, None)})
    net.link("a", "b")
    net.link("b", "c")
    net.run(3.0)
    assert net.converged()
    return net


def test_router_places_a_call_near_its_refs() -> None:
    net = converged_line()
    a = net.routers["a"]
    assert a.graph() == {
        "/node/a": {"/node/b": 1}, "/node/b": {"/node/a": 1, "/node/c": 1}, "/node/c": {"/node/b": 1}}
    near_data = a.place(Name("/fn/x"), [Name("/data/A/v=3/seg=0")])
    assert [(p.node, p.cost, p.capacity, p.load) for p in near_data] == [
        ("/node/c", 0, 4, 3), ("/node/b", 1, 4, 0)]
    # a future named under its host node: its producer is that node
    assert [p.node for p in a.place(Name("/fn/x/sub"), [Name("/node/b/thunk/17")])] == ["/node/b", "/node/c"]
    # no refs: load decides
    assert [(p.node, p.cost) for p in a.place(Name("/fn/x"), [])] == [("/node/b", 0), ("/node/c", 0)]
    # a host asking places on itself too
    assert a.place(Name("/fn/x"), [Name("/data/A")]) == net.routers["c"].place(Name("/fn/x"), [Name("/data/A")])
    assert a.place(Name("/fn/nobody"), [Name("/data/A")]) == []
    assert a.place(Name("/fn"), []) == []  # shorter than any announced prefix: no match
    with pytest.raises(ValueError):
        a.place(Name("/fn/x"), [Name("/data/A")] * (MAX_REFS + 1))


def test_router_graph_has_only_links_both_ends_list() -> None:
    net = converged_line()
    net.kill("c")
    net.run(net.now + 6.0)  # b notices c is gone (dead interval) and drops it from its record
    graph = net.routers["a"].graph()
    assert graph["/node/b"] == {"/node/a": 1}
    assert graph["/node/c"] == {}  # c's last record, still held, lists b; b's no longer lists c
    # c's record is still held (it has not aged out) but c is no longer reachable: no candidate
    got = net.routers["a"].place(Name("/fn/x"), [Name("/data/A")])
    assert [(p.node, p.cost) for p in got] == [("/node/b", None), ("/node/c", None)]
