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

Output is deterministic: ``derive_routes`` returns every node of the spec (in
spec order) mapped to its routes sorted by prefix, then cost, then neighbour.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass

from .spec import TopologySpec, node_prefix

__all__ = ["Route", "derive_routes", "originated_prefixes", "shortest_distances"]


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


def _dijkstra(adj: Graph, source: str, removed: str | None = None) -> dict[str, int]:
    """Shortest distances from ``source`` to every reachable node, avoiding ``removed``."""
    dist = {source: 0}
    heap = [(0, source)]
    while heap:
        d, u = heapq.heappop(heap)
        if d > dist[u]:
            continue
        for v, c in adj[u].items():
            if v == removed:
                continue
            nd = d + c
            if nd < dist.get(v, nd + 1):
                dist[v] = nd
                heapq.heappush(heap, (nd, v))
    return dist


def shortest_distances(spec: TopologySpec, source: str) -> dict[str, int]:
    """Shortest-path distance by link cost from ``source`` to every node it can reach."""
    if source not in spec.nodes:
        raise KeyError(source)
    return _dijkstra(_graph(spec), source)


def originated_prefixes(spec: TopologySpec) -> dict[str, list[str]]:
    """The prefixes each node originates: its node prefix, then its function prefixes."""
    return {name: [node_prefix(name), *node.function_prefixes] for name, node in spec.nodes.items()}


def derive_routes(spec: TopologySpec) -> dict[str, list[Route]]:
    """Routes to install at every node (see the module docstring for the rules).

    Cost: one Dijkstra per (node, neighbour) pair, i.e. ``2 * len(links)``
    runs over the graph; output size is about nodes x prefixes x degree.
    """
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
