"""Reduction groups and the names of reduction.

A group is a signed, versioned descriptor, itself named data
(``/group/<g>/desc/v=<n>``): the members (each an id and the node that serves
its contributions), the deadline policy (``deadline_ms``: how long an
aggregation waits for stragglers at most), the rendezvous nodes (segment ``s`` of an aggregate
starts its split at ``rendezvous[s % len(rendezvous)]``, so segment roots are
spread; when that node is unreachable, at the next of `GroupDescriptor.rendezvous_order`), the segment size, the ops allowed and the size limit of one
contribution.  The descriptor's encoding is deterministic (a msgpack array),
so nodes that build the same group from the same topology file hold the very
same bytes.

Names (docs/reduction.md):

- aggregate: ``/reduce/<g>/<op>/<round>/seg=<s>/params-sha256=<d>``, whose
  parameters carry the descriptor (so any forwarder can split the request
  without knowing the group beforehand, and a new descriptor version names
  new aggregates: old rounds keep their meaning) and, for a sub-request, the
  member subset it covers (so different subsets never share a PIT entry);
- contribution: ``/node/<node>/member/<m>/contrib/<g>/<round>/seg=<s>``,
  served by the member's node.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

import msgpack

from icnd.codec import decode, encode
from icnd.errors import DecodeError
from icnd.name import T_GENERIC, T_PARAMS, T_SEGMENT, Name, decode_nonneg, generic, segment, version
from icnd.packet import ContentType, Data, Interest, SigType

REDUCE = generic("reduce")
GROUP = generic("group")
DESC = generic("desc")
NODE = generic("node")
MEMBER = generic("member")
CONTRIB = generic("contrib")
CONTRIBUTE = generic("contribute")

OPS = ("sum", "max", "min", "prod")
CONSUMER_OPS = OPS + ("mean",)  # mean = sum / count, at the consumer
IDENT = re.compile(r"[A-Za-z0-9._-]{1,64}\Z")
MAX_MEMBERS = 256
DEFAULT_SEG_BYTES = 512 * 1024
MIN_SEG_BYTES = 1024
# Up to 4 MiB: fewer, larger segments cut per-segment work on stream links.  A segment
# above COMMAND_SEG_BYTES cannot ride in one Interest's parameters: such a group is contributed to in
# shared memory on the member's own node only (icnd.reduction.consumer refuses the other ways).
MAX_SEG_BYTES = 4 * 1024 * 1024
COMMAND_SEG_BYTES = 960 * 1024  # the largest segment a reduce/contribute command or hand-over carries
DEFAULT_MAX_BYTES = 1 << 30  # one contribution
MAX_ROUND = (1 << 63) - 1
MAX_SEGMENTS = 1 << 20
FORMAT = 1


def check_ident(value: Any, what: str) -> str:
    if not isinstance(value, str) or not IDENT.match(value):
        raise ValueError(f"{what} {value!r} must be 1-64 characters of letters, digits, '.', '_' or '-'")
    return value


@dataclass(frozen=True, slots=True)
class Member:
    """A group member: its id and the node that serves its contributions."""

    id: str
    node: str

    @classmethod
    def parse(cls, text: str) -> "Member":
        """``"w1"`` (member w1 on node w1) or ``"w1@b"`` (member w1 on node b)."""
        if not isinstance(text, str):
            raise ValueError(f"member {text!r} must be a string like 'w1' or 'w1@node'")
        ident, _, node = text.partition("@")
        return cls(check_ident(ident, "member id"), check_ident(node or ident, "member node"))

    def __str__(self) -> str:
        return self.id if self.id == self.node else f"{self.id}@{self.node}"


@dataclass(frozen=True, slots=True)
class GroupDescriptor:
    group: str
    version: int
    members: tuple[Member, ...]
    rendezvous: tuple[str, ...]
    ops: tuple[str, ...] = OPS
    seg_bytes: int = DEFAULT_SEG_BYTES
    max_bytes: int = DEFAULT_MAX_BYTES
    deadline_ms: int = 0  # the longest an aggregation waits for stragglers; 0: the request's lifetime

    @classmethod
    def create(cls, group: str, members: Sequence[str | Member], *, version: int = 1,
               rendezvous: Sequence[str] | None = None, ops: Sequence[str] | None = None,
               seg_bytes: int | None = None, max_bytes: int | None = None,
               deadline_ms: int | None = None) -> "GroupDescriptor":
        """A validated descriptor; ValueError says what is wrong."""
        parsed = tuple(m if isinstance(m, Member) else Member.parse(m) for m in members)
        nodes = tuple(dict.fromkeys(m.node for m in parsed))
        desc = cls(group, version, parsed, tuple(rendezvous) if rendezvous else nodes,
                   tuple(ops) if ops else OPS, seg_bytes or DEFAULT_SEG_BYTES, max_bytes or DEFAULT_MAX_BYTES,
                   deadline_ms or 0)
        desc.validate()
        return desc

    def validate(self) -> None:
        check_ident(self.group, "group name")
        if type(self.version) is not int or not 1 <= self.version <= MAX_ROUND:
            raise ValueError(f"group {self.group}: version must be a positive integer")
        if not self.members:
            raise ValueError(f"group {self.group}: a group needs at least one member")
        if len(self.members) > MAX_MEMBERS:
            raise ValueError(f"group {self.group}: {len(self.members)} members; at most {MAX_MEMBERS}")
        seen: set[str] = set()
        for m in self.members:
            check_ident(m.id, "member id")
            check_ident(m.node, "member node")
            if m.id in seen:
                raise ValueError(f"group {self.group}: member {m.id} appears twice")
            seen.add(m.id)
        if not self.rendezvous or len(self.rendezvous) > MAX_MEMBERS:
            raise ValueError(f"group {self.group}: rendezvous must name 1-{MAX_MEMBERS} nodes")
        for node in self.rendezvous:
            check_ident(node, "rendezvous node")
        if (not self.ops or not all(type(op) is str and op in OPS for op in self.ops)
                or len(set(self.ops)) != len(self.ops)):
            raise ValueError(f"group {self.group}: ops must be some of {', '.join(OPS)}")
        if type(self.seg_bytes) is not int or not MIN_SEG_BYTES <= self.seg_bytes <= MAX_SEG_BYTES:
            raise ValueError(f"group {self.group}: segment size must be {MIN_SEG_BYTES}..{MAX_SEG_BYTES} bytes")
        if type(self.max_bytes) is not int or self.max_bytes < 1:
            raise ValueError(f"group {self.group}: max_bytes must be a positive integer")
        if type(self.deadline_ms) is not int or not 0 <= self.deadline_ms <= 3_600_000:
            raise ValueError(f"group {self.group}: deadline_ms must be 0 (none) .. 3600000")

    # --- encoding --------------------------------------------------------------------
    def to_content(self) -> bytes:
        return msgpack.packb([
            FORMAT, self.group, self.version, [[m.id, m.node] for m in self.members],
            list(self.rendezvous), list(self.ops), self.seg_bytes, self.max_bytes, self.deadline_ms,
        ])

    @classmethod
    def from_content(cls, content: bytes | memoryview) -> "GroupDescriptor":
        try:
            fields = msgpack.unpackb(content, raw=False, max_bin_len=0, max_str_len=256,
                                     max_array_len=MAX_MEMBERS * 2 + 16, max_map_len=0)
        except Exception as exc:
            raise ValueError(f"malformed group descriptor: {exc}") from None
        if not isinstance(fields, list) or len(fields) != 9 or fields[0] != FORMAT:
            raise ValueError("malformed group descriptor: not a format-1 descriptor")
        _, group, ver, members, rendezvous, ops, seg_bytes, max_bytes, deadline_ms = fields
        if not isinstance(members, list) or not all(
                isinstance(m, list) and len(m) == 2 and all(isinstance(x, str) for x in m) for m in members):
            raise ValueError("malformed group descriptor: members")
        if not isinstance(rendezvous, list) or not isinstance(ops, list):
            raise ValueError("malformed group descriptor: rendezvous or ops")
        desc = cls(group, ver, tuple(Member(i, n) for i, n in members), tuple(rendezvous), tuple(ops),
                   seg_bytes, max_bytes, deadline_ms)
        desc.validate()
        return desc

    def data_name(self) -> Name:
        return Name.from_wire((GROUP, generic(self.group), DESC, version(self.version)))

    def to_data(self, freshness_ms: int = 3_600_000) -> Data:
        """The descriptor as (unsigned) Data; the caller signs it."""
        return Data(self.data_name(), self.to_content(), freshness_ms=freshness_ms)

    @classmethod
    def from_data(cls, data: Data) -> "GroupDescriptor":
        desc = cls.from_content(data.content)
        if data.name.comps != desc.data_name().comps:
            raise ValueError(f"group descriptor named {data.name} describes {desc.data_name()}")
        return desc

    # --- queries -----------------------------------------------------------------------
    def index(self, member: str) -> int:
        for i, m in enumerate(self.members):
            if m.id == member:
                return i
        raise KeyError(member)

    def rendezvous_for(self, seg: int, step: int = 0) -> str:
        """The node where segment `seg` starts its split after `step` fail-overs
        (`rendezvous_order`); IndexError past the last candidate."""
        n = len(self.rendezvous)
        if step < n:
            return self.rendezvous[(seg + step) % n]
        return self.rendezvous_order(seg)[step]

    def rendezvous_order(self, seg: int) -> tuple[str, ...]:
        """Every node that may be segment `seg`'s rendezvous, in the order a
        consumer fails over to them when one is unreachable: the rendezvous
        list from ``rendezvous[seg % n]`` on (wrapping), then the members'
        nodes not in it, in member order.  A pure function of the descriptor,
        so every consumer picks the same next rendezvous."""
        n = len(self.rendezvous)
        first = tuple(self.rendezvous[(seg + k) % n] for k in range(n))
        listed = set(first)
        return first + tuple(dict.fromkeys(m.node for m in self.members if m.node not in listed))

    def member_ids(self, indices: Sequence[int]) -> list[str]:
        return sorted(self.members[i].id for i in indices)

    def info(self) -> dict[str, Any]:
        return {
            "group": self.group, "version": self.version, "members": [str(m) for m in self.members],
            "rendezvous": list(self.rendezvous), "ops": list(self.ops), "segment_bytes": self.seg_bytes,
            "max_bytes": self.max_bytes, "deadline_ms": self.deadline_ms, "name": self.data_name().to_uri(),
        }


# --- aggregate names ----------------------------------------------------------------------
def _round_comp(rnd: int) -> bytes:
    if type(rnd) is not int or not 0 <= rnd <= MAX_ROUND:
        raise ValueError(f"round must be an integer 0..{MAX_ROUND}, not {rnd!r}")
    return generic(str(rnd))


def aggregate_prefix(group: str, op: str, rnd: int, seg: int) -> Name:
    return Name.from_wire((REDUCE, generic(group), generic(op), _round_comp(rnd), segment(seg)))


def request_params(desc_wire: bytes, subset: Sequence[int] | None, partial: bool,
                   exclude: Sequence[int] = (), *, step: int = 0, origin: int | None = None,
                   push: bytes | None = None, up: bytes | None = None) -> bytes:
    params: dict[str, Any] = {"d": desc_wire, "m": list(subset) if subset is not None else None, "p": partial}
    # each only when set: the names of requests without them are unchanged
    if exclude:
        params["x"] = list(exclude)
    if step:
        params["v"] = step
    if origin is not None:
        params["o"] = origin
    if push is not None:  # last: the request without it is the same bytes up to here (`canonical`)
        params["c"] = push
    if up is not None:
        params["u"] = up
    return msgpack.packb(params)


def reduce_interest(desc_wire: bytes, group: str, op: str, rnd: int, seg: int, *,
                    subset: Sequence[int] | None = None, partial: bool = False, lifetime_ms: int = 4000,
                    exclude: Sequence[int] = (), step: int = 0, push: bytes | None = None) -> Interest:
    """`exclude` (partial requests for the whole aggregate only): members the
    asker knows are missing (they were missing from an earlier segment of the
    round); they are not waited for and count as missing, so that a partial
    request does not wait its whole timeout on every segment.
    `step`: how many rendezvous of the segment's `rendezvous_order` to pass
    over (they were unreachable).  `push`: a *pushed* request (issue #30):
    the encoded contribution Data of a member living on the asker's own
    node, for that node to store on the way (local applications only,
    docs/reduction.md#pushed-contributions); its answer wraps the aggregate
    (`unwrap_pushed`)."""
    return Interest.with_params(aggregate_prefix(group, op, rnd, seg),
                                request_params(desc_wire, subset, partial, exclude, step=step, push=push),
                                lifetime_ms=lifetime_ms)


def pushed_up(req: "ReduceRequest", name: Name, content: bytes, lifetime_ms: int) -> Interest:
    """The request a node sends toward the rendezvous with the partial sum
    `content` of the members below it (`icnd.reduction.aggregate`, "Pushed
    up"): the plain request's parameters and ``u``."""
    return Interest.with_params(name.prefix(5), request_params(req.desc_wire, None, False, up=content),
                                lifetime_ms=lifetime_ms)


def canonical(req: "ReduceRequest", name: Name, lifetime_ms: int) -> Interest:
    """The plain request for the aggregate a pushed request `req` (named
    `name`) asks for: the same parameters without the contribution, so the
    requests of every member meet in PITs under one name."""
    return Interest.with_params(name.prefix(5), request_params(req.desc_wire, None, req.partial, req.exclude,
                                                               step=req.step), lifetime_ms=lifetime_ms)


def wrap_pushed(name: Name, answer: Data) -> Data:
    """The answer to pushed request `name`: `answer` (the aggregate, an
    error, as the network answered the plain request) encoded whole as the
    content, so its own signature still verifies at the consumer."""
    return Data(name, encode(answer), ContentType.BLOB, freshness_ms=0, sig_type=SigType.PER_HOP)


def unwrap_pushed(outer: Data, plain: Name) -> Data:
    """The Data a pushed request's answer `outer` wraps (`wrap_pushed`);
    ValueError unless it is the answer to `plain`, the request without the
    contribution."""
    if outer.content_type != ContentType.BLOB:
        raise ValueError(f"{outer.name}: the answer to a pushed request wraps the aggregate")
    try:
        inner = decode(bytes(outer.content))
    except DecodeError as exc:
        raise ValueError(f"{outer.name}: malformed wrapped answer: {exc}") from None
    if not isinstance(inner, Data) or inner.name != plain:
        raise ValueError(f"{outer.name}: the wrapped answer is not the aggregate asked for")
    return inner


@dataclass(frozen=True, slots=True)
class ReduceRequest:
    """A parsed reduction Interest."""

    desc: GroupDescriptor
    desc_wire: bytes
    op: str
    round: int
    seg: int
    subset: tuple[int, ...] | None  # None: the whole group (a request for the aggregate)
    partial: bool
    exclude: tuple[int, ...] = ()  # members known missing: not asked, counted missing (partial only)
    step: int = 0  # the rendezvous is the step-th of the segment's `rendezvous_order` (fail-over)
    # a sub-request's requester, as the rendezvous saw it (a tag it made; see
    # icnd.reduction.aggregate): whose round it is, for the shares of rounds below it, so one requester
    # cannot use up the rounds of a face every requester's rounds come through
    origin: int | None = None
    push: bytes | None = None  # a pushed contribution (encoded Data): whole-aggregate requests only
    up: bytes | None = None  # a partial sum pushed up by a node (`icnd.reduction.segment` content)

    def rendezvous(self) -> str:
        """The node this request's segment starts its split at."""
        return self.desc.rendezvous_for(self.seg, self.step)

    def members(self) -> tuple[int, ...]:
        return self.subset if self.subset is not None else tuple(range(len(self.desc.members)))

    def asked(self) -> tuple[int, ...]:
        """The members to ask: `members` less `exclude`."""
        if not self.exclude:
            return self.members()
        skip = set(self.exclude)
        return tuple(i for i in self.members() if i not in skip)

    @classmethod
    def parse(cls, interest: Interest) -> "ReduceRequest":
        """ValueError (with the reason) unless `interest` is a well-formed reduction request."""
        comps = interest.name.comps
        if len(comps) != 6 or comps[0] != REDUCE or comps[4][0] != T_SEGMENT or comps[5][0] != T_PARAMS:
            raise ValueError("a reduction name is /reduce/<group>/<op>/<round>/seg=<s>/params-sha256=<d>")
        if any(c[0] != T_GENERIC for c in comps[1:4]):
            raise ValueError("group, op and round must be generic components")
        if not interest.params_ok():
            raise ValueError("parameters do not match params-sha256")
        group, op, rnd_text = (c[1:].decode("ascii", "replace") for c in comps[1:4])
        if op not in OPS:
            raise ValueError(f"unknown reduction op {op!r}; known: {', '.join(OPS)}")
        if not rnd_text.isdigit() or len(rnd_text) > 19 or int(rnd_text) > MAX_ROUND or str(int(rnd_text)) != rnd_text:
            raise ValueError(f"round {rnd_text!r} is not a non-negative integer")
        seg = decode_nonneg(comps[4][1:])
        if seg >= MAX_SEGMENTS:
            raise ValueError(f"segment {seg} is beyond the limit ({MAX_SEGMENTS})")
        try:
            params = msgpack.unpackb(interest.app_params or b"", raw=False, max_array_len=MAX_MEMBERS,
                                     max_map_len=8, max_str_len=8)
        except Exception as exc:
            raise ValueError(f"malformed reduction parameters: {exc}") from None
        if not isinstance(params, dict) or not isinstance(params.get("d"), bytes):
            raise ValueError("reduction parameters need the group descriptor")
        desc = _DESCRIPTORS.parse(params["d"])
        if desc.group != group:
            raise ValueError(f"descriptor of group {desc.group} in a request for group {group}")
        if op not in desc.ops:
            raise ValueError(f"group {group} does not allow op {op!r} (allowed: {', '.join(desc.ops)})")
        subset = params.get("m")
        if subset is not None:
            if (not isinstance(subset, list) or not subset or any(type(i) is not int for i in subset)
                    or subset != sorted(set(subset)) or subset[0] < 0 or subset[-1] >= len(desc.members)):
                raise ValueError("member subset must be sorted, distinct member indices")
            subset = tuple(subset)
        partial = params.get("p", False)
        if type(partial) is not bool:
            raise ValueError("partial flag must be a boolean")
        exclude = params.get("x")
        if exclude is not None:
            if (not isinstance(exclude, list) or not exclude or any(type(i) is not int for i in exclude)
                    or exclude != sorted(set(exclude)) or exclude[0] < 0 or exclude[-1] >= len(desc.members)):
                raise ValueError("excluded members must be sorted, distinct member indices")
            if not partial or subset is not None:
                raise ValueError("excluded members are only for partial requests for the whole aggregate")
        step = params.get("v", 0)
        if type(step) is not int or step < 0 or (step and step >= len(desc.rendezvous_order(seg))):
            raise ValueError(f"rendezvous step {step!r} must be 0..{len(desc.rendezvous_order(seg)) - 1}")
        origin = params.get("o")
        if origin is not None:
            if type(origin) is not int or not 0 <= origin < 1 << 64:
                raise ValueError("a sub-request's origin must be an unsigned 64-bit integer")
            if subset is None:
                raise ValueError("only sub-requests carry an origin")
        push = params.get("c")
        if push is not None and (type(push) is not bytes or subset is not None):
            raise ValueError("a pushed contribution is an encoded Data, with a request for the whole aggregate")
        up = params.get("u")
        if up is not None and (type(up) is not bytes or subset is not None or partial or step or push is not None):
            raise ValueError("a partial sum pushed up rides with a plain request for the whole aggregate")
        return cls(desc, params["d"], op, int(rnd_text), seg, subset, partial, tuple(exclude or ()), step, origin,
                   push, up)


class DescriptorCache:
    """Descriptors parsed from the exact bytes requests carry them in.

    Every reduction request carries its group's descriptor, and an aggregator
    parses each request and sub-request: validating the same descriptor over
    and over was a third of an aggregator's work on a small reduction.  The
    same bytes always parse to the same (immutable) descriptor, so
    a hit skips only work whose result is known; bytes that fail to parse are
    never kept.  Bounded in entries and in bytes of the keys it holds; the
    oldest entry goes first."""

    def __init__(self, max_entries: int = 256, max_bytes: int = 4 * 1024 * 1024) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._parsed: dict[bytes, GroupDescriptor] = {}
        self.bytes = 0
        self.hits = self.misses = 0

    def parse(self, wire: bytes) -> GroupDescriptor:
        """The descriptor in `wire` (an encoded descriptor Data); ValueError if malformed."""
        desc = self._parsed.get(wire)
        if desc is not None:
            self.hits += 1
            return desc
        self.misses += 1
        try:
            data = decode(wire)
        except DecodeError as exc:
            raise ValueError(f"malformed group descriptor: {exc}") from None
        if not isinstance(data, Data):
            raise ValueError("the group descriptor must be Data")
        desc = GroupDescriptor.from_data(data)
        if len(wire) <= self.max_bytes:
            while self._parsed and (len(self._parsed) >= self.max_entries or self.bytes + len(wire) > self.max_bytes):
                oldest = next(iter(self._parsed))
                del self._parsed[oldest]
                self.bytes -= len(oldest)
            self._parsed[wire] = desc
            self.bytes += len(wire)
        return desc

    def __len__(self) -> int:
        return len(self._parsed)


_DESCRIPTORS = DescriptorCache()  # one per process: what it holds is a pure function of the key


# --- the not-yet of an incomplete round ------------------------------------------------------
_INCOMPLETE = re.compile(r" is incomplete: no contribution from ([A-Za-z0-9._, -]+?) \((.*)\)\Z", re.S)
_NAMED = re.compile(r" is incomplete: no contribution from ([A-Za-z0-9._, -]+?) \(")


def incomplete_detail(group: str, rnd: int, seg: int, missing: Sequence[str], why: str) -> str:
    """The detail of an aggregator's not-yet Nack, one sentence: the round,
    the members missing, and (once each) why."""
    return f"round {rnd} segment {seg} of {group} is incomplete: no contribution from {', '.join(missing)} ({why})"


def parse_incomplete(detail: str) -> tuple[list[str], str | None]:
    """(member ids, why) of an `incomplete_detail`: ``([], None)`` if it is
    not one, why None if it was cut short."""
    m = _INCOMPLETE.search(detail)
    if m is not None:
        return m.group(1).split(", "), m.group(2)
    m = _NAMED.search(detail)
    return (m.group(1).split(", "), None) if m is not None else ([], None)


def missing_members(detail: str) -> list[str]:
    """The member ids a not-yet's detail names as missing (empty if none)."""
    return parse_incomplete(detail)[0]


# --- contribution names ---------------------------------------------------------------------
def contrib_name(node: str, member: str, group: str, rnd: int, seg: int) -> Name:
    return Name.from_wire((NODE, generic(node), MEMBER, generic(member), CONTRIB, generic(group),
                           _round_comp(rnd), segment(seg)))


CONTRIB_FRESHNESS_MS = 60_000  # a contribution segment's freshness period, however it was handed over


def contribution_data(node: str, member: str, group: str, rnd: int, seg: int, content: bytes | memoryview, *,
                      sig_type: int = SigType.DIGEST_SHA256) -> Data:
    """Segment `seg` of `member`'s contribution to round `rnd` of `group`, served by `node`
    (`contrib_name`): the one way to make it, whether a client builds it (and signs it,
    `icnd.reduction.consumer`) or the node builds it from a shared-memory contribution
    (``reduce/contribute-shm``, `PER_HOP`: never leaves the node unsigned)."""
    return Data(contrib_name(node, member, group, rnd, seg), content, freshness_ms=CONTRIB_FRESHNESS_MS,
                sig_type=sig_type)


def remote_contribute_name(node: str, member: str) -> Name:
    """Where another node's client hands a segment to `member`'s node (the
    segment's Data rides in the Interest's parameters)."""
    return Name.from_wire((NODE, generic(node), MEMBER, generic(member), CONTRIBUTE))


def parse_contrib_name(comps: tuple[bytes, ...]) -> tuple[str, str, int, int] | None:
    """(member, group, round, seg) of a contribution name, None if it is not one."""
    if (len(comps) != 8 or comps[0] != NODE or comps[2] != MEMBER or comps[4] != CONTRIB
            or comps[7][0] != T_SEGMENT or any(comps[i][0] != T_GENERIC for i in (3, 5, 6))):
        return None
    rnd = comps[6][1:]
    if not rnd.isdigit() or len(rnd) > 19:
        return None
    return comps[3][1:].decode("ascii", "replace"), comps[5][1:].decode("ascii", "replace"), int(rnd), \
        decode_nonneg(comps[7][1:])
