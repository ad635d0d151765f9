"""The link-state router: adjacencies, link-state sync and routes, sans-IO.

Packets and time in, packets to send on given faces and route changes out,
like the forwarder: ``on_interest(face, interest, now)``, ``on_data(face,
data, now)``, ``on_timer(now)`` and the configuration calls each return a
list of actions (`Transmit`, `RouteUpdate`); ``next_deadline()`` says when
``on_timer`` is due.  The node (`icnd.daemon.routing`) and the simulator
(`icnd.sim.routing`) run this same object.  Routing messages travel on
neighbour faces directly, under ``/localhop/icnd/routing`` (never through the
FIB: they are what makes it), and only its own shell passes them in.

Rules (the methods cite them):

1. **Hello.** Every ``hello_interval`` a hello Interest (``.../hello``,
   parameters ``{n: own name, d: database digest, c: a fresh random
   challenge}``) goes on every neighbour face whose link is up.  Every hello
   Interest is answered by a hello Data ``{n, d, p: proof, k: certificates}``
   whose *proof* is a Data named ``<n>/routing/hello/<c>``, signed by the
   answering node's key (answers to faces that are no neighbour's share a
   budget of ``max_proofs_per_s``).  A hello Interest from a neighbour not
   yet proven is answered with a challenge in return (marked ``r``: it asks
   for none back), so two nodes that start at different times prove each
   other at once, not a hello interval later.  A neighbour is **heard** only through
   an answer to this node's latest challenge on that face whose proof
   `verify` (the shell's one validator) accepts for the name it claims, and
   whose key may speak for that name (Rule 10).  A neighbour is **up** while
   heard within ``dead_interval``; down otherwise, and at once when its link
   goes down.  Only an up neighbour's proven name enters the node's record
   and its routes: a name in an unsigned message is never believed.
2. **Own record.** A new version of the node's record is originated when
   its up neighbours (name, cost) or its announced prefixes change (a change
   of announced load alone: at most every ``load_interval``), and every
   ``refresh``.  Versions only grow: they start at the clock in milliseconds
   (``max(version_base, now * 1000)``).  A peer's word never moves them: a
   sync naming a higher version of the node's own record only makes the node
   fetch that record, and only a record of its own name signed by its own
   key (its previous life) makes the next version higher still; one signed
   by another key is refused and counted (``own_name_claimed``).
3. **Notify.** When a record is stored (own or learnt) its (origin,
   version) is notified to every neighbour but the one it came from: one
   sync Interest (``.../sync``, ``{n, v: [[origin, version], ...]}``) per
   neighbour per pass.  A sync is accepted only on a neighbour's face,
   or on a face proven to be an up neighbour's other connection (over TCP
   each end hears the other on the connection the other opened: a hello
   Interest there naming an up neighbour is answered with a challenge, and
   the face is that neighbour's *alias* once the answer's proof is signed
   by the neighbour's key); elsewhere it is dropped and counted
   (``messages_not_neighbor``).  Syncs to one neighbour are paced, at most
   one per ``pace`` (10 ms): notifications made meanwhile go out together.
   Entries newer than what is held become *wanted* from the neighbour that
   notified them.  Sync Interests are not answered.
4. **Fetch.** At most one fetch Interest (``.../ls``, ``{n, w: wanted}``)
   per neighbour in flight; its answer carries the neighbour's current
   records of those origins (as many as fit in ``max_reply_bytes``; a larger
   answer is refused, ``replies_over_bounds``).  Still wanted entries are
   asked again, at most once per ``pace``; an unanswered fetch again after
   ``fetch_timeout``, while the neighbour is up.
5. **Repair.** A hello from an up neighbour whose digest differs from the
   node's own makes it send that neighbour its whole vector (a sync with
   ``full``), at most once per ``repair_interval`` and only after a quiet
   ``repair_interval`` of sync traffic with it (so the fast path of 3-4 is
   not doubled); a whole vector is answered with the entries its sender
   lacks or holds older.
6. **Acceptance.** Every field of a message is checked where it is decoded
   (`icnd.core.routing.lsdb.checked_name` for names, versions within
   ``MAX_VERSION``).  A record whose name shows a version not newer than the
   one held is dropped as stale before it is decoded; otherwise it is stored
   only if it decodes, stays within the bounds (adjacencies, prefixes,
   bytes), is newer than the one held, is not the replay of one that expired
   here (Rule 7), ``verify`` accepts it, its key may speak for its origin
   (Rule 10), the neighbour it came from has not introduced
   ``max_origins_per_neighbor`` other origins already (when set), and the
   database has room.  Each refusal is counted.
7. **Ageing.** A record not refreshed within its lifetime is dropped; its
   (origin, version) is remembered for that lifetime, so a replay of it is
   refused (``records_replayed``).
8. **Routes.** An edge u->v (u's cost) exists when u's record lists v and
   v's record lists u: both ends hear each other.  Next hops are those of
   `icnd.core.routing.paths.multipath`: after a change of the graph (a
   record with other adjacencies, a new or expired origin) recomputed at
   most once per hold-down, which grows with the work of the last
   computation (four times its estimated CPU time, ``work_per_s``: a flood
   of records cannot keep the node computing more than a fifth of the time); after a change of announcements alone at once, for the
   changed prefixes only, on the per-neighbour distances kept from the last
   computation (no Dijkstra), so a node routes a new prefix before it
   notifies it onward.  Prefixes whose next hops changed are output as
   `RouteUpdate`s (empty: remove); at most ``max_routes`` prefixes are
   routed (the rest are counted, ``routes_over_limit``).
9. **Budget.** Each face gets at most ``max_requests_per_s`` (400)
   routing Interests answered or acted on per second, well above what a
   paced neighbour sends (two per ``pace`` plus its hellos); the rest are
   dropped and counted (a peer cannot make the node sign, search or send
   without bound).
10. **Keys.** `verify` returns who signed (the shell's name for the key:
    with a trust schema, empty -- the schema decides who may sign what;
    without one, the key itself).  A key may speak for a node name (its
    record, its hello proofs) when no key is established for that name
    (trust on first use: the first record or proof seen establishes it),
    when it is the established one, or when the name is *orphaned*: no
    stored record of another node lists it and no up neighbour is it (its
    holder is gone, e.g. restarted with a new key).  Otherwise it is
    refused and counted (``records_wrong_key``, ``hellos_refused``).

Everything a packet, a timer or a record leads to is bounded by these rules;
the shell still catches what a defect here would raise (per packet, counted
as a handler error), so a bug costs one message, never the node.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import msgpack

from icnd.codec import decode, encode
from icnd.core.routing.lsdb import (
    MAX_VERSION,
    Adjacency,
    Announcement,
    LinkState,
    Lsdb,
    StoredRecord,
    checked_name,
    decode_record,
    encode_record,
    record_name,
)
from icnd.core.routing.paths import Distances, Graph, neighbor_distances, next_hops
from icnd.core.routing.placement import MAX_REFS, Placement, place
from icnd.errors import BoundsExceeded, DecodeError, Error
from icnd.name import T_VERSION, Name, decode_nonneg, generic
from icnd.packet import Data, Interest
from icnd.security import make_data

__all__ = ["Hop", "RouteUpdate", "Router", "RouterConfig", "Transmit", "ROUTING_PREFIX", "is_routing_name"]

ROUTING_PREFIX = Name("/localhop/icnd/routing")
_SCOPE = ROUTING_PREFIX.comps
_HELLO, _SYNC, _FETCH = generic("hello"), generic("sync"), generic("ls")
_PROOF = (generic("routing"), generic("hello"))
_INF = math.inf
_VERSION_TYPE = bytes((T_VERSION,))
CHALLENGE_BYTES = 16
MAX_DIGEST_BYTES = 32

Sign = Callable[[Name, bytes], Data]  # a record's (or proof's) name and content -> the signed Data
# a record or hello proof and the certificates it carries -> who signed it (see Rule 10); raises icnd.Error
Verify = Callable[[Data, tuple[bytes, ...]], bytes]


def is_routing_name(comps: tuple[bytes, ...]) -> bool:
    return comps[:3] == _SCOPE


@dataclass(frozen=True)
class RouterConfig:
    hello_interval: float = 1.0
    dead_interval: float = 3.0
    refresh: float = 600.0
    lifetime: float = 1800.0
    hold_down: float = 0.2
    load_interval: float = 1.0
    fetch_timeout: float = 1.0
    repair_interval: float = 2.0
    max_prefixes: int = 1000
    max_adjacencies: int = 256
    max_record_bytes: int = 64 * 1024
    max_reply_bytes: int = 48 * 1024
    max_nodes: int = 10_000
    max_lsdb_bytes: int = 16 * 1024 * 1024
    max_requests_per_s: int = 400
    max_proofs_per_s: int = 20  # hello answers signed for faces that are no neighbour's (plus 4 per neighbour)
    max_origins_per_neighbor: int = 0  # 0: no cap (the node sets one when it has no trust schema)
    max_routes: int = 20_000
    # route computation units (prefix x neighbour, Dijkstra steps) one second of CPU computes (measured: ~4 us
    # each); a full computation is held down for 4x the time the last one took, so it gets at most ~20% of a core
    work_per_s: float = 250_000.0
    pace: float = 0.01


@dataclass(frozen=True, slots=True)
class Transmit:
    face: int
    packet: Interest | Data


@dataclass(frozen=True, slots=True)
class Hop:
    face: int
    cost: int
    capacity: int | None = None  # announced by the origins this hop leads to (sum)
    load: int | None = None


@dataclass(frozen=True, slots=True)
class RouteUpdate:
    prefix: Name
    nexthops: tuple[Hop, ...]  # empty: no route any more


Action = Union[Transmit, RouteUpdate]


@dataclass(slots=True)
class Neighbor:
    face: int
    cost: int
    uri: str = ""
    name: str | None = None  # proven (Rule 1); None until then
    key: bytes = b""  # who signed its proofs (Rule 10)
    link_up: bool = True
    heard_at: float = -_INF
    up: bool = False
    challenge: tuple[Name, bytes] | None = None  # the latest hello Interest sent: its name and challenge
    challenged_at: float = -_INF
    introduced: int = 0  # origins first stored from this neighbour (Rule 6)
    wanted: dict[str, int] = field(default_factory=dict)
    fetch: tuple[Name, float] | None = None  # (name, deadline) of the fetch in flight
    notify: dict[str, int] = field(default_factory=dict)
    synced_at: float = -_INF  # last sync or fetch traffic either way
    full_sent_at: float = -_INF
    sync_sent_at: float = -_INF  # Rule 3-4 pacing
    fetch_sent_at: float = -_INF


@dataclass(slots=True)
class _Hello:
    """A decoded hello: the name it claims, its digest, and (answers) the proof and certificates."""
    name: str
    digest: bytes
    proof: bytes | None = None
    certs: tuple[bytes, ...] = ()


COUNTERS = (
    "hellos_out", "hellos_in", "hellos_refused", "hellos_unsolicited", "proofs_out", "proofs_refused",
    "syncs_out", "syncs_in", "fetches_out", "fetches_in", "records_in",
    "records_stored", "records_stale", "records_malformed", "records_refused", "records_over_bounds",
    "records_no_room", "records_expired", "records_replayed", "records_wrong_key", "records_origin_cap",
    "own_name_claimed", "own_version_raised", "keys_replaced", "replies_over_bounds",
    "originated", "route_computations", "route_updates_light", "routes_over_limit",
    "messages_malformed", "messages_rate_limited", "messages_not_neighbor", "bytes_out", "messages_out",
)


class Router:
    """One node's link-state routing; see the module docstring."""

    def __init__(self, name: Name, *, sign: Sign, verify: Verify, now: float, certs: tuple[bytes, ...] = (),
                 config: RouterConfig | None = None, version_base: int = 0,
                 random_bytes: Callable[[int], bytes] = secrets.token_bytes) -> None:
        self.name = name
        self.me = name.to_uri()
        self.config = config or RouterConfig()
        self._sign = sign
        self._verify = verify
        self._random = random_bytes
        self.certs = certs
        self.lsdb = Lsdb(max_nodes=self.config.max_nodes, max_bytes=self.config.max_lsdb_bytes)
        self.neighbors: dict[int, Neighbor] = {}
        self.prefixes: dict[str, tuple[int | None, int | None]] = {}
        self.routes: dict[str, tuple[Hop, ...]] = {}
        self._route_names: dict[str, Name] = {}  # the Name of each routed prefix, parsed once
        self.counters = dict.fromkeys(COUNTERS, 0)
        # versions start at the clock in ms (wall clock from the node, virtual in the simulator), so a
        # restarted node outgrows its previous life's records at once; Rule 2's bump covers a clock step back
        self.version = min(max(version_base, int(now * 1000)), MAX_VERSION // 2)
        self.last_refusal: str | None = None
        self._own_signer: bytes | None = None  # who signs this node's records, once known (Rule 2)
        self._originated_at = -_INF
        self._load_originated_at = -_INF
        self._originate_at: float = now  # the first record goes out at once
        self._compute_at: float = _INF  # a full computation (the graph changed), held down
        self._computed_at = -_INF
        self._hold = self.config.hold_down  # the current hold-down (Rule 8: grows with the work)
        self._dirty: set[str] = set()  # prefixes whose origins or attributes changed since the last computation
        self._origins_of: dict[str, dict[str, tuple[int | None, int | None]]] = {}  # prefix -> origin -> attrs
        self._distances: Distances | None = None  # per neighbour, for the graph last computed
        self._hello_at = now
        self._budget: dict[int, tuple[float, int]] = {}  # face -> (window start, requests in it)
        self._proofs: tuple[float, int] = (now, 0)  # Rule 1: proofs signed for other faces in this second
        self._aliases: dict[int, int] = {}  # face -> the neighbour face it was proven to reach (Rule 3)
        # face -> (hello name, its challenge, neighbour face, sent at)
        self._alias_challenges: dict[int, tuple[Name, bytes, int, float]] = {}
        self._introduced_by: dict[str, int] = {}  # origin -> neighbour face it was first stored from
        self._own_adjacencies: tuple[Adjacency, ...] = ()

    # --- configuration ------------------------------------------------------------------
    def add_neighbor(self, face: int, cost: int, uri: str = "", *, link_up: bool = True) -> None:
        if cost < 1:
            raise ValueError("a neighbour's link cost must be >= 1")
        self.neighbors[face] = Neighbor(face, cost, uri, link_up=link_up)

    def remove_neighbor(self, face: int, now: float) -> list[Action]:
        nb = self.neighbors.pop(face, None)
        out: list[Action] = []
        self.face_gone(face)
        if nb is not None:
            self._drop_aliases(face)
            if nb.up:
                self._adjacency_changed(now)
        self._flush(now, out)
        return out

    def face_gone(self, face: int) -> None:
        """Any face closed: forget what was kept for it (budget, alias, challenge)."""
        self._budget.pop(face, None)
        self._aliases.pop(face, None)
        self._alias_challenges.pop(face, None)

    def link_state(self, face: int, up: bool, now: float) -> list[Action]:
        """The transport of a neighbour face connected (True) or lost its peer (Rule 1)."""
        nb = self.neighbors.get(face)
        out: list[Action] = []
        if nb is None or nb.link_up == up:
            return out
        nb.link_up = up
        if up:
            self._send_hello(nb.face, out, nb, now)
        else:
            self._lost(nb, now)
        self._flush(now, out)
        return out

    def set_prefixes(self, prefixes: Mapping[str, tuple[int | None, int | None]], now: float) -> list[Action]:
        """The prefixes this node announces (URI -> (capacity, load)); Rule 2."""
        if len(prefixes) > self.config.max_prefixes:
            raise ValueError(f"{len(prefixes)} prefixes to announce, more than {self.config.max_prefixes}")
        for prefix in prefixes:
            checked_name(prefix, "prefix")  # what others will decode: refused here, never at a peer
        new = dict(prefixes)
        out: list[Action] = []
        if new == self.prefixes:
            return out
        same_names = new.keys() == self.prefixes.keys()
        self.prefixes = new
        if same_names:  # load only: rate-limited
            self._originate_at = min(self._originate_at, max(now, self._load_originated_at
                                                              + self.config.load_interval))
        else:
            self._originate_at = now
        self._flush(now, out)
        return out

    # --- packets ------------------------------------------------------------------------
    def on_interest(self, face: int, interest: Interest, now: float) -> list[Action]:
        out: list[Action] = []
        comps = interest.name.comps
        if len(comps) < 4 or comps[:3] != _SCOPE or not self._within_budget(face, now):
            return out
        kind = comps[3]
        try:
            params = _params(interest)
        except DecodeError:
            self.counters["messages_malformed"] += 1
            return out
        nb = self.neighbors.get(face)
        if kind == _HELLO:
            self.counters["hellos_in"] += 1
            try:
                hello = _hello(params, answer=False)
            except DecodeError:
                self.counters["messages_malformed"] += 1
                return out
            self._answer_hello(face, nb, interest, params["c"], now, out)
            if nb is not None:
                if nb.up and nb.name == hello.name:
                    self._repair(nb, hello.digest, now, out)
                elif nb.link_up and params.get("r") is not True and now >= nb.challenged_at + self.config.pace:
                    # a neighbour not (yet) proven speaks: our last challenge may have gone before it
                    # listened, so ask again now (marked, so that this one makes no challenge in return)
                    self._send_hello(face, out, nb, now, again=True)
            else:
                self._maybe_alias(face, hello.name, now, out)
        elif kind == _SYNC:
            self.counters["syncs_in"] += 1
            via = nb if nb is not None else self._alias_of(face)
            if via is None:
                self.counters["messages_not_neighbor"] += 1
            else:
                self._on_sync(via, params, now, out)
        elif kind == _FETCH:
            self.counters["fetches_in"] += 1
            out.append(self._transmit(face, make_data(interest.name, self._reply(params))))
            if nb is not None:
                nb.synced_at = now
        else:
            self.counters["messages_malformed"] += 1
        self._flush(now, out)
        return out

    def on_data(self, face: int, data: Data, now: float) -> list[Action]:
        out: list[Action] = []
        comps = data.name.comps
        if len(comps) < 4 or comps[:3] != _SCOPE:
            return out
        kind = comps[3]
        nb = self.neighbors.get(face)
        try:
            if kind == _HELLO:
                if nb is not None and nb.challenge is not None and nb.challenge[0] == data.name:
                    challenge = nb.challenge[1]
                    nb.challenge = None
                    self._on_hello_answer(nb, data, challenge, now, out)
                elif face in self._alias_challenges and self._alias_challenges[face][0] == data.name:
                    self._on_alias_answer(face, data, now)
                else:
                    self.counters["hellos_unsolicited"] += 1
            elif kind == _FETCH and nb is not None and nb.fetch is not None and nb.fetch[0] == data.name:
                nb.fetch = None
                nb.synced_at = now
                cfg = self.config
                if len(data.content) > max(cfg.max_reply_bytes, cfg.max_record_bytes) + 1024:
                    self.counters["replies_over_bounds"] += 1
                    self._refused(f"a fetch answer of {len(data.content)} bytes from face {face}, more than "
                                  f"{cfg.max_reply_bytes}")
                    nb.wanted.clear()
                else:
                    self._on_records(nb, data.content, now)
        except DecodeError:
            self.counters["messages_malformed"] += 1
        self._flush(now, out)
        return out

    # --- time ---------------------------------------------------------------------------
    def next_deadline(self) -> float:
        t = min(self._hello_at, self._originate_at, self._compute_at)
        dead = self.config.dead_interval
        pace = self.config.pace
        for nb in self.neighbors.values():
            if nb.up:
                t = min(t, nb.heard_at + dead)
                if nb.notify:
                    t = min(t, nb.sync_sent_at + pace)
                if nb.wanted and nb.fetch is None:
                    t = min(t, nb.fetch_sent_at + pace)
            if nb.fetch is not None:
                t = min(t, nb.fetch[1])
        return t

    def on_timer(self, now: float) -> list[Action]:
        out: list[Action] = []
        cfg = self.config
        for nb in self.neighbors.values():
            if nb.up and now >= nb.heard_at + cfg.dead_interval:  # Rule 1
                self._lost(nb, now)
            if nb.fetch is not None and now >= nb.fetch[1]:  # Rule 4
                nb.fetch = None
        if now >= self._hello_at:
            self._hello_at = now + cfg.hello_interval
            for nb in self.neighbors.values():
                if nb.link_up:
                    self._send_hello(nb.face, out, nb, now)
            for origin in self.lsdb.expired(now):  # Rule 7
                self._remove(origin, now)
                self.counters["records_expired"] += 1
            stale = now - 2 * cfg.hello_interval
            for face in [f for f, (_, _, _, at) in self._alias_challenges.items() if at < stale]:
                del self._alias_challenges[face]
            if now >= self._originated_at + cfg.refresh:
                self._originate_at = now
        self._flush(now, out)
        return out

    # --- rules --------------------------------------------------------------------------
    def _within_budget(self, face: int, now: float) -> bool:  # Rule 9
        start, count = self._budget.get(face, (now, 0))
        if now - start >= 1.0:
            start, count = now, 0
        if count >= self.config.max_requests_per_s:
            self.counters["messages_rate_limited"] += 1
            return False
        self._budget[face] = (start, count + 1)
        return True

    def _send_hello(self, face: int, out: list[Action], nb: Neighbor | None, now: float,
                    again: bool = False) -> tuple[Name, bytes]:  # Rule 1
        self.counters["hellos_out"] += 1
        challenge = self._random(CHALLENGE_BYTES)
        body: dict[str, Any] = {"n": self.me, "d": self.lsdb.digest(), "c": challenge}
        if again:
            body["r"] = True
        interest = Interest.with_params(ROUTING_PREFIX.append_wire(_HELLO), _pack(body),
                                        lifetime_ms=max(1, int(self.config.hello_interval * 1000)))
        if nb is not None:
            nb.challenge = (interest.name, challenge)
            nb.challenged_at = now
        out.append(self._transmit(face, interest))
        return interest.name, challenge

    def _answer_hello(self, face: int, nb: Neighbor | None, interest: Interest, challenge: bytes, now: float,
                      out: list[Action]) -> None:
        """Rule 1: a hello Interest is answered with a proof; for faces that are no neighbour's, within a budget."""
        if nb is None:
            start, count = self._proofs
            if now - start >= 1.0:
                start, count = now, 0
            if count >= self.config.max_proofs_per_s + 4 * len(self.neighbors):
                self.counters["proofs_refused"] += 1
                return
            self._proofs = (start, count + 1)
        self.counters["proofs_out"] += 1
        proof = self._sign(self.name.append_wire(*_PROOF, generic(challenge)), b"")
        out.append(self._transmit(face, make_data(interest.name, _pack(
            {"n": self.me, "d": self.lsdb.digest(), "p": encode(proof), "k": list(self.certs)}))))

    def _proven(self, data: Data, challenge: bytes) -> tuple[_Hello, bytes] | None:
        """The hello an answer carries and who signed its proof, if the proof
        answers `challenge` (Rule 1); None, counted, if not."""
        hello = _hello(_unpack(data.content), answer=True)
        assert hello.proof is not None
        try:
            proof = decode(hello.proof)
        except DecodeError:
            proof = None
        expected = Name(hello.name).append_wire(*_PROOF, generic(challenge))
        if type(proof) is not Data or proof.name != expected:
            self.counters["hellos_refused"] += 1
            self._refused(f"a hello answer claiming {hello.name} without a proof of this challenge")
            return None
        try:
            signer = self._verify(proof, hello.certs)
        except Error as exc:
            self.counters["hellos_refused"] += 1
            self._refused(f"a hello answer claiming {hello.name}: {exc}")
            return None
        if hello.name == self.me or not self._may_speak(hello.name, signer):
            self.counters["hellos_refused"] += 1
            self._refused(f"a hello answer claiming {hello.name}, signed by a key not established for it")
            return None
        return hello, signer

    def _on_hello_answer(self, nb: Neighbor, data: Data, challenge: bytes, now: float,
                         out: list[Action]) -> None:  # Rules 1, 5
        proven = self._proven(data, challenge)
        if proven is None:
            return
        hello, signer = proven
        nb.heard_at = now
        if not nb.up or nb.name != hello.name:
            if nb.name is not None and nb.name != hello.name:  # another node on this face now
                self._drop_aliases(nb.face)
                nb.wanted.clear()
                nb.fetch = None
            nb.up = True
            nb.name = hello.name
            self._adjacency_changed(now)
            for face, (_, _, target, _) in list(self._alias_challenges.items()):
                if target == nb.face:  # a connection that claimed this name before it was proven: ask it now
                    del self._alias_challenges[face]
        nb.key = signer
        self._repair(nb, hello.digest, now, out)

    def _maybe_alias(self, face: int, name: str, now: float, out: list[Action]) -> None:
        """Rule 3: a face that is no neighbour's says it is an up neighbour: challenge it (once per hello)."""
        if face in self._aliases:
            return
        target = next((nb for nb in self.neighbors.values() if nb.up and nb.name == name), None)
        if target is None:
            return
        pending = self._alias_challenges.get(face)
        if pending is not None and now < pending[3] + self.config.hello_interval:
            return
        if pending is None and len(self._alias_challenges) >= 2 * len(self.neighbors) + 8:
            return
        sent, challenge = self._send_hello(face, out, None, now)
        self._alias_challenges[face] = (sent, challenge, target.face, now)

    def _on_alias_answer(self, face: int, data: Data, now: float) -> None:
        _, challenge, target_face, _ = self._alias_challenges.pop(face)
        target = self.neighbors.get(target_face)
        proven = self._proven(data, challenge)
        if proven is None or target is None or not target.up:
            return
        hello, signer = proven
        if hello.name != target.name or signer != target.key:
            self.counters["hellos_refused"] += 1
            return
        for old in [f for f, t in self._aliases.items() if t == target_face]:
            del self._aliases[old]  # one alias per neighbour: its latest connection
        self._aliases[face] = target_face

    def neighbor_face(self, face: int) -> int | None:
        """The face of the up neighbour `face` leads to: `face` itself, or the
        neighbour's face when `face` is a connection that proved (Rule 3) it
        is that neighbour's; None otherwise.  Two faces with the same answer
        reach the same neighbour (the aggregator accepts a partial sum pushed
        up over one for members it reaches over the other)."""
        nb = self.neighbors.get(face)
        if nb is not None:
            return face if nb.up else None
        alias = self._alias_of(face)
        return alias.face if alias is not None else None

    def _alias_of(self, face: int) -> Neighbor | None:
        target = self._aliases.get(face)
        nb = self.neighbors.get(target) if target is not None else None
        return nb if nb is not None and nb.up else None

    def _drop_aliases(self, neighbor_face: int) -> None:
        for face in [f for f, t in self._aliases.items() if t == neighbor_face]:
            del self._aliases[face]

    def _lost(self, nb: Neighbor, now: float) -> None:
        nb.heard_at = -_INF
        nb.fetch = None
        nb.challenge = None
        nb.wanted.clear()
        self._drop_aliases(nb.face)
        if nb.up:
            nb.up = False
            self._adjacency_changed(now)

    def _pinned(self, origin: str) -> bytes | None:
        record = self.lsdb.get(origin)
        if record is not None:
            return record.signer
        for nb in self.neighbors.values():
            if nb.up and nb.name == origin:
                return nb.key
        return None

    def _may_speak(self, origin: str, signer: bytes) -> bool:  # Rule 10
        pinned = self._pinned(origin)
        if pinned is None or pinned == signer:
            return True
        if self.lsdb.listed_by_others(origin) == 0 and not any(
                nb.up and nb.name == origin for nb in self.neighbors.values()):
            self.counters["keys_replaced"] += 1
            return True
        return False

    def _repair(self, nb: Neighbor, digest: bytes, now: float, out: list[Action]) -> None:  # Rule 5
        cfg = self.config
        if (digest != self.lsdb.digest() and now >= nb.full_sent_at + cfg.repair_interval
                and now >= nb.synced_at + cfg.repair_interval and nb.fetch is None and not nb.wanted):
            nb.full_sent_at = now
            self._send_sync(nb, self.lsdb.vector(), True, now, out)

    def _adjacency_changed(self, now: float) -> None:
        self._originate_at = min(self._originate_at, now)

    def _topology_changed(self, now: float) -> None:
        """Rule 8: a changed graph is computed a hold-down after the last computation."""
        if self._compute_at == _INF:
            self._compute_at = max(now, self._computed_at + self._hold)

    def _on_sync(self, nb: Neighbor, params: Any, now: float, out: list[Action]) -> None:  # Rules 2, 3, 5
        if type(params) is not dict or type(params.get("v")) is not list:
            self.counters["messages_malformed"] += 1
            return
        nb.synced_at = now
        theirs: dict[str, int] = {}
        for item in params["v"][: self.config.max_nodes]:
            if (type(item) is not list or len(item) != 2 or type(item[0]) is not str
                    or not item[0].startswith("/") or len(item[0]) > 512
                    or type(item[1]) is not int or not 0 <= item[1] <= MAX_VERSION):
                self.counters["messages_malformed"] += 1
                return
            theirs[item[0]] = item[1]
        lsdb = self.lsdb
        for origin, ver in theirs.items():
            held = self.version if origin == self.me else lsdb.version_of(origin)
            if ver > held and ver > nb.wanted.get(origin, -1):
                nb.wanted[origin] = ver  # own name too: only the record itself, signed, can raise it (Rule 2)
        if params.get("full") is True:
            newer = {o: v for o, v in lsdb.vector().items() if v > theirs.get(o, -1)}
            if newer:
                self._send_sync(nb, newer, False, now, out)

    def _send_sync(self, nb: Neighbor, entries: Mapping[str, int], full: bool, now: float,
                   out: list[Action]) -> None:
        self.counters["syncs_out"] += 1
        nb.sync_sent_at = now
        body: dict[str, Any] = {"n": self.me, "v": [[o, v] for o, v in entries.items()]}
        if full:
            body["full"] = True
        out.append(self._transmit(nb.face, Interest.with_params(ROUTING_PREFIX.append_wire(_SYNC), _pack(body))))

    def _reply(self, params: Any) -> bytes:  # Rule 4, the answering side
        records: list[bytes] = []
        if type(params) is dict and type(params.get("w")) is list:
            size, limit = 0, self.config.max_reply_bytes
            for item in params["w"][: self.config.max_nodes]:
                if type(item) is not list or len(item) != 2 or type(item[0]) is not str:
                    continue
                record = self.lsdb.get(item[0])
                if record is None:
                    continue
                if size + len(record.wire) > limit and records:
                    break
                records.append(record.wire)
                size += len(record.wire)
        return _pack(records)

    def _on_records(self, nb: Neighbor, content: bytes | memoryview, now: float) -> None:  # Rules 4, 6
        records = _unpack(content)
        if type(records) is not list:
            raise DecodeError("fetch answer is not a list")
        answered: set[str] = set()
        for wire in records:
            self.counters["records_in"] += 1
            if type(wire) is not bytes:
                self.counters["records_malformed"] += 1
                continue
            origin = self._accept(nb, wire, now)
            if origin is not None:
                answered.add(origin)
        if not answered:
            nb.wanted.clear()  # it holds none of them (any more): the next hello's digest repairs
        for origin in answered:  # stored, stale or refused: never asked again for the same version
            nb.wanted.pop(origin, None)

    def _accept(self, nb: Neighbor | None, wire: bytes, now: float) -> str | None:
        """Rule 6; returns the record's origin once it is known (stored or not)."""
        cfg = self.config
        if len(wire) > cfg.max_record_bytes:
            self.counters["records_over_bounds"] += 1
            self._refused(f"a record of {len(wire)} bytes, more than {cfg.max_record_bytes}")
            return None
        try:
            data = decode(wire)
            if type(data) is not Data:
                raise DecodeError("not a Data")
            comps = data.name.comps
            if len(comps) > 3 and comps[-1][:1] == _VERSION_TYPE:  # a stale record, known by its name alone
                held = self.lsdb.by_key(comps[:-3])
                if held is not None and 0 <= _version(comps[-1]) <= held.state.version:
                    self.counters["records_stale"] += 1
                    return held.state.origin
            state, certs = decode_record(data.name, data.content, max_adjacencies=cfg.max_adjacencies,
                                         max_prefixes=cfg.max_prefixes)
        except DecodeError as exc:
            bounds = isinstance(exc, BoundsExceeded)
            self.counters["records_over_bounds" if bounds else "records_malformed"] += 1
            self._refused(str(exc))
            return None
        origin = state.origin
        if origin == self.me:
            self._own_record(data, state, certs, now)
            return origin
        if state.version <= self.lsdb.version_of(origin):
            self.counters["records_stale"] += 1
            return origin
        if self.lsdb.replayed(origin, state.version, now):
            self.counters["records_replayed"] += 1
            self._refused(f"record of {origin} v={state.version}: it expired here; a replay is not renewed")
            return origin
        new_origin = origin not in self.lsdb
        if (new_origin and nb is not None and cfg.max_origins_per_neighbor
                and nb.introduced >= cfg.max_origins_per_neighbor):
            self.counters["records_origin_cap"] += 1
            self._refused(f"record of {origin}: face {nb.face} already introduced {nb.introduced} origins "
                          f"(max_origins_per_neighbor)")
            return origin
        try:
            signer = self._verify(data, certs)
        except Error as exc:
            self.counters["records_refused"] += 1
            self._refused(f"record of {origin}: {exc}")
            return origin
        if not self._may_speak(origin, signer):
            self.counters["records_wrong_key"] += 1
            self._refused(f"record of {origin}: signed by a key other than the one established for it")
            return origin
        if not self.lsdb.fits(origin, len(wire)):
            self.counters["records_no_room"] += 1
            self._refused(f"record of {origin}: the link-state database is full")
            return origin
        if new_origin and nb is not None:
            nb.introduced += 1
            self._introduced_by[origin] = nb.face
        self._store(state, wire, now, None if nb is None else nb.face, signer)
        return origin

    def _own_record(self, data: Data, state: LinkState, certs: tuple[bytes, ...], now: float) -> None:
        """Rule 2: a record of this node's own name, from elsewhere."""
        if state.version <= self.version:
            self.counters["records_stale"] += 1
            return
        try:
            signer = self._verify(data, certs)
        except Error:
            signer = None
        if signer is None or signer != self._own_signer:
            self.counters["own_name_claimed"] += 1
            self._refused(f"a record of this node's own name {self.me} v={state.version} not signed by its key")
            return
        self.counters["own_version_raised"] += 1
        self.version = state.version  # its previous life, same key: outgrow it
        self._originate_at = min(self._originate_at, now)

    def _refused(self, why: str) -> None:
        self.last_refusal = why

    def _store(self, state: LinkState, wire: bytes, now: float, from_face: int | None, signer: bytes) -> None:
        """Keep a record, and notify it to the other neighbours (Rule 3)."""
        lifetime = _INF if state.origin == self.me else min(state.lifetime, 7 * 86400.0)
        old = self.lsdb.get(state.origin)
        record = StoredRecord(state, wire, now, now + lifetime, signer=signer)
        self.lsdb.put(record)
        self.counters["records_stored"] += 1
        for nb in self.neighbors.values():
            if nb.face != from_face and nb.up:
                nb.notify[state.origin] = state.version
            if nb.wanted.get(state.origin, _INF) <= state.version:
                del nb.wanted[state.origin]
        self._index(state.origin, old.state.prefixes if old is not None else (), state.prefixes)
        if old is None or old.neighbors != record.neighbors:
            self._topology_changed(now)

    def _remove(self, origin: str, now: float) -> None:
        """Rule 7: an expired record goes (its tombstone stays)."""
        old = self.lsdb.get(origin)
        if old is None:
            return
        self.lsdb.expire(origin, now)
        face = self._introduced_by.pop(origin, None)
        nb = self.neighbors.get(face) if face is not None else None
        if nb is not None and nb.introduced > 0:
            nb.introduced -= 1
        self._index(origin, old.state.prefixes, ())
        self._topology_changed(now)

    def _index(self, origin: str, old: tuple[Announcement, ...], new: tuple[Announcement, ...]) -> None:
        """Keep prefix -> origins current and mark what changed (Rule 8's light path reads only those)."""
        if old == new:
            return
        index = self._origins_of
        for p in old:
            hosts = index.get(p.prefix)
            if hosts is not None:
                hosts.pop(origin, None)
                if not hosts:
                    del index[p.prefix]
            self._dirty.add(p.prefix)
        for p in new:
            index.setdefault(p.prefix, {})[origin] = (p.capacity, p.load)
            self._dirty.add(p.prefix)

    def _originate(self, now: float) -> None:  # Rule 2
        cfg = self.config
        best: dict[str, int] = {}
        for nb in self.neighbors.values():
            if nb.up and nb.name is not None and nb.name != self.me:
                best[nb.name] = min(nb.cost, best.get(nb.name, nb.cost))
        adjacencies = tuple(Adjacency(n, c) for n, c in sorted(best.items()))
        prefixes = tuple(Announcement(p, cap, load) for p, (cap, load) in sorted(self.prefixes.items()))
        self.version += 1
        state = LinkState(self.me, self.version, cfg.lifetime, adjacencies, prefixes)
        data = self._sign(record_name(self.name, self.version), encode_record(state, self.certs))
        if self._own_signer is None:
            try:
                self._own_signer = self._verify(data, self.certs)
            except Error:
                self._own_signer = b"\0unverifiable"  # then no record of a previous life can raise the version
        self._own_adjacencies = adjacencies
        self._originated_at = now
        self._load_originated_at = now
        self._originate_at = _INF
        self.counters["originated"] += 1
        self._store(state, encode(data), now, None, self._own_signer)

    def _flush(self, now: float, out: list[Action]) -> None:
        """What every entry point ends with: originate, compute, notify and fetch when due."""
        if now >= self._originate_at:
            self._originate(now)
        if now >= self._compute_at or (self._dirty and self._distances is not None):
            self._compute(now, out)
        elif self._dirty and self._compute_at == _INF:
            self._topology_changed(now)  # nothing computed yet: the first computation routes them
        pace = self.config.pace
        for nb in self.neighbors.values():
            if not nb.link_up:
                nb.notify.clear()
                continue
            if nb.notify and now >= nb.sync_sent_at + pace:
                if nb.up:
                    self._send_sync(nb, nb.notify, False, now, out)
                    nb.synced_at = now
                nb.notify = {}
            if nb.wanted and nb.fetch is None and nb.up and now >= nb.fetch_sent_at + pace:
                self.counters["fetches_out"] += 1
                interest = Interest.with_params(ROUTING_PREFIX.append_wire(_FETCH), _pack(
                    {"n": self.me, "w": [[o, v] for o, v in nb.wanted.items()]}),
                    lifetime_ms=max(1, int(self.config.fetch_timeout * 1000)))
                nb.fetch = (interest.name, now + self.config.fetch_timeout)
                nb.fetch_sent_at = now
                nb.synced_at = now
                out.append(self._transmit(nb.face, interest))

    def _compute(self, now: float, out: list[Action]) -> None:  # Rule 8
        cfg = self.config
        full = now >= self._compute_at or self._distances is None
        work = 0
        if full:
            self._compute_at = _INF
            self._computed_at = now
            self.counters["route_computations"] += 1
            listed = {r.state.origin: r.neighbors for r in self.lsdb}
            adj = {u: {v: c for v, c in nbrs.items() if u in listed.get(v, ())} for u, nbrs in listed.items()}
            self._distances = neighbor_distances(adj, self.me)
            work += sum(len(nbrs) for nbrs in adj.values()) * max(1, len(self._distances))
            prefixes: Any = self._origins_of.keys() | self.routes.keys()
        else:
            self.counters["route_updates_light"] += 1
            prefixes = self._dirty
        self._dirty = set()
        assert self._distances is not None
        faces: dict[str, tuple[int, int]] = {}  # neighbour name -> (cost, face) of its cheapest up face
        for nb in self.neighbors.values():
            if nb.up and nb.name is not None and (nb.name not in faces or (nb.cost, nb.face) < faces[nb.name]):
                faces[nb.name] = (nb.cost, nb.face)
        index = self._origins_of
        origins = {p: index[p].keys() for p in prefixes if p in index}
        work += len(origins) * max(1, len(self._distances))
        new: dict[str, tuple[Hop, ...]] = {}
        for prefix, nexthops in next_hops(self._distances, self.me, origins).items():
            hops = []
            attrs = index[prefix]
            for nh in nexthops:
                face = faces.get(nh.via)
                if face is None:
                    continue
                caps = [attrs[h] for h in nh.hosts]
                capacity = sum(c for c, _ in caps if c is not None) if any(c is not None for c, _ in caps) else None
                load = sum(ld for _, ld in caps if ld is not None) if any(ld is not None for _, ld in caps) else None
                hops.append(Hop(face[1], nh.cost, capacity, load))
            if hops:
                new[prefix] = tuple(hops)
        routes = self.routes
        names = self._route_names
        for prefix in prefixes:
            installed = new.get(prefix)
            if installed is None:
                if routes.pop(prefix, None) is not None:
                    name = names.pop(prefix, None)
                    out.append(RouteUpdate(Name(prefix) if name is None else name, ()))
                continue
            if routes.get(prefix) == installed:
                continue
            if prefix not in routes and len(routes) >= cfg.max_routes:
                self.counters["routes_over_limit"] += 1
                continue
            routes[prefix] = installed
            name = names.get(prefix)
            if name is None:
                name = names[prefix] = Name(prefix)
            out.append(RouteUpdate(name, installed))
        if full:  # Rule 8: the next full computation waits in proportion to this one's work
            self._hold = max(cfg.hold_down, 4 * work / cfg.work_per_s)

    def _transmit(self, face: int, packet: Interest | Data) -> Transmit:
        self.counters["messages_out"] += 1
        self.counters["bytes_out"] += len(encode(packet))
        return Transmit(face, packet)

    # --- observing ----------------------------------------------------------------------
    def status(self, now: float) -> dict[str, Any]:
        """The routing part of ``icnd routing --json`` (the shell adds what it knows)."""
        neighbors = [{
            "name": nb.name, "uri": nb.uri, "face": nb.face, "state": "up" if nb.up else "down",
            "cost": nb.cost, "link": "up" if nb.link_up else "down",
            "last_hello_s": None if nb.heard_at == -_INF else round(now - nb.heard_at, 3),
        } for nb in sorted(self.neighbors.values(), key=lambda n: n.face)]
        lsdb = []
        for record in sorted(self.lsdb, key=lambda r: r.state.origin):
            s = record.state
            lsdb.append({
                "origin": s.origin, "version": s.version, "age_s": round(now - record.received_at, 3),
                "expires_in_s": None if record.expires_at == _INF else round(record.expires_at - now, 3),
                "bytes": len(record.wire),
                "adjacencies": [{"name": a.name, "cost": a.cost} for a in s.adjacencies],
                "prefixes": [{"prefix": p.prefix, **({"capacity": p.capacity} if p.capacity is not None else {}),
                              **({"load": p.load} if p.load is not None else {})} for p in s.prefixes],
            })
        return {
            "name": self.me, "version": self.version, "neighbors": neighbors, "lsdb": lsdb,
            "lsdb_bytes": self.lsdb.bytes_used, "announced": sorted(self.prefixes), "routes": len(self.routes),
            "aliases": len(self._aliases),
            "counters": dict(self.counters), "last_refusal": self.last_refusal,
        }

    def graph(self) -> Graph:
        """The link-state graph of Rule 8: u->v (u's cost) where u's record lists v and v's lists u."""
        listed = {r.state.origin: r.neighbors for r in self.lsdb}
        return {u: {v: c for v, c in nbrs.items() if u in listed.get(v, ())} for u, nbrs in listed.items()}

    def place(self, fn: Name, refs: Sequence[Name]) -> list[Placement]:
        """The hosts of function `fn` for a call with arguments `refs`, best first
        (`icnd.core.routing.placement`): the origins of `fn`'s longest announced
        prefix, ranked by their route cost from this database's graph to the
        origins of each ref's longest announced prefix.  This node is one of
        them when it announces `fn`; empty when nobody does.  Raises ValueError
        for more than `icnd.core.routing.placement.MAX_REFS` refs."""
        if len(refs) > MAX_REFS:
            raise ValueError(f"{len(refs)} refs, more than {MAX_REFS}")
        hosts = self._announced(fn)
        if not hosts:
            return []
        return place(self.graph(), hosts, [self._announced(r) for r in refs], caller=self.me)

    def _announced(self, name: Name) -> Mapping[str, tuple[int | None, int | None]]:
        """Origin -> (capacity, load) of the longest announced prefix of `name` (empty: none)."""
        index = self._origins_of
        for i in range(len(name), 0, -1):
            origins = index.get(name[:i].to_uri())
            if origins:
                return origins
        return {}


def _version(comp: bytes) -> int:
    """A version component's number (-1 if malformed: decode_record then says why)."""
    try:
        return decode_nonneg(comp[1:])
    except ValueError:
        return -1


def _pack(obj: Any) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


def _unpack(buf: bytes | memoryview) -> Any:
    try:
        return msgpack.unpackb(buf, raw=False, strict_map_key=True, max_bin_len=len(buf), max_str_len=len(buf),
                               max_array_len=len(buf), max_map_len=64)
    except Exception as exc:
        raise DecodeError(f"routing message: not msgpack: {exc}") from None


def _params(interest: Interest) -> Any:
    if interest.app_params is None or not interest.params_ok():
        raise DecodeError("routing Interest without valid parameters")
    return _unpack(interest.app_params)


def _hello(params: Any, *, answer: bool) -> _Hello:
    """A hello's fields, each checked (Rule 6): a name, a digest, and a challenge
    (Interests) or a proof and certificates (answers).  Raises DecodeError."""
    if type(params) is not dict:
        raise DecodeError("hello: not a map")
    name = checked_name(params.get("n"), "hello name")
    digest = params.get("d")
    if type(digest) is not bytes or len(digest) > MAX_DIGEST_BYTES:
        raise DecodeError("hello: bad digest")
    if not answer:
        challenge = params.get("c")
        if type(challenge) is not bytes or not 8 <= len(challenge) <= 64:
            raise DecodeError("hello: bad challenge")
        return _Hello(name, digest)
    proof, certs = params.get("p"), params.get("k", [])
    if type(proof) is not bytes or type(certs) is not list or len(certs) > 8 or any(
            type(c) is not bytes for c in certs):
        raise DecodeError("hello answer: bad proof or certificates")
    return _Hello(name, digest, proof, tuple(certs))

