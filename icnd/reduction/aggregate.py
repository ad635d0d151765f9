"""In-network aggregation: the forwarder's part of collective reduction.

Every name under ``/reduce`` is handled here instead of by a strategy
(`Aggregator.route`, called where the forwarder would ask the strategy).
A request ``/reduce/<g>/<op>/<r>/seg=<s>/params-sha256=…`` carries the group
descriptor and, for a sub-request, the member subset it covers
(`icnd.reduction.group`).  At each forwarder:

1. A request for the whole aggregate (no subset) goes by FIB toward the
   segment's rendezvous node, ``/node/<rendezvous>``; equal requests merge in
   PITs on the way (one computation for many requesters).  The rendezvous is
   the request's ``step``-th in the segment's `GroupDescriptor.rendezvous_order`
   (0 unless its consumer failed over from unreachable ones): any node
   takes that role for the requests that name it.  A consumer's re-sent
   request (new nonce) is not forwarded again over a reliable next hop that
   carried the earlier copy on its current connection less than
   ``RELIABLE_STALL`` ago (counted: ``agg_retx_suppressed``): the answer is
   on its way, and a copy reaching a rendezvous that has already answered
   would send the aggregate again (or, evicted from its cache, recompute it).
2. At the rendezvous, and at every forwarder a sub-request reaches, the
   members are *split*: each member goes to the cheapest FIB next hop toward
   its node (a sub-request never back toward its parent), members living on
   this node are asked directly for their contribution
   (``/node/<me>/member/<m>/contrib/<g>/<r>/seg=<s>``), and one sub-request
   per next hop carries exactly the members behind it.  A sub-request whose
   members all sit behind one next hop (and none here) is relayed unchanged,
   with no aggregation state.  Each member is in exactly one child, so no
   member is ever counted twice, whatever the topology.
3. The answers are combined in place into an aggregation-table entry
   (`AstEntry`, bounded: ``max_entries``, ``max_bytes``, ``max_rounds`` per
   group; over them the request is Nacked *congestion*).  A group's rounds
   are shared: a round started by a non-local face counts against that
   face's share (``face_max_rounds`` per group), and non-local faces may not
   start the last ``local_reserve_rounds`` rounds, kept for local requesters
   (refusals counted: ``agg_round_share``, ``agg_round_reserve``).  Below
   the rendezvous every round arrives through the face toward it, so there
   the share is per requester: sub-requests carry an origin tag, made where
   the request entered the tree, and a round through a face toward the
   rendezvous is charged to (that face, its tag) (`Aggregator._origin`).  Each answer's
   contributors must lie inside its child's subset and be disjoint from what
   was already combined; dtype and shape must agree (a mismatch is an error
   naming the odd members, never a cast); NaN/Inf and integer overflow are
   flagged in the result.
4. When every child has answered the entry produces its Data: the aggregate
   (content type AGGREGATE, cached under its immutable name; the
   rendezvous signs it with the node's key) or, at the deadline with members
   missing, a flagged partial (content type PARTIAL, never cached) if the
   request allows partials, else a Nack *not-yet* naming the missing members.
   A partial request may name members known missing (``exclude``, from an
   earlier segment): they are not asked, so the segment answers at once.

Timers: an entry's deadline is its request's expiry less a margin (10% of
the remaining lifetime, 50 ms..1 s), and no later than the group's
``deadline_ms`` after the request arrived (when the group sets one); children are asked with lifetimes
that end at that deadline, so every level answers before its parent gives
up.  At most ``CHILD_WINDOW`` sub-requests are outstanding per next hop,
and no more than ``CHILD_WINDOW_BYTES`` of segments (at least one);
the others wait their turn (pacing: a burst of large answers would overflow
UDP socket buffers).  A child not answered within its RTO (SRTT + 4·RTTVAR per next hop,
1 s before any sample) is asked again with a new nonce, at most
``MAX_RETRIES`` times, backing off -- unless its next hop is a reliable
face (`reliable_state`, a stream: TCP, Unix).  There a sub-request and its
answer are lost only with the connection, while a late answer is only
queued (behind the face's queue, the socket's buffer, a shaped link's
queue: seconds on a saturated 100 Mbit/s link), and asking again would make
the member's node send the segment a second time, which queues more: so a
child on a reliable next hop is asked again only (a) when the face's
connection changed since it was sent (a permanent face reconnected; while
the face is down nothing is sent), or (b) when that next hop has answered
none of this aggregator's children for ``RELIABLE_STALL`` seconds since it
was sent (a stuck path, not a queue: a draining queue answers).  A face that
goes away for good fails its children at once (`on_face_down`).  Either way
the entry's deadline stands: a child never answered counts as missing then.

Pushed requests and pushed up (docs/reduction.md#pushed-contributions): a
local application may push its member's contribution (one segment) with its
request for the aggregate (``c``); the node stores it (`push`) and, unless
the request is partial or a fail-over, adds it to the aggregate's `Upward`
sum.  Each node sums what is pushed to it for the members below it (living
here, or reached over faces other than the one toward the rendezvous) and,
holding all of them or after `PUSH_GRACE`, pushes the sum up with a request
for the aggregate (``u``); the rendezvous makes the aggregate from the sums
pushed to it, or after twice `PUSH_GRACE` asks only the members missing
(a pull seeded with what was pushed, `_seeds`).  A pushed sum counts only
members behind the neighbour it came from (`same_neighbor`), only once;
every answer reaches the pushed requests waiting at each node wrapped whole
(`icnd.reduction.group.wrap_pushed`), so the rendezvous's signature reaches
the consumer intact.

The aggregator is the forwarder's namespace handler for ``/reduce``
(`icnd.core.hooks`): ``Forwarder(hooks={REDUCE: Aggregator(...)})``.  The
forwarder hands it the requests a strategy would get (`route`) and their
Nacks (`after_nack`).  Its hook face (`face`, set by `attach`) is where
child requests enter the Interest pipeline, and the Data and Nacks the
pipelines send to that face come back here (`deliver`, then `process`,
before the forwarder returns its actions), so child requests and results go
through the PIT and Content Store like any other packets.
"""

from __future__ import annotations

import collections
import hashlib
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import msgpack
import numpy as np

from icnd.codec import decode
from icnd.core.fw.forwarder import clamp_lifetime
from icnd.core.hooks import HOOK_FACE
from icnd.errors import DecodeError, error_data
from icnd.name import Name, generic
from icnd.packet import ContentType, Data, Interest, Nack, NackReason, Packet, SigType, new_nonce
from icnd.ratelog import RateLimitedLog
from icnd.reduction.contrib import ReductionError
from icnd.reduction.group import (NODE, GroupDescriptor, ReduceRequest, aggregate_prefix, canonical, contrib_name,
                                  incomplete_detail, parse_contrib_name, parse_incomplete, pushed_up, request_params,
                                  unwrap_pushed, wrap_pushed)
from icnd.reduction.segment import SegmentError, SegmentMeta, combine, nonfinite, pack, unpack
from icnd.rtt import RttEstimator
from icnd.security import DigestKey

if TYPE_CHECKING:
    from icnd.core.fw.forwarder import Forwarder
    from icnd.core.tables.pit import OutRecord, PitEntry

log = logging.getLogger("icnd.aggregate")

MAX_RETRIES = 8
INITIAL_RTO = 1.0
MIN_RTO, MAX_RTO = 0.05, 1.0
AGGREGATE_FRESHNESS_MS = 3_600_000
CHILD_WINDOW = 4  # sub-requests outstanding per next hop; the others wait their turn
CHILD_WINDOW_BYTES = 8 * 1024 * 1024  # ... and their segments' bytes: half a stream face's send queue
REQUEST_CACHE = 1024
RELIABLE_STALL = 2.0  # s: a reliable next hop silent this long is asked again (module docstring)
RELIABLE_POLL = 0.5  # s: how often a child held on a reliable next hop looks at its face again

AGG_COUNTERS = (
    "agg_requests", "agg_forwarded", "agg_relayed", "agg_entries", "agg_roots", "agg_children", "agg_child_data",
    "agg_combined", "agg_results", "agg_partials", "agg_incomplete", "agg_errors", "agg_retransmissions",
    "agg_congestion", "agg_malformed", "agg_rejected", "agg_duplicates", "agg_late", "agg_paced",
    "agg_internal_errors", "agg_round_share", "agg_round_reserve",
    "agg_held", "agg_reconnect_resends", "agg_stall_resends", "agg_retx_suppressed",
    "agg_pushed", "agg_push_duplicates", "agg_push_refused", "agg_pushed_up", "agg_push_late",
)
MAX_PUSH_WAITERS = 4096  # pushed requests waiting for their aggregate at once (`Aggregator.push`)
# how long a node waits for the members below it to push before it pushes up what it has (twice
# that at the rendezvous, which then asks the missing members itself): module docstring, "Pushed up"
PUSH_GRACE = 0.02
REFUSAL_LOG_INTERVAL = 10.0  # seconds between log lines for one kind of refusal
NO_ANSWER = "no answer by the deadline"

_digest = DigestKey()

# whose share a round is charged to: ("face", face, None) for a requester's face, ("via", face,
# tag) for sub-requests through a face toward the rendezvous, by origin tag (Aggregator._origin)
Origin = tuple[str, int, int | None]
# a face's `icnd.faces.base.Face.reliable_state`: None (may lose packets) or (connection, up)
ReliableState = Callable[[int], tuple[int, bool] | None]


def _unreliable(face: int) -> tuple[int, bool] | None:
    return None


def _same_face(a: int, b: int) -> bool:
    return a == b


@dataclass(slots=True, eq=False)
class _Push:
    """A pushed request (`route`), for `process` to take."""

    entry: "PitEntry"
    req: ReduceRequest
    interest: Interest
    face: int


@dataclass(slots=True, eq=False)
class Upward:
    """The partial sum this node collects from what is pushed to it for one
    aggregate (plain request `plain`), until it has every member `below`
    it, or `PUSH_GRACE`: then it pushes it up toward the rendezvous (or,
    being the rendezvous, makes the aggregate or asks the missing members)."""

    plain: Interest
    req: ReduceRequest
    here: bool  # this node is the rendezvous
    below: frozenset[int]  # the members this node collects for
    local: frozenset[int]  # ... living on this node
    assigned: dict[int, frozenset[int]]  # face -> the members it may push for
    state: str = "open"  # open; sent (pushed up); pull (the rendezvous asks the missing members)
    acc: np.ndarray | None = None
    acc_owned: bool = False
    layout: tuple[str, tuple[int, ...]] | None = None
    nseg: int = 0
    contributors: set[int] = field(default_factory=set)
    nonfinite: bool = False
    overflow: bool = False
    sent: Interest | None = None  # the request it pushed up
    origin: "Origin | None" = None  # whose share of the group's rounds it is (`Aggregator._admit`)


@dataclass(slots=True, eq=False)
class Pushed:
    """The pushed requests (of local applications, and neighbours' sums)
    waiting at this node for one aggregate."""

    expiry: float = 0.0
    waiters: dict[tuple[bytes, ...], tuple[Name, int]] = field(default_factory=dict)  # PIT key -> (name, nonce)
    faces: set[int] = field(default_factory=set)  # neighbour faces a partial sum came from


@dataclass(slots=True, eq=False)
class Child:
    entry: "AstEntry"
    interest: Interest
    members: tuple[int, ...]
    face: int | None  # the next hop of a sub-request; None: a local contribution (by FIB)
    sent_at: float = 0.0
    rto: float = INITIAL_RTO
    retries: int = 0
    state: str = "pending"  # pending, done, failed
    queued: bool = False  # waiting for room in its next hop's window
    counted: bool = False  # occupies a place in its next hop's window
    due: float = float("inf")  # when its timer looks at it next (asks again, or checks its face)
    connection: int | None = None  # its reliable next hop's connection when it was sent
    held: bool = False  # was due on a reliable next hop and not asked again (counted once)

    @property
    def leaf(self) -> bool:
        return self.face is None


@dataclass(slots=True, eq=False)
class AstEntry:
    """One aggregation: a (group, op, round, segment, subset) request."""

    key: tuple[bytes, ...]
    request: ReduceRequest
    nonce: int  # the out-record nonce of the request's PIT entry on face 0
    name: Name
    expiry: float
    deadline: float
    children: dict[tuple[bytes, ...], Child] = field(default_factory=dict)
    acc: np.ndarray | None = None
    acc_owned: bool = False  # False: acc is still the first answer's read-only view (copied on the second)
    layout: tuple[str, tuple[int, ...]] | None = None
    nseg: int = 0
    contributors: set[int] = field(default_factory=set)
    layouts: dict[tuple[str, tuple[int, ...]], list[int]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # why members are missing
    error: tuple[str, str] | None = None  # (code, message): the answer is an error
    nonfinite: bool = False
    overflow: bool = False
    timer_at: float = float("inf")
    created: float = 0.0
    congested: str = ""  # why the entry had to give up for lack of buffers
    done: bool = False
    # members of failed children that the child's not-yet did not name as missing
    # (they contributed below): the entry's own not-yet does not blame them, so a consumer is told
    # only the members that really failed to contribute
    not_blamed: set[int] = field(default_factory=set)
    origin: Origin | None = None  # whose share the round is charged to (None: a local face's request)

    def pending(self) -> list[Child]:
        return [c for c in self.children.values() if c.state == "pending"]


class Aggregator:
    """The aggregation table and its logic: the `icnd.core.hooks.NamespaceHandler` of ``/reduce``."""

    fw: Forwarder  # set by `attach`

    def __init__(self, *, node_name: str | None = None, max_entries: int = 1024,
                 max_bytes: int = 512 * 1024 * 1024, max_rounds: int = 16,
                 face_max_rounds: int | None = None, local_reserve_rounds: int | None = None) -> None:
        """`face_max_rounds`: rounds of one group a non-local face may start
        (default: half of `max_rounds`); `local_reserve_rounds`: rounds of a
        group only local faces may start (default: a quarter of `max_rounds`,
        at least 1 when `max_rounds` > 1)."""
        self.face = HOOK_FACE  # its hook face on `fw` (set again by `attach`)
        self.node_name = node_name  # this node's name (``/node/<name>``); None: aggregates no local members
        # whether a next hop is a reliable face (module docstring, "Timers"); the node sets its faces'
        # `reliable_state`: until then every next hop is retransmitted over as a datagram face
        self.reliable_state: ReliableState = _unreliable
        self.signer: Callable[[Data], Data] = _digest.sign  # signs complete aggregates made here
        # stores a contribution a local application pushed with its request (the node sets it to
        # `icnd.reduction.service.ReductionService.take_pushed`; None: pushed requests are refused)
        self.push: Callable[[Data, GroupDescriptor, int, int], bool] | None = None
        # whether two faces reach the same neighbour node (the node sets it from link-state routing's
        # proven neighbours; by default a face only reaches what it reaches): a partial sum pushed up
        # over one face may cover only members this node reaches over that neighbour
        self.same_neighbor: Callable[[int, int], bool] = _same_face
        self._pushed: dict[tuple[bytes, ...], Pushed] = {}  # plain request's PIT key -> its pushed requests
        self._push_waiters = 0
        self._up: dict[tuple[bytes, ...], Upward] = {}  # plain request's PIT key -> what was pushed here
        self._up_sent: dict[tuple[bytes, ...], tuple[bytes, ...]] = {}  # pushed-up request -> plain key
        self._seeds: dict[tuple[bytes, ...], Upward] = {}  # plain key -> what the pull it starts begins with
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_rounds = max_rounds
        self.face_max_rounds = max(1, max_rounds // 2) if face_max_rounds is None else face_max_rounds
        if local_reserve_rounds is None:
            local_reserve_rounds = max(1, max_rounds // 4) if max_rounds > 1 else 0
        self.local_reserve_rounds = min(local_reserve_rounds, max_rounds - 1)
        # one rate-limited log line per kind of refused round (the counters count them all)
        self._refusal_logs = {kind: RateLimitedLog(log, REFUSAL_LOG_INTERVAL)
                              for kind in ("round_share", "round_reserve")}
        self.entries: dict[tuple[bytes, ...], AstEntry] = {}
        self.children: dict[tuple[bytes, ...], Child] = {}
        # requests to aggregate here (from `route`), and what the pipelines sent to the hook face
        self.inbox: collections.deque[tuple[PitEntry, ReduceRequest, Interest, int] | _Push | Packet] = (
            collections.deque())
        self.bytes_used = 0
        self.counters = dict.fromkeys(AGG_COUNTERS, 0)
        self._requests: collections.OrderedDict[bytes, ReduceRequest] = collections.OrderedDict()
        self._rtt: dict[int | None, RttEstimator] = {}  # next hop -> its round-trip times
        self._heard: dict[int, float] = {}  # next hop -> when it last answered one of our children
        # reliable next hop -> (its connection, when this aggregator first saw that connection up)
        self._connections: dict[int, tuple[int, float]] = {}
        self.window = CHILD_WINDOW
        self._inflight: dict[int, int] = {}  # next hop -> sub-requests outstanding on it
        self._inflight_bytes: dict[int, int] = {}  # next hop -> their segments' bytes (groups may differ)
        self._waiting: dict[int, collections.deque[Child]] = {}  # next hop -> sub-requests queued
        # ... of aggregations local requesters started: they go first
        self._waiting_local: dict[int, collections.deque[Child]] = {}

    # --- the namespace-handler protocol (icnd.core.hooks) --------------------------------
    def attach(self, fw: Forwarder, face: int) -> None:
        self.fw = fw
        self.face = face

    def deliver(self, packet: Packet) -> None:
        self.inbox.append(packet)

    def pending(self) -> bool:
        return bool(self.entries or self.children or self.inbox or self._pushed)

    # --- routing (in place of a strategy) ------------------------------------------------
    def route(self, entry: PitEntry, in_face: int, interest: Interest, now: float) -> None:
        fw = self.fw
        c = self.counters
        try:
            req = self.parse(interest)
        except ValueError as exc:
            c["agg_malformed"] += 1
            fw.reject(entry, NackReason.MALFORMED, now, str(exc))
            return
        if req.push is not None or (req.up is not None and in_face != self.face):
            # a local application's contribution, or a neighbour's partial sum, rides with the request
            info = fw.faces.get(in_face)
            from_app = info is not None and info.local
            if req.push is not None and (not from_app or in_face == self.face or self.push is None):
                c["agg_push_refused"] += 1
                fw.reject(entry, NackReason.PROHIBITED, now, "a contribution rides with a request only from a "
                                                               "local application to its member's own node")
                return
            if req.up is not None and (info is None or from_app or self.node_name is None):
                c["agg_push_refused"] += 1
                fw.reject(entry, NackReason.PROHIBITED, now, "a partial sum is pushed up only by a neighbour node")
                return
            fw.record_out(entry, self.face, interest, now)
            self.inbox.append(_Push(entry, req, interest, in_face))
            return
        if req.up is not None:  # this node's partial sum: toward the rendezvous, as a plain request goes
            c["agg_requests"] += 1
            self._toward_rendezvous(entry, in_face, interest, req, now)
            return
        if in_face == self.face and not (req.subset is None and entry.comps in self._pushed):
            # one of our child sub-requests: to the hop chosen for it (the plain request of pushed
            # ones is routed as any request for the aggregate)
            child = self.children.get(entry.comps)
            hop = child.face if child is not None else None
            if hop is None or hop not in fw.faces:
                fw.reject(entry, NackReason.NO_ROUTE, now, "the next hop of this sub-request is gone")
            else:
                fw.send_interest(entry, hop, interest, now)
            return
        c["agg_requests"] += 1
        if req.subset is None and req.rendezvous() != self.node_name:
            self._toward_rendezvous(entry, in_face, interest, req, now)
            return
        if req.subset is not None:
            local, remote, unreachable = self.split(req.subset, set(entry.in_records), req)
            if not local and not unreachable and len(remote) == 1:
                c["agg_relayed"] += 1
                fw.send_interest(entry, next(iter(remote)), interest, now)
                return
        fw.record_out(entry, self.face, interest, now)
        self.inbox.append((entry, req, interest, in_face))

    def _toward_rendezvous(self, entry: PitEntry, in_face: int, interest: Interest, req: ReduceRequest,
                           now: float) -> None:
        fw = self.fw
        rv = req.rendezvous()
        hops = [f for f in fw.eligible_nexthops(entry, in_face, fw.fib.longest_match(_node(rv)))
                if f != self.face]
        if not hops:
            fw.reject(entry, NackReason.NO_ROUTE, now, f"no route toward the rendezvous /node/{rv}")
            return
        outs = entry.out_records
        hop = next((f for f in hops if f not in outs), None)
        if hop is None:
            hop = min(hops, key=lambda f: outs[f].sent_at)
            if self._answer_on_its_way(hop, outs[hop], now):
                self.counters["agg_retx_suppressed"] += 1
                return
        self._connected_since(hop, now)  # notes the connection this copy goes on
        self.counters["agg_forwarded"] += 1
        fw.send_interest(entry, hop, interest, now)

    def _answer_on_its_way(self, hop: int, out: OutRecord, now: float) -> bool:
        """Whether the copy of a request sent to `hop` (`out`) still stands for a
        re-sent one (Rule 1): sent on `hop`'s current connection, reliable and up,
        less than RELIABLE_STALL ago, not Nacked, and with RELIABLE_STALL still to
        live (lifetimes are clamped: a re-sent copy is what extends a long wait)."""
        since = self._connected_since(hop, now)
        return (since is not None and out.nacked is None and out.sent_at >= since
                and now - out.sent_at < RELIABLE_STALL and out.expiry - now >= RELIABLE_STALL)

    def _connected_since(self, face: int, now: float) -> float | None:
        """When this aggregator first saw `face`'s current connection, if the
        face is reliable and up (else None): whatever it sent on `face` since
        then went over the connection that is still up."""
        state = self.reliable_state(face)
        if state is None or not state[1]:
            return None
        seen = self._connections.get(face)
        if seen is None or seen[0] != state[0]:
            seen = self._connections[face] = (state[0], now)
        return seen[1]

    def after_nack(self, entry: PitEntry, face: int, nack: Nack, now: float) -> None:
        """A Nack for a reduction request we sent: pass it down with its reason."""
        if entry.all_out_nacked():
            self.fw.reject(entry, nack.reason, now, nack.detail)

    def parse(self, interest: Interest) -> ReduceRequest:
        digest = interest.name.comps[-1]
        req = self._requests.get(digest)
        if req is not None and interest.params_ok():
            self._requests.move_to_end(digest)
            comps = interest.name.comps
            if comps[1:5] == _request_comps(req):
                return req
        req = ReduceRequest.parse(interest)
        if req.push is not None or req.up is not None:  # unique to what it carries, and large: not kept
            return req
        self._requests[digest] = req
        if len(self._requests) > REQUEST_CACHE:
            self._requests.popitem(last=False)
        return req

    def split(self, members: tuple[int, ...], downstream: set[int], req: ReduceRequest,
              ) -> tuple[list[int], dict[int, list[int]], dict[str, list[int]]]:
        """(members on this node, next hop -> members, unreachable node -> members)."""
        fw = self.fw
        local: list[int] = []
        remote: dict[int, list[int]] = {}
        unreachable: dict[str, list[int]] = {}
        hop_of: dict[str, int | None] = {}
        for i in members:
            node = req.desc.members[i].node
            if node == self.node_name:
                local.append(i)
                continue
            if node not in hop_of:
                fib_entry = fw.fib.longest_match(_node(node))
                hops = fib_entry.faces if fib_entry is not None else ()
                hop_of[node] = next((f for f in hops if f not in downstream and f in fw.faces
                                     and f != self.face), None)
            hop = hop_of[node]
            if hop is None:
                unreachable.setdefault(node, []).append(i)
            else:
                remote.setdefault(hop, []).append(i)
        return local, remote, unreachable

    # --- the inbox: requests to aggregate here, and what children answered -------------------
    def process(self, now: float) -> bool:
        inbox = self.inbox
        if not inbox:
            return False
        while inbox:
            item = inbox.popleft()
            try:
                if isinstance(item, tuple):
                    self._start(item[0], item[1], item[2], item[3], now)
                elif isinstance(item, _Push):
                    self._take_push(item, now)
                elif item.name.comps in self._up_sent:  # the answer to what this node pushed up
                    self._on_up_answer(item, now)
                elif item.name.comps in self._pushed:  # the answer to pushed requests' plain request
                    self._answer_pushed(item.name.comps, item, now)
                elif isinstance(item, Data):
                    self._on_child_data(item, now)
                elif isinstance(item, Nack):
                    self._on_child_nack(item, now)
            except Exception:  # a bug here must not take the forwarder down with it
                self.counters["agg_internal_errors"] += 1
                log.exception("aggregator: failed on %r", item)
        return True

    # --- pushed requests (docs/reduction.md#pushed-contributions) ------------------------------
    def _take_push(self, item: _Push, now: float) -> None:
        """Take what rides with a pushed request: a local application's
        contribution (stored by the node, `push`, where ``reduce/contribute``
        stores it: one copy per member and segment, so a request sent twice,
        or a contribution given both ways, is held once; a refusal answers
        the request with the store's error, as the command would) or a
        neighbour's partial sum.  The request then waits for the aggregate
        (`Pushed`) while what it carried is summed on the way up
        (`_push_up`); a partial or fail-over request instead asks for the
        aggregate with the plain request, once per aggregate however many
        local members push, and again when the same request comes again."""
        fw, c = self.fw, self.counters
        entry, req, interest = item.entry, item.req, item.interest
        plain = canonical(req, interest.name, interest.lifetime_ms)
        key = plain.name.comps
        pushed = self._pushed.get(key)
        again = pushed is not None and entry.comps in pushed.waiters  # the same request again
        neighbour = req.up is not None
        if not again:  # refused before anything is stored: the bound, a neighbour's share of it, and
            # one sum per neighbour face and aggregate (a node pushes one; it may send it again)
            why = ""
            if self._push_waiters >= (MAX_PUSH_WAITERS * 3 // 4 if neighbour else MAX_PUSH_WAITERS):
                why = f"{self._push_waiters} pushed requests wait already"
            elif neighbour and pushed is not None and item.face in pushed.faces:
                why = "one partial sum per neighbour and aggregate"
            if why:
                c["agg_congestion"] += 1
                fw.on_incoming_nack(self.face, Nack(interest.name, interest.nonce, NackReason.CONGESTION, why), now)
                return
        if req.push is not None:
            assert self.push is not None  # (route)
            try:
                try:
                    data = decode(req.push)
                except DecodeError as exc:
                    raise ReductionError(400, f"malformed pushed contribution: {exc}") from None
                parsed = parse_contrib_name(data.name.comps) if isinstance(data, Data) else None
                if parsed is None or not any(m.id == parsed[0] for m in req.desc.members):
                    raise ReductionError(400, "a pushed contribution is the Data of a member of the group the "
                                              "request names")
                assert isinstance(data, Data)
                added = self.push(data, req.desc, req.round, req.seg)
            except ReductionError as exc:
                c["agg_push_refused"] += 1
                fw.on_incoming_data(self.face, _digest.sign(error_data(interest.name, str(exc.code), str(exc))),
                                    now)
                return
            c["agg_pushed" if added else "agg_push_duplicates"] += 1
            part: tuple[tuple[int, ...], bytes | memoryview] = ((req.desc.index(parsed[0]),), data.content)
        else:
            assert req.up is not None
            part = ((), req.up)  # (its members are in its header)
        if pushed is None:
            pushed = self._pushed[key] = Pushed(now + _lifetime(interest))
            fw.schedule(pushed.expiry, self._expire_pushed, key)
        if not again:
            self._push_waiters += 1
            if neighbour:
                pushed.faces.add(item.face)
        pushed.waiters[entry.comps] = (interest.name, interest.nonce)
        longer = now + _lifetime(interest) > pushed.expiry  # it waits longer than those before it
        pushed.expiry = max(pushed.expiry, now + _lifetime(interest))
        if self.node_name is not None and not req.partial and not req.step:
            self._push_up(key, req, plain, item.face, part, again or longer, now, entry.comps)
        elif again or len(pushed.waiters) == 1:  # (`plain` is new each time: a new nonce, as a re-sent request has)
            fw.on_incoming_interest(self.face, plain, now)

    # --- pushed up (module docstring) -------------------------------------------------------
    def _push_up(self, key: tuple[bytes, ...], req: ReduceRequest, plain: Interest, face: int,
                 part: tuple[tuple[int, ...], bytes | memoryview], renew: bool, now: float,
                 waiter: tuple[bytes, ...] = ()) -> None:
        """Add what was pushed to this node (`part`: a local member's
        contribution, or a neighbour's partial sum, from `face`) to the
        aggregate's `Upward`, and push up (or finish) once it has every
        member below this node.  `renew`: the request came again, or waits
        longer than the others: what this node sent on its behalf is sent
        again (with that lifetime)."""
        fw, c = self.fw, self.counters
        u = self._up.get(key)
        if u is None:
            cached = fw.cs.lookup(plain, now)
            if isinstance(cached, Data):  # made already (a late caller): from the Content Store
                self._answer_pushed(key, cached, now)
                return
            if fw.pit.by_name.get(key) or key in self.entries or key in self._seeds:
                fw.on_incoming_interest(self.face, plain, now)  # answered here already: wait for that
                return
            made = self._new_upward(key, req, plain, face, now)
            if isinstance(made, str):
                if part[0]:  # a local application's: the plain request, as without pushes
                    fw.on_incoming_interest(self.face, plain, now)
                else:  # a neighbour's: refused (its rounds are its share, not this node's applications')
                    c["agg_congestion"] += 1
                    self._answer_pushed(key, Nack(plain.name, 0, NackReason.CONGESTION, made), now)
                return
            u = made
        if u.state != "open":
            if part[0] or not renew:
                c["agg_push_late"] += 1  # its members are (or were) asked for by the rendezvous instead
            if u.state == "pull":  # the plain request stands for every request waiting here
                fw.on_incoming_interest(self.face, plain, now)
            elif renew and u.sent is not None:  # the sum this node pushed up, again
                fw.on_incoming_interest(self.face, Interest(u.sent.name, lifetime_ms=plain.lifetime_ms,
                                                            app_params=u.sent.app_params), now)
            return
        desc = req.desc
        try:
            meta, view = unpack(part[1], seg_bytes=desc.seg_bytes, max_bytes=desc.max_bytes,
                                n_members=len(desc.members))
        except SegmentError:
            c["agg_rejected"] += 1
            return
        members = set(part[0] or meta.members)
        allowed = u.local if part[0] else frozenset().union(
            *(ms for hop, ms in u.assigned.items() if hop == face or self.same_neighbor(face, hop)))
        if meta.seg != req.seg or meta.nseg != 1 or not members or not members <= allowed:
            c["agg_rejected"] += 1  # only the members behind the face it came from, of a one-segment round
            if not part[0]:
                self._refuse_sum(key, waiter, face, "a partial sum for members not behind it, or of another segment",
                                 now)
            return
        if not part[0]:
            c["agg_pushed_up"] += 1
        if members & u.contributors:
            c["agg_duplicates"] += 1  # never added twice
            if not part[0] and not renew:  # (a sum sent again is the same request: it waits on)
                self._refuse_sum(key, waiter, face, "members counted already", now)
            return
        # disagreeing members (the pull finds and names them), or no room: the plain request takes over
        if u.layout not in (None, meta.layout()) or not self._fold(u, req.op, meta, view):
            self._give_up(u, now)
            return
        u.contributors |= members
        u.nonfinite |= meta.nonfinite
        u.overflow |= meta.overflow
        if u.contributors >= u.below:
            self._push_done(u, now)

    def _refuse_sum(self, key: tuple[bytes, ...], waiter: tuple[bytes, ...], face: int, why: str,
                    now: float) -> None:
        """A neighbour's partial sum (request `waiter`, from `face`) that is not
        added: its request is answered now (Nack *congestion*, `why`) instead
        of waiting for the aggregate."""
        pushed = self._pushed.get(key)
        found = pushed.waiters.pop(waiter, None) if pushed is not None else None
        if pushed is None or found is None:
            return
        self._push_waiters -= 1
        pushed.faces.discard(face)
        self.fw.on_incoming_nack(self.face, Nack(found[0], found[1], NackReason.CONGESTION, why), now)

    def _fold(self, into: AstEntry | Upward, op: str, meta: SegmentMeta, view: np.ndarray) -> bool:
        """Add `view` (of `meta`'s layout, which `into` has or takes now) into
        `into`'s sum: the first kept as the read-only view it is, copied only
        when a second is combined.  False: no room for a first."""
        if into.layout is None:
            if self.bytes_used + view.nbytes > self.max_bytes:
                return False
            into.layout, into.nseg, into.acc = meta.layout(), meta.nseg, view
            self.bytes_used += view.nbytes
            return True
        assert into.acc is not None  # set with the layout
        if not into.acc_owned:
            into.acc, into.acc_owned = into.acc.copy(), True
        into.overflow |= combine(op, into.acc, view)
        self.counters["agg_combined"] += 1
        return True

    def _new_upward(self, key: tuple[bytes, ...], req: ReduceRequest, plain: Interest, face: int,
                    now: float) -> Upward | str:
        """A new upward sum, if the table has room and the round is within the
        share of the face that pushed first (a neighbour's; none for a local
        application); else why not."""
        fw = self.fw
        info = fw.faces.get(face)
        origin: Origin | None = None if info is not None and info.local else ("face", face, None)
        problem = self._admit(req, origin, now)
        if problem:
            return problem
        local, remote, _ = self.split(tuple(range(len(req.desc.members))), set(), req)
        here = req.rendezvous() == self.node_name
        up: int | None = None
        if not here:
            fib_entry = fw.fib.longest_match(_node(req.rendezvous()))
            up = next((f for f in (fib_entry.faces if fib_entry is not None else ())
                       if f in fw.faces and f != self.face), None)
            if up is None:
                return f"no route toward the rendezvous /node/{req.rendezvous()}"
        assigned = {f: frozenset(ms) for f, ms in remote.items() if f != up}
        below = frozenset(local).union(*assigned.values())
        if not below:
            return "no member of the group is below this node"
        u = self._up[key] = Upward(plain, req, here, below, frozenset(local), assigned, origin=origin)
        fw.schedule(now + PUSH_GRACE * (2 if here else 1), self._grace_over, key)
        return u

    def _grace_over(self, key: tuple[bytes, ...], at: float, now: float) -> None:
        u = self._up.get(key)
        if u is not None and u.state == "open":
            self._push_done(u, now)

    def _push_done(self, u: Upward, now: float) -> None:
        """`u` has every member below (or waited long enough): push up what it
        has; at the rendezvous, the aggregate, or a pull of the missing
        members that starts from what was pushed."""
        fw = self.fw
        key = u.plain.name.comps
        if u.acc is None or u.layout is None:
            self._give_up(u, now)
            return
        if u.here and len(u.contributors) < len(u.req.desc.members):
            u.state = "pull"
            self._seeds[key] = u
            fw.on_incoming_interest(self.face, self._plain_now(u, now), now)
            return
        contributors = tuple(sorted(u.contributors))
        meta = SegmentMeta(u.layout[0], u.layout[1], u.nseg, u.req.seg, contributors, False,
                           u.nonfinite or nonfinite(u.acc), u.overflow)
        content = pack(meta, u.acc)
        if u.here:  # every member pushed: the aggregate, signed, cached, to everyone waiting here
            self.counters["agg_results"] += 1
            data = self.signer(Data(u.plain.name, content, ContentType.AGGREGATE,
                                    freshness_ms=AGGREGATE_FRESHNESS_MS))
            if fw.cs.insert(data, now):
                fw.counters.cs_inserts += 1
            self._answer_pushed(key, data, now)
            return
        u.state = "sent"
        self._release_up(u)
        u.sent = pushed_up(u.req, u.plain.name, content, self._waiting_ms(key, now))
        self._up_sent[u.sent.name.comps] = key
        fw.on_incoming_interest(self.face, u.sent, now)

    def _give_up(self, u: Upward, now: float) -> None:
        """Stop collecting for `u`: the plain request takes over (the rendezvous
        asks every member; a mismatch is found and named there)."""
        u.state = "pull"
        self._release_up(u)
        self.fw.on_incoming_interest(self.face, self._plain_now(u, now), now)

    def _plain_now(self, u: Upward, now: float) -> Interest:
        """`u`'s plain request, new (a new nonce), living as long as the longest
        of the requests waiting for it here."""
        return Interest(u.plain.name, lifetime_ms=self._waiting_ms(u.plain.name.comps, now),
                        app_params=u.plain.app_params)

    def _waiting_ms(self, key: tuple[bytes, ...], now: float) -> int:
        """How long (ms) the longest-lived request waiting here for aggregate `key` still waits."""
        pushed = self._pushed.get(key)
        return max(10, int(((pushed.expiry if pushed else now) - now) * 1000))

    def _release_up(self, u: Upward) -> None:
        if u.acc is not None:
            self.bytes_used -= u.acc.nbytes
            u.acc = None

    def _drop_up(self, key: tuple[bytes, ...]) -> None:
        u = self._up.pop(key, None)
        if u is None:
            return
        self._release_up(u)
        if u.sent is not None:
            self._up_sent.pop(u.sent.name.comps, None)
        self._seeds.pop(key, None)

    def _on_up_answer(self, answer: Packet, now: float) -> None:
        """The answer to what this node pushed up: the aggregate wrapped (kept in
        the Content Store for later requesters here) or a Nack, for every
        request waiting here."""
        key = self._up_sent.pop(answer.name.comps)
        u = self._up.get(key)
        if isinstance(answer, Data):
            try:
                inner = unwrap_pushed(answer, u.plain.name if u is not None else Name.from_wire(key))
            except ValueError as exc:
                self.counters["agg_rejected"] += 1
                answer = Nack(Name.from_wire(key), 0, NackReason.MALFORMED, str(exc))
            else:
                if inner.content_type == ContentType.AGGREGATE and self.fw.cs.insert(inner, now):
                    self.fw.counters.cs_inserts += 1
                answer = inner
        self._answer_pushed(key, answer, now)

    def _answer_pushed(self, key: tuple[bytes, ...], answer: Packet, now: float) -> None:
        """The plain request `key` was answered: each of its pushed requests gets
        the answer, a Data wrapped whole (`wrap_pushed`: the aggregate keeps
        its own signature) or the Nack under the pushed request's name."""
        self._drop_up(key)
        pushed = self._pushed.pop(key, None)
        if pushed is None:
            return
        self._push_waiters -= len(pushed.waiters)
        for name, nonce in pushed.waiters.values():
            if isinstance(answer, Data):
                self.fw.on_incoming_data(self.face, wrap_pushed(name, answer), now)
            elif isinstance(answer, Nack):
                self.fw.on_incoming_nack(self.face, Nack(name, nonce, answer.reason, answer.detail), now)

    def _expire_pushed(self, key: tuple[bytes, ...], at: float, now: float) -> None:
        """The timer of pushed requests `key`: forgotten once every one's lifetime has ended."""
        pushed = self._pushed.get(key)
        if pushed is None:
            return
        if pushed.expiry > now:  # a later request extended it
            self.fw.schedule(pushed.expiry, self._expire_pushed, key)
            return
        del self._pushed[key]
        self._push_waiters -= len(pushed.waiters)
        self._drop_up(key)

    def _answer(self, e: AstEntry, answer: Data | Nack, now: float) -> None:
        """`e`'s answer into the pipelines (and to the pushed requests of this
        node's applications it stands for: the pipelines send nothing back to
        the hook face it came from)."""
        if isinstance(answer, Data):
            self.fw.on_incoming_data(self.face, answer, now)
        else:
            self.fw.on_incoming_nack(self.face, answer, now)
        if e.key in self._pushed:
            self._answer_pushed(e.key, answer, now)

    def _start(self, pit_entry: PitEntry, req: ReduceRequest, interest: Interest, in_face: int,
               now: float) -> None:
        fw = self.fw
        key = pit_entry.comps
        lifetime = _lifetime(interest)
        e = self.entries.get(key)
        if e is not None:  # a retransmission, or another downstream: the same aggregation
            e.nonce = interest.nonce  # route() put this nonce on the face-0 out-record
            if now + lifetime > e.expiry:
                e.expiry = now + lifetime
                e.deadline = max(e.deadline, _deadline(req, now, lifetime, e.created))
                self._arm(e)
            self._retransmit_due(e, now)
            return
        origin, tag = self._origin(req, in_face)
        problem = self._admit(req, origin, now)
        if problem:
            self.counters["agg_congestion"] += 1
            nack = Nack(interest.name, interest.nonce, NackReason.CONGESTION, problem)
            fw.on_incoming_nack(self.face, nack, now)
            if key in self._pushed:
                self._answer_pushed(key, nack, now)
            return
        self.counters["agg_entries"] += 1
        if req.subset is None:
            self.counters["agg_roots"] += 1
        e = AstEntry(key, req, interest.nonce, interest.name, now + lifetime, _deadline(req, now, lifetime, now),
                     created=now, origin=origin)
        self.entries[key] = e
        seed = self._seeds.pop(key, None)
        if seed is None and req.subset is None:
            open_sum = self._up.get(key)
            if open_sum is not None and open_sum.state == "open":  # sums were pushed here: one aggregate,
                open_sum.state = "pull"  # the pull's, which starts from them
                seed = open_sum
        if seed is not None and seed.acc is not None and seed.layout is not None:
            # what members pushed here before the pull began (only the others are asked)
            e.acc, e.acc_owned, e.layout, e.nseg = seed.acc, seed.acc_owned, seed.layout, seed.nseg
            e.contributors = set(seed.contributors)
            e.layouts[seed.layout] = sorted(seed.contributors)
            e.nonfinite, e.overflow = seed.nonfinite, seed.overflow
            seed.acc = None  # (its bytes are the entry's now)
        # a sub-request is never split back toward its parent; the rendezvous may
        # send sub-requests down the faces its requesters came from (other names)
        upstream = set(pit_entry.in_records) if req.subset is not None else set()
        asked = req.asked() if not e.contributors else tuple(i for i in req.asked() if i not in e.contributors)
        local, remote, unreachable = self.split(asked, upstream, req)
        if req.exclude:  # known missing (from an earlier segment): not waited for again, so a partial
            # request does not spend its whole timeout on every segment
            e.problems.append(f"{', '.join(req.desc.member_ids(req.exclude))}: missing from an earlier segment")
        child_lifetime = max(10, int((e.deadline - now) * 1000))
        desc = req.desc
        assert self.node_name is not None or not local
        for i in local:
            name = contrib_name(self.node_name or "", desc.members[i].id, desc.group, req.round, req.seg)
            self._add_child(e, Interest(name, lifetime_ms=child_lifetime), (i,), None)
        for hop, subset in remote.items():
            params = request_params(req.desc_wire, subset, req.partial, step=req.step, origin=tag)
            prefix = e.name.prefix(5)
            self._add_child(e, Interest.with_params(prefix, params, lifetime_ms=child_lifetime), tuple(subset), hop)
        for node, subset in unreachable.items():
            e.problems.append(f"no route to /node/{node} (members {', '.join(desc.member_ids(subset))})")
        if not e.children:
            self._finish(e, now)
            return
        for child in list(e.children.values()):
            if e.done:
                return
            self._send(child, now)
        self._arm(e)

    def _origin(self, req: ReduceRequest, in_face: int) -> tuple[Origin | None, int]:
        """(whose share a new round of `req` from `in_face` is charged to, the
        origin tag its sub-requests carry).

        A request from a local face is nobody's share (None).  Whole-group
        requests, and sub-requests from a face that is no FIB next hop toward
        the segment's rendezvous, are charged to their face.  A sub-request
        from a face toward the rendezvous carries a round the rendezvous (or
        a node on the way) admitted for some requester: it is charged to
        that face *and* the origin tag it carries, so one requester's rounds
        cannot use up the share of the face every legitimate round also comes
        through.  The tag is made where a request enters
        the tree (a hash of this node's name and the face it came from) and
        passed on unchanged below, so it names the requester as the
        rendezvous saw it; a tag is believed only from a face toward the
        rendezvous, so a requester elsewhere cannot pick another's."""
        info = self.fw.faces.get(in_face)
        local = info is not None and info.local
        if req.subset is not None and not local:
            fib_entry = self.fw.fib.longest_match(_node(req.rendezvous()))
            if fib_entry is not None and in_face in fib_entry.faces:
                tag = req.origin if req.origin is not None else _tag(self.node_name, in_face)
                return ("via", in_face, req.origin), tag
        return (None if local else ("face", in_face, None)), _tag(self.node_name, in_face)

    def _admit(self, req: ReduceRequest, origin: Origin | None, now: float) -> str:
        """Why a new aggregation cannot start ("" if it can); `origin`: whose
        share it is charged to (`_origin`; None: a local face's request).
        Runs once per new entry."""
        if len(self.entries) + len(self._up) >= self.max_entries:
            return f"aggregation table full ({self.max_entries} entries)"
        if self.bytes_used >= self.max_bytes:
            return f"aggregation buffers full ({self.max_bytes} bytes)"
        group = req.desc.group
        rounds: set[int] = set()
        mine: set[int] = set()  # rounds of the group `origin` started
        running: list[tuple[ReduceRequest, Origin | None]] = [(e.request, e.origin) for e in self.entries.values()]
        running += [(u.req, u.origin) for u in self._up.values()]  # (sums pushed here count as rounds too)
        for request, started in running:
            if request.desc.group == group:
                rounds.add(request.round)
                if origin is not None and started == origin:
                    mine.add(request.round)
        if req.round in rounds:  # joins a round already in progress
            return ""
        if len(rounds) >= self.max_rounds:
            return f"too many concurrent rounds of group {group} ({self.max_rounds})"
        if origin is None:
            return ""
        if len(mine) >= self.face_max_rounds:
            self.counters["agg_round_share"] += 1
            kind, face, tag = origin
            if kind == "face":
                whose = f"face {face}"
            elif tag is not None:
                whose = f"requester {tag:016x} through face {face}"
            else:
                whose = f"untagged sub-requests through face {face}"
            why = f"too many concurrent rounds of group {group} from {whose} ({self.face_max_rounds}, its share)"
            self._log_refusal("round_share", why, now)
            return why
        reserve = min(self.local_reserve_rounds, self.max_rounds - 1)
        if len(rounds) >= self.max_rounds - reserve:
            self.counters["agg_round_reserve"] += 1
            why = (f"too many concurrent rounds of group {group} ({len(rounds)}; the last "
                   f"{reserve} are kept for local requesters)")
            self._log_refusal("round_reserve", why, now)
            return why
        return ""

    def _log_refusal(self, kind: str, why: str, now: float) -> None:
        """Log a refusal at most once per `REFUSAL_LOG_INTERVAL` per kind, with how many since."""
        self._refusal_logs[kind].warning(now, "aggregator: refused a new round: %s", why)

    def _add_child(self, e: AstEntry, interest: Interest, members: tuple[int, ...], face: int | None) -> None:
        key = interest.name.comps
        if key in self.children:  # two aggregations asking the same child: impossible by construction
            e.problems.append(f"duplicate child request {interest.name}")
            return
        child = Child(e, interest, members, face, rto=self._rto(face))
        e.children[key] = child
        self.children[key] = child
        self.counters["agg_children"] += 1

    def _send(self, child: Child, now: float) -> None:
        """Ask `child`, or queue it while its next hop has `window` sub-requests
        outstanding, fewer for large segments (pacing: a burst of 512 KiB answers
        overflows UDP buffers; 4 MiB ones a stream face's send queue)."""
        face = child.face
        if face is not None and not child.counted:
            if not self._fits(face, child):
                if not child.queued:
                    child.queued = True
                    self.counters["agg_paced"] += 1
                    queues = self._waiting_local if child.entry.origin is None else self._waiting
                    queues.setdefault(face, collections.deque()).append(child)
                return
            self._inflight[face] = self._inflight.get(face, 0) + 1
            self._inflight_bytes[face] = self._inflight_bytes.get(face, 0) + child.entry.request.desc.seg_bytes
            child.counted, child.queued = True, False
        self._sent(child, now)
        self.fw.on_incoming_interest(self.face, child.interest, now)

    def _sent(self, child: Child, now: float) -> None:
        """`child` is (being) asked now: when to look at it again, and on which connection it went."""
        child.sent_at = now
        child.due = now + child.rto
        if child.face is not None:
            state = self.reliable_state(child.face)
            child.connection = None if state is None else state[0]

    def _release(self, child: Child, now: float) -> None:
        """`child` was answered or given up: its place in the window goes to the next waiting one."""
        child.queued = False
        if not child.counted:
            return
        child.counted = False
        face = child.face
        assert face is not None
        left = self._inflight.get(face, 1) - 1
        if left > 0:
            self._inflight[face] = left
            self._inflight_bytes[face] -= child.entry.request.desc.seg_bytes
        else:
            self._inflight.pop(face, None)
            self._inflight_bytes.pop(face, None)
        for queues in (self._waiting_local, self._waiting):
            waiting = queues.get(face)
            sent = blocked = False
            while waiting:
                nxt = waiting[0]
                e = nxt.entry
                if nxt.state != "pending" or e.done or not nxt.queued:
                    waiting.popleft()
                    continue
                if not self._fits(face, nxt):
                    blocked = True  # it keeps its place at the head until more of the window is free
                    break
                waiting.popleft()
                nxt.queued = False
                remaining = e.deadline - now
                if remaining < 0.01:
                    continue  # too late: the deadline will count its members as missing
                old = nxt.interest
                nxt.interest = Interest(old.name, old.nonce, max(10, int(remaining * 1000)),
                                        app_params=old.app_params)
                self._send(nxt, now)
                self._arm(e)
                sent = True
                break
            if waiting is not None and not waiting:
                del queues[face]
            if sent or blocked:
                break

    def _fits(self, face: int, child: Child) -> bool:
        """Whether `child` may be asked now on next hop `face`: nothing is outstanding
        there, or fewer than `window` sub-requests and their segments and its own
        within CHILD_WINDOW_BYTES (groups on one next hop may differ in segment size)."""
        n = self._inflight.get(face, 0)
        if not n:
            return True
        return n < self.window and (self._inflight_bytes.get(face, 0) + child.entry.request.desc.seg_bytes
                                    <= CHILD_WINDOW_BYTES)

    def _retransmit_due(self, e: AstEntry, now: float) -> None:
        for child in e.pending():
            if child.retries >= MAX_RETRIES or child.queued:
                continue
            if now >= child.due:
                why = "agg_retransmissions" if child.face is None else self._why_ask_again(child, now)
                if not why:
                    continue
                # unanswered within its RTO (lost, or waiting on a straggler): it leaves its
                # next hop's window to a waiting sub-request and is asked again outside it, so
                # sub-requests that wait long cannot hold the window
                self._release(child, now)
                if e.done:
                    return
                if e.deadline - now < 0.01:  # too late to ask again: wait for the deadline
                    child.retries = MAX_RETRIES
                    continue
                child.retries += 1
                child.rto = min(child.rto * 2, MAX_RTO)
                old = child.interest
                child.interest = Interest(old.name, new_nonce(), max(10, int((e.deadline - now) * 1000)),
                                          app_params=old.app_params)
                self.counters["agg_retransmissions"] += 1
                if why != "agg_retransmissions":
                    self.counters[why] += 1
                self._sent(child, now)
                self.fw.on_incoming_interest(self.face, child.interest, now)
                if e.done:
                    return

    def _why_ask_again(self, child: Child, now: float) -> str:
        """Why `child`, due, is asked again over its next hop, as the counter
        that counts it: always over a datagram face; over a reliable one only
        when its connection changed or the next hop stalled (module docstring,
        "Timers").  "" if not now: then `child.due` says when to look again
        (a held child keeps its place in the next hop's window: it is in flight)."""
        assert child.face is not None
        state = self.reliable_state(child.face)
        if state is None:
            return "agg_retransmissions"
        connection, up = state
        if up and connection != child.connection:
            return "agg_reconnect_resends"
        quiet_since = max(child.sent_at, self._heard.get(child.face, child.sent_at))
        if up and now >= quiet_since + RELIABLE_STALL:
            return "agg_stall_resends"
        if not child.held:
            child.held = True
            self.counters["agg_held"] += 1
        child.due = now + RELIABLE_POLL
        if up:
            child.due = min(child.due, quiet_since + RELIABLE_STALL)
        return ""

    # --- timers -------------------------------------------------------------------------------
    def _arm(self, e: AstEntry) -> None:
        """Wake up at the deadline or when the first pending child's RTO runs
        out; every wake-up before the deadline re-sends or gives up the
        children it was for, so this never spins."""
        at = e.deadline
        for child in e.children.values():
            if child.state == "pending" and child.retries < MAX_RETRIES and not child.queued:
                at = min(at, child.due)
        if at < e.timer_at:
            e.timer_at = at
            self.fw.schedule(at, self._on_timer, e)

    def _on_timer(self, e: AstEntry, at: float, now: float) -> None:
        if e.done or at != e.timer_at:
            return
        e.timer_at = float("inf")
        if now >= e.deadline:
            self._finish(e, now)
        else:
            self._retransmit_due(e, now)
            if not e.done:
                self._arm(e)

    # --- answers from children ------------------------------------------------------------------
    def _answered(self, comps: tuple[bytes, ...], now: float) -> Child | None:
        """The pending child an answer named `comps` is for (None: late, counted)."""
        child = self.children.pop(comps, None)
        if child is None or child.entry.done:
            self.counters["agg_late"] += 1
            return None
        if child.face is not None:
            self._heard[child.face] = now
        return child

    def _on_child_data(self, data: Data, now: float) -> None:
        child = self._answered(data.name.comps, now)
        if child is None:
            return
        self._release(child, now)
        e = child.entry
        self.counters["agg_child_data"] += 1
        if child.retries == 0:
            self._sample(child.face, now - child.sent_at)
        child.state = "done"
        names = ", ".join(e.request.desc.member_ids(child.members))
        if data.content_type == ContentType.ERROR:
            code, message, layouts = _error_of(data)
            if code == "mismatch" and layouts:  # decided where all the members are seen
                for dtype, shape, members in layouts:
                    e.layouts.setdefault((dtype, shape), []).extend(members)
            else:
                e.error = (code, message)
            if e.error is not None or not e.pending():
                self._finish(e, now)
            return
        req = e.request
        desc = req.desc
        try:
            meta, view = unpack(data.content, seg_bytes=desc.seg_bytes, max_bytes=desc.max_bytes,
                                n_members=len(desc.members))
            got = self._check(child, meta)
        except SegmentError as exc:
            self.counters["agg_rejected"] += 1
            child.state = "failed"
            e.error = ("bad-contribution", f"{data.name}: from {names}: {exc}")
            self._finish(e, now)
            return
        if got & e.contributors:
            self.counters["agg_duplicates"] += 1
            child.state = "failed"
            e.problems.append(f"{names}: already counted")
        else:
            layout = meta.layout()
            e.layouts.setdefault(layout, []).extend(got)
            if e.layout in (None, layout) and not self._fold(e, req.op, meta, view):
                self.counters["agg_congestion"] += 1
                e.congested = f"aggregation buffers full ({self.max_bytes} bytes)"
                self._finish(e, now)
                return
            e.contributors.update(got)
            e.nonfinite |= meta.nonfinite
            e.overflow |= meta.overflow
        if not e.pending():
            self._finish(e, now)

    def _check(self, child: Child, meta: SegmentMeta) -> set[int]:
        """The members `meta` says it includes; SegmentError if they cannot be."""
        req = child.entry.request
        if meta.seg != req.seg:
            raise SegmentError(f"answer for segment {meta.seg}, asked for {req.seg}")
        if child.leaf:
            if meta.members not in ((), child.members) or meta.partial:
                raise SegmentError("a contribution must come from exactly its member")
            return set(child.members)
        got = set(meta.members)
        if not got or not got <= set(child.members):
            raise SegmentError(f"contributors {sorted(got)} are not within the sub-request's members")
        if not meta.partial and got != set(child.members):
            raise SegmentError("an answer without the partial flag must include every member asked for")
        return got

    def _on_child_nack(self, nack: Nack, now: float) -> None:
        child = self._answered(nack.name.comps, now)
        if child is None:
            return
        self._release(child, now)
        e = child.entry
        child.state = "failed"
        desc = e.request.desc
        ids = ", ".join(desc.member_ids(child.members))
        why: str | None = None
        if nack.reason == NackReason.NOT_YET and not child.leaf:
            named, why = _named_missing(desc, nack.detail)
            if named:
                e.not_blamed.update(i for i in child.members if i not in named)
        if why is not None:  # the child's own reasons, once: not wrapped in its sentence again
            e.problems.append(why)
        else:
            detail = f": {nack.detail}" if nack.detail else ""
            e.problems.append(f"{ids}: {nack.reason.label}{detail}")
        if not e.pending():
            self._finish(e, now)

    def on_face_down(self, face: int, now: float) -> None:
        """Children waiting on a face that went away have failed."""
        self._heard.pop(face, None)
        self._connections.pop(face, None)
        for child in list(self.children.values()):
            if child.face == face and child.state == "pending":
                self.inbox.append(Nack(child.interest.name, child.interest.nonce, NackReason.NO_ROUTE,
                                       "next hop went down"))

    # --- results ----------------------------------------------------------------------------------
    def _finish(self, e: AstEntry, now: float) -> None:
        e.done = True
        self.entries.pop(e.key, None)
        for key, child in e.children.items():
            if child.state == "pending":
                self.children.pop(key, None)
                self._release(child, now)
        if e.acc is not None:
            self.bytes_used -= e.acc.nbytes
        req = e.request
        desc = req.desc
        fw = self.fw
        if e.congested:
            self._answer(e, Nack(e.name, e.nonce, NackReason.CONGESTION, e.congested), now)
            return
        extra: dict[str, Any] = {}  # a mismatch's layouts, for the parent to merge
        if e.error is None and len(e.layouts) > 1:
            e.error = ("mismatch", _mismatch(desc, e.layouts))
            extra["layouts"] = [[d, list(shape), members] for (d, shape), members in e.layouts.items()]
        if e.error is not None:
            self.counters["agg_errors"] += 1
            self._answer(e, _digest.sign(error_data(e.name, e.error[0], e.error[1], **extra)), now)
            return
        missing = set(req.members()) - e.contributors
        if missing and not (req.partial and e.contributors):
            self.counters["agg_incomplete"] += 1
            why = "; ".join(dict.fromkeys(e.problems)) if e.problems else NO_ANSWER
            blamed = (missing - e.not_blamed) or missing  # members below that did contribute are not named
            detail = incomplete_detail(desc.group, req.round, req.seg, desc.member_ids(sorted(blamed)), why)
            self._answer(e, Nack(e.name, e.nonce, NackReason.NOT_YET, detail[:1000]), now)
            return
        assert e.acc is not None and e.layout is not None
        partial = bool(missing)
        meta = SegmentMeta(e.layout[0], e.layout[1], e.nseg, req.seg, tuple(sorted(e.contributors)), partial,
                           e.nonfinite or nonfinite(e.acc), e.overflow)
        content = pack(meta, e.acc)
        ctype = ContentType.PARTIAL if partial else ContentType.AGGREGATE
        self.counters["agg_partials" if partial else "agg_results"] += 1
        if req.subset is None:
            # the consumers' answer: signed by this node (a partial too: a digest-only Data
            # verifies for no consumer); cached unless partial
            fresh = 0 if partial else AGGREGATE_FRESHNESS_MS
            data = self.signer(Data(e.name, content, ctype, freshness_ms=fresh))
        else:
            # a subtree's sum for the parent aggregator: not signed end to end, never cached
            # (one hash per byte at the rendezvous, none per hop; docs/reduction.md)
            data = Data(e.name, content, ctype, freshness_ms=0, sig_type=SigType.PER_HOP)
        self._answer(e, data, now)

    # --- RTT per next hop (RFC 6298, `icnd.rtt`) ----------------------------------------------------
    def _sample(self, face: int | None, rtt: float) -> None:
        est = self._rtt.get(face)
        if est is None:
            est = self._rtt[face] = RttEstimator(INITIAL_RTO, MIN_RTO, MAX_RTO)
        est.sample(rtt)

    def _rto(self, face: int | None) -> float:
        est = self._rtt.get(face)
        return INITIAL_RTO if est is None else est.rto

    def stats(self) -> dict[str, int]:
        return {"agg_entries_live": len(self.entries), "agg_children_live": len(self.children),
                "agg_bytes": self.bytes_used}


def _node(node: str) -> tuple[bytes, ...]:
    return (NODE, generic(node))


def _tag(node: str | None, face: int) -> int:
    """The origin tag of requests that entered the tree at `node` through `face` (see `Aggregator._origin`)."""
    return int.from_bytes(hashlib.blake2b(f"{node}/{face}".encode(), digest_size=8).digest(), "big")


def _request_comps(req: ReduceRequest) -> tuple[bytes, ...]:
    return aggregate_prefix(req.desc.group, req.op, req.round, req.seg).comps[1:5]


def _lifetime(interest: Interest) -> float:
    return clamp_lifetime(interest.lifetime_ms)


def _margin(lifetime: float) -> float:
    return min(max(0.1 * lifetime, 0.05), 1.0)


def _deadline(req: ReduceRequest, now: float, lifetime: float, created: float) -> float:
    """The request's expiry less the margin, capped by the group's deadline
    policy counted from when the aggregation started (`created`)."""
    deadline = now + lifetime - _margin(lifetime)
    cap = req.desc.deadline_ms
    return min(deadline, created + cap / 1000.0) if cap else deadline


def _named_missing(desc: Any, detail: str) -> tuple[set[int], str | None]:
    """(the members a child's not-yet names as missing, why); (empty set,
    None) if it names none we know, why None if it was cut short."""
    ids, why = parse_incomplete(detail)
    named: set[int] = set()
    for mid in ids:
        try:
            named.add(desc.index(mid))
        except (KeyError, ValueError):
            return set(), None
    return named, why if named else None


def _error_of(data: Data) -> tuple[str, str, list[Any]]:
    """(code, message, layouts) of an error Data; layouts only from a well-formed mismatch."""
    try:
        body = msgpack.unpackb(data.content, raw=False, max_bin_len=0, max_str_len=4096)
        code, message = str(body.get("code", "error")), str(body.get("message", ""))
    except Exception:
        return "error", bytes(data.content[:200]).decode("utf-8", "replace"), []
    layouts = []
    for item in body.get("layouts") or []:
        try:
            dtype, shape, members = item
            layouts.append((str(dtype), tuple(int(d) for d in shape), [int(m) for m in members]))
        except (TypeError, ValueError):
            return code, message, []
    return code, message, layouts


def _mismatch(desc: Any, layouts: dict[tuple[str, tuple[int, ...]], list[int]]) -> str:
    """An error naming the members whose dtype/shape differ from the majority's."""
    ranked = sorted(layouts.items(), key=lambda kv: (-len(kv[1]), min(kv[1])))
    (major, major_members), others = ranked[0], ranked[1:]
    odd = ", ".join(f"member {', '.join(desc.member_ids(m))} contributed {np.dtype(l[0])} {l[1]}"
                    for l, m in others)
    return (f"contributions disagree: {odd}, but {', '.join(desc.member_ids(major_members))} "
            f"contributed {np.dtype(major[0])} {major[1]}; contributions must have one dtype and shape")
