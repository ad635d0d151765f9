"""The node's side of collective reduction: groups and its members' contributions.

A node keeps the group descriptors it knows (`GroupTable`) and the
contributions of the members that live on it (`ContributionStore`), and
answers, from its internal face (`icnd.daemon.producers`):

- ``/node/<n>/member/<m>/contrib/...``: a member's contribution segment, at
  once when it is there, else held until the member contributes (the answer
  then goes out through ``deliver``) or the Interest expires;
- ``/node/<n>/member/<m>/contribute/...``: a contribution segment handed over
  by another node's client (its Data in the parameters; the same checks as a
  local one; contributors are authenticated only under a trust schema: then
  the node's validator must accept the contribution Data, signed by a
  certified key the schema allows for its name);
- ``/node/<n>/group/install/...``: a group descriptor announced by the node
  that made it (`GroupTable.install` says whom it trusts; with a trust
  schema, the node's validator must accept the descriptor first).

Refusals are signed ERROR Data (`icnd.errors.error_data`) with an HTTP-like
code, counted (`GroupTable.counters`, `ContributionStore.counters`) and
logged at most once per `REFUSAL_LOG_INTERVAL` per kind, not per packet.
Contributions handed over by other nodes are *remote* for the store: they
never displace the member's own (see `icnd.reduction.contrib`).  The management commands ``group/*`` and ``reduce/contribute``
(`icnd.daemon.mgmt.groups`) operate on this service.  The aggregation of
contributions inside the network is the forwarder's ``/reduce`` hook
(`icnd.reduction.aggregate`), not this.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import msgpack

from icnd.codec import decode
from icnd.errors import DecodeError, VerificationError, error_data
from icnd.name import Name, generic
from icnd.packet import Data, Interest, Nack
from icnd.producer import Producers
from icnd.ratelog import RateLimitedLog
from icnd.reduction.contrib import ContributionStore, GroupTable, ReductionError
from icnd.reduction.group import CONTRIBUTE, GROUP, MEMBER, GroupDescriptor, parse_contrib_name
from icnd.security import Ed25519Key
from icnd.trust.validator import FetchCert, Validator

INSTALL = generic("install")
REFUSAL_LOG_INTERVAL = 10.0  # seconds: each kind of refusal is logged at most once per interval

log = logging.getLogger(__name__)


class ReductionService:
    """Groups and contributions of one node; see the module docstring.

    ``deliver(data)`` hands a Data the node produces later (a held
    contribution Interest's answer) to the forwarder; ``clock()`` is the
    node's monotonic time in seconds."""

    def __init__(self, name: Name, key: Ed25519Key, groups: GroupTable, contrib: ContributionStore, *,
                 deliver: Callable[[Data], None], clock: Callable[[], float], validator: Validator | None = None,
                 fetch_cert: FetchCert | None = None,
                 spawn: Callable[..., None] | None = None) -> None:
        """`validator`: the node's; with a trust schema, an announced group
        descriptor is installed only once it accepts it (checked in a task
        started with `spawn`, certificates fetched with `fetch_cert`)."""
        self.name = name
        self.validator = validator if validator is not None and validator.schema is not None else None
        self._fetch_cert = fetch_cert
        self._spawn = spawn
        self.node_id = name.comps[-1][1:].decode("utf-8", "replace")
        self.key = key
        self.groups = groups
        self.contrib = contrib
        self._deliver = deliver
        self._clock = clock
        self._refusal_logs: dict[str, RateLimitedLog] = {}  # one per kind of refusal

    def _log_refusal(self, kind: str, exc: ReductionError) -> None:
        """Log a refusal of `kind` at most once per REFUSAL_LOG_INTERVAL, with how many since."""
        refusals = self._refusal_logs.get(kind)
        if refusals is None:
            refusals = self._refusal_logs[kind] = RateLimitedLog(log, REFUSAL_LOG_INTERVAL)
        refusals.warning(self._clock(), "%s refused: %s", kind, exc)

    def register(self, producers: Producers) -> None:
        own = self.name.comps
        producers.add(own + (MEMBER,), self._member)
        producers.add(own + (GROUP, INSTALL), self._install_group)

    # --- answers from the internal face ----------------------------------------------------
    def _member(self, interest: Interest) -> Data | Nack | None:
        comps = interest.name.comps
        own = len(self.name.comps)
        if comps[own + 2 : own + 3] == (CONTRIBUTE,):
            return self._remote_contribution(interest)
        return self.contrib.lookup(interest, interest.lifetime_ms / 1000.0, self._clock())

    def _install_group(self, interest: Interest) -> Data | None:
        """A group descriptor announced by the node that made it (see
        GroupTable.install); with a trust schema, held until the validator
        has accepted (or refused) it."""
        try:
            if not interest.app_params or not interest.params_ok():
                raise ReductionError(400, "a group announcement carries the descriptor in its parameters")
            try:
                args = msgpack.unpackb(interest.app_params, raw=False, max_str_len=64)
                desc_data = decode(args["desc"])
                public = args["key"]
            except (ValueError, KeyError, TypeError, DecodeError, msgpack.UnpackException) as exc:
                raise ReductionError(400, f"malformed group announcement: {exc}") from None
            if not isinstance(desc_data, Data) or not isinstance(public, bytes):
                raise ReductionError(400, "malformed group announcement")
            if self.validator is not None and self._spawn is not None:
                self.groups.check_announcement(desc_data, public, vetted=True)  # cheap refusals first
                self._spawn(self._install_validated, interest, desc_data, public)
                return None
            return self._installed(interest, self.groups.install(desc_data, public))
        except ReductionError as exc:
            return self._install_refused(interest, exc)

    async def _install_validated(self, interest: Interest, desc_data: Data, public: bytes) -> None:
        """An announcement under a trust schema: installed if the validator
        accepts the descriptor (its signer certified, the schema allowing it)."""
        assert self.validator is not None
        try:
            try:
                await self.validator.validate(desc_data, self._fetch_cert)
            except VerificationError as exc:
                self.groups.counters["groups_refused_untrusted"] += 1
                raise ReductionError(403, f"group descriptor not trusted: {exc}") from None
            answer = self._installed(interest, self.groups.install(desc_data, public, vetted=True))
        except ReductionError as exc:
            answer = self._install_refused(interest, exc)
        self._deliver(answer)

    def _installed(self, interest: Interest, desc: GroupDescriptor) -> Data:
        body = {"code": "ok", "group": desc.group, "version": desc.version}
        return self.key.sign(Data(interest.name, msgpack.packb(body), freshness_ms=0))

    def _install_refused(self, interest: Interest, exc: ReductionError) -> Data:
        if exc.code in (403, 507):
            self._log_refusal("group announcement", exc)
        return self.key.sign(error_data(interest.name, str(exc.code), f"{self.node_id}: {exc}"))

    def _remote_contribution(self, interest: Interest) -> Data | None:
        """A contribution segment handed over by another node's client; with a
        trust schema, held until the validator has accepted (or refused) its
        signature: the contributor's certified key, as the schema allows for
        the contribution's name."""
        try:
            if not interest.app_params or not interest.params_ok():
                raise ReductionError(400, "a contribution carries its segment's Data in the parameters")
            try:
                data = decode(interest.app_params)
            except DecodeError as exc:
                raise ReductionError(400, f"malformed Data: {exc}") from None
            if not isinstance(data, Data) or data.name.comps[:4] != interest.name.comps[:4]:
                raise ReductionError(400, "the parameters must be the member's contribution Data")
            if self.validator is not None and self._spawn is not None:
                self._spawn(self._contribute_validated, interest, data)
                return None
            return self._stored_remote(interest, data)
        except ReductionError as exc:
            return self._contribution_refused(interest, exc)

    async def _contribute_validated(self, interest: Interest, data: Data) -> None:
        """A handed-over contribution under a trust schema: stored if the
        validator accepts it (the chain is cached per key: one signature
        check per segment after the first)."""
        assert self.validator is not None
        try:
            try:
                await self.validator.validate(data, self._fetch_cert)
            except VerificationError as exc:
                self.contrib.counters["contrib_refused"] += 1
                self.contrib.counters["contrib_refused_untrusted"] += 1
                raise ReductionError(403, f"contribution not trusted: {exc}") from None
            answer = self._stored_remote(interest, data)
        except ReductionError as exc:
            answer = self._contribution_refused(interest, exc)
        self._deliver(answer)

    def _stored_remote(self, interest: Interest, data: Data) -> Data:
        """Store a handed-over contribution; the signed answer (raises ReductionError)."""
        added = self.contribute(data, local=False)
        return self.key.sign(Data(interest.name, msgpack.packb({"added": int(added)}), freshness_ms=0))

    def _contribution_refused(self, interest: Interest, exc: ReductionError) -> Data:
        if exc.code in (403, 507):
            self._log_refusal("remote contribution", exc)
        return self.key.sign(error_data(interest.name, str(exc.code), f"{self.node_id}: {exc}"))

    # --- operations (local clients, through management) -------------------------------------
    def contribute(self, data: Data, *, local: bool = True, sign: bool = False, soon: bool = False) -> bool:
        """Store a member's contribution segment and answer anyone waiting for it.
        `local`: from this node's own clients (management), not handed over by
        another node.  `sign`: signed with the node's key first, so that a
        consumer of the contribution itself (a collective's bcast, gather, ...)
        verifies it through its validator as it does an aggregate.  `soon`:
        called from inside the forwarder (`take_pushed`): the answers to
        Interests held for it go in from a task of their own, not from here.

        Raises `ReductionError` for a contribution the node refuses."""
        if sign:
            data = self.key.sign(data)
        added = self.contrib.add(data, local=local)
        if added and self.contrib.take_pending(data, self._clock()):
            if soon:  # (from inside the forwarder: never into it again from here)
                assert self._spawn is not None, "a service taking pushed contributions needs spawn"
                self._spawn(self._deliver_soon, data)
            else:
                self._deliver(data)
        return added

    async def _deliver_soon(self, data: Data) -> None:
        self._deliver(data)

    def take_pushed(self, data: Data, desc: GroupDescriptor, rnd: int, seg: int) -> bool:
        """A contribution segment a local application pushed with its request
        for the aggregate (``c`` in the request's parameters; issue #30,
        docs/reduction.md#pushed-contributions): stored exactly as one handed
        over by ``reduce/contribute`` (the same checks, the same local trust:
        both come from this node's local faces), so a retransmitted request or
        a contribution given both ways is held once and counted once.  It must
        be the member's segment `seg` of round `rnd` of the group `desc`
        describes, and `desc` the newest version this node knows (412
        otherwise: the application's cached descriptor is stale; it reads the
        group again).  True if it was new.  Raises `ReductionError`."""
        parsed = parse_contrib_name(data.name.comps)
        if parsed is None or parsed[1:] != (desc.group, rnd, seg):
            raise ReductionError(400, f"{data.name}: a pushed contribution must be the member's segment {seg} of "
                                      f"{desc.group} round {rnd}, the aggregate asked for")
        latest = self.groups.latest(desc.group)
        if latest is not None and latest[0].version > desc.version:
            raise ReductionError(412, f"group {desc.group} is at version {latest[0].version}; the request names "
                                      f"version {desc.version}: read the group again")
        return self.contribute(data, soon=True)

    def create_group(self, desc: GroupDescriptor) -> Data:
        """Sign and keep a new version of a group made by a local client."""
        data = self.key.sign(desc.to_data())
        self.groups.add_local(desc, data, self.key.public_bytes())
        return data
