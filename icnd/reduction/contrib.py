"""A node's groups and its members' contributions (sans-IO).

`GroupTable` holds the group descriptors this node knows: from its
configuration (a topology's ``[groups.*]``), created through it
(``create_group``), or installed by another node's announcement.  Trust:
configured groups are the operator's (announcements never change them); an
announced descriptor must carry a valid Ed25519 signature by the key it names,
and once a group has a signer, only that signer may announce new versions
(trust on first use); a node's own local clients may always make a new
version.  Contributions are checked against every version the node keeps, so
an old round keeps its membership after a new version.

`ContributionStore` keeps the contributions of members that live on this
node, segment by segment, and answers contribution Interests: at once when
the segment is there, or by holding the Interest (`take_pending`) until the
member contributes or the Interest expires.  Bounded: bytes in total, rounds
kept per member (older rounds go first), rounds accepted ahead of the newest,
Interests held.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from icnd.errors import Error
from icnd.packet import Data, Interest, Nack, NackReason, SigType
from icnd.security import KEY_ID_LEN, DigestKey, Ed25519VerifyKey, signed_portion
from icnd.reduction.group import GroupDescriptor, parse_contrib_name
from icnd.core.tables.cs import data_size
from icnd.reduction.segment import SegmentError, unpack

MAX_GROUPS = 1024
VERSIONS_KEPT = 16


class ReductionError(Error, ValueError):
    """A refused group or contribution operation; `code` is HTTP-like."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(slots=True)
class _Group:
    versions: dict[int, tuple[GroupDescriptor, Data]] = field(default_factory=dict)
    owner: bytes | None = None  # raw Ed25519 public key of the signer of announced versions
    configured: bool = False  # from this node's configuration: announcements cannot change it

    def latest(self) -> tuple[GroupDescriptor, Data]:
        return self.versions[max(self.versions)]


class GroupTable:
    def __init__(self, max_groups: int = MAX_GROUPS) -> None:
        self.max_groups = max_groups
        self._groups: dict[str, _Group] = {}

    def __len__(self) -> int:
        return len(self._groups)

    def latest(self, group: str) -> tuple[GroupDescriptor, Data] | None:
        g = self._groups.get(group)
        return g.latest() if g is not None else None

    def get(self, group: str, version: int | None = None) -> tuple[GroupDescriptor, Data]:
        g = self._groups.get(group)
        if g is None:
            known = ", ".join(sorted(self._groups)) or "none"
            raise ReductionError(404, f"unknown group {group!r} (groups known here: {known})")
        if version is None:
            return g.latest()
        if version not in g.versions:
            raise ReductionError(404, f"group {group} has no version {version} here "
                                      f"(versions: {', '.join(map(str, sorted(g.versions)))})")
        return g.versions[version]

    def versions(self, group: str) -> list[GroupDescriptor]:
        g = self._groups.get(group)
        return [g.versions[v][0] for v in sorted(g.versions)] if g is not None else []

    def groups(self) -> list[GroupDescriptor]:
        return [g.latest()[0] for _, g in sorted(self._groups.items())]

    def next_version(self, group: str) -> int:
        g = self._groups.get(group)
        return max(g.versions) + 1 if g is not None else 1

    def add_config(self, desc: GroupDescriptor) -> Data:
        """A configured group: digest-signed, so every node builds the same bytes."""
        data = DigestKey().sign(desc.to_data())
        self._put(desc, data, None)
        self._groups[desc.group].configured = True
        return data

    def add_local(self, desc: GroupDescriptor, data: Data, public_key: bytes) -> None:
        """A version made through this node by a local client (signed by this node)."""
        self._put(desc, data, public_key)

    def install(self, data: Data, public_key: bytes) -> GroupDescriptor:
        """An announced descriptor, signed by `public_key` (checked here)."""
        try:
            desc = GroupDescriptor.from_data(data)
        except ValueError as exc:
            raise ReductionError(400, str(exc)) from None
        _check_signature(data, public_key)
        g = self._groups.get(desc.group)
        if g is not None and g.configured:
            raise ReductionError(403, f"group {desc.group} is configured on this node; "
                                      "only its configuration (or a local client) changes it")
        if g is not None and g.owner is not None and g.owner != public_key:
            raise ReductionError(403, f"group {desc.group} is owned by another key; "
                                      "only its signer can announce new versions")
        self._put(desc, data, public_key)
        return desc

    def _put(self, desc: GroupDescriptor, data: Data, owner: bytes | None) -> None:
        g = self._groups.get(desc.group)
        if g is None:
            if len(self._groups) >= self.max_groups:
                raise ReductionError(507, f"too many groups ({self.max_groups})")
            g = self._groups[desc.group] = _Group()
        old = g.versions.get(desc.version)
        if old is not None:
            if old[0] != desc:
                raise ReductionError(409, f"group {desc.group} version {desc.version} exists with other contents")
            return
        g.versions[desc.version] = (desc, data)
        if owner is not None:
            g.owner = owner
        while len(g.versions) > VERSIONS_KEPT:
            del g.versions[min(g.versions)]


def _check_signature(data: Data, public_key: bytes) -> None:
    if data.sig_type != SigType.ED25519 or data.key_locator is None:
        raise ReductionError(403, "an announced group descriptor must be signed with Ed25519")
    locator = data.key_locator.comps
    if locator[-1][1:] != hashlib.sha256(public_key).digest()[:KEY_ID_LEN]:
        raise ReductionError(403, "the public key does not match the descriptor's key locator")
    try:
        key = Ed25519VerifyKey.from_bytes(public_key)
    except ValueError as exc:
        raise ReductionError(400, str(exc)) from None
    if not key.verifies(signed_portion(data), data.sig_value):
        raise ReductionError(403, "bad signature on the group descriptor")


@dataclass(slots=True)
class Contribution:
    layout: tuple[str, tuple[int, ...]]
    nseg: int
    segments: dict[int, Data] = field(default_factory=dict)
    nbytes: int = 0


class ContributionStore:
    def __init__(self, groups: GroupTable, node: str, *, max_bytes: int = 1 << 30, rounds_kept: int = 16,
                 max_ahead: int = 1024, max_pending: int = 4096) -> None:
        self.groups = groups
        self.node = node
        self.max_bytes = max_bytes
        self.rounds_kept = rounds_kept
        self.max_ahead = max_ahead
        self.max_pending = max_pending
        self.bytes_used = 0
        # (group, member) -> round -> contribution
        self._store: dict[tuple[str, str], dict[int, Contribution]] = {}
        self._evicted: dict[tuple[str, str], int] = {}  # newest round evicted
        self.pending: dict[tuple[bytes, ...], float] = {}  # contribution name -> expiry
        self.counters = {"contrib_rounds": 0, "contrib_segments": 0, "contrib_refused": 0,
                         "contrib_served": 0, "contrib_held": 0, "contrib_evicted": 0}

    def __len__(self) -> int:
        return sum(len(r) for r in self._store.values())

    def _member(self, group: str, member: str) -> GroupDescriptor:
        """The newest version of `group` in which `member` lives on this node."""
        latest, _ = self.groups.get(group)
        elsewhere = None
        for desc in reversed(self.groups.versions(group)):
            try:
                m = desc.members[desc.index(member)]
            except KeyError:
                continue
            if m.node == self.node:
                return desc
            elsewhere = elsewhere or m.node
        if elsewhere is not None:
            raise ReductionError(409, f"member {member} of group {group} lives on node {elsewhere}, not {self.node}")
        raise ReductionError(403, f"{member} is not a member of group {group} "
                                  f"(members: {', '.join(str(m) for m in latest.members)})")

    def _check_round(self, key: tuple[str, str], rnd: int) -> None:
        evicted = self._evicted.get(key)
        if evicted is not None and rnd <= evicted:
            raise ReductionError(410, f"round {rnd} of {key[1]} in {key[0]} is no longer kept here")
        rounds = self._store.get(key)
        newest = max(rounds) if rounds else evicted
        if newest is not None and rnd > newest + self.max_ahead:
            raise ReductionError(400, f"round {rnd} is too far ahead of {key[1]}'s newest round {newest} "
                                      f"in {key[0]} (at most {self.max_ahead} ahead)")

    # --- contributing -------------------------------------------------------------------
    def add(self, data: Data) -> bool:
        """Store one contribution segment (a Data named by `contrib_name`);
        True if new, False if the same segment was already there."""
        try:
            return self._add(data)
        except ReductionError:
            self.counters["contrib_refused"] += 1
            raise

    def _add(self, data: Data) -> bool:
        parsed = parse_contrib_name(data.name.comps)
        if parsed is None or data.name.comps[1][1:].decode("utf-8", "replace") != self.node:
            raise ReductionError(400, f"{data.name} is not a contribution name of node {self.node} "
                                      f"(/node/{self.node}/member/<m>/contrib/<group>/<round>/seg=<s>)")
        member, group, rnd, seg = parsed
        desc = self._member(group, member)
        key = (group, member)
        self._check_round(key, rnd)
        try:
            meta, _ = unpack(data.content, seg_bytes=desc.seg_bytes, max_bytes=desc.max_bytes,
                             n_members=len(desc.members))
        except SegmentError as exc:
            raise ReductionError(400, f"contribution of {member} to {group} round {rnd}: {exc}") from None
        if meta.seg != seg or meta.members or meta.partial:
            raise ReductionError(400, f"{data.name}: header does not describe segment {seg} of one member")
        rounds = self._store.setdefault(key, {})
        contribution = rounds.get(rnd)
        if contribution is None:
            contribution = Contribution(meta.layout(), meta.nseg)
        elif contribution.layout != meta.layout():
            raise ReductionError(400, f"{member} round {rnd}: segment {seg} is {meta.describe()}, other segments "
                                      f"are {contribution.layout[0]} {contribution.layout[1]}")
        old = contribution.segments.get(seg)
        if old is not None:
            if old.content == data.content:
                return False
            raise ReductionError(409, f"{member} already contributed different data to {group} round {rnd} "
                                      f"(segment {seg}); contributions are immutable")
        size = data_size(data)  # the encoding and the content: the memory it holds
        self._make_room(size, key, rnd)
        if rnd not in rounds:
            rounds[rnd] = contribution
            self.counters["contrib_rounds"] += 1
            while len(rounds) > self.rounds_kept:
                self._evict(key, min(rounds))
        contribution.segments[seg] = data
        contribution.nbytes += size
        self.bytes_used += size
        self.counters["contrib_segments"] += 1
        return True

    def _make_room(self, size: int, key: tuple[str, str], rnd: int) -> None:
        if size > self.max_bytes:
            raise ReductionError(507, f"a {size}-byte segment exceeds the contribution store ({self.max_bytes})")
        while self.bytes_used + size > self.max_bytes:
            victims = [(r, k) for k, rounds in self._store.items() for r in rounds if (k, r) != (key, rnd)]
            if not victims:
                raise ReductionError(507, f"contribution store full ({self.max_bytes} bytes)")
            r, k = min(victims)
            self._evict(k, r)

    def _evict(self, key: tuple[str, str], rnd: int) -> None:
        rounds = self._store[key]
        gone = rounds.pop(rnd)
        self.bytes_used -= gone.nbytes
        self._evicted[key] = max(rnd, self._evicted.get(key, rnd))
        self.counters["contrib_evicted"] += 1
        if not rounds:
            del self._store[key]

    def take_pending(self, data: Data, now: float) -> bool:
        """True if an Interest for `data` is being held (and forget it)."""
        expiry = self.pending.pop(data.name.comps, None)
        if expiry is not None and expiry > now:
            self.counters["contrib_served"] += 1
            return True
        return False

    # --- serving ---------------------------------------------------------------------------
    def lookup(self, interest: Interest, lifetime: float, now: float) -> Data | Nack | None:
        """The segment, a Nack saying why not, or None: held until contributed."""
        parsed = parse_contrib_name(interest.name.comps)
        if parsed is None:
            return Nack(interest.name, interest.nonce, NackReason.NO_ROUTE, "not a contribution name")
        member, group, rnd, seg = parsed
        try:
            self._member(group, member)
            self._check_round((group, member), rnd)
        except ReductionError as exc:
            reason = NackReason.NO_ROUTE if exc.code in (404, 409, 410) else NackReason.PROHIBITED \
                if exc.code == 403 else NackReason.MALFORMED
            return Nack(interest.name, interest.nonce, reason, str(exc))
        contribution = self._store.get((group, member), {}).get(rnd)
        if contribution is not None:
            data = contribution.segments.get(seg)
            if data is not None:
                self.counters["contrib_served"] += 1
                return data
            if seg >= contribution.nseg:
                return Nack(interest.name, interest.nonce, NackReason.MALFORMED,
                            f"{member} round {rnd} has {contribution.nseg} segments")
        if len(self.pending) >= self.max_pending:
            self._purge(now)
            if len(self.pending) >= self.max_pending:
                return Nack(interest.name, interest.nonce, NackReason.CONGESTION,
                            f"too many Interests waiting for contributions ({self.max_pending})")
        comps = interest.name.comps
        self.pending[comps] = max(self.pending.get(comps, 0.0), now + lifetime)
        self.counters["contrib_held"] += 1
        return None

    def _purge(self, now: float) -> None:
        for comps in [c for c, expiry in self.pending.items() if expiry <= now]:
            del self.pending[comps]

    def stats(self, now: float) -> dict[str, int]:
        self._purge(now)
        return {"contributions": len(self), "contribution_bytes": self.bytes_used,
                "contributions_waiting": len(self.pending), "groups": len(self.groups)}
