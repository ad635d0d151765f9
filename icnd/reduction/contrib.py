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

Bounded, so that announcements from other nodes cannot exhaust it: at most ``max_groups`` groups.  Groups installed by
announcements (*remote* groups: no configured or local version) may take at
most ``max_groups - local_reserve`` of them, at most ``per_source`` per
announcing key, and expire once unused (not read, not announced again) for
``remote_idle`` seconds.  So a flood of announcements never takes the
node's own ``group create`` slots: a local create also evicts the least
recently used remote group when the table is full.  Refusals are
`ReductionError` 507 and counted in `counters`.

`ContributionStore` keeps the contributions of members that live on this
node, segment by segment, and answers contribution Interests: at once when
the segment is there, or by holding the Interest (`take_pending`) until the
member contributes or the Interest expires.  Bounded: bytes in total, rounds
kept per member (older rounds go first), rounds accepted ahead of the newest,
Interests held.

Priority, so that other nodes cannot push out what the member's own node
holds: a contribution is *local* when the member's own
node's clients made it (management), *remote* when another node handed it
over (``/contribute``).  A remote contribution never evicts a local round
(for bytes or for the rounds-kept window); a local one evicts remote rounds
first and replaces a remote-only round it conflicts with.  Nor do remote
rounds move the member's window: a round evicted that was only handed over
refuses (410) later remote rounds at or below it, never the member's own.
`add` never
evicts the round it is storing: a round that would be evicted at once is
refused (`ReductionError` naming the window of rounds kept), so success is
reported only for a contribution that is stored.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from icnd.faces import shm
from icnd.errors import Error
from icnd.packet import Data, Interest, Nack, NackReason, SigType
from icnd.security import KEY_ID_LEN, DigestKey, Ed25519VerifyKey, signed_portion
from icnd.reduction.group import GroupDescriptor, parse_contrib_name
from icnd.reduction.segment import MAX_HEAD, SegmentError, unpack, unpack_head

MAX_GROUPS = 1024
EPOCH_BITS = 32  # rounds are epoch << EPOCH_BITS | sequence (explicit rounds below 2^32: epoch 0)
VERSIONS_KEPT = 16
GROUP_LOCAL_RESERVE = 64  # slots remote announcements cannot take
GROUP_PER_SOURCE = 32  # remote groups per announcing key
GROUP_REMOTE_IDLE = 3600.0  # seconds an unused remote group is kept


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
    remote: bool = False  # only ever installed by announcements: quota'd, expires when unused
    used: float = 0.0  # last read or announced (remote groups)

    def latest(self) -> tuple[GroupDescriptor, Data]:
        return self.versions[max(self.versions)]


class GroupTable:
    def __init__(self, max_groups: int = MAX_GROUPS, *, local_reserve: int = GROUP_LOCAL_RESERVE,
                 per_source: int = GROUP_PER_SOURCE, remote_idle: float = GROUP_REMOTE_IDLE,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not 0 <= local_reserve < max_groups:
            raise ValueError(f"group local reserve {local_reserve} must be in 0..{max_groups - 1}")
        self.max_groups = max_groups
        self.local_reserve = local_reserve
        self.per_source = per_source
        self.remote_idle = remote_idle
        self.clock = clock
        self._groups: dict[str, _Group] = {}
        self._remote = 0  # groups with remote=True
        self._by_source: dict[bytes, int] = {}  # announcing key -> its remote groups
        self.counters = {"groups_refused_full": 0, "groups_refused_source": 0, "groups_expired": 0,
                         "groups_evicted_for_local": 0, "groups_refused_untrusted": 0}

    def __len__(self) -> int:
        return len(self._groups)

    def _touch(self, g: _Group | None) -> _Group | None:
        if g is not None and g.remote:
            g.used = self.clock()
        return g

    def latest(self, group: str) -> tuple[GroupDescriptor, Data] | None:
        g = self._touch(self._groups.get(group))
        return g.latest() if g is not None else None

    def get(self, group: str, version: int | None = None) -> tuple[GroupDescriptor, Data]:
        g = self._touch(self._groups.get(group))
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
        g = self._touch(self._groups.get(group))
        return [g.versions[v][0] for v in sorted(g.versions)] if g is not None else []

    def groups(self) -> list[GroupDescriptor]:
        return [g.latest()[0] for _, g in sorted(self._groups.items())]

    def next_version(self, group: str) -> int:
        g = self._groups.get(group)
        return max(g.versions) + 1 if g is not None else 1

    def add_config(self, desc: GroupDescriptor) -> Data:
        """A configured group: digest-signed, so every node builds the same bytes."""
        data = DigestKey().sign(desc.to_data())
        self._put(desc, data, None, local=True)
        self._groups[desc.group].configured = True
        return data

    def add_local(self, desc: GroupDescriptor, data: Data, public_key: bytes) -> None:
        """A version made through this node by a local client (signed by this node).
        Never refused for room while remote groups hold slots (one is evicted)."""
        self._put(desc, data, public_key, local=True)

    def check_announcement(self, data: Data, public_key: bytes, *, vetted: bool = False) -> GroupDescriptor:
        """The checks of `install` that need no trust schema: well-formed,
        signed by `public_key`, not a configured group, and (unless `vetted`:
        a trust schema accepted its signer) the group's first signer's."""
        try:
            desc = GroupDescriptor.from_data(data)
        except ValueError as exc:
            raise ReductionError(400, str(exc)) from None
        _check_signature(data, public_key)
        g = self._groups.get(desc.group)
        if g is not None and g.configured:
            raise ReductionError(403, f"group {desc.group} is configured on this node; "
                                      "only its configuration (or a local client) changes it")
        if not vetted and g is not None and g.owner is not None and g.owner != public_key:
            raise ReductionError(403, f"group {desc.group} is owned by another key; "
                                      "only its signer can announce new versions")
        return desc

    def install(self, data: Data, public_key: bytes, *, vetted: bool = False) -> GroupDescriptor:
        """An announced descriptor, signed by `public_key` (checked here).
        `vetted`: a trust schema accepted it (the node's validator), which
        replaces trust on first use: any signer the schema allows may announce
        a new version."""
        desc = self.check_announcement(data, public_key, vetted=vetted)
        self._put(desc, data, public_key, local=False)
        return desc

    def _put(self, desc: GroupDescriptor, data: Data, owner: bytes | None, *, local: bool) -> None:
        g = self._groups.get(desc.group)
        if g is None:
            self._make_room(local, owner)
            g = self._groups[desc.group] = _Group()
            if not local:
                assert owner is not None  # an announcement names its signer
                g.remote = True
                self._remote += 1
                self._by_source[owner] = self._by_source.get(owner, 0) + 1
        elif local and g.remote:
            self._forget_remote(g)  # a local version makes it this node's group
        if g.remote:
            g.used = self.clock()  # announced again: in use
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

    def _forget_remote(self, g: _Group) -> None:
        g.remote = False
        self._remote -= 1
        if g.owner is not None:
            left = self._by_source.get(g.owner, 0) - 1
            if left > 0:
                self._by_source[g.owner] = left
            else:
                self._by_source.pop(g.owner, None)

    def _drop(self, name: str) -> None:
        g = self._groups.pop(name)
        if g.remote:
            self._forget_remote(g)

    def expire(self) -> int:
        """Drop remote groups unused for `remote_idle` seconds; how many."""
        if not self._remote:
            return 0
        cutoff = self.clock() - self.remote_idle
        idle = [name for name, g in self._groups.items() if g.remote and g.used <= cutoff]
        for name in idle:
            self._drop(name)
        self.counters["groups_expired"] += len(idle)
        return len(idle)

    def _make_room(self, local: bool, owner: bytes | None) -> None:
        """Room for one new group, or ReductionError 507 (counted)."""
        if local:
            if len(self._groups) < self.max_groups:
                return
            self.expire()
            if len(self._groups) < self.max_groups:
                return
            remote = [(g.used, name) for name, g in self._groups.items() if g.remote]
            if remote:
                self._drop(min(remote)[1])
                self.counters["groups_evicted_for_local"] += 1
                return
            self.counters["groups_refused_full"] += 1
            raise ReductionError(507, f"too many groups ({self.max_groups}, all configured or made here)")
        remote_cap = self.max_groups - self.local_reserve
        if owner is not None and self._by_source.get(owner, 0) >= self.per_source:
            self.expire()
            if self._by_source.get(owner, 0) >= self.per_source:
                self.counters["groups_refused_source"] += 1
                raise ReductionError(507, f"too many groups announced by this key ({self.per_source}); "
                                          f"unused ones expire after {self.remote_idle:g} s")
        if self._remote >= remote_cap or len(self._groups) >= self.max_groups:
            self.expire()
            if self._remote >= remote_cap or len(self._groups) >= self.max_groups:
                self.counters["groups_refused_full"] += 1
                raise ReductionError(507, f"too many announced groups ({remote_cap}; {self.local_reserve} more "
                                          f"are kept for this node's own groups); unused ones expire after "
                                          f"{self.remote_idle:g} s")


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


def held_size(data: Data) -> int:
    """The memory a stored segment holds: its content and, if it has one, its
    encoding (a contribution handed over in shared memory has none, and is
    never encoded to be stored)."""
    wire = data.wire
    return len(data.content) + (len(wire) if wire is not None else 0) + 256


@dataclass(slots=True)
class Contribution:
    layout: tuple[str, tuple[int, ...]]
    nseg: int
    segments: dict[int, Data] = field(default_factory=dict)
    nbytes: int = 0
    local: bool = True  # made by the member's own node's clients (see the module docstring)
    seq: int = 0  # when it was stored, in the store's order: for bytes, the oldest rounds go first


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
        self._stored = 0  # rounds stored so far: each new one's `seq`
        # (group, member) -> round -> contribution
        self._store: dict[tuple[str, str], dict[int, Contribution]] = {}
        self._evicted: dict[tuple[str, str], int] = {}  # newest of the member's own rounds evicted
        self._evicted_remote: dict[tuple[str, str], int] = {}  # ... of rounds only handed over for it
        self.pending: dict[tuple[bytes, ...], float] = {}  # contribution name -> expiry
        self.counters = {"contrib_rounds": 0, "contrib_segments": 0, "contrib_refused": 0,
                         "contrib_served": 0, "contrib_held": 0, "contrib_evicted": 0,
                         "contrib_refused_window": 0, "contrib_remote_displaced": 0,
                         "contrib_refused_untrusted": 0, "contrib_shm": 0, "contrib_shm_refused": 0}

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

    def _check_round(self, key: tuple[str, str], rnd: int, local: bool = True) -> None:
        """Refuse a round at or below one evicted (410) or too far ahead (400).
        Rounds evicted that were only handed over from other nodes refuse
        only such remote rounds: they never move the member's own window
        (else rounds far ahead handed over by other nodes would lock the member out)."""
        evicted = self._evicted.get(key)
        remote = None if local else self._evicted_remote.get(key)
        if remote is not None and (evicted is None or remote > evicted):
            evicted = remote
        if evicted is not None and rnd <= evicted:
            raise ReductionError(410, f"round {rnd} of {key[1]} in {key[0]} is no longer kept here")
        rounds = self._store.get(key)
        newest = max(rounds) if rounds else evicted
        # a round in a later epoch (round >> EPOCH_BITS: a communicator's group version, icnd.collective)
        # starts that epoch afresh; within an epoch a round may lead the newest by max_ahead
        if newest is not None and rnd >> EPOCH_BITS == newest >> EPOCH_BITS and rnd > newest + self.max_ahead:
            raise ReductionError(400, f"round {rnd} is too far ahead of {key[1]}'s newest round {newest} "
                                      f"in {key[0]} (at most {self.max_ahead} ahead)")

    def newest(self, group: str, member: str) -> int | None:
        """The highest round of `member` in `group` this node holds or has
        evicted (None: none yet), so a new communicator can tell that its
        names were used before (`icnd.collective`)."""
        key = (group, member)
        seen = [r for r in (self._evicted.get(key), max(self._store.get(key) or [-1])) if r is not None and r >= 0]
        return max(seen) if seen else None

    # --- contributing -------------------------------------------------------------------
    def add(self, data: Data, *, local: bool = True) -> bool:
        """Store one contribution segment (a Data named by `contrib_name`);
        True if new (and stored), False if the same segment was already
        there.  `local`: made by this node's own clients, not handed over
        by another node (see the module docstring)."""
        try:
            return self._add(data, local)
        except ReductionError:
            self.counters["contrib_refused"] += 1
            raise

    def check_layout(self, group: str, member: str, rnd: int, spans: list[list[int]],
                     read: Callable[[int, int], bytes]) -> None:
        """Refuse (`ReductionError`, counted in ``contrib_refused``) a whole
        contribution of `member` to `group` round `rnd` laid out as `spans`
        ([offset, length] of each segment, in order) from its segments'
        headers alone, read with ``read(offset, n)``: what `add` would refuse
        of any segment's header, length or layout, judged before the node maps
        the memory file that holds them (`icnd.faces.shm`: check first, then
        map).  `add` still checks each segment as it is stored."""
        try:
            desc = self._member(group, member)
            self._check_round((group, member), rnd)
            layout = None
            for seg, (offset, length) in enumerate(spans):
                what = f"segment {seg} of {member}'s contribution to {group} round {rnd}"
                try:
                    meta, _, _ = unpack_head(read(offset, min(length, MAX_HEAD)), length, seg_bytes=desc.seg_bytes,
                                             max_bytes=desc.max_bytes, n_members=len(desc.members))
                except SegmentError as exc:
                    raise ReductionError(400, f"{what}: {exc}") from None
                if meta.seg != seg or meta.members or meta.partial:
                    raise ReductionError(400, f"{what}: header does not describe segment {seg} of one member")
                if meta.nseg != len(spans):
                    raise ReductionError(400, f"{what}: its header says {meta.nseg} segments, "
                                              f"the command lays out {len(spans)}")
                if layout is None:
                    layout = meta.layout()
                elif meta.layout() != layout:
                    raise ReductionError(400, f"{what} is {meta.describe()}, segment 0 is {layout[0]} {layout[1]}")
        except ReductionError:
            self.counters["contrib_refused"] += 1
            raise

    def _add(self, data: Data, local: bool) -> bool:
        parsed = parse_contrib_name(data.name.comps)
        if parsed is None or data.name.comps[1][1:].decode("utf-8", "replace") != self.node:
            raise ReductionError(400, f"{data.name} is not a contribution name of node {self.node} "
                                      f"(/node/{self.node}/member/<m>/contrib/<group>/<round>/seg=<s>)")
        member, group, rnd, seg = parsed
        desc = self._member(group, member)
        key = (group, member)
        self._check_round(key, rnd, local)
        try:
            meta, _ = unpack(data.content, seg_bytes=desc.seg_bytes, max_bytes=desc.max_bytes,
                             n_members=len(desc.members))
        except SegmentError as exc:
            raise ReductionError(400, f"contribution of {member} to {group} round {rnd}: {exc}") from None
        if meta.seg != seg or meta.members or meta.partial:
            raise ReductionError(400, f"{data.name}: header does not describe segment {seg} of one member")
        rounds = self._store.get(key, {})
        contribution = rounds.get(rnd)
        if contribution is not None and local and not contribution.local:
            old = contribution.segments.get(seg)
            if contribution.layout != meta.layout() or (old is not None and old.content != data.content):
                # the member's own contribution wins over one handed over for it from elsewhere
                self._evict(key, rnd, displaced=True)
                self.counters["contrib_remote_displaced"] += 1
                rounds = self._store.get(key, {})
                contribution = None
        if contribution is None:
            self._stored += 1
            contribution = Contribution(meta.layout(), meta.nseg, local=local, seq=self._stored)
        elif contribution.layout != meta.layout():
            raise ReductionError(400, f"{member} round {rnd}: segment {seg} is {meta.describe()}, other segments "
                                      f"are {contribution.layout[0]} {contribution.layout[1]}")
        old = contribution.segments.get(seg)
        if old is not None:
            if old.content == data.content:
                contribution.local = contribution.local or local
                return False
            raise ReductionError(409, f"{member} already contributed different data to {group} round {rnd} "
                                      f"(segment {seg}); contributions are immutable")
        size = held_size(data)
        # every check before any eviction: a refused contribution evicts nothing
        window_victim = self._window_victim(key, rnd, local) if rnd not in rounds else None
        self._make_room(size, key, rnd, local, window_victim)
        if rnd not in rounds:
            rounds = self._store.setdefault(key, {})
            rounds[rnd] = contribution
            self.counters["contrib_rounds"] += 1
        contribution.local = contribution.local or local
        contribution.segments[seg] = data
        contribution.nbytes += size
        self.bytes_used += size
        self.counters["contrib_segments"] += 1
        return True

    def _window_victim(self, key: tuple[str, str], rnd: int, local: bool) -> int | None:
        """The round of `key` that gives way to new round `rnd` (None: there is
        room among the `rounds_kept`): the lowest that may go (remote ones first
        for a local round; never a local one for a remote round); refused if
        `rnd` itself would be it."""
        rounds = self._store.get(key)
        if not rounds or len(rounds) < self.rounds_kept:
            return None
        remote = [r for r, c in rounds.items() if not c.local]
        if local and remote:
            return min(remote)
        candidates = list(rounds) if local else remote
        if candidates and min(candidates) < rnd:
            return min(candidates)
        lo, hi = min(rounds), max(rounds)
        self.counters["contrib_refused_window"] += 1
        whose = "" if local else (" (contributions handed over from other nodes never displace the member's "
                                  "own rounds)")
        raise ReductionError(507, f"round {rnd} of {key[1]} in {key[0]} is outside the window of rounds kept here: "
                                  f"{len(rounds)} rounds kept ({lo}..{hi}, at most {self.rounds_kept} per member) "
                                  f"and none of them may give way to it{whose}")

    def _make_room(self, size: int, key: tuple[str, str], rnd: int, local: bool, window_victim: int | None) -> None:
        """Evict `window_victim` (a round of `key`), then rounds until `size`
        more bytes fit: remote rounds first, lowest first, never (key, rnd),
        never a local round for a remote contribution.  Checked first: if it
        cannot fit, nothing is evicted."""
        if size > self.max_bytes:
            raise ReductionError(507, f"a {size}-byte segment exceeds the contribution store ({self.max_bytes})")
        victims = None
        if self.bytes_used + size > self.max_bytes:
            # remote rounds first, then the oldest stored: round numbers of different groups (and of
            # communicators' epochs) do not say which is older, and the newest are the ones in use
            victims = sorted((c.local, c.seq, r, k) for k, rounds in self._store.items() for r, c in rounds.items()
                             if (k, r) != (key, rnd) and (local or not c.local or (k, r) == (key, window_victim)))
            room = self.max_bytes - self.bytes_used + sum(self._store[k][r].nbytes for _, _, r, k in victims)
            if room < size:
                held = "" if local else ", held by the members' own contributions"
                raise ReductionError(507, f"contribution store full ({self.max_bytes} bytes{held}); "
                                          f"round {rnd} of {key[1]} in {key[0]} is refused")
        if window_victim is not None:
            self._evict(key, window_victim, below=rnd)
        for _, _, r, k in victims or ():
            if self.bytes_used + size <= self.max_bytes:
                break
            if r in self._store.get(k, {}):
                self._evict(k, r, below=rnd if k == key else None)

    def _evict(self, key: tuple[str, str], rnd: int, *, displaced: bool = False, below: int | None = None) -> None:
        """Drop round `rnd` of `key`; `below`: the round of `key` being stored instead."""
        rounds = self._store[key]
        gone = rounds.pop(rnd)
        self.bytes_used -= gone.nbytes
        if not displaced and (not rounds or rnd < min(rounds)) and (below is None or rnd < below):
            # Interests for rounds at or below it are refused (410), not held; a round
            # evicted from above a kept or incoming one (a remote one giving way) is simply gone.
            # A remote-only round's eviction refuses only remote rounds at or below it, never the
            # member's own
            marks = self._evicted if gone.local else self._evicted_remote
            marks[key] = max(rnd, marks.get(key, rnd))
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
        self.groups.expire()
        return {"contributions": len(self), "contribution_bytes": self.bytes_used, "shm_mappings": shm.live_mappings(),
                "contributions_waiting": len(self.pending), "groups": len(self.groups)}
