"""A simulated star for aggregation tests: rendezvous ``r`` linked to each member's node."""

from __future__ import annotations

from typing import Callable

from icnd.name import Name
from icnd.packet import Data, Interest
from icnd.reduction.aggregate import Aggregator
from icnd.reduction.group import REDUCE
from icnd.sim.network import SimApp, SimLink, SimNetwork


def member_star(members: list[str], serve: Callable[[Interest], Data | None], *, seed: int,
                ) -> tuple[SimNetwork, dict[str, SimLink], dict[str, SimApp]]:
    """(the network, each member's link to ``r``, each member node's application
    serving ``/node/<m>/member`` with `serve`); every node aggregates."""
    net = SimNetwork(seed=seed, hooks=lambda node: {REDUCE: Aggregator(node_name=node)})
    for n in ["r", *members]:
        net.add_node(n)
    links: dict[str, SimLink] = {}
    apps: dict[str, SimApp] = {}
    for m in members:
        link = links[m] = net.link("r", m, delay=0.001)
        net.nodes["r"].fw.add_route(Name(f"/node/{m}"), link.face_a, 1)
        net.nodes[m].fw.add_route(Name("/node/r"), link.face_b, 1)
        apps[m] = net.app(m)
        apps[m].serve(f"/node/{m}/member", serve)
    return net, links, apps
