"""Routes derived from a topology's graph, NLSR-multipath style.

Every node originates prefixes:

- its node prefix ``/node/<name>``;
- the ``/fn/NAME`` prefix of every function it hosts (an anycast prefix: any
  number of nodes may host the same function);
- group members are reached through the node prefix of the node they live on
  (``GroupMember.node``), so groups add no prefixes of their own.

At each node ``n``, for every prefix originated by some *other* node ``d``,
there is one route per neighbour ``m`` of ``n`` that leads to ``d`` without
coming back through ``n``; its cost is the cost of that path::

    cost(n, prefix, m) = link_cost(n, m) + dist_{G - n}(m, d)

where ``dist_{G - n}`` is the shortest-path distance by link cost in the
graph with ``n`` removed.  When several nodes originate the prefix (a function
hosted in several places), ``m`` appears once with the least cost over them.

Invariants (checked by the tests):

- the cheapest route at ``n`` has cost ``dist(n, d)`` and points to a
  neighbour strictly closer to ``d``, so following cheapest routes always
  reaches the destination (no loops);
- no route points to a neighbour whose only way to the destination runs back
  through ``n``;
- every other route is a real loop-free path to the destination, so when the
  cheapest next hop dies, best-route's retries on the remaining routes (never
  back to the incoming face, Nack on duplicate nonce) reach the destination
  whenever the surviving graph is connected;
- nodes hold no routes for prefixes they originate themselves, and there are
  no routes across disconnected parts of the graph.

The node-side link-state router computes the same next hops from its
link-state database (`icnd.core.routing.paths.multipath`, whose Dijkstra
this module uses).

Output is deterministic: ``derive_routes`` returns every node of the spec (in
spec order) mapped to its routes sorted by prefix, then cost, then neighbour.

Function prefixes that get routes also get `FUNCTION_STRATEGY` on every node
(`function_route_prefixes` lists them), in the launcher and the simulator
alike, so calls spread over the hosts.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from icnd.core.routing.paths import dijkstra as _dijkstra
from icnd.topology.spec import TopologySpec, node_prefix

__all__ = [
    "FUNCTION_STRATEGY",
    "Route",
    "RouteOracle",
    "derive_routes",
    "function_route_prefixes",
    "originated_prefixes",
    "shortest_distances",
]

FUNCTION_STRATEGY = "load-balance"  # on every node, for every routed function prefix


@dataclass(frozen=True)
class Route:
    """At some node: reach ``prefix`` through neighbour ``via`` at ``cost`` (>= 1)."""

    prefix: str
    via: str
    cost: int


Graph = Mapping[str, Mapping[str, int]]


def _graph(spec: TopologySpec) -> dict[str, dict[str, int]]:
    adj: dict[str, dict[str, int]] = {name: {} for name in spec.nodes}
    for link in spec.links:
        adj[link.a][link.b] = link.cost
        adj[link.b][link.a] = link.cost
    return adj


def shortest_distances(spec: TopologySpec, source: str) -> dict[str, int]:
    """Shortest-path distance by link cost from ``source`` to every node it can reach."""
    if source not in spec.nodes:
        raise KeyError(source)
    return _dijkstra(_graph(spec), source)


def originated_prefixes(spec: TopologySpec) -> dict[str, list[str]]:
    """The prefixes each node originates: its node prefix, then its function prefixes."""
    return {name: [node_prefix(name), *node.function_prefixes] for name, node in spec.nodes.items()}


def derive_routes(
    spec: TopologySpec, destinations: Iterable[str] | None = None
) -> dict[str, list[Route]]:
    """Routes to install at every node (see the module docstring for the rules).

    Cost: one Dijkstra per (node, neighbour) pair, i.e. ``2 * len(links)``
    runs over the graph; output size is about nodes x prefixes x degree.

    ``destinations`` (node names) restricts the output to the prefixes those
    nodes originate (their node prefixes and the functions they host); the
    routes for each such prefix are exactly those of the full derivation
    (an anycast prefix still counts every node hosting it).  This is the
    fast path for large graphs where only a few destinations matter: it
    costs one Dijkstra per prefix plus a short A* search per (node,
    neighbour) whose every shortest path might run back through the node;
    see `RouteOracle`.
    """
    if destinations is not None:
        return _derive_toward(spec, destinations)
    adj = _graph(spec)
    origins: dict[str, list[str]] = {}
    for name, prefixes in originated_prefixes(spec).items():
        for prefix in prefixes:
            origins.setdefault(prefix, []).append(name)

    routes: dict[str, list[Route]] = {}
    for n in spec.nodes:
        best: dict[tuple[str, str], int] = {}
        for m, link_cost in adj[n].items():
            dist = _dijkstra(adj, m, removed=n)
            for prefix, hosts in origins.items():
                costs = [dist[h] for h in hosts if h != n and h in dist]
                if not costs:
                    continue
                cost = link_cost + min(costs)
                key = (prefix, m)
                if cost < best.get(key, cost + 1):
                    best[key] = cost
        routes[n] = sorted(
            (Route(prefix, via, cost) for (prefix, via), cost in best.items()),
            key=lambda r: (r.prefix, r.cost, r.via),
        )
    return routes


def function_route_prefixes(spec: TopologySpec, routes: Mapping[str, list[Route]]) -> list[str]:
    """The function prefixes (``/fn/NAME``) some node has derived routes for, sorted."""
    functions = {p for node in spec.nodes.values() for p in node.function_prefixes}
    return sorted({r.prefix for node_routes in routes.values() for r in node_routes if r.prefix in functions})


def _derive_toward(spec: TopologySpec, destinations: Iterable[str]) -> dict[str, list[Route]]:
    oracle = RouteOracle(spec)
    originated = originated_prefixes(spec)
    wanted: dict[str, None] = {}
    for d in destinations:
        if d not in spec.nodes:
            raise KeyError(d)
        wanted.update(dict.fromkeys(originated[d]))
    routes: dict[str, list[Route]] = {}
    for n in spec.nodes:
        out: list[Route] = []
        for prefix in wanted:
            out.extend(oracle.routes(n, prefix))
        out.sort(key=lambda r: (r.prefix, r.cost, r.via))
        routes[n] = out
    return routes


class RouteOracle:
    """The routes of `derive_routes`, computed on demand for one (node, prefix).

    ``oracle.routes(n, prefix)`` equals the routes ``derive_routes(spec)[n]``
    holds for ``prefix`` (sorted by cost, then neighbour), without deriving
    anything else: a simulator of a large topology asks only for the nodes
    and prefixes its packets actually meet.

    Method: for a prefix with hosts ``H``, one multi-source Dijkstra gives
    ``D(x) = dist_G(x, H)``.  At node ``n`` the route via neighbour ``m``
    needs ``D_n(m) = dist_{G - n}(m, H - {n})``.  When ``D(m) <= D(n)`` no
    shortest path from ``m`` can run through ``n`` (costs are >= 1), so
    ``D_n(m) = D(m)``; otherwise an A* search from ``m`` in ``G - n`` with
    the consistent heuristic ``D`` finds it, usually in a few steps.
    """

    def __init__(self, spec: TopologySpec) -> None:
        self.spec = spec
        self._adj = _graph(spec)
        self._hosts: dict[str, list[str]] = {}
        for name, prefixes in originated_prefixes(spec).items():
            for prefix in prefixes:
                self._hosts.setdefault(prefix, []).append(name)
        self._dist: dict[str, dict[str, int]] = {}
        self._unit = all(link.cost == 1 for link in spec.links)

    def prefixes(self) -> list[str]:
        """Every originated prefix, in first-origination order."""
        return list(self._hosts)

    def hosts(self, prefix: str) -> list[str]:
        """The nodes originating ``prefix`` (empty if none)."""
        return list(self._hosts.get(prefix, ()))

    def distances(self, prefix: str) -> dict[str, int]:
        """``dist_G(x, hosts)`` for every node ``x`` that can reach a host (cached)."""
        dist = self._dist.get(prefix)
        if dist is None:
            sources = self._hosts.get(prefix, ())
            search = _multi_bfs if self._unit else _multi_dijkstra
            dist = self._dist[prefix] = search(self._adj, sources)
        return dist

    def routes(self, node: str, prefix: str) -> list[Route]:
        """The routes at ``node`` toward ``prefix``, cheapest first (ties: neighbour name)."""
        if node not in self._adj:
            raise KeyError(node)
        hosts = self._hosts.get(prefix)
        if not hosts or (len(hosts) == 1 and hosts[0] == node):
            return []
        dist = self.distances(prefix)
        here = dist.get(node)
        if here is None:
            return []
        out = []
        for m, link_cost in self._adj[node].items():
            dm = dist.get(m)
            if dm is None:
                continue
            if dm > here:
                dm = _astar(self._adj, m, node, dist)
                if dm is None:
                    continue
            out.append(Route(prefix, m, link_cost + dm))
        out.sort(key=lambda r: (r.cost, r.via))
        return out


def _multi_bfs(adj: Graph, sources: Iterable[str]) -> dict[str, int]:
    """`_multi_dijkstra` for a graph whose links all cost 1."""
    dist = dict.fromkeys(sources, 0)
    frontier = list(dist)
    d = 0
    while frontier:
        d += 1
        nxt = []
        for u in frontier:
            for v in adj[u]:
                if v not in dist:
                    dist[v] = d
                    nxt.append(v)
        frontier = nxt
    return dist


def _multi_dijkstra(adj: Graph, sources: Iterable[str]) -> dict[str, int]:
    dist: dict[str, int] = {}
    heap: list[tuple[int, str]] = []
    for s in sources:
        dist[s] = 0
        heap.append((0, s))
    heapq.heapify(heap)
    while heap:
        d, u = heapq.heappop(heap)
        if d > dist[u]:
            continue
        for v, c in adj[u].items():
            nd = d + c
            if nd < dist.get(v, nd + 1):
                dist[v] = nd
                heapq.heappush(heap, (nd, v))
    return dist


def _astar(adj: Graph, start: str, removed: str, h: Mapping[str, int]) -> int | None:
    """``dist_{G - removed}(start, hosts)`` by A* with heuristic ``h`` (the
    distances to the hosts in the whole graph ``G``), or None if unreachable.

    The search stops at the first node ``x`` popped with ``h[x] <= h[removed]``:
    no shortest path from such an ``x`` runs through ``removed`` (costs are
    >= 1), so ``h[x]`` is exact in ``G - removed`` as well, and with a
    consistent heuristic the first such pop is optimal.
    """
    # (f, -g, tie, node): prefer deeper nodes among equal f, so searches on
    # graphs with many equal-cost paths (grids) head straight on.
    bound = h[removed]
    g = {start: 0}
    tie = itertools.count()
    heap = [(h[start], 0, next(tie), start)]
    while heap:
        _, neg_g, _, u = heapq.heappop(heap)
        gu = -neg_g
        if gu > g[u]:
            continue
        hu = h[u]
        if hu <= bound:
            return gu + hu
        for v, c in adj[u].items():
            if v == removed:
                continue
            nd = gu + c
            if nd < g.get(v, nd + 1):
                g[v] = nd
                heapq.heappush(heap, (nd + h[v], -nd, next(tie), v))
    return None
