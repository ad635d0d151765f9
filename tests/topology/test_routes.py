"""Routes derived from topologies: NLSR-style multipath, one next hop per
neighbour that leads to the destination, with that path's cost.

The invariants are checked against brute force (enumerating simple paths) and
by simulating forwarding: following cheapest routes always arrives, and after
the cheapest next hop dies the remaining routes still arrive whenever the
surviving graph is connected."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from icnd.topology import (
    Route,
    TopologySpec,
    derive_routes,
    load,
    originated_prefixes,
    parse,
    shortest_distances,
)

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
ALL = sorted(p.stem for p in TOPOLOGIES.glob("*.toml"))


def topo(stem: str) -> TopologySpec:
    return load(TOPOLOGIES / f"{stem}.toml")


def adjacency(spec: TopologySpec, dead: frozenset[str] = frozenset()) -> dict[str, dict[str, int]]:
    adj: dict[str, dict[str, int]] = {n: {} for n in spec.nodes if n not in dead}
    for link in spec.links:
        if link.a not in dead and link.b not in dead:
            adj[link.a][link.b] = link.cost
            adj[link.b][link.a] = link.cost
    return adj


def simple_paths(adj: dict[str, dict[str, int]], start: str, goal: str, avoid: str) -> Iterator[int]:
    """Costs of every simple path start -> goal that never visits `avoid`."""

    def walk(node: str, seen: frozenset[str], cost: int) -> Iterator[int]:
        if node == goal:
            yield cost
            return
        for nxt, c in adj[node].items():
            if nxt not in seen and nxt != avoid:
                yield from walk(nxt, seen | {nxt}, cost + c)

    yield from walk(start, frozenset({start}), 0)


def reachable(adj: dict[str, dict[str, int]], a: str, b: str) -> bool:
    seen, todo = {a}, [a]
    while todo:
        for nxt in adj[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return b in seen


def table(routes: dict[str, list[Route]], node: str, prefix: str) -> list[Route]:
    return [r for r in routes[node] if r.prefix == prefix]


def follow_cheapest(
    routes: dict[str, list[Route]], start: str, goal: str, dead: frozenset[str] = frozenset()
) -> list[str] | None:
    """Greedy best-route: the cheapest live next hop that is not where the packet came from."""
    prefix = f"/node/{goal}"
    path, prev = [start], None
    while path[-1] != goal and len(path) <= len(routes):
        here = path[-1]
        hops = [r.via for r in table(routes, here, prefix) if r.via not in dead and r.via != prev]
        if not hops:
            return None
        prev = here
        path.append(hops[0])
    return path if path[-1] == goal else None


def best_route_with_retries(
    routes: dict[str, list[Route]], start: str, goal: str, dead: frozenset[str] = frozenset()
) -> list[str] | None:
    """best-route with failover: try next hops cheapest first, never back to the
    incoming face nor to a dead node; a node that already saw the Interest's
    nonce answers Nack(duplicate), a node out of next hops Nacks upstream, and
    the sender then tries its next route."""
    prefix = f"/node/{goal}"
    seen: set[str] = set()

    def visit(node: str, came_from: str | None) -> list[str] | None:
        if node == goal:
            return [node]
        seen.add(node)
        for route in table(routes, node, prefix):
            if route.via == came_from or route.via in dead or route.via in seen:
                continue
            rest = visit(route.via, node)
            if rest is not None:
                return [node, *rest]
        return None

    return visit(start, None)


def path_cost(spec: TopologySpec, path: list[str]) -> int:
    return sum(spec.link(a, b).cost for a, b in zip(path, path[1:]))  # type: ignore[union-attr]


# ------------------------------------------------------------------ examples


def test_line3() -> None:
    routes = derive_routes(topo("line3"))
    assert routes == {
        "a": [Route("/node/b", "b", 1), Route("/node/c", "b", 2)],
        "b": [Route("/node/a", "a", 1), Route("/node/c", "c", 1)],
        "c": [Route("/node/a", "b", 2), Route("/node/b", "b", 1)],
    }


def test_grid9_corner_to_corner_has_two_next_hops_cheapest_first() -> None:
    routes = derive_routes(topo("grid9"))
    hops = table(routes, "n00", "/node/n22")
    assert [(r.via, r.cost) for r in hops] == [("n01", 4), ("n10", 4)]
    # From an edge node there is a detour too, dearer and listed after.
    hops = table(routes, "n01", "/node/n22")
    assert [(r.via, r.cost) for r in hops] == [("n02", 3), ("n11", 3), ("n00", 5)]
    assert [r.cost for r in hops] == sorted(r.cost for r in hops)


def test_grid9_with_uneven_costs_orders_cheapest_first() -> None:
    spec = topo("grid9")
    data = {
        "nodes": {n: {} for n in spec.nodes},
        "links": [
            {"ends": list(link.ends), "cost": 5 if link.ends == ("n00", "n01") else 1} for link in spec.links
        ],
    }
    routes = derive_routes(parse(data))
    assert [(r.via, r.cost) for r in table(routes, "n00", "/node/n22")] == [("n10", 4), ("n01", 8)]


def test_ring8_both_directions() -> None:
    routes = derive_routes(topo("ring8"))
    for k in range(1, 8):
        hops = {r.via: r.cost for r in table(routes, "n0", f"/node/n{k}")}
        assert hops == {"n1": k, "n7": 8 - k}
        assert [r.cost for r in table(routes, "n0", f"/node/n{k}")] == sorted(hops.values())
    # Neighbour n1 of n0: directly, or the long way round.
    assert [(r.via, r.cost) for r in table(routes, "n0", "/node/n1")] == [("n1", 1), ("n7", 7)]


def test_star5_has_no_useless_routes() -> None:
    routes = derive_routes(topo("star5"))
    assert routes["leaf1"] == [Route(f"/node/{n}", "hub", 2 if n.startswith("leaf") else 1)
                               for n in ["hub", "leaf2", "leaf3", "leaf4"]]
    # The hub never sends toward a leaf through another leaf.
    assert all(r.via == r.prefix.rsplit("/", 1)[1] for r in routes["hub"])


def test_tree7_routes_follow_the_tree() -> None:
    routes = derive_routes(topo("tree7"))
    assert table(routes, "n00", "/node/n11") == [Route("/node/n11", "n0", 4)]
    assert table(routes, "root", "/node/n01") == [Route("/node/n01", "n0", 2)]


def test_dumbbell_crosses_the_bottleneck_at_its_cost() -> None:
    spec = topo("dumbbell")
    routes = derive_routes(spec)
    bottleneck = max(spec.links, key=lambda link: link.cost)
    assert table(routes, "l2", "/node/r2") == [Route("/node/r2", "l1", 1 + bottleneck.cost + 1),
                                               Route("/node/r2", "l3", 1 + 1 + bottleneck.cost + 1)]


def test_single_node_and_disconnected_parts() -> None:
    assert derive_routes(parse("[nodes.solo]\n")) == {"solo": []}
    spec = parse('[nodes.a]\n[nodes.b]\n[nodes.c]\n[[links]]\nends = ["a", "b"]\n')
    assert derive_routes(spec) == {
        "a": [Route("/node/b", "b", 1)],
        "b": [Route("/node/a", "a", 1)],
        "c": [],
    }


def test_function_prefixes_and_groups() -> None:
    spec = parse(
        """
        [nodes.a]
        functions = ["m:f=/fn/f"]
        [nodes.b]
        [nodes.c]
        [nodes.d]
        functions = ["m:f=/fn/f", "m:g=/fn/g"]
        [[links]]
        ends = ["a", "b"]
        [[links]]
        ends = ["b", "c"]
        [[links]]
        ends = ["c", "d"]
        [[links]]
        ends = ["a", "c"]
        cost = 5
        [groups.g]
        members = ["a", "x@d"]
        """
    )
    assert originated_prefixes(spec) == {
        "a": ["/node/a", "/fn/f"],
        "b": ["/node/b"],
        "c": ["/node/c"],
        "d": ["/node/d", "/fn/f", "/fn/g"],
    }
    routes = derive_routes(spec)
    # b: /fn/f is one hop away via a, two via c; each neighbour once, at its best host.
    assert table(routes, "b", "/fn/f") == [Route("/fn/f", "a", 1), Route("/fn/f", "c", 2)]
    # c: a is reachable directly (5) or via b (2); d hosts it next door.
    assert [(r.via, r.cost) for r in table(routes, "c", "/fn/f")] == [("d", 1), ("b", 2), ("a", 5)]
    # A host also routes toward the other hosts (for overload failover).
    assert table(routes, "a", "/fn/f") == [Route("/fn/f", "b", 3), Route("/fn/f", "c", 6)]
    assert table(routes, "d", "/fn/g") == []
    assert table(routes, "a", "/fn/g") == [Route("/fn/g", "b", 3), Route("/fn/g", "c", 6)]
    # Groups add no prefixes: members are reached through their node prefix.
    prefixes = {r.prefix for rs in routes.values() for r in rs}
    assert prefixes == {"/node/a", "/node/b", "/node/c", "/node/d", "/fn/f", "/fn/g"}


def test_output_is_deterministic_and_sorted() -> None:
    spec = topo("grid9")
    routes = derive_routes(spec)
    assert list(routes) == list(spec.nodes)
    for rs in routes.values():
        assert rs == sorted(rs, key=lambda r: (r.prefix, r.cost, r.via))
        assert len({(r.prefix, r.via) for r in rs}) == len(rs)
    assert derive_routes(topo("grid9")) == routes


# ------------------------------------------------------------------ invariants, by brute force


@pytest.mark.parametrize("stem", ALL)
def test_routes_match_brute_force(stem: str) -> None:
    """A route n -> m for d exists iff m reaches d without n, and costs
    link(n, m) plus the cheapest such path; the cheapest route costs dist(n, d)."""
    spec = topo(stem)
    adj = adjacency(spec)
    routes = derive_routes(spec)
    for n in spec.nodes:
        dist = shortest_distances(spec, n)
        for d in spec.nodes:
            if d == n:
                assert table(routes, n, f"/node/{d}") == []
                continue
            expected = []
            for m, c in adj[n].items():
                costs = list(simple_paths(adj, m, d, avoid=n))
                if costs:
                    expected.append((m, c + min(costs)))
            got = [(r.via, r.cost) for r in table(routes, n, f"/node/{d}")]
            assert sorted(got) == sorted(expected), (n, d)
            assert got[0][1] == dist[d]
            assert [cost for _, cost in got] == sorted(cost for _, cost in got)


@pytest.mark.parametrize("stem", ALL)
def test_cheapest_routes_reach_every_destination(stem: str) -> None:
    spec = topo(stem)
    routes = derive_routes(spec)
    for s in spec.nodes:
        dist = shortest_distances(spec, s)
        for d in spec.nodes:
            if d != s:
                path = follow_cheapest(routes, s, d)
                assert path is not None and path_cost(spec, path) == dist[d], (s, d, path)


def failover_cases(spec: TopologySpec, routes: dict[str, list[Route]]) -> Iterator[tuple[str, str, str]]:
    """(source, destination, dead) for every pair whose cheapest next hop is not
    the destination itself and whose removal leaves the pair connected."""
    for s in spec.nodes:
        for d in spec.nodes:
            if d == s:
                continue
            dead = table(routes, s, f"/node/{d}")[0].via
            if dead != d and reachable(adjacency(spec, frozenset({dead})), s, d):
                yield s, d, dead


@pytest.mark.parametrize("stem", ["grid9", "ring8"])
def test_failover_greedy_after_cheapest_next_hop_dies(stem: str) -> None:
    spec = topo(stem)
    routes = derive_routes(spec)
    cases = list(failover_cases(spec, routes))
    assert len(cases) >= 40
    for s, d, dead in cases:
        path = follow_cheapest(routes, s, d, frozenset({dead}))
        assert path is not None and dead not in path, (s, d, dead, path)


@pytest.mark.parametrize("stem", ALL)
def test_failover_with_retries_after_cheapest_next_hop_dies(stem: str) -> None:
    spec = topo(stem)
    routes = derive_routes(spec)
    for s, d, dead in failover_cases(spec, routes):
        path = best_route_with_retries(routes, s, d, frozenset({dead}))
        assert path is not None and dead not in path, (s, d, dead)


@pytest.mark.parametrize("stem", ["grid9", "ring8"])
def test_failover_after_any_node_dies(stem: str) -> None:
    spec = topo(stem)
    routes = derive_routes(spec)
    for dead in spec.nodes:
        adj = adjacency(spec, frozenset({dead}))
        for s in adj:
            for d in adj:
                if s != d and reachable(adj, s, d):
                    assert best_route_with_retries(routes, s, d, frozenset({dead})) is not None, (s, d, dead)
