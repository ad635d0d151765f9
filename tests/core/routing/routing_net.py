"""A tiny explicit-time network of `Router`s for the routing unit tests.

Links join two routers' faces; packets are encoded and decoded on the way
(the codec exactly as on a wire) and arrive after ``delay``; a cut link drops
them.  Time only moves in `run`."""

from __future__ import annotations

import heapq
import itertools
from typing import Any

import msgpack

from icnd.codec import decode, encode
from icnd.core.routing.router import RouteUpdate, Router, RouterConfig, Transmit
from icnd.name import Name, generic
from icnd.packet import Data, Interest
from icnd.security import make_data


def digest_sign(name: Name, content: bytes) -> Data:
    return make_data(name, content)


def accept_all(data: Data, certs: tuple[bytes, ...]) -> bytes:
    return b""


def hello_answer(hello: Interest, name: str, *, sign: Any = digest_sign, certs: tuple[bytes, ...] = (),
                 digest: bytes = b"x" * 16) -> Data:
    """What node `name` answers to `hello` (a router's hello Interest): a proof of its challenge signed by `sign`."""
    challenge = msgpack.unpackb(hello.app_params)["c"]
    proof = sign(Name(name).append_wire(generic("routing"), generic("hello"), generic(challenge)), b"")
    return make_data(hello.name, msgpack.packb({"n": name, "d": digest, "p": encode(proof), "k": list(certs)}))


def hellos_on(actions: list[Any], face: int) -> list[Interest]:
    return [a.packet for a in actions if isinstance(a, Transmit) and a.face == face
            and isinstance(a.packet, Interest) and a.packet.name.comps[3] == generic("hello")]


def bring_up(r: Router, face: int, name: str, now: float, **kw: Any) -> list[Any]:
    """Make the neighbour on `face` of `r` proven as `name` (its link bounced, its hello answered)."""
    r.link_state(face, False, now)
    (hello,) = hellos_on(r.link_state(face, True, now), face)
    return r.on_data(face, hello_answer(hello, name, **kw), now)


class Net:
    def __init__(self, config: RouterConfig | None = None, delay: float = 0.001) -> None:
        self.now = 0.0
        self.config = config or RouterConfig()
        self.delay = delay
        self.routers: dict[str, Router] = {}
        self.alive: dict[str, bool] = {}
        self.links: dict[tuple[str, int], tuple[str, int]] = {}  # (node, face) -> (peer, peer face)
        self.up: dict[frozenset[tuple[str, int]], bool] = {}
        self.fib: dict[str, dict[str, tuple[Any, ...]]] = {}
        self.messages: dict[str, int] = {}
        self._faces = itertools.count(10)
        self._events: list[tuple[float, int, Any]] = []
        self._seq = itertools.count()

    def add(self, name: str, **kw: Any) -> Router:
        r = Router(Name(f"/node/{name}"), sign=kw.pop("sign", digest_sign), verify=kw.pop("verify", accept_all),
                   now=self.now, config=kw.pop("config", self.config), **kw)
        self.routers[name] = r
        self.alive[name] = True
        self.fib[name] = {}
        self.messages[name] = 0
        self._schedule(self.now, name)
        return r

    def announce(self, name: str, prefixes: dict[str, tuple[int | None, int | None]]) -> None:
        """`set_prefixes` on a node now, its actions carried out."""
        self._apply(name, self.routers[name].set_prefixes(prefixes, self.now))

    def link(self, a: str, b: str, cost: int = 1) -> tuple[int, int]:
        fa, fb = next(self._faces), next(self._faces)
        self.links[(a, fa)] = (b, fb)
        self.links[(b, fb)] = (a, fa)
        self.up[frozenset({(a, fa), (b, fb)})] = True
        self.routers[a].add_neighbor(fa, cost, f"test://{b}")
        self.routers[b].add_neighbor(fb, cost, f"test://{a}")
        return fa, fb

    def cut(self, a: str, b: str) -> None:
        for key in self.up:
            if {n for n, _ in key} == {a, b}:
                self.up[key] = False

    def heal(self, a: str, b: str) -> None:
        for key in self.up:
            if {n for n, _ in key} == {a, b}:
                self.up[key] = True

    def kill(self, name: str) -> None:
        self.alive[name] = False

    def restart(self, name: str) -> Router:
        """The node comes back with a fresh router (version 0) on the same faces."""
        old = self.routers[name]
        r = Router(old.name, sign=digest_sign, verify=accept_all, now=self.now, config=self.config)
        for nb in old.neighbors.values():
            r.add_neighbor(nb.face, nb.cost, nb.uri)
        self.routers[name] = r
        self.alive[name] = True
        self.fib[name] = {}
        self._schedule(self.now, name)
        return r

    def _schedule(self, when: float, name: str) -> None:
        heapq.heappush(self._events, (when, next(self._seq), ("timer", name)))

    def _apply(self, name: str, actions: list[Any]) -> None:
        for action in actions:
            if isinstance(action, Transmit):
                self.messages[name] += 1
                peer = self.links.get((name, action.face))
                if peer is None:
                    continue
                key = frozenset({(name, action.face), peer})
                if not self.up[key]:
                    continue
                wire = encode(action.packet)
                heapq.heappush(self._events, (self.now + self.delay, next(self._seq), ("packet", peer, wire, key)))
            elif isinstance(action, RouteUpdate):
                if action.nexthops:
                    self.fib[name][action.prefix.to_uri()] = action.nexthops
                else:
                    self.fib[name].pop(action.prefix.to_uri(), None)
        self._schedule(self.routers[name].next_deadline(), name)

    def run(self, until: float) -> None:
        while self._events and self._events[0][0] <= until:
            when, _, event = heapq.heappop(self._events)
            self.now = max(self.now, when)
            if event[0] == "timer":
                name = event[1]
                r = self.routers[name]
                if self.alive[name] and r.next_deadline() <= self.now:
                    self._apply(name, r.on_timer(self.now))
            else:
                (name, face), wire, key = event[1], event[2], event[3]
                if not self.alive[name] or not self.up[key]:
                    continue
                packet = decode(wire)
                r = self.routers[name]
                if isinstance(packet, Interest):
                    self._apply(name, r.on_interest(face, packet, self.now))
                elif isinstance(packet, Data):
                    self._apply(name, r.on_data(face, packet, self.now))
        self.now = until

    def next_hops(self, node: str, prefix: str) -> list[tuple[str, int]]:
        """(neighbour node, cost) of each next hop `node` installed for `prefix`."""
        out = []
        for hop in self.fib[node].get(prefix, ()):
            peer, _ = self.links[(node, hop.face)]
            out.append((peer, hop.cost))
        return out

    def converged(self) -> bool:
        """Every live node routes to every other live node's /node prefix it can reach."""
        for a in self.routers:
            if not self.alive[a]:
                continue
            for b in self.routers:
                if a != b and self.alive[b] and f"/node/{b}" not in self.fib[a]:
                    return False
        return True
