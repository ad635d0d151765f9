"""Placement near the data: which host of a function a call should go to, sans-IO.

A function prefix may be announced by several nodes (its *hosts*); a call
whose arguments are refs (names of data, or futures named under their host
node) costs least where the refs' producers are near.  `place` ranks the
hosts from what the link-state database says, nothing else:

1. **Cost.** ``cost(h) = sum over refs r of min over producers p of r of
   dist(h, p)``, distances along the link-state graph (the router's Rule 8
   graph: an edge only where both ends list each other) in the direction an
   Interest travels, host to producer.  A host is its own producer at
   distance 0.  A ref with no known producer adds nothing to any host (it
   cannot tell them apart); a ref none of whose producers a host reaches
   makes that host's cost unknown (``None``), as does a host the caller
   cannot reach: such hosts are listed last.
2. **Ties** (equal cost) go to the host with the lower announced load
   relative to its capacity (``load / capacity``, a missing load counting as
   0); a host announcing capacity 0 ranks after every host with room, as
   the load-balance strategy ranks a busy hop; one announcing no capacity
   ranks last.  Then by node name, so the order is total and the same on
   every node holding the same database.
3. **Bounds.** At most `MAX_REFS` refs (a call carries no more arguments,
   `icnd.compute.rice.MAX_ARGS`); at most `MAX_HOSTS` hosts are ranked, the
   least loaded by rule 2 when more announce the function.  The work is one
   Dijkstra from the caller, then one per ranked host or one per distinct
   producer (along reversed links), whichever are fewer, each stopping once
   what it looks for is settled: about what one full route computation
   costs a node with as many neighbours.

No refs: every reachable host costs 0, and rule 2 alone decides.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from icnd.core.routing.paths import Graph

__all__ = ["MAX_HOSTS", "MAX_REFS", "Placement", "place"]

MAX_HOSTS = 64
MAX_REFS = 64

Attrs = tuple[int | None, int | None]  # an announced (capacity, load)


@dataclass(frozen=True, slots=True)
class Placement:
    """One candidate host: its node name, its cost (None: cannot serve the
    call near its refs, see rule 1) and what it announced with the prefix."""

    node: str
    cost: int | None
    capacity: int | None = None
    load: int | None = None


def place(adj: Graph, hosts: Mapping[str, Attrs], producers: Sequence[Iterable[str]], *,
          caller: str | None = None) -> list[Placement]:
    """The hosts of a function, best first (see the module's rules).

    `adj`: the link-state graph (``adj[u][v]``, the cost of u->v); `hosts`:
    each host's announced (capacity, load) for the function's prefix;
    `producers`: for each ref, the origins of its longest announced prefix
    (empty: unknown); `caller`: the node the call starts from, when hosts it
    cannot reach must rank last.  Raises ValueError for more than `MAX_REFS`
    refs."""
    if len(producers) > MAX_REFS:
        raise ValueError(f"{len(producers)} refs, more than {MAX_REFS}")
    located = [frozenset(p) for p in producers]
    located = [p for p in located if p]
    targets = frozenset(p for ps in located for p in ps)
    ranked = sorted(hosts, key=lambda h: (_busy(hosts[h]), h))[:MAX_HOSTS]
    reached = None if caller is None else _distances(adj, caller, frozenset(ranked))
    candidates = [h for h in ranked if reached is None or h in reached]
    dist: dict[str, dict[str, int]]  # host -> producer -> distance from the host to the producer
    if not targets:
        dist = {h: {} for h in candidates}
    elif len(targets) < len(candidates):  # fewer runs from the producers, along the links reversed
        reverse: dict[str, dict[str, int]] = {}
        for u, nbrs in adj.items():
            for v, c in nbrs.items():
                reverse.setdefault(v, {})[u] = c
        to = {p: _distances(reverse, p, frozenset(candidates)) for p in targets}
        dist = {h: {p: d[h] for p, d in to.items() if h in d} for h in candidates}
    else:
        dist = {h: _distances(adj, h, targets) for h in candidates}
    out = []
    for host in ranked:
        cost: int | None = None
        if host in dist:
            total = 0
            for refs_producers in located:
                best = min((dist[host][p] for p in refs_producers if p in dist[host]), default=None)
                if best is None:
                    break
                total += best
            else:
                cost = total
        capacity, load = hosts[host]
        out.append(Placement(host, cost, capacity, load))
    out.sort(key=lambda p: (p.cost is None, p.cost or 0, _busy((p.capacity, p.load)), p.node))
    return out


def _busy(attrs: Attrs) -> tuple[int, Fraction]:
    """Rule 2's key: (0, load/capacity) with room, (1, 0) at capacity 0, (2, 0) without a capacity."""
    capacity, load = attrs
    if capacity is None:
        return (2, Fraction(0))
    if capacity <= 0:
        return (1, Fraction(0))
    return (0, Fraction(max(0, load or 0), capacity))


def _distances(adj: Graph, source: str, targets: frozenset[str]) -> dict[str, int]:
    """Shortest distances from `source` to those of `targets` it reaches (Dijkstra,
    stopping once every target is settled)."""
    dist = {source: 0}
    settled: set[str] = set()
    left = len(targets)
    heap = [(0, source)]
    while heap and left:
        d, u = heapq.heappop(heap)
        if u in settled:
            continue
        settled.add(u)
        if u in targets:
            left -= 1
        for v, c in adj.get(u, {}).items():
            nd = d + c
            if v not in settled and nd < dist.get(v, nd + 1):
                dist[v] = nd
                heapq.heappush(heap, (nd, v))
    return {t: dist[t] for t in targets if t in settled}
