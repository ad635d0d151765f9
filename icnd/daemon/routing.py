"""The node's link-state routing: the sans-IO `Router` in a trio shell.

What the shell adds to `icnd.core.routing.router.Router` (whose rules say
what routing does):

- **I/O.** Routing packets from non-local native faces are handed over by
  the node's receive path (`receive`) before the forwarder sees them;
  `Transmit` actions are encoded by the face's link service and sent on
  that face; `RouteUpdate` actions replace the ``routing`` routes of a
  prefix in the RIB (`Rib.set_routes`), where static and application
  routes keep theirs.  One task sleeps until the router's next deadline.
- **Neighbours.** Each ``--neighbor`` face (permanent: it outlives its
  peer's restarts) is a router neighbour; the face's connection state
  (``on_state``) is the router's link state.
- **Signing and believing.** Own records and hello proofs are signed with
  the node's key and carry its certificate; a received record or proof is
  believed through the node's one `Validator` (`routing_verifier`:
  `Validator.validate_carried`, with the certificates it carries): signed by
  a key under the node name it describes, and, with a trust schema, by a
  certificate chain the schema accepts (a rule for ``/node/<n>/routing/...``
  signed by ``/node/<n>/KEY/...``); without one, the router keeps the first
  key seen for each node name (its Rule 10).
- **Containment.** A defect raised by the router on a timer pass is
  caught, counted (``handler_errors_routing_timers``) and logged; on a
  received packet the node's receive path does the same
  (`icnd.daemon.containment`).
- **Its record as named Data.** Besides neighbours' fetches, anyone can
  ask for ``/node/<n>/routing/ls`` (CanBePrefix: the newest version) and
  get the node's own signed record, cached on the way like any Data.
- **Announcements.** What the node originates: its own name; every prefix
  announced with `announce` (until `withdraw`); every prefix with a
  non-routing route through a local face (an application's `serve`/`host`,
  an NDN application's ``rib/register``, a name published through the node
  -- gone when the application's face goes or the name is unpublished);
  minus ``/localhost``/``/localhop`` names and those another announced
  prefix covers.  At most ``max_prefixes``: beyond, the node prefix and
  explicit announcements win, the rest are left out, counted
  (``announcements_dropped``) and logged.  Function hosts report their
  capacity and load (`set_load`), announced with their prefix.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Callable, Iterable
from typing import Any

import trio

from icnd.codec import decode, encode
from icnd.core.routing.lsdb import record_name
from icnd.core.routing.router import Hop, RouteUpdate, Router, RouterConfig, Transmit, is_routing_name
from icnd.core.tables.fib import TableFull
from icnd.core.tables.rib import ORIGIN_ROUTING, Rib
from icnd.daemon.containment import HandlerErrors
from icnd.errors import CommandError, VerificationError
from icnd.faces import Face, LinkService, Unsendable
from icnd.name import Name, generic
from icnd.packet import Data, Interest, Packet, SigType
from icnd.security import KEY_ID_LEN, SigningKey, make_data
from icnd.trust import Certificate, Validator
from icnd.trust.cert import CertificateError, key_name_of, parse_key_data

log = logging.getLogger("icnd.routing")

ANNOUNCE_DEBOUNCE = 0.02  # RIB changes within this are announced together
_ROUTING_COMP = generic("routing")
_SCOPED = (Name("/localhost").comps[0], Name("/localhop").comps[0])


class RoutingShell:
    """One node's routing (see the module docstring); also the management's
    `icnd.daemon.mgmt.routing.RoutingControl`."""

    def __init__(self, name: Name, *, key: SigningKey, cert: Certificate, validator: Validator, rib: Rib,
                 links: dict[int, LinkService], is_local: Callable[[int], bool],
                 config: RouterConfig | None = None,
                 on_hops: Callable[[Name, tuple[Hop, ...]], None] | None = None,
                 errors: HandlerErrors | None = None) -> None:
        self.name = name
        self._errors = errors or HandlerErrors()
        self._key = key
        self._validator = validator
        self._rib = rib
        self._links = links
        self._is_local = is_local
        self._on_hops = on_hops
        self.router = Router(name, sign=self._sign, verify=routing_verifier(validator), now=trio.current_time(),
                             certs=(encode(cert.data),),
                             config=config, version_base=int(time.time() * 1000))
        self.explicit: set[Name] = set()
        self.loads: dict[Name, tuple[int | None, int | None]] = {}
        self._local: set[Name] = set()  # prefixes with a non-routing route through a local face
        self.counters = {"announcements_dropped": 0, "announcements_refused": 0, "routes_refused": 0,
                         "send_failures": 0}
        self._announce_at = math.inf
        self._scope: trio.CancelScope | None = None
        self._dropped_logged = 0
        rib.on_change.append(self._rib_changed)
        self._announce_at = trio.current_time()

    # --- the router's callbacks -----------------------------------------------------------
    def _sign(self, name: Name, content: bytes) -> Data:
        return make_data(name, content, key=self._key)

    # --- running ----------------------------------------------------------------------------
    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Until cancelled: wake at the router's deadlines and at announcement changes."""
        task_status.started()
        while True:
            wake = min(self.router.next_deadline(), self._announce_at)
            with trio.CancelScope(deadline=wake) as scope:
                self._scope = scope
                await trio.sleep_forever()
            self._scope = None
            now = trio.current_time()
            try:
                if now >= self._announce_at:
                    self._announce_at = math.inf
                    self._apply(self.router.set_prefixes(self._announcements(), now))
                if now >= self.router.next_deadline():
                    self._apply(self.router.on_timer(now))
            except Exception as exc:  # see icnd.daemon.containment: a defect costs one pass, never the node
                self._errors.caught("routing_timers", "the routing timers", exc)
                if self.router.next_deadline() <= now:
                    await trio.sleep(self.router.config.hello_interval)  # never a busy loop on a failing timer

    def _rearm(self) -> None:
        scope = self._scope
        if scope is not None:
            wake = min(self.router.next_deadline(), self._announce_at)
            if wake < scope.deadline:
                scope.deadline = wake

    def _apply(self, actions: Iterable[Transmit | RouteUpdate]) -> None:
        for action in actions:
            if type(action) is Transmit:
                link = self._links.get(action.face)
                if link is None:
                    self.counters["send_failures"] += 1
                    continue
                try:
                    link.transmit(link.encode(action.packet))
                except Unsendable:
                    self.counters["send_failures"] += 1
            else:
                assert type(action) is RouteUpdate
                self._install(action)
        self._rearm()

    def _install(self, update: RouteUpdate) -> None:
        hops = {h.face: h.cost for h in update.nexthops if h.face in self._links}
        try:
            self._rib.set_routes(update.prefix, ORIGIN_ROUTING, hops)
        except (TableFull, ValueError) as exc:
            self.counters["routes_refused"] += 1
            log.warning("routes for %s not installed: %s", update.prefix, exc)
            return
        if self._on_hops is not None:
            self._on_hops(update.prefix, update.nexthops)

    # --- neighbours and packets ---------------------------------------------------------------
    def add_neighbor(self, face: Face, cost: int) -> None:
        connected = getattr(face, "connected", True)
        self.router.add_neighbor(face.id, cost, face.remote_uri, link_up=connected)
        if hasattr(face, "on_state"):
            face_id = face.id

            def on_state(up: bool) -> None:
                try:
                    self._apply(self.router.link_state(face_id, up, trio.current_time()))
                except Exception as exc:  # see icnd.daemon.containment
                    self._errors.caught("routing_timers", f"face {face_id} going {'up' if up else 'down'}", exc)

            face.on_state = on_state
        self._rearm()

    def face_down(self, face: int) -> None:
        """A face left the face table (a neighbour face only when destroyed)."""
        if face in self.router.neighbors:
            self._apply(self.router.remove_neighbor(face, trio.current_time()))
        else:
            self.router.face_gone(face)

    def receive(self, face: Face, packet: Packet) -> None:
        """A routing packet from a non-local face (the node's receive path checked `wants`);
        a Nack is dropped (the router takes Interests and Data only, and retries on its own timers)."""
        now = trio.current_time()
        if type(packet) is Interest:
            self._apply(self.router.on_interest(face.id, packet, now))
        elif type(packet) is Data:
            self._apply(self.router.on_data(face.id, packet, now))

    @staticmethod
    def wants(comps: tuple[bytes, ...]) -> bool:
        return is_routing_name(comps)

    # --- the node's own record, as named Data ----------------------------------------------------
    def records_prefix(self) -> tuple[bytes, ...]:
        """``<node>/routing/ls``: where the node's own record is served to anyone (not only neighbours)."""
        return self.name.comps + record_name(self.name, 0).comps[len(self.name.comps):-1]

    def own_record(self, interest: Interest) -> Data | None:
        """The node's current record, for an Interest naming it (or, with CanBePrefix, its prefix);
        None when the Interest asks for another version."""
        record = self.router.lsdb.get(self.router.me)
        if record is None:
            return None
        data = decode(record.wire)
        assert isinstance(data, Data)
        comps, want = data.name.comps, interest.name.comps
        if comps == want or (interest.can_be_prefix and comps[:len(want)] == want):
            return data
        return None

    # --- announcements -------------------------------------------------------------------------
    def _rib_changed(self, prefix: Name) -> None:
        if prefix.comps and prefix.comps[0] in _SCOPED:
            return
        local = any(r.origin != ORIGIN_ROUTING and self._is_local(r.face) for r in self._rib.routes(prefix))
        if local == (prefix in self._local):
            return
        if local:
            self._local.add(prefix)
        else:
            self._local.discard(prefix)
        self._changed()

    def _changed(self) -> None:
        if self._announce_at == math.inf:
            self._announce_at = trio.current_time() + ANNOUNCE_DEBOUNCE
            self._rearm()

    def _announcements(self) -> dict[str, tuple[int | None, int | None]]:
        limit = self.router.config.max_prefixes
        first = [self.name, *sorted(self.explicit)]
        rest = sorted(self._local - self.explicit - {self.name}, key=lambda n: (len(n), n))
        chosen: dict[tuple[bytes, ...], Name] = {}
        dropped = 0
        for prefix in first + rest:
            comps = prefix.comps
            if any(comps[:i] in chosen for i in range(1, len(comps))):
                continue  # covered by an announced prefix
            if len(chosen) >= limit:
                dropped += 1
                continue
            chosen[comps] = prefix
        if dropped:
            self.counters["announcements_dropped"] += dropped
            if dropped != self._dropped_logged:
                log.warning("announcing %d prefixes, the limit (routing max_prefixes); %d left out", limit, dropped)
        self._dropped_logged = dropped
        for prefix in [p for p in self.loads if p not in self._local]:
            del self.loads[prefix]  # its host went
        return {p.to_uri(): self.loads.get(p, (None, None)) for p in chosen.values()}

    # --- management (RoutingControl) ---------------------------------------------------------
    def announce(self, prefix: Name) -> None:
        if prefix.comps and prefix.comps[0] in _SCOPED:
            raise CommandError(400, f"{prefix}: /localhost and /localhop names are never announced")
        if prefix not in self.explicit and len(self.explicit) + 1 >= self.router.config.max_prefixes:
            self.counters["announcements_refused"] += 1
            raise CommandError(409, f"{prefix}: this node already announces {len(self.explicit)} prefixes "
                                    f"explicitly; the limit is routing max_prefixes "
                                    f"({self.router.config.max_prefixes})")
        self.explicit.add(prefix)
        self._changed()

    def withdraw(self, prefix: Name) -> bool:
        if prefix not in self.explicit:
            return False
        self.explicit.discard(prefix)
        self._changed()
        return True

    def set_load(self, prefix: Name, capacity: int | None, load: int | None) -> None:
        """A function host's capacity (workers) and load (calls running or queued) for `prefix`."""
        if prefix not in self._local:
            raise CommandError(404, f"{prefix}: no local application serves it here")
        if self.loads.get(prefix) != (capacity, load):
            self.loads[prefix] = (capacity, load)
            self._changed()

    def status(self) -> dict[str, Any]:
        out = self.router.status(trio.current_time())
        out["routing"] = "link-state"
        out["counters"].update(self.counters)
        return out


def routing_verifier(validator: Validator) -> Callable[[Data, tuple[bytes, ...]], bytes]:
    """The router's `verify`: the one policy path for link state and hello proofs.

    A Data named ``<node>/routing/...`` must be signed by a key of that node
    and believed by `validator` (`Validator.validate_carried`, with the
    certificates it carries); returns who signed, for the router's key rule
    (Rule 10): with a trust schema nothing (the schema decides), without one
    the key name -- whose key id is the hash of the key, checked here for
    every certificate carried, so the name stands for the key itself."""

    def verify(data: Data, certs: tuple[bytes, ...]) -> bytes:
        comps = data.name.comps
        try:
            at = comps.index(_ROUTING_COMP, 1)
        except ValueError:
            raise VerificationError(f"{data.name}: not a routing name") from None
        origin = Name.from_wire(comps[:at])
        locator = data.key_locator
        if data.sig_type != SigType.ED25519 or locator is None or not origin.is_prefix_of(locator):
            raise VerificationError(f"{data.name}: signed by {locator or 'nobody'}, not by a key of {origin}")
        carried = []
        for wire in certs:
            try:
                cert = decode(wire)
            except Exception as exc:  # DecodeError: the record carries garbage
                raise VerificationError(f"{data.name}: carries an undecodable certificate ({exc})") from None
            if isinstance(cert, Data):
                _check_key_id(data.name, cert)
                carried.append(cert)
        validator.validate_carried(data, carried)
        return b"" if validator.schema is not None else locator.to_uri().encode()

    return verify


def _check_key_id(subject: Name, cert: Data) -> None:
    """A carried certificate's key id must be the hash of the key it carries
    (as `icnd.security` names keys), or a forger could name its own key after
    a node's and have it cached in that key's place."""
    key = key_name_of(cert.name)
    if key is None:
        return
    try:
        public = parse_key_data(cert)
    except CertificateError as exc:
        raise VerificationError(f"{subject}: carries a bad certificate {cert.name} ({exc})") from None
    if key.comps[-1] != generic(hashlib.sha256(public).digest()[:KEY_ID_LEN]):
        raise VerificationError(f"{subject}: carries a certificate {cert.name} whose key id is not its key's")
