"""Shortest paths and NLSR-style multipath next hops over a cost graph.

The one definition of a route in icnd, used by the link-state router
(`icnd.core.routing.router`: a node's own routes from its link-state
database) and by topologies (`icnd.topology.routes`: every node's routes
from a topology file).  At node ``n``, for a prefix originated by nodes
``H``, there is one next hop per neighbour ``m`` of ``n`` that reaches some
``h`` in ``H - {n}`` without coming back through ``n``; its cost is::

    cost(n, prefix, m) = link_cost(n, m) + dist_{G - n}(m, H - {n})

Graphs map a node to its neighbours and the cost of the link toward each
(``adj[u][v]``: the cost of going from ``u`` to ``v``; costs are >= 1).
Distances are measured along links in their own direction, so an
asymmetric graph is handled the way a packet travels.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

Graph = Mapping[str, Mapping[str, int]]

__all__ = ["Distances", "Graph", "NextHop", "dijkstra", "multipath", "neighbor_distances", "next_hops"]


@dataclass(frozen=True, slots=True)
class NextHop:
    """Reach a prefix through neighbour ``via`` at ``cost``; ``hosts`` are the
    origins of the prefix that are that cheap along that way (an anycast
    prefix may have several at the same cost)."""

    via: str
    cost: int
    hosts: tuple[str, ...]


def dijkstra(adj: Graph, source: str, removed: str | None = None) -> dict[str, int]:
    """Shortest distances from ``source`` to every node it reaches, avoiding ``removed``."""
    dist = {source: 0}
    heap = [(0, source)]
    while heap:
        d, u = heapq.heappop(heap)
        if d > dist[u]:
            continue
        for v, c in adj.get(u, {}).items():
            if v == removed:
                continue
            nd = d + c
            if nd < dist.get(v, nd + 1):
                dist[v] = nd
                heapq.heappush(heap, (nd, v))
    return dist


Distances = dict[str, tuple[int, dict[str, int]]]  # neighbour -> (link cost, its distances avoiding me)


def neighbor_distances(adj: Graph, me: str) -> Distances:
    """For each neighbour ``m`` of ``me``: the link's cost and ``dist_{G - me}(m, x)``
    for every ``x`` it reaches.  The expensive half of `multipath` (one
    Dijkstra per neighbour), kept by the router while the graph is unchanged."""
    return {m: (c, dijkstra(adj, m, removed=me)) for m, c in adj.get(me, {}).items() if m != me}


def next_hops(distances: Distances, me: str, origins: Mapping[str, Iterable[str]]) -> dict[str, list[NextHop]]:
    """The next hops at ``me`` for every prefix in ``origins`` from `neighbor_distances`."""
    hosts_of = {prefix: [h for h in hosts if h != me] for prefix, hosts in origins.items()}
    out: dict[str, list[NextHop]] = {}
    for m, (link_cost, dist) in distances.items():
        for prefix, hosts in hosts_of.items():
            best: int | None = None
            at: list[str] = []
            for h in hosts:
                d = dist.get(h)
                if d is None:
                    continue
                if best is None or d < best:
                    best, at = d, [h]
                elif d == best:
                    at.append(h)
            if best is not None:
                out.setdefault(prefix, []).append(NextHop(m, link_cost + best, tuple(sorted(at))))
    for hops in out.values():
        hops.sort(key=lambda h: (h.cost, h.via))
    return out


def multipath(adj: Graph, me: str, origins: Mapping[str, Iterable[str]]) -> dict[str, list[NextHop]]:
    """The next hops at ``me`` for every prefix in ``origins`` (prefix -> the
    nodes originating it), cheapest first (ties: neighbour name).

    A prefix only ``me`` originates gets none; neither does one no origin of
    which is reachable.  Cost: one Dijkstra per neighbour of ``me``.
    """
    return next_hops(neighbor_distances(adj, me), me, origins)
