"""An in-process network of forwarder cores on a virtual clock.

Nodes are `Forwarder` cores; links are pairs of faces with a delay and a loss
probability drawn from a seeded RNG; applications (consumers and producers)
attach to a node through a local face.  Every packet crossing a link or an
application face is encoded and decoded, so the codec is exercised exactly
as in the daemon.  Nothing here reads a real clock: `run` advances `now` from
event to event, so results are deterministic for a given seed.
"""

from __future__ import annotations

import heapq
import itertools
import random
from dataclasses import dataclass, field
from typing import Callable

from .codec import decode, encode
from .core.forwarder import Forwarder
from .name import Name
from .packet import Data, Interest, Nack, Packet


@dataclass
class SimLink:
    a: "SimNode"
    b: "SimNode"
    face_a: int  # face id on a toward b
    face_b: int
    delay: float = 0.001
    loss: float = 0.0
    up: bool = True
    delivered: int = 0
    dropped: int = 0


@dataclass
class SimNode:
    net: "SimNetwork"
    name: str
    fw: Forwarder
    peers: dict[int, tuple[SimLink, "SimNode", int]] = field(default_factory=dict)  # face -> (link, peer, peer face)
    apps: dict[int, "SimApp"] = field(default_factory=dict)
    timer_at: float | None = None
    _face_ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    def new_face(self, local: bool) -> int:
        face = next(self._face_ids)
        self.fw.add_face(face, local=local)
        return face

    def receive(self, face: int, wire: bytes) -> None:
        self.dispatch(self.fw.on_packet(face, decode(wire), self.net.now))

    def dispatch(self, actions) -> None:
        net = self.net
        for face, packet in actions:
            wire = encode(packet)
            if face in self.peers:
                link, peer, peer_face = self.peers[face]
                net.transmit(link, peer, peer_face, wire)
            elif face in self.apps:
                app = self.apps[face]
                net.at(net.now, lambda app=app, wire=wire: app.receive(decode(wire)))
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

    def serve(self, prefix: Name | str, handler: Callable[[Interest], Data | None], cost: int = 0) -> None:
        prefix = Name(prefix)
        self.handlers.append((prefix, handler))
        self.node.fw.add_route(prefix, self.face, cost)

    def send(self, packet: Packet) -> None:
        net = self.node.net
        wire = encode(packet)
        net.at(net.now, lambda: self.node.receive(self.face, wire))

    def fetch(self, name: Name | str, *, lifetime_ms: int = 1000, retries: int = 5,
              can_be_prefix: bool = False, retx_ms: int | None = None) -> "Fetch":
        """Fetch `name`, retransmitting every `retx_ms` (default: the lifetime)."""
        fetch = Fetch(self, Name(name), lifetime_ms, retries, can_be_prefix, retx_ms or lifetime_ms)
        self.pending[fetch.name] = fetch
        fetch.express()
        return fetch

    def receive(self, packet: Packet) -> None:
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
            fetch.on_packet(packet)


class Fetch:
    """A consumer's retrieval of one name, retransmitted on timeout (new nonce)."""

    def __init__(self, app: SimApp, name: Name, lifetime_ms: int, retries: int, can_be_prefix: bool,
                 retx_ms: int) -> None:
        self.app, self.name, self.lifetime_ms, self.retries = app, name, lifetime_ms, retries
        self.retx_ms = retx_ms
        self.can_be_prefix = can_be_prefix
        self.attempts = 0
        self.started = app.node.net.now
        self.result: Data | Nack | None = None
        self.done_at: float | None = None
        self._nonce = -1

    @property
    def done(self) -> bool:
        return self.result is not None

    def express(self) -> None:
        if self.done:
            return
        if self.attempts > self.retries:
            self.done_at = self.app.node.net.now
            self.app.pending.pop(self.name, None)
            return
        self.attempts += 1
        interest = Interest(self.name, lifetime_ms=self.lifetime_ms, can_be_prefix=self.can_be_prefix)
        self._nonce = interest.nonce
        self.app.send(interest)
        net = self.app.node.net
        net.at(net.now + self.retx_ms / 1000.0, self.express)

    def on_packet(self, packet: Packet) -> None:
        if self.done:
            return
        if isinstance(packet, Data):
            matches = packet.name == self.name or (self.can_be_prefix and self.name.is_prefix_of(packet.name))
        else:
            matches = isinstance(packet, Nack) and packet.name == self.name and packet.nonce == self._nonce
        if matches:
            self.result = packet
            self.done_at = self.app.node.net.now
            self.app.pending.pop(self.name, None)

    @property
    def rtt(self) -> float | None:
        return None if self.done_at is None else self.done_at - self.started


class SimNetwork:
    def __init__(self, seed: int = 0, **forwarder_options) -> None:
        self.now = 0.0
        self.rng = random.Random(seed)
        self.nodes: dict[str, SimNode] = {}
        self.links: list[SimLink] = []
        self._events: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._fw_options = forwarder_options
        self.packets_delivered = 0

    def add_node(self, name: str) -> SimNode:
        if name in self.nodes:
            raise ValueError(f"duplicate node {name!r}")
        node = self.nodes[name] = SimNode(self, name, Forwarder(**self._fw_options))
        return node

    def link(self, a: str, b: str, *, delay: float = 0.001, loss: float = 0.0) -> SimLink:
        na, nb = self.nodes[a], self.nodes[b]
        link = SimLink(na, nb, na.new_face(False), nb.new_face(False), delay, loss)
        na.peers[link.face_a] = (link, nb, link.face_b)
        nb.peers[link.face_b] = (link, na, link.face_a)
        self.links.append(link)
        return link

    def app(self, node: str) -> SimApp:
        return SimApp(self.nodes[node])

    def at(self, when: float, fn: Callable[[], None]) -> None:
        heapq.heappush(self._events, (when, next(self._seq), fn))

    def transmit(self, link: SimLink, peer: SimNode, peer_face: int, wire: bytes) -> None:
        if not link.up or (link.loss and self.rng.random() < link.loss):
            link.dropped += 1
            return
        link.delivered += 1
        self.at(self.now + link.delay, lambda: peer.receive(peer_face, wire))

    def arm_timer(self, node: SimNode) -> None:
        deadline = node.fw.next_deadline()
        if deadline is not None and (node.timer_at is None or deadline < node.timer_at):
            node.timer_at = deadline
            self.at(deadline, lambda: self._fire_timer(node))

    def _fire_timer(self, node: SimNode) -> None:
        if node.timer_at is not None and node.timer_at <= self.now:
            node.timer_at = None
            node.dispatch(node.fw.on_timer(self.now))

    def run(self, until: float | None = None, max_events: int = 10_000_000) -> None:
        events = self._events
        for _ in range(max_events):
            if not events or (until is not None and events[0][0] > until):
                break
            when, _, fn = heapq.heappop(events)
            self.now = max(self.now, when)
            self.packets_delivered += 1
            fn()
        if until is not None:
            self.now = max(self.now, until)
