"""An in-process network of forwarder cores on a virtual clock.

Nodes are `Forwarder` cores; links are pairs of faces joined by one
`LinkModel` per direction (delay, loss from a seeded RNG, bandwidth with a
FIFO serialization queue, up/down); applications (consumers and producers)
attach to a node through a local face.  Every packet crossing a link or an
application face is encoded and decoded, so the codec is exercised exactly
as in the daemon.  Nothing here reads a real clock: `run` advances `now` from
event to event, so results are deterministic for a given seed (link loss
draws come from per-link seeds derived from the network seed, Interest
nonces of `Fetch` from a seeded RNG too).

Failures, as a crashed daemon reached over UDP looks to its neighbours:

- ``net.cut(a, b)`` / ``net.heal(a, b)``: the link goes down / up in both
  directions; packets sent while it is down are lost, and so are packets in
  flight when it is cut (`LinkModel.generation`).  Faces and routes stay.
- ``net.kill(node)``: the node stops processing: packets that reach it (from
  links or its own applications) vanish and its timers do nothing.  Its
  neighbours keep their faces and routes, so they learn nothing except by
  timeouts.  Packets it had already put on a link still arrive.
- ``net.restart(node)``: the node comes back with a fresh forwarder (empty
  PIT, Content Store, dead-nonce list, counters) but the same faces and
  FIB, as a daemon restarted from its configuration.

Data tracing: each Data in flight carries a trace ``(origin, node, ...)``
(``origin`` is ``"app"`` when an application produced it, ``"cs"`` when a
Content Store answered), extended by every node that forwards it; `Fetch`
keeps the trace of the Data that satisfied it (`Fetch.path`, `Fetch.origin`).
The trace rides beside the encoded packet, never inside it.

Routing: a node whose ``routing`` is set (`icnd.sim.routing`) hands every
packet under ``/localhop/icnd/routing`` to it instead of its forwarder, and
its router sends with `SimNode.send_on_link` (the link model applies).

Namespace handlers (`icnd.core.hooks`, e.g. in-network aggregation) are the
caller's: ``SimNetwork(hooks=lambda node: {REDUCE: Aggregator(node_name=node)})``
builds each node's forwarder (and a restarted one's) with the handlers that
function returns for the node's name.
"""

from __future__ import annotations

import gc
import heapq
import itertools
import random
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Callable, Mapping

from icnd.codec import decode, encode
from icnd.core.fw.forwarder import Forwarder, Send
from icnd.core.hooks import NamespaceHandler
from icnd.core.routing import is_routing_name
from icnd.faces.link import LinkModel, LinkParams
from icnd.name import Name
from icnd.packet import DEFAULT_HOP_LIMIT, Data, Interest, Nack, Packet

Trace = tuple[str, ...]

GC_YOUNG_THRESHOLD = 50_000
"""The garbage collector's generation-0 threshold while `SimNetwork.run` runs."""


class SimLink:
    """A bidirectional link: face ``face_a`` on ``a`` toward ``b`` and back.

    ``ab`` models the direction a -> b, ``ba`` the direction b -> a.
    ``delay`` (seconds), ``loss`` and ``up`` read and set both directions.
    """

    __slots__ = ("a", "b", "face_a", "face_b", "ab", "ba", "dropped_in_flight")

    def __init__(self, a: "SimNode", b: "SimNode", face_a: int, face_b: int, params: LinkParams,
                 seed: int) -> None:
        self.a, self.b, self.face_a, self.face_b = a, b, face_a, face_b
        self.ab = LinkModel(params, seed=seed)
        self.ba = LinkModel(params, seed=seed + 1)
        self.dropped_in_flight = 0

    @property
    def params(self) -> LinkParams:
        return self.ab.params

    def set_params(self, params: LinkParams) -> None:
        self.ab.set_params(params)
        self.ba.set_params(params)

    def _update(self, **changes: Any) -> None:
        self.set_params(replace(self.ab.params, **changes))

    @property
    def delay(self) -> float:
        return self.ab.params.delay_ms / 1000.0

    @delay.setter
    def delay(self, seconds: float) -> None:
        self._update(delay_ms=seconds * 1000.0)

    @property
    def loss(self) -> float:
        return self.ab.params.loss

    @loss.setter
    def loss(self, value: float) -> None:
        self._update(loss=value)

    @property
    def up(self) -> bool:
        return self.ab.params.up

    @up.setter
    def up(self, value: bool) -> None:
        self._update(up=value)

    @property
    def delivered(self) -> int:
        """Packets that reached the far end (both directions)."""
        return self.ab.delivered + self.ba.delivered - self.dropped_in_flight

    @property
    def dropped(self) -> int:
        """Packets lost on the link: cut, random loss, full queue, or in flight when cut."""
        return sum(m.dropped_loss + m.dropped_queue + m.dropped_down for m in (self.ab, self.ba)) + \
            self.dropped_in_flight

    def stats(self) -> dict[str, int]:
        return {"delivered": self.delivered, "dropped": self.dropped,
                "dropped_loss": self.ab.dropped_loss + self.ba.dropped_loss,
                "dropped_queue": self.ab.dropped_queue + self.ba.dropped_queue,
                "dropped_down": self.ab.dropped_down + self.ba.dropped_down,
                "dropped_in_flight": self.dropped_in_flight}

    def __repr__(self) -> str:
        return f"<SimLink {self.a.name}-{self.b.name} {self.ab.params}>"


@dataclass(eq=False)
class SimNode:
    net: "SimNetwork"
    name: str
    fw: Forwarder
    peers: dict[int, tuple[SimLink, "SimNode", int]] = field(default_factory=dict)  # face -> (link, peer, peer face)
    apps: dict[int, "SimApp"] = field(default_factory=dict)
    timer_at: float | None = None
    _face_ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    alive: bool = True
    dropped_dead: int = 0  # packets that reached this node while it was dead
    # face -> the LinkModel of the direction leaving this node on that face
    _out_models: dict[int, LinkModel] = field(default_factory=dict)
    # routing packets (``/localhop/icnd/routing``) go here, not to the forwarder (`icnd.sim.routing`)
    routing: Callable[[int, Packet], None] | None = None

    def new_face(self, local: bool) -> int:
        face = next(self._face_ids)
        self.fw.add_face(face, local=local)
        return face

    def receive(self, face: int, wire: bytes, trace: Trace | None = None) -> None:
        if not self.alive:
            self.dropped_dead += 1
            return
        self.net.packets_delivered += 1
        packet = decode(wire)
        if self.routing is not None and type(packet) is not Nack and is_routing_name(packet.name.comps):
            self.routing(face, packet)
            return
        actions = self.fw.on_packet(face, packet, self.net.now)
        if not actions:
            self.net.arm_timer(self)
            return
        kind = type(packet)
        if kind is Data:  # forwarded Data: extend its trace
            out_trace: Trace | None = (trace or ("?",)) + (self.name,)
        elif kind is Interest:  # a Data answering an Interest came from the Content Store
            out_trace = ("cs", self.name)
        else:
            out_trace = None
        self.dispatch(actions, out_trace)

    def send_on_link(self, face: int, wire: bytes) -> None:
        """Put `wire` on the link of `face` as it is (no forwarder: routing messages)."""
        link, peer, peer_face = self.peers[face]
        self.net.transmit(link, peer, peer_face, wire, None, self._out_models[face])

    def dispatch(self, actions: list[Send], trace: Trace | None = None) -> None:
        net = self.net
        for face, packet in actions:
            wire = encode(packet)
            t = trace if type(packet) is Data else None
            if face in self.peers:
                link, peer, peer_face = self.peers[face]
                net.transmit(link, peer, peer_face, wire, t, self._out_models[face])
            elif face in self.apps:
                net.at(net.now, partial(self.apps[face]._deliver, wire, t))
        net.arm_timer(self)


class SimApp:
    """An application on a local face: produces with `serve`, consumes with `fetch`."""

    def __init__(self, node: SimNode) -> None:
        self.node = node
        self.face = node.new_face(local=True)
        node.apps[self.face] = self
        self.handlers: list[tuple[Name, Callable[[Interest], Data | None]]] = []
        self.pending: dict[Name, "Fetch"] = {}
        self.received: list[Packet] = []
        self.keep_received = True  # set False to avoid keeping every packet (large simulations)

    def serve(self, prefix: Name | str, handler: Callable[[Interest], Data | None], cost: int = 0) -> None:
        prefix = Name(prefix)
        self.handlers.append((prefix, handler))
        self.node.fw.add_route(prefix, self.face, cost)

    def send(self, packet: Packet) -> None:
        net = self.node.net
        wire = encode(packet)
        trace = ("app",) if type(packet) is Data else None
        net.at(net.now, lambda: self.node.receive(self.face, wire, trace))

    def fetch(self, name: Name | str, *, lifetime_ms: int = 1000, retries: int = 5,
              can_be_prefix: bool = False, retx_ms: int | None = None,
              hop_limit: int = DEFAULT_HOP_LIMIT,
              on_done: Callable[["Fetch"], None] | None = None) -> "Fetch":
        """Fetch `name`, retransmitting every `retx_ms` (default: the lifetime).

        After ``retries`` retransmissions without an answer the fetch gives up
        (``result`` stays None) ``retx_ms`` after the last one.  ``on_done``
        is called once, with the fetch, when it gets Data or a Nack or gives up.
        """
        fetch = Fetch(self, Name(name), lifetime_ms, retries, can_be_prefix, retx_ms or lifetime_ms,
                      hop_limit=hop_limit, on_done=on_done)
        self.pending[fetch.name] = fetch
        fetch.express()
        return fetch

    def _deliver(self, wire: bytes, trace: Trace | None) -> None:
        if not self.node.alive:
            self.node.dropped_dead += 1
            return
        self.node.net.packets_delivered += 1
        self.receive(decode(wire), trace)

    def receive(self, packet: Packet, trace: Trace | None = None) -> None:
        if self.keep_received:
            self.received.append(packet)
        if isinstance(packet, Interest):
            for prefix, handler in self.handlers:
                if prefix.is_prefix_of(packet.name):
                    reply = handler(packet)
                    if reply is not None:
                        self.send(reply)
                    return
            return
        for fetch in list(self.pending.values()):
            fetch.on_packet(packet, trace)


class Fetch:
    """A consumer's retrieval of one name, retransmitted on timeout (new nonce)."""

    def __init__(self, app: SimApp, name: Name, lifetime_ms: int, retries: int, can_be_prefix: bool,
                 retx_ms: int, *, hop_limit: int = DEFAULT_HOP_LIMIT,
                 on_done: Callable[["Fetch"], None] | None = None) -> None:
        self.app, self.name, self.lifetime_ms, self.retries = app, name, lifetime_ms, retries
        self.retx_ms = retx_ms
        self.can_be_prefix = can_be_prefix
        self.hop_limit = hop_limit
        self.on_done = on_done
        self.attempts = 0
        self.started = app.node.net.now
        self.result: Data | Nack | None = None
        self.done_at: float | None = None
        self.trace: Trace | None = None  # (origin, producer-or-cache node, ..., this node) of the Data
        self._nonce = -1

    @property
    def done(self) -> bool:
        return self.result is not None

    @property
    def finished(self) -> bool:
        """Answered (Data or Nack) or given up."""
        return self.done_at is not None

    def express(self) -> None:
        if self.done:
            return
        net = self.app.node.net
        if self.attempts > self.retries:
            self._finish()
            return
        self.attempts += 1
        interest = Interest(self.name, nonce=net.new_nonce(), lifetime_ms=self.lifetime_ms,
                            hop_limit=self.hop_limit, can_be_prefix=self.can_be_prefix)
        self._nonce = interest.nonce
        self.app.send(interest)
        net.at(net.now + self.retx_ms / 1000.0, self.express)

    def on_packet(self, packet: Packet, trace: Trace | None = None) -> None:
        if self.done:
            return
        if isinstance(packet, Data):
            if packet.name == self.name or (self.can_be_prefix and self.name.is_prefix_of(packet.name)):
                self.result = packet
                self.trace = trace
                self._finish()
        elif isinstance(packet, Nack) and packet.name == self.name and packet.nonce == self._nonce:
            self.result = packet
            self._finish()

    def _finish(self) -> None:
        if self.done_at is not None:
            return
        self.done_at = self.app.node.net.now
        self.app.pending.pop(self.name, None)
        if self.on_done is not None:
            self.on_done(self)

    @property
    def rtt(self) -> float | None:
        return None if self.done_at is None else self.done_at - self.started

    @property
    def path(self) -> list[str] | None:
        """Nodes from the consumer's node to the node that answered, or None."""
        if not self.trace:
            return None
        return list(reversed(self.trace[1:]))

    @property
    def origin(self) -> str | None:
        """``"app"`` (a producer answered) or ``"cs"`` (a Content Store did), or None."""
        return self.trace[0] if self.trace else None


Hooks = Callable[[str], Mapping[bytes, NamespaceHandler]]


class SimNetwork:
    def __init__(self, seed: int = 0, *, hooks: Hooks | None = None, **forwarder_options: Any) -> None:
        """`hooks(node_name)`: the namespace handlers of that node's forwarder;
        `forwarder_options`: the other `Forwarder` arguments, for every node."""
        self.now = 0.0
        self.seed = seed
        self.rng = random.Random(seed)  # derives per-link loss seeds, in link order
        self._nonces = random.Random(f"icnd.sim.nonce:{seed}")
        self.nodes: dict[str, SimNode] = {}
        self.links: list[SimLink] = []
        self._pairs: dict[frozenset[str], list[SimLink]] = {}
        self._events: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._fw_options = forwarder_options
        self._hooks = hooks
        self.packets_delivered = 0  # packets handed to a live node or application
        self.events = 0  # events processed by `run`
        self._stop = False

    # --- building ---------------------------------------------------------------------
    def new_forwarder(self, name: str) -> Forwarder:
        """A fresh forwarder for node `name`."""
        hooks = self._hooks(name) if self._hooks is not None else None
        return Forwarder(hooks=hooks, **self._fw_options)

    def add_node(self, name: str) -> SimNode:
        if name in self.nodes:
            raise ValueError(f"duplicate node {name!r}")
        node = self.nodes[name] = SimNode(self, name, self.new_forwarder(name))
        return node

    def link(self, a: str, b: str, *, delay: float = 0.001, loss: float = 0.0, bandwidth_mbps: float = 0,
             queue_bytes: int = 1_000_000, seed: int | None = None,
             params: LinkParams | None = None) -> SimLink:
        """Join ``a`` and ``b``: ``delay`` in seconds (one way), ``loss`` per packet.

        ``params`` (a `LinkParams`, delay in ms), when given, replaces
        ``delay``, ``loss``, ``bandwidth_mbps`` and ``queue_bytes``.  Each
        direction gets its own `LinkModel`; ``seed`` seeds a -> b (and
        ``seed + 1`` b -> a); by default it is drawn from the network's RNG.
        """
        na, nb = self.nodes[a], self.nodes[b]
        if params is None:
            params = LinkParams(delay_ms=delay * 1000.0, loss=loss, bandwidth_mbps=bandwidth_mbps,
                                queue_bytes=queue_bytes)
        if seed is None:
            seed = self.rng.getrandbits(32)
        link = SimLink(na, nb, na.new_face(False), nb.new_face(False), params, seed)
        na.peers[link.face_a] = (link, nb, link.face_b)
        nb.peers[link.face_b] = (link, na, link.face_a)
        na._out_models[link.face_a] = link.ab
        nb._out_models[link.face_b] = link.ba
        self.links.append(link)
        self._pairs.setdefault(frozenset((a, b)), []).append(link)
        return link

    def app(self, node: str) -> SimApp:
        return SimApp(self.nodes[node])

    def new_nonce(self) -> int:
        return self._nonces.getrandbits(32)

    # --- failures ---------------------------------------------------------------------
    def links_between(self, a: str, b: str) -> list[SimLink]:
        links = self._pairs.get(frozenset((a, b)))
        if not links:
            raise KeyError(f"no link between {a!r} and {b!r}")
        return links

    def cut(self, a: str, b: str) -> None:
        """Take the link(s) between ``a`` and ``b`` down; packets in flight are lost."""
        for link in self.links_between(a, b):
            link.up = False

    def heal(self, a: str, b: str) -> None:
        for link in self.links_between(a, b):
            link.up = True

    def kill(self, name: str) -> None:
        """Crash node ``name``: everything reaching it vanishes; neighbours keep faces and routes."""
        self.nodes[name].alive = False

    def restart(self, name: str) -> None:
        """Bring ``name`` back with a fresh forwarder (same faces, RIB and FIB, empty PIT/CS/counters)."""
        node = self.nodes[name]
        old = node.fw
        fw = self.new_forwarder(name)
        fw.use_rib(old.rib)
        for face, info in old.faces.items():
            if face not in fw.faces:  # hook faces are the new forwarder's own
                fw.add_face(face, local=info.local)
        node.fw = fw
        node.timer_at = None
        node.alive = True

    # --- the event loop ---------------------------------------------------------------
    def at(self, when: float, fn: Callable[[], None]) -> None:
        heapq.heappush(self._events, (when, next(self._seq), fn))

    def transmit(self, link: SimLink, peer: SimNode, peer_face: int, wire: bytes,
                 trace: Trace | None = None, model: LinkModel | None = None) -> None:
        if model is None:
            model = link.ab if peer is link.b else link.ba
        due = model.offer(len(wire), self.now)
        if due is None:
            return
        generation = model.generation

        def deliver() -> None:
            if model.generation != generation:
                link.dropped_in_flight += 1
                return
            peer.receive(peer_face, wire, trace)

        self.at(due, deliver)

    def arm_timer(self, node: SimNode) -> None:
        deadline = node.fw.next_deadline()
        if deadline is not None and (node.timer_at is None or deadline < node.timer_at):
            node.timer_at = deadline
            fw = node.fw
            self.at(deadline, lambda: self._fire_timer(node, fw))

    def _fire_timer(self, node: SimNode, fw: Forwarder | None = None) -> None:
        if fw is not None and fw is not node.fw:
            return  # armed for a forwarder replaced by `restart`
        if not node.alive:
            node.timer_at = None
            return
        if node.timer_at is not None and node.timer_at <= self.now:
            node.timer_at = None
            node.dispatch(node.fw.on_timer(self.now))

    def stop(self) -> None:
        """Make the current `run` return after the event being processed."""
        self._stop = True

    def run(self, until: float | None = None, max_events: int = 10_000_000) -> None:
        """Process events in time order until none is left, the next is after
        ``until``, ``max_events`` were processed, or `stop` was called.

        While it runs, the collector's young-generation threshold is at least
        `GC_YOUNG_THRESHOLD` (as the daemon's ``tune_gc`` sets it): a large
        simulation holds millions of long-lived objects (a 1,000-node
        link-state run: every node's database and routes), which the default
        threshold makes the collector rescan over and over (a third of a
        400-node routing run's wall time).  Restored on return."""
        threshold = gc.get_threshold()
        if threshold[0] < GC_YOUNG_THRESHOLD:
            gc.set_threshold(GC_YOUNG_THRESHOLD, *threshold[1:])
        try:
            self._run(until, max_events)
        finally:
            gc.set_threshold(*threshold)

    def _run(self, until: float | None, max_events: int) -> None:
        events = self._events
        self._stop = False
        for _ in range(max_events):
            if not events or (until is not None and events[0][0] > until):
                break
            when, _, fn = heapq.heappop(events)
            if when > self.now:
                self.now = when
            self.events += 1
            fn()
            if self._stop:
                self._stop = False
                return
        if until is not None:
            self.now = max(self.now, until)
