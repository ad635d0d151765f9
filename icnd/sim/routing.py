"""Link-state routing in the simulator: the node's router on the virtual clock.

`SimRouting` gives every node of a `SimNetwork` the same sans-IO `Router`
the daemon runs (`icnd.core.routing`), driven by the network's event queue:

- routing packets (names under ``/localhop/icnd/routing``) reaching a node
  are handed to its router, never to its forwarder (`SimNode.routing`);
- a `Transmit` is encoded and sent on the link of that face, through the
  link model, so delay, loss, bandwidth and cuts apply to routing traffic
  exactly as to any other packet;
- a `RouteUpdate` becomes the node's ``routing``-origin routes for that
  prefix in its RIB (`Rib.set_routes`), beside the applications' and static
  routes;
- the router's ``next_deadline()`` is an event on the virtual clock; a
  killed node's router does nothing (packets to it vanish, its timers are
  skipped), a restarted node gets a fresh router (``version_base`` 0: the
  router's own Rule 2 keeps its versions above its previous life's) and
  loses its ``routing`` routes, as a restarted daemon would; a route update
  the RIB refuses (full) is counted (`refused`), never raised.

Routing Interests get their nonce from the network's seeded RNG, so a run
repeats exactly for a seed, routing byte counts included.

Failures are noticed the protocol's way: a cut link or a dead node stops
answering hellos and is declared down after the dead interval; nothing
tells a router directly (the links are datagram links, always "up" to the
router, like UDP faces).

Records are signed with DigestSha256 and accepted when their digest is
valid: the simulator models no keys, so the cost of Ed25519 signing and
verification (and certificate chains) is not simulated.

**Consistency** (what "converged" means here, measured continuously):
routes are consistent when, for every live node ``a``,

- ``a`` has a route to the node prefix ``/node/<b>`` of every other live
  node ``b`` it can reach over up links and live nodes, and to no other
  node prefix (none toward a dead or unreachable node);
- each of those routes' cheapest next hops (all the hops of the least
  cost, the ones best-route tries first) leads over an up link to a live
  neighbour.

It is tracked incrementally: a count of the violations (missing routes,
extra routes, routes with a bad cheapest hop) is adjusted on each route
change and recounted from scratch at each failure (`kill`, `restart`,
`cut`, `heal`), so checking costs nothing per event; ``on_consistent``
listeners are called each time the count reaches zero.  Routes toward
function prefixes are not part of the check (they follow the same records).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from icnd.codec import encode
from icnd.core.routing.router import RouteUpdate, Router, RouterConfig, Transmit
from icnd.core.tables.rib import ORIGIN_ROUTING
from icnd.errors import Error
from icnd.name import Name
from icnd.packet import Data, Interest, Packet, new_interest
from icnd.security import KeyChain, make_data
from icnd.sim.network import SimNetwork, SimNode
from icnd.topology.spec import node_prefix

__all__ = ["ConvergenceLog", "SimRouting", "routing_report", "steady_traffic"]

_INF = math.inf
_DIGESTS = KeyChain()  # knows no keys: accepts valid DigestSha256, refuses anything signed by a key


def _sign(name: Name, content: bytes) -> Data:
    return make_data(name, content)  # DigestSha256


def _verify(data: Data, certs: tuple[bytes, ...]) -> bytes:
    _DIGESTS.verify(data)
    return b""  # no keys modelled: every node "signs" alike


class _NodeRouting:
    """One node's router and what the simulator keeps about it across lives."""

    __slots__ = ("node", "router", "timer_at", "routes", "messages", "bytes", "past_computations", "refused")

    def __init__(self, node: SimNode) -> None:
        self.node = node
        self.router: Router | None = None
        self.timer_at = _INF
        # node-prefix destinations with routes here -> faces of their cheapest next hops
        self.routes: dict[str, tuple[int, ...]] = {}
        self.messages = 0  # routing packets sent, every life
        self.bytes = 0
        self.past_computations = 0  # route computations of previous lives
        self.refused = 0  # route updates the RIB refused (TableFull)

    @property
    def computations(self) -> int:
        router = self.router
        return self.past_computations + (router.counters["route_computations"] if router is not None else 0)


class SimRouting:
    """The routing protocol on every node of ``net``; see the module docstring.

    ``announce``: node -> the prefixes it originates (its node prefix and the
    functions it hosts; `icnd.topology.routes.originated_prefixes`).
    ``costs``: link cost by node pair (default 1).  Routers start with
    `start`, at ``net.now``.  Use `kill`, `restart`, `cut` and `heal` (not the
    network's) so the consistency count follows the failures.
    """

    def __init__(self, net: SimNetwork, announce: Mapping[str, Sequence[str]], *,
                 costs: Mapping[frozenset[str], int] | None = None, config: RouterConfig | None = None) -> None:
        self.net = net
        self.config = config or RouterConfig()
        self.announce = {name: list(prefixes) for name, prefixes in announce.items()}
        self.costs = dict(costs or {})
        self.on_consistent: list[Callable[[float], None]] = []
        self.consistent = False
        self.inconsistency = 0  # violations of the consistency rules, see the module docstring
        self.consistent_at: float | None = None  # the last time the count reached zero
        self._node_of = {Name(node_prefix(name)).comps: name for name in net.nodes}
        self._component: dict[str, int] = {}
        self._size: dict[int, int] = {}
        self.nodes: dict[str, _NodeRouting] = {}
        for name, node in net.nodes.items():
            st = self.nodes[name] = _NodeRouting(node)
            node.routing = self._receiver(st)
        self._recount()

    def start(self) -> None:
        """Start every node's router, now (after `on_consistent` listeners are in place)."""
        for st in self.nodes.values():
            if st.router is None and st.node.alive:
                self._start(st)
        self._check()

    # --- failures ---------------------------------------------------------------------
    def kill(self, name: str) -> None:
        self.net.kill(name)
        self._changed()

    def restart(self, name: str) -> None:
        """The node comes back: fresh forwarder (`SimNetwork.restart`), fresh router, no routing routes."""
        self.net.restart(name)
        st = self.nodes[name]
        if st.router is not None:
            st.past_computations += st.router.counters["route_computations"]
        st.node.fw.rib.remove_origin(ORIGIN_ROUTING)
        st.routes.clear()
        st.timer_at = _INF
        self.consistent = False
        self._recount()
        self._start(st)
        self._check()

    def cut(self, a: str, b: str) -> None:
        self.net.cut(a, b)
        self._changed()

    def heal(self, a: str, b: str) -> None:
        self.net.heal(a, b)
        self._changed()

    # --- observing --------------------------------------------------------------------
    def router(self, name: str) -> Router:
        router = self.nodes[name].router
        assert router is not None
        return router

    def totals(self) -> dict[str, tuple[int, int, int]]:
        """node -> (routing messages sent, their bytes, route computations), every life."""
        return {name: (st.messages, st.bytes, st.computations) for name, st in self.nodes.items()}

    def refused(self) -> int:
        """Route updates the RIBs refused (full tables), summed over nodes."""
        return sum(st.refused for st in self.nodes.values())

    # --- the router's shell -------------------------------------------------------------
    def _start(self, st: _NodeRouting) -> None:
        node, now = st.node, self.net.now
        router = Router(Name(node_prefix(node.name)), sign=_sign, verify=_verify, now=now, config=self.config)
        for face, (_, peer, _) in node.peers.items():
            router.add_neighbor(face, self.costs.get(frozenset((node.name, peer.name)), 1), f"sim://{peer.name}")
        st.router = router
        self._apply(st, router.set_prefixes({p: (None, None) for p in self.announce.get(node.name, ())}, now))

    def _receiver(self, st: _NodeRouting) -> Callable[[int, Packet], None]:
        def receive(face: int, packet: Packet) -> None:
            router = st.router
            if router is None:
                return
            kind = type(packet)
            if kind is Interest:
                self._apply(st, router.on_interest(face, packet, self.net.now))  # type: ignore[arg-type]  # kind is Interest
            elif kind is Data:
                self._apply(st, router.on_data(face, packet, self.net.now))  # type: ignore[arg-type]  # kind is Data
        return receive

    def _apply(self, st: _NodeRouting, actions: list[Any]) -> None:
        node = st.node
        for action in actions:
            if type(action) is Transmit:
                packet = action.packet
                if type(packet) is Interest:  # a nonce from the network's seeded RNG: runs repeat exactly
                    packet = new_interest(packet.name, self.net.new_nonce(), packet.lifetime_ms, packet.hop_limit,
                                          packet.can_be_prefix, packet.must_be_fresh, packet.app_params,
                                          packet.forwarding_hint)
                wire = encode(packet)
                st.messages += 1
                st.bytes += len(wire)
                node.send_on_link(action.face, wire)
            elif type(action) is RouteUpdate:
                self._install(st, action)
        self._check()
        self._arm(st)

    def _install(self, st: _NodeRouting, update: RouteUpdate) -> None:
        hops = update.nexthops
        try:
            st.node.fw.rib.set_routes(update.prefix, ORIGIN_ROUTING, {h.face: h.cost for h in hops})
        except (Error, ValueError):  # TableFull is an Error
            st.refused += 1
            return
        target = self._node_of.get(update.prefix.comps)
        if target is None:
            return
        me = st.node.name
        old = st.routes.pop(target, None)
        if old is not None:
            self.inconsistency -= self._violations(me, target, old)
        if hops:
            least = hops[0].cost
            new = tuple(h.face for h in hops if h.cost == least)
            st.routes[target] = new
            self.inconsistency += self._violations(me, target, new)

    def _arm(self, st: _NodeRouting) -> None:
        router = st.router
        if router is None:
            return
        t = router.next_deadline()
        if t < st.timer_at:
            st.timer_at = t
            net = self.net
            net.at(max(t, net.now), lambda: self._fire(st, router))

    def _fire(self, st: _NodeRouting, router: Router) -> None:
        if router is not st.router:
            return  # armed for a previous life
        if not st.node.alive:
            st.timer_at = _INF
            return
        now = self.net.now
        if st.timer_at <= now:
            st.timer_at = _INF
            self._apply(st, router.on_timer(now))

    # --- consistency ------------------------------------------------------------------
    def _violations(self, me: str, target: str, cheapest: tuple[int, ...]) -> int:
        """What one route (me -> target's node prefix) adds to the count: -1 for a
        wanted route (one fewer missing), +1 for an unwanted one, +1 if a
        cheapest hop is bad."""
        nodes = self.net.nodes
        comp = self._component
        wanted = target != me and nodes[target].alive and comp.get(target) == comp.get(me)
        peers = nodes[me].peers
        bad = False
        for face in cheapest:
            link, peer, _ = peers[face]
            if not (link.up and peer.alive):
                bad = True
                break
        return (-1 if wanted else 1) + bad

    def _recount(self) -> None:
        """Components of the live graph, and the violation count from scratch."""
        nodes = self.net.nodes
        comp: dict[str, int] = {}
        size: dict[int, int] = {}
        for start, node in nodes.items():
            if not node.alive or start in comp:
                continue
            cid = len(size)
            comp[start] = cid
            todo = [node]
            n = 0
            while todo:
                u = todo.pop()
                n += 1
                for link, peer, _ in u.peers.values():
                    if link.up and peer.alive and peer.name not in comp:
                        comp[peer.name] = cid
                        todo.append(peer)
            size[cid] = n
        self._component, self._size = comp, size
        count = 0
        for name, st in self.nodes.items():
            if not nodes[name].alive:
                continue
            count += size[comp[name]] - 1
            for target, cheapest in st.routes.items():
                count += self._violations(name, target, cheapest)
        self.inconsistency = count

    def _changed(self) -> None:
        self.consistent = False
        self._recount()
        self._check()

    def _check(self) -> None:
        if self.inconsistency == 0:
            if not self.consistent:
                self.consistent = True
                now = self.consistent_at = self.net.now
                for listener in list(self.on_consistent):
                    listener(now)
        else:
            self.consistent = False


class ConvergenceLog:
    """When routing became consistent: first from the start, then after each failure.

    ``converged(then)`` waits for the first consistent moment (``convergence_s``
    from the log's creation; the traffic so far is kept in ``at_convergence``);
    ``failure(action, nodes, then)``, called just before a failure is applied,
    records it in ``failures`` with its ``reconvergence_s``: seconds from the
    failure to the next consistent moment (0 when it left routes consistent,
    e.g. a cut around which every cheapest path already went; None if the
    simulation stopped first).  ``then`` runs at that moment.
    """

    def __init__(self, routing: SimRouting) -> None:
        self.routing = routing
        self.start = routing.net.now
        self.convergence_s: float | None = None
        self.at_convergence: dict[str, tuple[int, int, int]] | None = None
        self.failures: list[dict[str, Any]] = []
        self._waiting: list[Callable[[float], None]] = []
        routing.on_consistent.append(self._consistent)

    @property
    def waiting(self) -> bool:
        return bool(self._waiting)

    def _consistent(self, now: float) -> None:
        waiting, self._waiting = self._waiting, []
        for fn in waiting:
            fn(now)

    def converged(self, then: Callable[[], None]) -> None:
        def done(now: float) -> None:
            self.convergence_s = now - self.start
            self.at_convergence = self.routing.totals()
            then()

        self._waiting.append(done)

    def failure(self, action: str, nodes: Sequence[str], then: Callable[[], None]) -> None:
        entry: dict[str, Any] = {"at": self.routing.net.now, "action": action, "nodes": list(nodes),
                                 "reconvergence_s": None}
        self.failures.append(entry)

        def done(now: float) -> None:
            entry["reconvergence_s"] = now - entry["at"]
            then()

        self._waiting.append(done)


def _spread(values: Sequence[float]) -> dict[str, float]:
    return {"mean": sum(values) / len(values), "max": max(values)} if values else {"mean": 0.0, "max": 0.0}


def steady_traffic(routing: SimRouting, seconds: float) -> dict[str, Any] | None:
    """Run the network ``seconds`` more and measure the routing traffic of each
    live node in that window: messages/s and bytes/s sent (mean, max)."""
    net = routing.net
    start, before = net.now, routing.totals()
    net.run(until=start + seconds)
    window = net.now - start
    if window <= 0:
        return None
    after = routing.totals()
    live = [name for name, node in net.nodes.items() if node.alive]
    return {
        "window_s": window,
        "messages_per_s_per_node": _spread([(after[n][0] - before[n][0]) / window for n in live]),
        "bytes_per_s_per_node": _spread([(after[n][1] - before[n][1]) / window for n in live]),
    }


def routing_report(routing: SimRouting, log: ConvergenceLog, steady: dict[str, Any] | None) -> dict[str, Any]:
    """The ``routing`` section of a simulation report (JSON-ready)."""
    cfg = routing.config

    def traffic(totals: Mapping[str, tuple[int, int, int]] | None) -> dict[str, Any] | None:
        if totals is None:
            return None
        rows = list(totals.values())
        return {
            "messages_per_node": _spread([r[0] for r in rows]),
            "bytes_per_node": _spread([r[1] for r in rows]),
            "route_computations": {"total": sum(r[2] for r in rows), **_spread([r[2] for r in rows])},
        }

    return {
        "protocol": "link-state",
        "converged": log.convergence_s is not None,
        "convergence_s": log.convergence_s,
        "consistent": routing.consistent,
        "cold_start": traffic(log.at_convergence),
        "whole_run": traffic(routing.totals()),
        "failures": [dict(f) for f in log.failures],
        "steady": steady,
        "routes_refused": routing.refused(),
        "config": {"hello_interval_s": cfg.hello_interval, "dead_interval_s": cfg.dead_interval,
                   "hold_down_s": cfg.hold_down, "refresh_s": cfg.refresh, "lifetime_s": cfg.lifetime},
    }
