"""One icnd daemon: the forwarding core inside a trio shell.

The node owns the clock, the timer loop and its tables of faces, managers and
producers; the `Forwarder` core (`icnd.core.fw.forwarder`) owns every
forwarding decision.  A packet's way through the node:

1. It *enters* on a face (`icnd.faces`: UDP, TCP or Unix stream, in-memory,
   or an NDN application's stream, `icnd.ndn.face`).  A face is a transport:
   it hands whole packets, as bytes, to the receive function `_receiver`
   made for it when it joined the face table (`icnd.daemon.faces`).
2. It is *decoded* there by the face's link service (`icnd.faces.service`):
   icnd's codec on native faces, NDN TLV + NDNLPv2 on NDN faces (which also
   remembers PIT tokens).  A malformed packet is counted per face and per
   node, and dropped.
3. Management Interests are taken out before the forwarder, by the
   management of the face's format: ``/localhost/icnd/...`` from local native
   faces by the dispatcher and its managers (`icnd.daemon.mgmt`),
   ``/localhost/nfd/...`` (local) and ``/localhop/nfd/...`` on NDN faces by
   `icnd.ndn.management`.
4. Every other packet goes to the forwarder's pipelines: `Forwarder.on_packet`
   -> ``on_incoming_interest`` / ``on_incoming_data`` / ``on_incoming_nack``
   and what they call, in `icnd.core.fw.forwarder`.
5. The forwarder answers with `Send` actions; `_dispatch` encodes each with
   the destination face's link service and transmits it on the face (through
   its link emulator, `FaceTable.set_link`, when one is set).
6. Interests the FIB routes to the node itself (`INTERNAL_FACE`: names under
   ``/node/<me>``, what was published through the node) are answered by the
   producer table (`icnd.daemon.producers`): the repo and object store
   (`icnd.objects.service`), member contributions and group announcements
   (`icnd.reduction.service`), the certificates it holds
   (`icnd.daemon.certs`), and the node's ping, certificate and status; their
   answers go back into the forwarder as packets from the internal face.

Trust (interface §13): the node's key, certificate and trust schema are
loaded by `icnd.daemon.identity`; its one `icnd.trust.Validator` decides on
function callers (`icnd.compute.host`), group announcements and
contributions handed over by other nodes (`icnd.reduction.service`); it
fetches certificates through the node's in-process client
(`fetch_certificate`).  The node's own ``--function`` callables are hosted by
`icnd.daemon.functions`; what it reports about itself (``status/get``, the
status page) is rolled up by `icnd.daemon.status`.

Start-up is two-phase so that configuration errors and busy ports fail
before anything runs: `bind()` opens every listener and store, loads the
identity and builds the services and managers (raising `StartupError` with a
one-line message), then `serve()` runs until cancelled and closes every face
and listener, removing the socket file, on the way out.
"""

from __future__ import annotations

import errno
import logging
import math
import os
import sqlite3
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

import trio

from icnd.compute.registry import HostedFunction
from icnd.core.fw.forwarder import Forwarder, Send
from icnd.core.tables.fib import TableFull
from icnd.core.tables.rib import ORIGIN_APP, ORIGIN_STATIC
from icnd.core.routing.router import ROUTING_PREFIX, RouterConfig
from icnd.core.timers import TIMER_SLACK
from icnd.daemon.certs import CertificateTable
from icnd.daemon.config import NeighborConfig, NodeConfig
from icnd.daemon.containment import HandlerErrors
from icnd.faces.recvbuf import EAGER_FRAMES_BYTES, ByteBudget
from icnd.daemon.errors import StartupError
from icnd.daemon.faces import FaceTable
from icnd.daemon.functions import NodeFunctions
from icnd.daemon.identity import load_identity, warn_if_schema_refuses_link_state
from icnd.daemon.neighbors import NeighborWatch
from icnd.daemon.mgmt.cs import CsManager
from icnd.daemon.mgmt.dispatcher import Dispatcher
from icnd.daemon.mgmt.faces import FaceManager
from icnd.daemon.mgmt.functions import FunctionReports
from icnd.daemon.mgmt.groups import GroupManager
from icnd.daemon.mgmt.objects import ObjectManager
from icnd.daemon.mgmt.results import ResultHandOver
from icnd.daemon.mgmt.routes import RouteManager
from icnd.daemon.mgmt.routing import RoutingManager
from icnd.daemon.mgmt.status import StatusManager
from icnd.daemon.mgmt.strategy import StrategyManager
from icnd.daemon.producers import KeylessSigning, ProducerTable, add_node_producers
from icnd.daemon.routing import RoutingShell
from icnd.daemon.status import Status, StatusView, roll_up
from icnd.endpoint import resolve_socket_path
from icnd.errors import DecodeError
from icnd.faces import (
    Face,
    FaceLimits,
    Listener,
    LinkService,
    NothingToDeliver,
    OnReceive,
    PermanentFace,
    UdpListener,
    Unsendable,
    memory_face_pair,
    open_listener,
    parse_face_uri,
)
from icnd.faces.uri import parse_listen_uri
from icnd.name import Name
from icnd.objects.repo import Repo
from icnd.objects.service import ObjectService
from icnd.objects.store import ObjectStore
from icnd.packet import Data, Interest
from icnd.reduction.aggregate import Aggregator
from icnd.reduction.contrib import ContributionStore, GroupTable
from icnd.reduction.group import REDUCE
from icnd.reduction.service import ReductionService
from icnd.security import Ed25519Key, KeyChain
from icnd.trust import Certificate, Validator

if TYPE_CHECKING:
    from icnd.client import Client
    from icnd.daemon.http.server import StatusServer

__all__ = ["INTERNAL_FACE", "CommandReceiver", "Node", "StartupError"]

log = logging.getLogger("icnd.node")

INTERNAL_FACE = 1
ROUTING_SCOPE = ROUTING_PREFIX.comps
DEFAULT_PORT = 6363


class CommandReceiver(Protocol):
    """The management of one wire format, which the receive path consults before
    the forwarder: `icnd.daemon.mgmt.dispatcher.Dispatcher` ("icnd"),
    `icnd.ndn.management.NdnManagement` ("ndn")."""

    def scopes(self, face: Face) -> tuple[tuple[bytes, ...], ...]:
        """The first two name components of the Interests it takes from `face`."""
        ...

    def receive(self, face: Face, link: LinkService, interest: Interest) -> bool:
        """Take a management Interest (and answer it, now or later); False: forward it."""
        ...


def _no_command(face: Face, link: LinkService, interest: Interest) -> bool:
    return False


class Node:
    """One daemon; see the module docstring."""

    def __init__(self, config: NodeConfig) -> None:
        self.config = config
        self.name = config.node_name()
        self.socket_path = resolve_socket_path(config.socket)
        self.node_id = self.name.comps[-1][1:].decode("utf-8", "replace")
        # in-network aggregation: the forwarder's namespace handler for /reduce (icnd.core.hooks)
        self.aggregator = Aggregator(
            node_name=self.node_id,
            max_entries=config.aggregate_max_entries,
            max_bytes=int(config.aggregate_max_mb * 1024 * 1024),
            max_rounds=config.aggregate_max_rounds,
            face_max_rounds=config.aggregate_face_max_rounds,
        )
        self.fw = Forwarder(
            cs_capacity_bytes=int(config.cs_capacity_mb * 1024 * 1024),
            pit_max_entries=config.pit_max_entries,
            pit_max_bytes=int(config.pit_max_mb * 1024 * 1024),
            pit_max_bytes_per_face=int(config.pit_face_max_mb * 1024 * 1024),
            pit_local_reserve=config.pit_local_reserve_percent / 100,
            default_strategy=config.default_strategy,
            hooks={REDUCE: self.aggregator},
        )
        # bounded: announcements from other nodes cannot take the places kept for local groups
        self.groups = GroupTable(config.groups_max, local_reserve=config.groups_local_reserve,
                                 per_source=config.groups_per_source, remote_idle=config.groups_remote_idle_s)
        self.contrib = ContributionStore(self.groups, self.node_id,
                                         max_bytes=int(config.contrib_store_mb * 1024 * 1024))
        self.faces = FaceTable(first_id=INTERNAL_FACE + 1, receiver=self._receiver, on_up=self._on_face_up,
                               on_down=self._on_face_down)
        self._links = self.faces.links  # face id -> link service: the send path reads it per packet
        self.aggregator.reliable_state = self._reliable_state  # which next hops lose nothing (issue #30)
        self.aggregator.same_neighbor = self._same_neighbor  # which faces reach one neighbour (pushed up)
        self.mgmt = Dispatcher(self._spawn)
        # wire format -> its management, consulted by the receive path
        self.command_receivers: dict[str, CommandReceiver] = {"icnd": self.mgmt}
        self.producers = ProducerTable(self.name)
        self._listeners: list[Listener] = []
        # one budget of frame-sized receive buffers for all the node's stream listeners (TCP, Unix, NDN)
        self._eager_frames = ByteBudget(EAGER_FRAMES_BYTES)
        self._ndn_listeners: list[Listener] = []
        self._nursery: trio.Nursery | None = None
        self._timer_scope: trio.CancelScope | None = None
        self.started_at = time.time()
        self.keychain = KeyChain()
        self.mgmt_commands = 0
        self.handler_errors = HandlerErrors()
        self.ready = trio.Event()
        # the --function callables and their host (icnd.daemon.functions)
        self.functions = NodeFunctions(config, self.name, client=self.internal_client,
                                       fetch_cert=self.fetch_certificate)
        self.config_reloads = 0  # SIGHUP reloads applied, and refused (icnd.daemon.reload)
        self.config_reload_errors = 0
        self.neighbor_faces: list[tuple[PermanentFace, NeighborConfig]] = []  # --neighbor's faces (_apply_config)
        self.function_reports = FunctionReports(self.fw.rib)  # what Client.host hosts report (status page)
        self._internal: Client | None = None  # the in-process client on a memory face, once made
        self._internal_lock = trio.Lock()
        self._collective: Client | None = None  # the in-process client whose results local ranks share
        self.results = ResultHandOver(self.collective_client)  # aggregates handed to local ranks in shared memory
        # the certificates this node serves (its own, its anchors', its clients')
        self.certs = CertificateTable(lambda name: self.fw.add_route(name, INTERNAL_FACE, 0, ORIGIN_APP),
                                      lambda name: self.fw.rib.remove(name, INTERNAL_FACE, ORIGIN_APP),
                                      keep=lambda data: self.published.publish(data))
        # set by bind():
        self.key: Ed25519Key
        self.cert: Certificate  # the node's certificate (--cert, or self-signed)
        self.validator: Validator  # the one validator: function callers, group descriptors, contributions
        self.published: ObjectService  # repo and object store
        self.reduction: ReductionService  # groups and contributions
        self.keyless_signing: KeylessSigning  # what the node signs for keyless local applications
        self.routing: RoutingShell | None = None  # link-state routing ([routing] mode), made by bind()
        self.http: StatusServer | None = None  # the status page and /metrics (--http), bound by bind()

    # --- start-up -------------------------------------------------------------------
    async def bind(self) -> None:
        """Open every listener and store, load the identity, build the services; nothing runs yet."""
        cfg = self.config
        for spec in cfg.strategies.items():
            try:
                self.fw.strategies.set(Name(spec[0]), spec[1])
            except ValueError as exc:
                raise StartupError(f"strategy for {spec[0]}: {exc}") from None
        identity = load_identity(cfg, self.name, self.keychain)
        self.key, self.cert, self.validator = identity.key, identity.cert, identity.validator
        self.aggregator.signer = self.key.sign
        for group in cfg.groups:
            try:
                self.groups.add_config(group.descriptor())
            except ValueError as exc:
                raise StartupError(f"group {group.name}: {exc}") from None
        self.functions.load(self.validator)
        if cfg.routing.mode == "link-state":
            self.routing = self._make_routing()
            warn_if_schema_refuses_link_state(self.name, identity)
        capacity = int(cfg.repo_capacity_mb * 1024 * 1024)
        try:
            repo = Repo(capacity, cfg.data_dir or None)
            objects = ObjectStore(cfg.data_dir or None, capacity)
        except (OSError, sqlite3.Error) as exc:
            raise StartupError(f"store in {cfg.data_dir or 'a temporary directory'}: {exc}") from None
        self._build_services(repo, objects)
        try:
            await self._listen(f"unix://{os.path.abspath(self.socket_path)}")
            for uri in cfg.listen or ["0.0.0.0"]:
                await self._listen(uri)
            for uri in cfg.ndn_listen:
                await self._listen_ndn(uri)
            if cfg.http:
                self._bind_http(cfg.http)
        except BaseException:
            await self._close_listeners()
            raise

    def _bind_http(self, address: str) -> None:
        """The status page's socket (``--http``): bound now, so a bad address or a port in use fails start-up."""
        from icnd.daemon.config import parse_http_address
        from icnd.daemon.http.server import StatusServer

        http = StatusServer(self.status_view(), *parse_http_address(address))
        try:
            http.bind()
        except OSError as exc:
            raise StartupError(f"--http {address}: cannot serve the status page: {exc.strerror or exc}") from None
        self.http = http

    def _make_routing(self) -> RoutingShell:
        r = self.config.routing
        config = RouterConfig(hello_interval=r.hello_interval_s, dead_interval=r.dead_interval_s,
                              refresh=r.lsa_refresh_s, lifetime=r.lsa_lifetime_s, max_prefixes=r.max_prefixes,
                              max_record_bytes=r.max_record_kb * 1024, max_nodes=r.max_nodes,
                              max_routes=r.max_routes,
                              max_origins_per_neighbor=r.max_origins_per_neighbor if self.validator.schema is None
                              else 0)
        return RoutingShell(self.name, key=self.key, cert=self.cert, validator=self.validator, rib=self.fw.rib,
                            links=self._links, is_local=self._is_local_face, config=config,
                            errors=self.handler_errors,
                            on_hops=self.fw.route_hints if r.load_aware else None)

    def _is_local_face(self, face_id: int) -> bool:
        if face_id == INTERNAL_FACE:
            return True
        face = self.faces.get(face_id)
        return face is not None and face.local

    def _build_services(self, repo: Repo, objects: ObjectStore) -> None:
        """The node's producers and managers, each handed only what it serves."""
        fw = self.fw
        self.published = ObjectService(repo, objects, rib=fw.rib, cs=fw.cs, key=self.key, face=INTERNAL_FACE)
        self.keyless_signing = KeylessSigning(self.key, fw.rib, self.producers)
        self.reduction = ReductionService(self.name, self.key, self.groups, self.contrib,
                                          deliver=self.deliver, clock=trio.current_time, validator=self.validator,
                                          fetch_cert=self.fetch_certificate, spawn=self._spawn)
        producers = self.producers
        self.published.register(producers)
        self.reduction.register(producers)
        self.aggregator.push = self.reduction.take_pushed  # contributions pushed with local requests
        producers.add_store(self.certs.lookup)
        add_node_producers(producers, self.cert, self.key, self.status)
        if self.routing is not None:
            routing = self.routing
            producers.add(routing.records_prefix(),
                          lambda interest: routing.own_record(interest) or producers.no_such_data(interest))
        for manager in (
            StatusManager(self.status),
            FaceManager(self.faces),
            RouteManager(fw.rib, self.faces),
            CsManager(fw.cs),
            StrategyManager(fw.strategies),
            ObjectManager(self.published, self.certs.published),
            GroupManager(self.reduction),
            self.results,
            RoutingManager(self.routing),
            self.function_reports,
            self.keyless_signing,
            self.certs,
        ):
            self.mgmt.add(manager)

    async def fetch_certificate(self, key_name: Name) -> Data:
        """The validator's fetch: an Interest for `key_name` with CanBePrefix,
        expressed by the node's in-process client through its own forwarder
        (answered here when the node holds the certificate, else by the network)."""
        client = await self.internal_client()
        return await client.fetch_key(key_name, timeout=2.0)

    async def collective_client(self) -> Client:
        """The node's in-process client for collectives' results it hands to
        local ranks (`icnd.daemon.mgmt.results`): it verifies with the node's
        own validator (its trust schema, its chain cache), made once."""
        async with self._internal_lock:
            if self._collective is None:
                from icnd.client import Client

                assert self._nursery is not None, "node is not running"
                mine, theirs = memory_face_pair(local=True)
                self.faces.add(mine)
                client = Client(theirs, self._nursery, key=self.key, socket_path="internal")
                client.validator = self.validator
                self._nursery.start_soon(theirs.run, client.on_receive)
                self._collective = client
        return self._collective

    async def internal_client(self) -> Client:
        """The node's in-process client on a local memory face (made once):
        hosts --function and fetches what the node's validator needs."""
        async with self._internal_lock:
            if self._internal is None:
                from icnd.client import Client

                assert self._nursery is not None, "node is not running"
                mine, theirs = memory_face_pair(local=True)
                self.function_reports.internal_face = self.faces.add(mine).id
                client = Client(theirs, self._nursery, key=self.key, socket_path="internal")
                self._nursery.start_soon(theirs.run, client.on_receive)
                self._internal = client
        return self._internal

    def _face_limits(self) -> FaceLimits:
        """What the peers of one listener may make the node hold: connections, per source and in all,
        partial frames and UDP reassembly buffers."""
        cfg, mib = self.config, 1024 * 1024
        return FaceLimits(
            max_connections=cfg.stream_max_connections, max_per_source=cfg.stream_max_per_source,
            unix_max_connections=cfg.unix_max_connections, frame_timeout=cfg.stream_frame_timeout_s,
            udp_max_faces=cfg.udp_max_faces, reassembly_bytes=max(1, int(cfg.udp_reassembly_mb * mib)),
            reassembly_per_source=max(1, int(cfg.udp_reassembly_per_source_mb * mib)))

    async def _listen(self, uri: str) -> None:
        """Listen on `uri`, a face URI or a bare HOST (UDP and TCP on port 6363; `parse_listen_uri`)."""
        try:
            addresses = parse_listen_uri(uri)
        except ValueError as exc:
            raise StartupError(str(exc)) from None
        for parsed in addresses:
            try:
                listener = await open_listener(parsed, on_new_face=self._on_new_face, limits=self._face_limits(),
                                               eager_frames=self._eager_frames)
            except OSError as exc:
                reason = exc.strerror or str(exc)
                raise StartupError(f"cannot listen on {parsed}: {reason}") from None
            self._listeners.append(listener)
            if isinstance(listener, UdpListener):
                self.faces.udp_listeners.append(listener)

    async def _listen_ndn(self, uri: str) -> None:
        """A listener for NDN applications (`icnd.ndn.face`); its faces get NDN's
        link service and their ``/localhost/nfd`` Interests NDN's management."""
        try:
            parsed = parse_face_uri(uri)
        except ValueError as exc:
            raise StartupError(f"--ndn-listen: {exc}") from None
        if parsed.scheme not in ("unix", "tcp"):
            raise StartupError(f"--ndn-listen {uri}: expected unix:///path or tcp://HOST:PORT")
        try:
            from icnd.ndn.codec import NdnNameMap
            from icnd.ndn.face import NdnLinkService, open_ndn_listener
            from icnd.ndn.management import NdnManagement
        except ImportError as exc:
            raise StartupError(f"--ndn-listen: NDN support is not available: {exc}") from None
        # one params-digest translation memory for all the node's NDN faces: an Interest forwarded
        # from one NDN face to another keeps its NDN name and signature
        if "ndn" not in self.faces.link_services:
            self.faces.link_services["ndn"] = NdnLinkService.sharing(NdnNameMap())
        if "ndn" not in self.command_receivers:
            self.command_receivers["ndn"] = NdnManagement(
                self.faces, self.fw.rib, counters=self.fw.counters.as_dict, table_sizes=self.fw.table_sizes,
                started_at=lambda: self.started_at, clock=trio.current_time)
        if parsed.scheme == "unix":
            directory = os.path.dirname(parsed.path)
            try:
                os.makedirs(directory, exist_ok=True)  # NFD's /run/nfd: creating it needs root
            except OSError as exc:
                raise StartupError(f"cannot listen on {uri}: cannot create {directory}: "
                                   f"{exc.strerror or exc}") from None
        try:
            listener = await open_ndn_listener(parsed, on_new_face=self._on_new_face, limits=self._face_limits(),
                                               eager_frames=self._eager_frames)
        except OSError as exc:
            hint = ""
            if exc.errno == errno.EADDRINUSE and parsed.scheme == "tcp":
                hint = (f" (icnd's own listeners use TCP {DEFAULT_PORT} unless told otherwise: move them, e.g. "
                        f"--listen udp://0.0.0.0:{DEFAULT_PORT} --listen tcp://0.0.0.0:{DEFAULT_PORT + 1})")
            raise StartupError(f"cannot listen on {uri}: {exc.strerror or exc}{hint}") from None
        self._ndn_listeners.append(listener)

    def listen_uris(self) -> list[str]:
        return [listener.local_uri for listener in self._listeners]

    def ndn_listen_uris(self) -> list[str]:
        return [listener.local_uri for listener in self._ndn_listeners]

    async def _close_listeners(self) -> None:
        for listener in self._listeners + self._ndn_listeners:
            with trio.CancelScope(shield=True):
                await listener.aclose()
        self._listeners.clear()
        self._ndn_listeners.clear()
        self.faces.udp_listeners.clear()
        if self.http is not None:
            self.http.close()

    # --- running ----------------------------------------------------------------------
    async def serve(self, *, task_status: trio.TaskStatus[Node] = trio.TASK_STATUS_IGNORED) -> None:
        """Run until cancelled; `bind()` must have succeeded."""
        self.fw.add_face(INTERNAL_FACE, local=True)
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self.faces.start(nursery)
                for listener in self._listeners + self._ndn_listeners:
                    nursery.start_soon(listener.run)
                nursery.start_soon(self._timer_loop)
                nursery.start_soon(self.faces.close_idle, self.config.udp_idle_timeout_s)
                if self.routing is not None:
                    await nursery.start(self.routing.run)
                if self.http is not None:
                    await nursery.start(self.http.run)
                self.fw.add_route(self.name, INTERNAL_FACE, 0, ORIGIN_APP)
                self.published.announce()
                self.certs.add(self.cert, pinned=True)
                self.certs.add_all(self.validator.certificates(), pinned=True)
                for data in self.published.repo.names():  # certificates clients published before a restart
                    self.certs.published(data)
                await self._apply_config()
                if self.routing is not None:
                    for face, neighbor in self.neighbor_faces:
                        self.routing.add_neighbor(face, neighbor.cost)
                    r = self.config.routing
                    watch = NeighborWatch(self.routing.router, dead_interval=r.dead_interval_s,
                                          interval=r.hello_interval_s)
                    nursery.start_soon(watch.run)
                if self.functions.functions:
                    await self.functions.start(nursery, self.validator, self.socket_path)
                self.started_at = time.time()
                log.info("node %s ready on %s", self.name, ", ".join(self.listen_uris() + [
                    f"{uri} (NDN)" for uri in self.ndn_listen_uris()]))
                # a node without a data dir has a new key at every start; said at info level, since
                # a warning would be printed by every short-lived node (tests, demos)
                if not self.config.data_dir and not self.config.key:
                    log.info("no --data-dir: this node's identity %s is ephemeral (a new key at every start), "
                             "so Data it signed before a restart (cached aggregates, manifests) no longer "
                             "verifies; give it --data-dir to keep its key", self.key.name)
                self.ready.set()
                task_status.started(self)
        finally:
            with trio.CancelScope(shield=True):
                await self.faces.aclose()
                await self._close_listeners()
                self.published.close()
                self.results.close()
            log.info("node %s stopped", self.name)

    def _spawn(self, fn: Callable[..., Any], *args: Any) -> None:
        """Start a task in the node's nursery (a management command)."""
        assert self._nursery is not None, "node is not running"
        self._nursery.start_soon(fn, *args)

    async def _apply_config(self) -> None:
        """The configuration's faces, all permanent (made now, reconnected for as long as the node runs),
        and its static routes over them."""
        self.faces.reconnect = self.config.reconnect_policy()
        for neighbor in self.config.neighbors:
            try:
                self.neighbor_faces.append((await self.faces.open(neighbor.uri, permanent=True), neighbor))
            except (OSError, ValueError) as exc:
                log.warning("neighbor %s: %s", neighbor.uri, exc)
        for uri in self.config.faces:
            try:
                await self.faces.open(uri, permanent=True)
            except (OSError, ValueError) as exc:
                log.warning("face %s: %s", uri, exc)
        for route in self.config.routes:
            try:
                face = await self.faces.open(route.face, permanent=True)
                self.fw.add_route(Name(route.prefix), face.id, route.cost, ORIGIN_STATIC)
            except (OSError, ValueError, TableFull) as exc:
                log.warning("route %s via %s: %s", route.prefix, route.face, exc)

    async def set_functions(self, functions: list[HostedFunction]) -> None:
        """Host `functions` instead of the hosted ones (a configuration reload).

        The function host serves a fixed list, so it is replaced: the old one
        stops first (its prefixes' routes removed, calls in flight on it
        ended), then a new one serves the new list with the old counters
        carried over.  Stopping first matters: both would serve through the
        same in-process client, and the old one's route removal on its way
        out would take the new one's routes with it."""
        assert self._nursery is not None, "node is not running"
        await self.functions.replace(functions, self._nursery, self.validator, self.socket_path)

    # --- faces ------------------------------------------------------------------------------
    def _on_new_face(self, face: Face) -> None:
        self.faces.add(face)

    def _same_neighbor(self, a: int, b: int) -> bool:
        """Whether faces `a` and `b` reach the same neighbour node, as link-state
        routing has proven it (each connection of a pair of nodes is a face)."""
        if a == b:
            return True
        if self.routing is None:
            return False
        nb = self.routing.router.neighbor_face(a)
        return nb is not None and nb == self.routing.router.neighbor_face(b)

    def _reliable_state(self, face_id: int) -> tuple[int, bool] | None:
        """A next hop's `Face.reliable_state`, for the aggregator; None behind a
        link emulator (`face link`), which may drop packets."""
        face = self.faces.get(face_id)
        if face is None or self.faces.shaper(face_id) is not None:
            return None
        return face.reliable_state()

    def _on_face_up(self, face: Face) -> None:
        self.fw.add_face(face.id, local=face.local)

    def _on_face_down(self, face: Face) -> None:
        self.keyless_signing.face_down(face.id)
        self.certs.face_down(face.id)
        self._dispatch(self.fw.on_face_down(face.id, trio.current_time()))
        if self.routing is not None:
            self.routing.face_down(face.id)

    # --- packets -------------------------------------------------------------------------------
    def _receiver(self, face: Face, link: LinkService) -> OnReceive:
        """The function `face.run` calls with each packet it receives: the one receive path.

        decode (the face's link service) -> management of the face's format ->
        forwarder -> `_dispatch`.  Made once per face, so that everything it
        needs per packet is a local name: this is the forwarding fast path."""
        decode = link.decode
        on_packet = self.fw.on_packet
        dispatch = self._dispatch
        node_counters = self.fw.counters
        current_time = trio.current_time
        face_id = face.id
        management = self.command_receivers.get(link.wire_format)
        scopes = management.scopes(face) if management is not None else ()
        command = management.receive if management is not None else _no_command
        # link-state routing messages from neighbours: to the routing shell, never the forwarder
        routing = self.routing if link.wire_format == "icnd" and not face.local else None
        # a local application's Data: signed by the node if the application asked (KeylessSigning)
        vouch = self.keyless_signing.sign if link.wire_format == "icnd" and face.local else None

        errors = self.handler_errors

        def on_receive(face: Face, wire: bytes) -> None:
            try:
                packet = decode(wire)
            except NothingToDeliver:
                return
            except DecodeError as exc:
                face.counters.decode_errors += 1
                node_counters.decode_errors += 1
                log.debug("face %d: dropped malformed packet: %s", face_id, exc)
                return
            except Exception as exc:  # a defect in a link service: one packet lost, never the face
                errors.caught("forwarder", f"a packet of {len(wire)} bytes from face {face_id}", exc)
                return
            component = "forwarder"
            try:
                if routing is not None and packet.name.comps[:3] == ROUTING_SCOPE:
                    component = "routing"
                    routing.receive(face, packet)
                    return
                if scopes and type(packet) is Interest and packet.name.comps[:2] in scopes:
                    component = "management"
                    if command(face, link, packet):
                        self.mgmt_commands += 1
                        self._rearm_timer()  # a command may add a timer (an NDN registration's expiry)
                        return
                    component = "forwarder"
                if vouch is not None and type(packet) is Data:
                    packet = vouch(face_id, packet)
                dispatch(on_packet(face_id, packet, current_time()))
            except Exception as exc:  # see icnd.daemon.containment
                errors.caught(component, f"{type(packet).__name__} {packet.name} from face {face_id}", exc)

        return on_receive

    def _dispatch(self, actions: Iterable[Send]) -> None:
        """Carry out the forwarder's actions: each packet, encoded by its face's
        link service, onto that face; Interests for the internal face to the
        producer table, whose answers go back into the forwarder."""
        internal: list[Interest] = []
        links = self._links
        while True:
            for face_id, packet in actions:
                link = links.get(face_id)
                if link is not None:
                    try:
                        link.transmit(link.encode(packet))
                    except Unsendable:
                        pass
                elif face_id == INTERNAL_FACE and type(packet) is Interest:
                    internal.append(packet)
            if not internal:
                break
            produced = self.producers.produce(internal.pop())
            if produced is None:  # held: answered later through deliver()
                actions = ()
                continue
            actions = self.fw.on_packet(INTERNAL_FACE, produced, trio.current_time())
        self._rearm_timer()

    def deliver(self, data: Data) -> None:
        """A Data the node produces later (a held Interest's answer): into the
        forwarder, from the internal face."""
        self._dispatch(self.fw.on_packet(INTERNAL_FACE, data, trio.current_time()))

    # --- timers ---------------------------------------------------------------------------------
    async def _timer_loop(self) -> None:
        timers = self.fw.timers
        while True:
            deadline = self.fw.next_deadline()
            timers.pushed_min = math.inf  # next_deadline accounts for everything pushed so far
            wake = math.inf if deadline is None else deadline + TIMER_SLACK  # timers due meanwhile: one pass
            with trio.CancelScope(deadline=wake) as scope:
                self._timer_scope = scope
                await trio.sleep_forever()
            self._timer_scope = None
            try:
                self._dispatch(self.fw.on_timer(trio.current_time()))
            except Exception as exc:  # see icnd.daemon.containment
                self.handler_errors.caught("timers", "the forwarder's timers", exc)

    def _rearm_timer(self) -> None:
        """Move the timer task's wake-up earlier if a packet pushed an earlier timer."""
        timers = self.fw.timers
        earliest = timers.pushed_min
        if earliest != math.inf:
            timers.pushed_min = math.inf
            scope = self._timer_scope
            if scope is not None and earliest + TIMER_SLACK < scope.deadline:
                scope.deadline = earliest + TIMER_SLACK

    # --- status -----------------------------------------------------------------------------------
    @property
    def listeners(self) -> list[Listener]:
        """Every listener: icnd's, then NDN's."""
        return self._listeners + self._ndn_listeners

    def status(self) -> Status:
        """The node's status report (`icnd.daemon.status.roll_up`)."""
        return roll_up(self)

    def status_view(self) -> StatusView:
        """What the status page and /metrics read (`icnd.daemon.status.StatusView`)."""
        return StatusView(status=self.status, faces=self.faces, rib=self.fw.rib, fib=self.fw.fib,
                          reductions=self.aggregator.entries, groups=self.groups,
                          router=self.routing.router if self.routing is not None else None,
                          functions=self.functions, function_reports=self.function_reports)
