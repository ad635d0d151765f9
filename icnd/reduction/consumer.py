"""The client side of reduction: create groups, contribute, fetch aggregates.

Written against `icnd.endpoint.Endpoint`, used through `icnd.Client`
(`create_group`, `contribute`, `reduce`, `allreduce`).  A reduction is
fetched segment by segment: segment 0 first (it tells the dtype, shape and
number of segments), then the rest in ascending order with a window of
`window` outstanding requests, and never more than `WINDOW_BYTES` of
segments (a group of 4 MiB segments: 2 at a time, so the node's send queue
toward the client never overflows).  Each request's lifetime ends at the call's deadline, and a
request is re-sent (new nonce, the remaining lifetime) every `RETX`
seconds, so a retransmission never moves an aggregation's deadline.  With
``partial``, segment 0 ends `PARTIAL_RESERVE` of the timeout early and the
other segments leave out the members it lacked (docs/reduction.md, D12).
A segment whose rendezvous the network has no route toward goes to the next
of its `GroupDescriptor.rendezvous_order`, and waits for a route when none
is reachable (`_Fetcher.segment`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import partial as bind
from typing import Any, Awaitable, Callable, Sequence

import msgpack
import numpy as np
import trio

from icnd.codec import decode, encode
from icnd.endpoint import Endpoint
from icnd.errors import CommandError, Error, Nacked, Timeout, raise_for_error
from icnd.excgroups import run_bounded
from icnd.faces import shm
from icnd.name import Name
from icnd.objects.fetch import RouteWait, verified
from icnd.packet import Data, Interest, NackReason
from icnd.security import DigestKey
from icnd.reduction.group import (COMMAND_SEG_BYTES, CONSUMER_OPS, GroupDescriptor, Member, aggregate_prefix, contribution_data,
                                  missing_members, reduce_interest, remote_contribute_name, unwrap_pushed)
from icnd.reduction.segment import SegmentError, SegmentMeta, check_dtype, pack, plan, segment_head, unpack

RETX = 0.5  # seconds between re-sent aggregate requests
# with partial=True, the share of the timeout kept after segment 0 for the other
# segments, which leave out the members segment 0 lacked, so they do not wait [issue #15, D12]
PARTIAL_RESERVE = 0.25
WINDOW = 8
WINDOW_BYTES = 8 * 1024 * 1024  # segments outstanding, in bytes: half a stream face's send queue
CONTRIBUTE_WINDOW = 4
MAX_CACHED_GROUPS = 64  # group descriptors a client keeps (DescriptorCache)
SHM_MIN = 64 * 1024  # a contribution this large goes to the client's own node in shared memory
STALE = 412  # a pushed request's descriptor is older than its node's newest version of the group
_digest = DigestKey()


@dataclass
class Reduced:
    """The result of `Client.reduce`.

    ``array``: the aggregate (for ``mean``: sum / count, as float);
    ``contributors``: sorted ids of the members included (in every segment);
    ``complete``: every member is included; ``partial`` = not complete;
    ``nonfinite`` / ``overflow``: NaN/Inf present, an integer sum overflowed.
    """

    array: np.ndarray
    contributors: list[str]
    complete: bool
    count: int
    group: str = ""
    round: int = 0
    op: str = "sum"
    version: int = 0
    nonfinite: bool = False
    overflow: bool = False
    segment_contributors: list[list[str]] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        return not self.complete

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.array if dtype is None else self.array.astype(dtype)


class DescriptorCache:
    """A client's group descriptors, newest version each, so that an
    `allreduce` does not ask its node for the descriptor on every call
    (issue #30).  Kept right: the node's answer to every local contribution
    says the newest version it knows (``version``), and a newer one makes
    the call read it before it reduces; any failure of a call drops the
    group's entry, read again next time.  At most `MAX_CACHED_GROUPS`
    groups, least recently used dropped."""

    def __init__(self) -> None:
        self._groups: dict[str, tuple[GroupDescriptor, bytes]] = {}

    def get(self, group: str) -> tuple[GroupDescriptor, bytes] | None:
        found = self._groups.pop(group, None)
        if found is not None:
            self._groups[group] = found  # (most recently used last)
        return found

    def put(self, group: str, described: tuple[GroupDescriptor, bytes]) -> None:
        self._groups.pop(group, None)
        self._groups[group] = described
        while len(self._groups) > MAX_CACHED_GROUPS:
            del self._groups[next(iter(self._groups))]

    def drop(self, group: str) -> None:
        self._groups.pop(group, None)


async def group_descriptor(ep: Endpoint, group: str, version: int | None = None,
                           ) -> tuple[GroupDescriptor, bytes]:
    args: dict[str, Any] = {} if version is None else {"version": version}
    info = await ep.command("group", "show", name=group, **args)
    wire = info["descriptor"]
    data = decode(wire)
    assert isinstance(data, Data)
    return GroupDescriptor.from_data(data), wire


def member_of(desc: GroupDescriptor, member: str) -> Member:
    """`member` of the group `desc` describes; ValueError naming the members if it is not one."""
    try:
        return desc.members[desc.index(member)]
    except KeyError:
        raise ValueError(f"{member} is not a member of group {desc.group} "
                         f"(members: {', '.join(str(x) for x in desc.members)})") from None


async def node_id(ep: Endpoint) -> str:
    """The id of the node `ep` is attached to: its name's last component."""
    return (await ep.node_name()).comps[-1][1:].decode("utf-8", "replace")


async def create_group(ep: Endpoint, name: str, members: Sequence[str], *, rendezvous: Sequence[str] | None,
                       ops: Sequence[str] | None, segment_bytes: int | None, deadline: float | None,
                       timeout: float) -> dict[str, Any]:
    args: dict[str, Any] = {"name": name, "members": [str(m) for m in members]}
    if rendezvous:
        args["rendezvous"] = list(rendezvous)
    if ops:
        args["ops"] = list(ops)
    if segment_bytes:
        args["segment_bytes"] = segment_bytes
    if deadline:
        args["deadline_ms"] = int(deadline * 1000)
    info = await ep.command("group", "create", **args)
    created = decode(info["descriptor"])
    assert isinstance(created, Data)
    desc = GroupDescriptor.from_data(created)
    key = info.get("key")
    if key is not None:  # a version this node signed: announce it to the nodes that need it
        me = await node_id(ep)
        nodes = [n for n in dict.fromkeys([m.node for m in desc.members] + list(desc.rendezvous)) if n != me]
        params = msgpack.packb({"desc": info["descriptor"], "key": key})
        failed: list[str] = []

        async def install(node: str) -> None:
            interest = Interest.with_params(Name(["node", node, "group", "install"]), params,
                                            lifetime_ms=int(timeout * 1000))
            try:
                raise_for_error(await ep.express(interest, timeout=timeout, retx=None))
            except Error as exc:
                failed.append(f"{node} ({exc})")

        if nodes:
            await run_bounded([bind(install, node) for node in nodes], len(nodes))
        if failed:
            raise Error(f"group {name} version {desc.version} was created at {me} but not installed at "
                        f"{'; '.join(sorted(failed))}")
    return {k: v for k, v in info.items() if k not in ("descriptor", "key")}


async def allreduce(ep: Endpoint, group: str, rnd: int, array: Any, op: str, member: str | None,
                    timeout: float, *, out: np.ndarray | None = None, partial: bool = False,
                    cache: DescriptorCache | None = None) -> np.ndarray | Reduced:
    """`contribute`, then `reduce` of the same (latest) group version: the
    descriptor is asked for once, or not at all when `cache` holds it (and
    the contribution's answer says no newer version exists).  The array;
    with `partial`, the `Reduced` (what arrived by the deadline, flagged,
    with its contributors)."""
    deadline = trio.current_time() + timeout
    described = cache.get(group) if cache is not None else None
    try:
        if described is None:
            described = await group_descriptor(ep, group)
        push = await pushable(ep, described[0], group, rnd, array, member)
        if push is None:  # handed over first; the node's answer says whether a newer version exists
            info = await contribute(ep, group, rnd, array, member, timeout, described=described)
            if info.get("version", described[0].version) != described[0].version:
                described = await group_descriptor(ep, group)
        try:  # (pushed: one request, the contribution rides with it; issue #30)
            result = await reduce(ep, group, rnd, op, timeout=max(0.1, deadline - trio.current_time()),
                                  partial=partial, described=described, out=out, push=push)
        except CommandError as exc:
            if push is None or exc.status != STALE:
                raise
            described = await group_descriptor(ep, group)  # the node knows a newer version: read it, push again
            result = await reduce(ep, group, rnd, op, timeout=max(0.1, deadline - trio.current_time()),
                                  partial=partial, described=described, out=out, push=push)
        if cache is not None:
            cache.put(group, described)
    except BaseException:
        if cache is not None:
            cache.drop(group)
        raise
    return result if partial else result.array


async def contribute(ep: Endpoint, group: str, rnd: int, array: Any, member: str | None,
                     timeout: float = 30.0, *, described: tuple[GroupDescriptor, bytes] | None = None,
                     sign: bool = False) -> dict[str, Any]:
    """Make `array` `member`'s contribution to round `rnd` of `group`.  `sign`
    (a member of this client's own node only): the node signs every segment
    with its key, for consumers that fetch the contribution itself
    (`icnd.collective`), not only aggregates of it."""
    deadline = trio.current_time() + timeout
    desc, _ = described or await group_descriptor(ep, group)
    me = await node_id(ep)
    member = member or me
    m = member_of(desc, member)
    arr, dt, seg_elems, nseg = _prepared(desc, array)
    flat = arr.reshape(-1)
    if sign and m.node != me:
        raise ValueError(f"member {member} lives on node {m.node}: only its own node ({m.node}) can sign its "
                         f"contributions, and this client is attached to {me}")
    if m.node == me and arr.nbytes >= SHM_MIN and ep.passes_fds():
        # the whole contribution in one sealed shared-memory segment and one command (issue #18)
        answer = await _contribute_shm(ep, group, rnd, member, dt, arr.shape, flat, seg_elems, nseg,
                                       max(0.1, deadline - trio.current_time()), sign)
        return {"group": group, "round": rnd, "member": member, "segments": nseg, "added": int(answer["added"]),
                "dtype": dt.str, "shape": list(arr.shape), **({"version": answer["version"]} if "version" in answer
                                                              else {})}
    if min(desc.seg_bytes, arr.nbytes) > COMMAND_SEG_BYTES:
        # a segment rides in one Interest's parameters (at most codec.MAX_PARAMS_SIZE): too large
        where = (f"the member's node is {m.node}, not this client's ({me})" if m.node != me
                 else "this connection cannot pass descriptors")
        raise ValueError(f"group {group} has segments of {desc.seg_bytes} bytes: a contribution of more than "
                         f"{COMMAND_SEG_BYTES} bytes per segment goes only in shared memory from a client of the "
                         f"member's own node, and {where}")
    added = 0
    versions: list[int] = []  # the newest version of the group the node knows, as its answers said

    async def send(s: int) -> None:
        nonlocal added
        meta = SegmentMeta(dt.str, arr.shape, nseg, s)
        content = pack(meta, flat[s * seg_elems:(s + 1) * seg_elems])
        # handed to another node: signed with this client's key when it has one (a node with a trust
        # schema accepts only contributions its validator accepts); to its own node: the digest
        signer = ep.sign if m.node != me and getattr(ep, "key", None) is not None else _digest.sign
        data = signer(contribution_data(m.node, member, group, rnd, s, content))
        remaining = max(0.1, deadline - trio.current_time())
        if m.node == me:
            node_signs: dict[str, Any] = {"sign": True} if sign else {}
            result = await ep.command("reduce", "contribute", packets=[encode(data)], timeout=remaining,
                                      group=group, **node_signs)
            if "version" in result:
                versions.append(result["version"])
        else:  # the member lives elsewhere: hand the segment to its node through the network
            result = await _contribute_remote(ep, m.node, member, data, remaining)
        added += result["added"]

    await run_bounded([bind(send, s) for s in range(nseg)], CONTRIBUTE_WINDOW)
    return {"group": group, "round": rnd, "member": member, "segments": nseg, "added": added,
            "dtype": dt.str, "shape": list(arr.shape), **({"version": max(versions)} if versions else {})}


def _prepared(desc: GroupDescriptor, array: Any) -> tuple[np.ndarray, np.dtype, int, int]:
    """(`array` as contributed: C-contiguous in native byte order, its dtype,
    elements per segment, segments); ValueError if the group cannot take it."""
    arr = np.asarray(array)
    dt = check_dtype(arr.dtype)
    arr = np.ascontiguousarray(arr, dtype=dt)  # byte order only, never a change of kind
    if arr.size == 0:
        raise ValueError("an empty array cannot be contributed")
    if arr.nbytes > desc.max_bytes:
        raise ValueError(f"{arr.nbytes} bytes exceeds group {desc.group}'s limit of {desc.max_bytes} per "
                         "contribution")
    seg_elems, nseg, _ = plan(dt, arr.shape, desc.seg_bytes)
    return arr, dt, seg_elems, nseg


async def pushable(ep: Endpoint, desc: GroupDescriptor, group: str, rnd: int, array: Any,
                    member: str | None) -> bytes | None:
    """The contribution (encoded Data) to push with the request for the
    aggregate, or None where it goes the other way: a member of this
    client's own node and an array of one segment that shared memory would
    not carry better (docs/reduction.md#pushed-contributions)."""
    me = await node_id(ep)
    member = member or me
    if member_of(desc, member).node != me:
        return None
    arr, dt, _, nseg = _prepared(desc, array)
    if nseg != 1 or arr.nbytes > COMMAND_SEG_BYTES or (arr.nbytes >= SHM_MIN and ep.passes_fds()):
        return None
    content = pack(SegmentMeta(dt.str, arr.shape, 1, 0), arr.reshape(-1))
    return encode(_digest.sign(contribution_data(me, member, group, rnd, 0, content)))


async def _contribute_shm(ep: Endpoint, group: str, rnd: int, member: str, dt: np.dtype, shape: tuple[int, ...],
                          flat: np.ndarray, seg_elems: int, nseg: int, timeout: float,
                          sign: bool = False) -> dict[str, Any]:
    """Hand a contribution to this client's own node in shared memory: every
    segment's content (`pack`'s format) back to back in one sealed memory
    file, passed with one ``reduce/contribute-shm`` command; the node serves
    views of it (nothing copied, nothing hashed; `icnd.faces.shm`)."""
    heads = [segment_head(SegmentMeta(dt.str, shape, nseg, s)) for s in range(nseg)]
    spans: list[list[int]] = []
    offset = 0
    for s, head in enumerate(heads):
        n = len(head) + min(seg_elems, flat.size - s * seg_elems) * dt.itemsize
        spans.append([offset, n])
        offset += n

    def fill(fd: int) -> None:
        raw = memoryview(flat.view(np.uint8).data)
        per = seg_elems * dt.itemsize
        for s, (head, (at, n)) in enumerate(zip(heads, spans)):
            shm.write_all(fd, [head, raw[s * per:s * per + n - len(head)]], at)

    fd = shm.create_sealed(offset, fill, name=f"icnd-contrib-{group}")
    try:
        result = await ep.command("reduce", "contribute-shm", fds=[fd], timeout=timeout, group=group, round=rnd,
                                  member=member, size=offset, segments=spans, **({"sign": True} if sign else {}))
    finally:
        os.close(fd)  # the node holds its own copy of the descriptor (or its mapping) by now
    return dict(result)


async def _contribute_remote(ep: Endpoint, node: str, member: str, data: Data, timeout: float) -> dict[str, Any]:
    """One contribution segment to `member`'s node `node`: an Interest
    ``/node/<node>/member/<member>/contribute`` carrying the segment's Data."""
    interest = Interest.with_params(remote_contribute_name(node, member), encode(data),
                                    lifetime_ms=max(10, int(timeout * 1000)))
    answer = await ep.express(interest, timeout=timeout, retx=min(RETX * 2, timeout))
    raise_for_error(answer)  # a refusal carries its status: CommandError, as a local contribution's
    await ep.verify(answer)
    return msgpack.unpackb(answer.content, raw=False)


async def reduce(ep: Endpoint, group: str, rnd: int, op: str, *, timeout: float, partial: bool,
                 version: int | None = None, window: int = WINDOW,
                 described: tuple[GroupDescriptor, bytes] | None = None, out: np.ndarray | None = None,
                 push: bytes | None = None) -> Reduced:
    """`push`: a contribution to segment 0 (of one) to push with its request
    (`pushable`); its node refusing it raises CommandError as
    ``reduce/contribute`` would."""
    if op not in CONSUMER_OPS:
        raise ValueError(f"unknown op {op!r}; known: {', '.join(CONSUMER_OPS)}")
    deadline = trio.current_time() + timeout
    desc, wire = described or await group_descriptor(ep, group, version)
    net_op = "sum" if op == "mean" else op
    fetch = _Fetcher(ep, desc, wire, net_op, rnd, partial, deadline, push)
    if partial:  # segment 0 waits for stragglers only so long, leaving time for the other segments
        try:
            first = await fetch.segment(0, deadline - PARTIAL_RESERVE * timeout)
        except Timeout:  # nobody contributed by then: wait for segment 0 until the deadline
            first = await fetch.segment(0)
        except Nacked as exc:  # no rendezvous reachable yet: wait for a route until the deadline
            if exc.reason != NackReason.NO_ROUTE.label:
                raise
            first = await fetch.segment(0)
    else:
        first = await fetch.segment(0)
    meta0 = first[0]
    if partial and meta0.partial:  # members missing from segment 0 are not waited for again
        got = set(meta0.members)
        fetch.exclude = tuple(i for i in range(len(desc.members)) if i not in got)
    dt = np.dtype(meta0.dtype)
    seg_elems, nseg, total = plan(dt, meta0.shape, desc.seg_bytes)
    if out is not None and op == "mean":
        raise ValueError("out= takes the aggregate itself; for mean, pass no out= (the mean is a new array)")
    if out is None:
        out = np.empty(total, dtype=dt)
    elif out.dtype != dt or out.size != total or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError(f"out= is {out.dtype} of {out.size} elements; the aggregate is {dt} of {total} "
                         "(C-contiguous and writable)")
    else:
        out = out.reshape(-1)
    metas: list[SegmentMeta | None] = [None] * nseg

    def place(s: int, meta: SegmentMeta, view: np.ndarray) -> None:
        if meta.layout() != meta0.layout():
            raise Error(f"{group} round {rnd}: segment {s} is {meta.describe()}, segment 0 is {meta0.describe()}")
        out[s * seg_elems:s * seg_elems + len(view)] = view
        metas[s] = meta

    place(0, *first)

    # ascending, `window` at a time (a worker takes the next segment when its last one arrived):
    # a round's consumers then ask for each segment at about the same time, their requests meet
    # in the rendezvous's PIT and it is aggregated once.  A task per segment starts in trio's
    # batch order, reversed half the time: consumers walking a round from opposite ends had
    # each segment aggregated twice once the rendezvous's Content Store held less than half
    # the round (issue #30)
    todo = iter(range(1, nseg))

    async def worker() -> None:
        for s in todo:  # shared: the next segment nobody has taken yet
            place(s, *await fetch.segment(s))

    if nseg > 1:
        workers = max(1, min(window, WINDOW_BYTES // desc.seg_bytes, nseg - 1))
        await run_bounded([worker] * workers, workers)
    per_segment = [desc.member_ids(m.members) for m in metas if m is not None]
    common = sorted(set.intersection(*(set(ids) for ids in per_segment)))
    complete = len(common) == len(desc.members)
    array = out.reshape(meta0.shape)
    if op == "mean":  # sum / count, segment by segment (a partial's segments may count differently)
        mean = np.empty(total, dtype=dt if dt.kind == "f" else np.float64)
        for s, m in enumerate(metas):
            assert m is not None
            part = slice(s * seg_elems, (s + 1) * seg_elems)
            np.divide(out[part], len(m.members), out=mean[part], casting="unsafe")
        array = mean.reshape(meta0.shape)
    return Reduced(array, common, complete, len(common), group, rnd, op, desc.version,
                   any(m.nonfinite for m in metas if m), any(m.overflow for m in metas if m), per_segment)


class _Fetcher:
    def __init__(self, ep: Endpoint, desc: GroupDescriptor, wire: bytes, op: str, rnd: int, partial: bool,
                 deadline: float, push: bytes | None = None) -> None:
        self.ep, self.desc, self.wire, self.op, self.round = ep, desc, wire, op, rnd
        self.push = push  # segment 0's contribution, pushed with its request
        self.partial, self.deadline = partial, deadline
        self.exclude: tuple[int, ...] = ()  # members known missing (partial only)
        self.unreachable: set[str] = set()  # rendezvous nodes the network had no route toward
        self.no_route: Nacked | None = None  # the Nack that said so last

    async def segment(self, s: int, deadline: float | None = None) -> tuple[SegmentMeta, np.ndarray]:
        """Segment `s` of the aggregate, by `deadline` (at the latest the call's).

        A rendezvous the network has no route toward (a dead node, once
        routing has withdrawn its routes) is passed over: the request goes to
        the next node of the segment's `GroupDescriptor.rendezvous_order`
        that is not known unreachable, the same for every consumer.  When
        every one is unreachable the request waits for a route as a fetch
        does (`icnd.objects.fetch.RouteWait`: 50 ms doubling to 1 s, never
        past the deadline) and tries them all again [issues #26 F1, #27]."""
        ep, desc = self.ep, self.desc
        until = self.deadline if deadline is None else min(deadline, self.deadline)
        order = desc.rendezvous_order(s)
        wait = RouteWait(aggregate_prefix(desc.group, self.op, self.round, s), until)
        while True:
            remaining = until - trio.current_time()
            if remaining <= 0.01:
                if wait.retries:
                    raise wait.error()
                raise Timeout(f"{desc.group} round {self.round} segment {s}: no aggregate by the deadline")
            step = next((k for k, node in enumerate(order) if node not in self.unreachable), None)
            if step is None:  # none reachable now: wait for routing to find one, then try them all again
                assert self.no_route is not None  # set whenever a node is found unreachable
                self.unreachable.difference_update(order)
                await wait.retry(self.no_route)
                continue
            interest = reduce_interest(self.wire, desc.group, self.op, self.round, s, partial=self.partial,
                                       lifetime_ms=max(10, int(remaining * 1000)),
                                       exclude=self.exclude if self.partial else (), step=step)
            push = self.push if s == 0 else None
            asked = interest if push is None else reduce_interest(
                self.wire, desc.group, self.op, self.round, s, partial=self.partial, lifetime_ms=interest.lifetime_ms,
                exclude=self.exclude if self.partial else (), step=step, push=push)
            try:
                data = await ep.express(asked, timeout=min(remaining, RETX), retx=None)
            except Timeout:
                continue
            except Nacked as exc:
                if exc.reason == NackReason.NO_ROUTE.label:
                    self.unreachable.add(order[step])
                    self.no_route = exc
                    continue
                if exc.reason == NackReason.NOT_YET.label:
                    detail = exc.detail or str(exc)
                    raise Timeout(detail, missing=missing_members(detail)) from None
                raise
            wait.routed()
            if push is not None:  # the node's answer wraps the aggregate's, unless it refused the contribution
                raise_for_error(data)
                try:
                    data = unwrap_pushed(data, interest.name)
                except ValueError as exc:
                    raise Error(str(exc)) from None
            raise_for_error(data)
            # an aggregate that does not verify (e.g. cached from before its rendezvous restarted
            # with a new key) is evicted and asked for once more past the caches [issue #15, D14]
            data = await verified(ep, interest, data, max(0.1, until - trio.current_time()))
            raise_for_error(data)
            try:
                meta, view = unpack(data.content, seg_bytes=desc.seg_bytes, max_bytes=desc.max_bytes,
                                    n_members=len(desc.members))
            except SegmentError as exc:
                raise Error(f"{data.name}: malformed aggregate: {exc}") from None
            if meta.seg != s or (meta.partial and not self.partial):
                raise Error(f"{data.name}: not the aggregate asked for")
            return meta, view
