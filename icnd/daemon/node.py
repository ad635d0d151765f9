"""One icnd daemon: the forwarding core inside a trio shell.

The node owns the faces, the clock and the timer loop; the `Forwarder` core
owns every forwarding decision.  Packet path: a face hands bytes to
`_on_receive` -> decode (malformed: counted per face and per node, dropped)
-> management commands from local faces are answered here -> everything else
goes to `fw.on_packet` -> the returned `Send` actions are encoded onto faces.

The node is also a producer (the *internal face*): it serves its own prefix
``/node/<name>`` (its public key, a ping responder, its status) and the Data
that applications published through it (`Repo`, persistent with a data
directory).

NDN faces (``--ndn-listen``, `icnd.ndn`): connections from unmodified NDN
applications carry NDN TLV instead of msgpack.  They are not in `_senders`
(so the native path is untouched): their packets are decoded by
`_on_receive_ndn` and go out through their `NdnLink` (`_ndn_links`), which
encodes to NDN (DigestSha256-signing Data) and echoes PIT tokens;
``/localhost/nfd`` commands from them are answered by `NdnManagement`.

Start-up is two-phase so that configuration errors and busy ports fail
before anything runs: `bind()` opens every listener (raising `StartupError`
with a one-line message), then `serve()` runs until cancelled and closes
every face and listener, removing the socket file, on the way out.
"""

from __future__ import annotations

import errno
import itertools
import logging
import math
import os
import sqlite3
import time
from typing import Any, Callable

import msgpack
import trio

from icnd import __version__
from icnd.codec import decode, encode
from icnd.daemon.config import NodeConfig, resolve_socket_path
from icnd.core.tables.fib import TableFull
from icnd.core.fw.forwarder import Forwarder
from icnd.core.timers import TIMER_SLACK
from icnd.errors import DecodeError
from icnd.compute.registry import HostedFunction, hosted, load_callable
from icnd.compute.rice import HOST_COUNTERS, HOST_TABLES
from icnd.faces import Face, UdpListener, connect_face, memory_face_pair, open_listener, parse_face_uri
from icnd.faces.link import LinkModel, LinkParams, ShapedSender
from icnd.name import LOCALHOST, Name, generic
from icnd.packet import ContentType, Data, Interest, Nack, NackReason
from icnd.objects.store import ObjectStore
from icnd.reduction.contrib import ContributionStore, GroupTable, ReductionError
from icnd.reduction.group import CONTRIBUTE, GroupDescriptor, MEMBER
from icnd.objects.repo import Repo
from icnd.security import Ed25519Key, KeyChain

log = logging.getLogger("icnd.node")

INTERNAL_FACE = 1
_NFD_SCOPES = (generic("localhost"), generic("localhop"))
MGMT_PREFIX = (LOCALHOST, generic("icnd"))
DEFAULT_PORT = 6363
IDLE_SWEEP_INTERVAL = 30.0
IDENTITY_FILE = "identity.key"


class StartupError(Exception):
    """The node cannot start (bad address, port in use, unusable data dir)."""


class Node:
    INTERNAL_FACE = INTERNAL_FACE

    def __init__(self, config: NodeConfig) -> None:
        self.config = config
        self.name = config.node_name()
        self.socket_path = resolve_socket_path(config.socket)
        self.fw = Forwarder(
            cs_capacity_bytes=int(config.cs_capacity_mb * 1024 * 1024),
            pit_max_entries=config.pit_max_entries,
            default_strategy=config.default_strategy,
        )
        self.node_id = self.name.comps[-1][1:].decode("utf-8", "replace")
        agg = self.fw.aggregator
        agg.node_name = self.node_id
        agg.max_entries = config.aggregate_max_entries
        agg.max_bytes = int(config.aggregate_max_mb * 1024 * 1024)
        agg.max_rounds = config.aggregate_max_rounds
        self.groups = GroupTable()
        self.contrib = ContributionStore(self.groups, self.node_id,
                                         max_bytes=int(config.contrib_store_mb * 1024 * 1024))
        self.faces: dict[int, Face] = {}
        # face id -> the function that puts bytes on it: face.send, or a link
        # emulator's send when the face has emulated delay/loss/bandwidth
        self._senders: dict[int, Callable[[bytes], None]] = {}
        self.links: dict[int, tuple[ShapedSender, trio.CancelScope]] = {}
        # face id -> NdnLink, for faces speaking the NDN format (not in _senders)
        self._ndn_links: dict[int, Any] = {}
        self._ndn_listeners: list = []
        self._decode_ndn: Callable[[bytes], tuple[Any, Any]] | None = None
        self._ndn_idle: Any = ()  # icnd.ndn.codec.IdlePacket once NDN is in use
        self.ndn_mgmt: Any = None
        self._face_ids = itertools.count(INTERNAL_FACE + 1)
        self._listeners: list = []
        self._udp: list[UdpListener] = []
        self._nursery: trio.Nursery | None = None
        self._timer_scope: trio.CancelScope | None = None
        self._idle_seen: dict[int, tuple[int, float]] = {}
        self.started_at = time.time()
        self.key: Ed25519Key | None = None
        self.keychain = KeyChain()
        self.repo: Repo | None = None
        self.objects: ObjectStore | None = None
        self.mgmt_commands = 0
        self.ready = trio.Event()
        self._functions: list[HostedFunction] = []
        self.function_host: Any = None
        from icnd.daemon.mgmt import Management

        self.mgmt = Management(self)

    # --- start-up -------------------------------------------------------------------
    async def bind(self) -> None:
        """Open every listener and load the identity and store; nothing runs yet."""
        cfg = self.config
        for spec in cfg.strategies.items():
            try:
                self.fw.strategies.set(Name(spec[0]), spec[1])
            except ValueError as exc:
                raise StartupError(f"strategy for {spec[0]}: {exc}") from None
        self._load_identity()
        assert self.key is not None
        self.fw.aggregator.signer = self.key.sign
        for group in cfg.groups:
            try:
                self.groups.add_config(group.descriptor())
            except ValueError as exc:
                raise StartupError(f"group {group.name}: {exc}") from None
        try:
            self._functions = [hosted(f.prefix, load_callable(f.target), f.allow, target=f.target)
                               for f in cfg.functions]
        except ValueError as exc:
            raise StartupError(f"--function: {exc}") from None
        capacity = int(cfg.repo_capacity_mb * 1024 * 1024)
        try:
            self.repo = Repo(capacity, cfg.data_dir or None)
            self.objects = ObjectStore(cfg.data_dir or None, capacity)
        except (OSError, sqlite3.Error) as exc:
            raise StartupError(f"store in {cfg.data_dir or 'a temporary directory'}: {exc}") from None
        try:
            await self._listen(f"unix://{os.path.abspath(self.socket_path)}")
            for uri in cfg.listen or ["0.0.0.0"]:
                for expanded in _expand_listen(uri):
                    await self._listen(expanded)
            for uri in cfg.ndn_listen:
                await self._listen_ndn(uri)
        except BaseException:
            await self._close_listeners()
            raise

    def _load_identity(self) -> None:
        identity = self.name
        data_dir = self.config.data_dir
        path = os.path.join(data_dir, IDENTITY_FILE) if data_dir else None
        try:
            if path and os.path.exists(path):
                with open(path, "rb") as f:
                    self.key = Ed25519Key.from_bytes(f.read())
            else:
                self.key = Ed25519Key.generate(identity)
                if path:
                    os.makedirs(data_dir, exist_ok=True)
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                    with os.fdopen(fd, "wb") as f:
                        f.write(self.key.to_bytes())
        except (OSError, ValueError) as exc:
            raise StartupError(f"identity in {data_dir}: {exc}") from None
        self.keychain.add_signing_key(self.key)

    async def _listen(self, uri: str) -> None:
        try:
            parsed = parse_face_uri(uri)
        except ValueError as exc:
            raise StartupError(str(exc)) from None
        try:
            listener = await open_listener(parsed, on_new_face=self._on_new_face)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise StartupError(f"cannot listen on {uri}: {reason}") from None
        self._listeners.append(listener)
        if isinstance(listener, UdpListener):
            self._udp.append(listener)

    async def _listen_ndn(self, uri: str) -> None:
        """A listener for NDN applications (`icnd.ndn.face`)."""
        try:
            parsed = parse_face_uri(uri)
        except ValueError as exc:
            raise StartupError(f"--ndn-listen: {exc}") from None
        if parsed.scheme not in ("unix", "tcp"):
            raise StartupError(f"--ndn-listen {uri}: expected unix:///path or tcp://HOST:PORT")
        try:
            from icnd.ndn.codec import IdlePacket, decode_ndn
            from icnd.ndn.face import open_ndn_listener
            from icnd.ndn.management import NdnManagement
        except ImportError as exc:
            raise StartupError(f"--ndn-listen: NDN support is not available: {exc}") from None
        self._decode_ndn = decode_ndn
        self._ndn_idle = IdlePacket
        if self.ndn_mgmt is None:
            self.ndn_mgmt = NdnManagement(self)
        if parsed.scheme == "unix":
            directory = os.path.dirname(parsed.path)
            try:
                os.makedirs(directory, exist_ok=True)  # NFD's /run/nfd: creating it needs root
            except OSError as exc:
                raise StartupError(f"cannot listen on {uri}: cannot create {directory}: "
                                   f"{exc.strerror or exc}") from None
        try:
            listener = await open_ndn_listener(parsed, on_new_face=self._on_new_face)
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

    def ndn_link(self, face_id: int) -> Any:
        """The `NdnLink` of an NDN face (None for a native face)."""
        return self._ndn_links.get(face_id)

    async def _close_listeners(self) -> None:
        for listener in self._listeners + self._ndn_listeners:
            with trio.CancelScope(shield=True):
                await listener.aclose()
        self._listeners.clear()
        self._ndn_listeners.clear()
        self._udp.clear()

    # --- running ----------------------------------------------------------------------
    async def serve(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Run until cancelled; `bind()` must have succeeded."""
        self.fw.add_face(INTERNAL_FACE, local=True)
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                for listener in self._listeners + self._ndn_listeners:
                    nursery.start_soon(listener.run)
                nursery.start_soon(self._timer_loop)
                nursery.start_soon(self._idle_sweep)
                self._announce_own_routes()
                await self._apply_config()
                if self._functions:
                    await self._start_function_host(nursery)
                self.started_at = time.time()
                log.info("node %s ready on %s", self.name, ", ".join(self.listen_uris() + [
                    f"{uri} (NDN)" for uri in self.ndn_listen_uris()]))
                self.ready.set()
                task_status.started(self)
        finally:
            with trio.CancelScope(shield=True):
                for face in list(self.faces.values()):
                    await face.aclose()
                await self._close_listeners()
                if self.repo is not None:
                    self.repo.close()
                if self.objects is not None:
                    self.objects.close()
            log.info("node %s stopped", self.name)

    async def _apply_config(self) -> None:
        for uri in self.config.faces:
            try:
                await self.face_for_uri(uri)
            except (OSError, ValueError) as exc:
                log.warning("face %s: %s", uri, exc)
        for route in self.config.routes:
            try:
                face = await self.face_for_uri(route.face)
                self.fw.add_route(Name(route.prefix), face.id, route.cost)
            except (OSError, ValueError, TableFull) as exc:
                log.warning("route %s via %s: %s", route.prefix, route.face, exc)

    async def _start_function_host(self, nursery: trio.Nursery) -> None:
        """Host --function callables through an in-process client on a local
        memory face: the same protocol code as `Client.host`, signed with the
        node's key."""
        from icnd.client.door import Client
        from icnd.compute.rice import FunctionHost, HostLimits

        # functions that use icnd themselves (icnd.connect()) reach this node
        os.environ["ICND_SOCKET"] = os.path.abspath(self.socket_path)
        mine, theirs = memory_face_pair(local=True)
        self.add_face(mine)
        client = Client(theirs, nursery, key=self.key, socket_path="internal")
        nursery.start_soon(theirs.run, client._on_receive)
        cfg = self.config
        limits = HostLimits(max_jobs=cfg.function_max_jobs, max_arg_bytes=int(cfg.function_max_arg_mb * 1024 * 1024),
                            retention=cfg.function_retention_s)
        self.function_host = FunctionHost(client, self._functions, self.name, limits=limits,
                                          workers=cfg.function_workers, pool=cfg.function_pool)
        await nursery.start(self.function_host.run)
        log.info("hosting %s", ", ".join(f.prefix.to_uri() for f in self._functions))

    def _announce_own_routes(self) -> None:
        self.fw.add_route(self.name, INTERNAL_FACE, 0)
        assert self.repo is not None
        for data in self.repo.names():
            self.fw.add_route(data.name, INTERNAL_FACE, 0)
        assert self.objects is not None
        for name in self.objects.names():
            self.fw.add_route(name, INTERNAL_FACE, 0)

    # --- faces ------------------------------------------------------------------------------
    def _on_new_face(self, face: Face) -> None:
        self.add_face(face)

    def add_face(self, face: Face) -> Face:
        assert self._nursery is not None, "node is not running"
        face.id = next(self._face_ids)
        self.faces[face.id] = face
        on_receive = self._on_receive
        if getattr(face, "wire_format", "icnd") == "ndn":
            from icnd.ndn.face import NdnLink

            self._ndn_links[face.id] = NdnLink(face)
            on_receive = self._on_receive_ndn
        else:
            self._senders[face.id] = face.send
        self.fw.add_face(face.id, local=face.local)
        self._nursery.start_soon(self._run_face, face, on_receive)
        log.debug("face %d up: %s", face.id, face.remote_uri)
        return face

    async def _run_face(self, face: Face, on_receive: Callable[[Face, bytes], None]) -> None:
        try:
            await face.run(on_receive)
        finally:
            self.faces.pop(face.id, None)
            self._senders.pop(face.id, None)
            ndn = self._ndn_links.pop(face.id, None)
            if ndn is not None:
                ndn.forget()
            link = self.links.pop(face.id, None)
            if link is not None:
                link[1].cancel()
            self._idle_seen.pop(face.id, None)
            self._dispatch(self.fw.on_face_down(face.id, trio.current_time()))
            log.debug("face %d down: %s (%s)", face.id, face.remote_uri, face.close_reason)

    def find_face(self, uri: str) -> Face | None:
        for face in self.faces.values():
            if face.remote_uri == uri:
                return face
        return None

    async def face_for_uri(self, uri: str) -> Face:
        """The face to `uri`, created if it does not exist yet."""
        parsed = parse_face_uri(uri)
        canonical = str(parsed)
        existing = self.find_face(canonical)
        if existing is not None:
            existing.persistent = True  # asked for by name: an operator's face now, not on-demand
            return existing
        if parsed.scheme == "udp":
            listener = self._udp_listener_for(parsed.host)
            face = await listener.face_to(parsed.host, parsed.port)
            if face.id and face.id in self.faces:
                face.persistent = True
                return face
            face.persistent = True
            return self.add_face(face)
        return self.add_face(await connect_face(parsed))

    def _udp_listener_for(self, host: str) -> UdpListener:
        want_v6 = ":" in host
        for listener in self._udp:
            if (":" in listener.local_address[0]) == want_v6:
                return listener
        raise ValueError(f"no UDP listener for {'IPv6' if want_v6 else 'IPv4'}; add --listen udp://...")

    async def destroy_face(self, face_id: int) -> bool:
        face = self.faces.get(face_id)
        if face is None:
            return False
        await face.aclose()
        return True

    async def _idle_sweep(self) -> None:
        """Close on-demand UDP faces that have been silent for udp_idle_timeout_s."""
        timeout = self.config.udp_idle_timeout_s
        while True:
            await trio.sleep(min(IDLE_SWEEP_INTERVAL, timeout))
            now = trio.current_time()
            for face in list(self.faces.values()):
                if face.persistent or not face.remote_uri.startswith("udp://"):
                    continue
                seen = self._idle_seen.get(face.id)
                count = face.counters.in_packets
                if seen is None or seen[0] != count:
                    self._idle_seen[face.id] = (count, now)
                elif now - seen[1] >= timeout:
                    log.info("closing idle face %d (%s)", face.id, face.remote_uri)
                    await face.aclose()

    # --- packets -------------------------------------------------------------------------------
    def _on_receive(self, face: Face, wire: bytes) -> None:
        try:
            packet = decode(wire)
        except DecodeError as exc:
            face.counters.decode_errors += 1
            self.fw.counters.decode_errors += 1
            log.debug("face %d: dropped malformed packet: %s", face.id, exc)
            return
        if face.local and type(packet) is Interest and packet.name.comps[:2] == MGMT_PREFIX:
            self.mgmt_commands += 1
            assert self._nursery is not None
            self._nursery.start_soon(self.mgmt.handle, face, packet)
            return
        self._dispatch(self.fw.on_packet(face.id, packet, trio.current_time()))

    def _on_receive_ndn(self, face: Face, wire: bytes) -> None:
        """A packet from an NDN face: NDN TLV, translated to icnd's model."""
        assert self._decode_ndn is not None
        try:
            packet, lp = self._decode_ndn(wire)
        except DecodeError as exc:
            if isinstance(exc, self._ndn_idle):  # an NDNLPv2 IDLE packet: nothing to deliver
                return
            face.counters.decode_errors += 1
            self.fw.counters.decode_errors += 1
            log.debug("face %d: dropped malformed NDN packet: %s", face.id, exc)
            return
        link = self._ndn_links.get(face.id)
        if link is None:
            return
        kind = type(packet)
        if kind is Interest:
            comps = packet.name.comps
            if comps and comps[0] in _NFD_SCOPES and self._ndn_command(face, link, packet, lp):
                return
            link.on_interest(packet, lp.pit_token)
        elif kind is Data:
            link.in_data += 1
        else:
            packet = link.on_nack(packet)
        self._dispatch(self.fw.on_packet(face.id, packet, trio.current_time()))

    def _ndn_command(self, face: Face, link: Any, interest: Interest, lp: Any) -> bool:
        """Answer ``/localhost/nfd`` (local faces) and ``/localhop/nfd``; False: not one of those."""
        from icnd.ndn.management import LOCALHOST_NFD, is_nfd_name

        comps = interest.name.comps
        if not is_nfd_name(comps) or (comps[:2] == LOCALHOST_NFD and not face.local):
            return False  # the forwarder refuses /localhost from non-local faces
        self.mgmt_commands += 1
        link.in_interests += 1
        try:
            data = self.ndn_mgmt.handle(face, interest)
        except Exception:  # a bug must not kill the node
            log.exception("NDN management command %s failed", interest.name)
            return True
        if data is not None:
            link.reply(data, lp.pit_token)
        return True

    def _dispatch(self, actions) -> None:
        internal: list[Interest] = []
        senders = self._senders
        while True:
            for face_id, packet in actions:
                send = senders.get(face_id)
                if send is not None:
                    send(encode(packet))
                elif face_id == INTERNAL_FACE and type(packet) is Interest:
                    internal.append(packet)
                else:
                    ndn = self._ndn_links.get(face_id)
                    if ndn is not None:
                        ndn.send(packet)
            if not internal:
                break
            interest = internal.pop()
            produced = self._produce(interest)
            if produced is None:  # held: a contribution not made yet
                actions = ()
                continue
            actions = self.fw.on_packet(INTERNAL_FACE, produced, trio.current_time())
        self._rearm_timer()

    def _produce(self, interest: Interest) -> Data | Nack | None:
        """Answer an Interest routed to the node itself."""
        comps = interest.name.comps
        assert self.repo is not None and self.key is not None
        stored = self.repo.get(comps)
        if stored is not None:
            return stored
        assert self.objects is not None
        segment = self.objects.lookup(interest)
        if segment is not None:
            return segment
        own = len(self.name.comps)
        if comps[:own] == self.name.comps and len(comps) > own:
            what = comps[own]
            if what == MEMBER:
                if comps[own + 2:own + 3] == (CONTRIBUTE,):
                    return self._remote_contribution(interest)
                return self.contrib.lookup(interest, interest.lifetime_ms / 1000.0, trio.current_time())
            if what == generic("group") and comps[own + 1:own + 2] == (generic("install"),):
                return self._install_group(interest)
            if what == generic("ping"):
                return self.key.sign(Data(interest.name, b"", freshness_ms=0))
            if interest.name.prefix(len(self.key.name.comps)) == self.key.name or (
                what == generic("KEY") and interest.can_be_prefix
            ):
                return self.key.sign(
                    Data(self.key.name, self.key.public_bytes(), ContentType.KEY, freshness_ms=3_600_000)
                )
            if what == generic("status"):

                return self.key.sign(
                    Data(interest.name, msgpack.packb(self.status()), freshness_ms=1000)
                )
        return Nack(interest.name, interest.nonce, NackReason.NO_ROUTE, f"{self.name} has no such data")

    def _install_group(self, interest: Interest) -> Data | Nack:
        """A group descriptor announced by the node that made it (see GroupTable.install)."""
        assert self.key is not None
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
            desc = self.groups.install(desc_data, public)
            body = {"code": "ok", "group": desc.group, "version": desc.version}
            return self.key.sign(Data(interest.name, msgpack.packb(body), freshness_ms=0))
        except ReductionError as exc:
            body = {"code": str(exc.code), "message": f"{self.node_id}: {exc}"}
            return self.key.sign(Data(interest.name, msgpack.packb(body), ContentType.ERROR, freshness_ms=0))

    def _remote_contribution(self, interest: Interest) -> Data:
        """A contribution segment handed over by another node's client (the
        same checks as a local one; contributors are not authenticated)."""
        assert self.key is not None
        code, body = 0, {}
        try:
            if not interest.app_params or not interest.params_ok():
                raise ReductionError(400, "a contribution carries its segment's Data in the parameters")
            try:
                data = decode(interest.app_params)
            except DecodeError as exc:
                raise ReductionError(400, f"malformed Data: {exc}") from None
            if not isinstance(data, Data) or data.name.comps[:4] != interest.name.comps[:4]:
                raise ReductionError(400, "the parameters must be the member's contribution Data")
            body = {"added": int(self.contribute(data))}
        except ReductionError as exc:
            code, body = exc.code, {"code": str(exc.code), "message": f"{self.node_id}: {exc}"}
        kind = ContentType.ERROR if code else ContentType.BLOB
        return self.key.sign(Data(interest.name, msgpack.packb(body), kind, freshness_ms=0))

    def contribute(self, data: Data) -> bool:
        """Store a member's contribution segment and answer anyone waiting for it."""
        added = self.contrib.add(data)
        if added and self.contrib.take_pending(data, trio.current_time()):
            self._dispatch(self.fw.on_packet(INTERNAL_FACE, data, trio.current_time()))
        return added

    def create_group(self, desc: GroupDescriptor) -> Data:
        """Sign and keep a new version of a group made by a local client."""
        assert self.key is not None
        data = self.key.sign(desc.to_data())
        self.groups.add_local(desc, data, self.key.public_bytes())
        return data

    def publish(self, data: Data) -> None:
        """Store `data` in the node's repo and route its name to the node."""
        assert self.repo is not None
        for evicted in self.repo.put(data):
            self.fw.fib.remove(evicted.name, INTERNAL_FACE)
        self.fw.add_route(data.name, INTERNAL_FACE, 0)
        self.fw.cs.discard(data.name.comps)  # a cached older version must not shadow it

    def unpublish(self, name: Name) -> bool:
        assert self.repo is not None
        if not self.repo.delete(name.comps):
            return False
        self.fw.fib.remove(name, INTERNAL_FACE)
        return True

    def set_link(self, face_id: int, params: LinkParams, seed: int | None = None) -> LinkModel:
        """Emulate delay/loss/bandwidth/up-down on `face_id`'s outgoing traffic.

        The first call puts a `ShapedSender` (one task) in front of the face;
        later calls change its parameters at run time (cut: ``up=False``)."""
        face = self.faces.get(face_id)
        if face is None:
            raise KeyError(face_id)
        link = self.links.get(face_id)
        if link is not None:
            link[0].model.set_params(params)
            return link[0].model
        assert self._nursery is not None
        model = LinkModel(params, seed=face_id if seed is None else seed)
        sender = ShapedSender(model, face.send)
        scope = trio.CancelScope()
        self.links[face_id] = (sender, scope)
        ndn = self._ndn_links.get(face_id)
        if ndn is not None:
            ndn.transmit = sender.send
        else:
            self._senders[face_id] = sender.send

        async def run_sender() -> None:
            with scope:
                await sender.run()

        self._nursery.start_soon(run_sender)
        return model

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
            self._dispatch(self.fw.on_timer(trio.current_time()))

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
    def status(self) -> dict:
        counters = self.fw.counters.as_dict()
        counters["mgmt_commands"] = self.mgmt_commands
        counters.update(self.fw.aggregator.counters)
        counters.update(self.contrib.counters)
        tables = self.fw.table_sizes()
        tables["faces"] = len(self.faces)
        tables["dead_nonces"] = len(self.fw.dnl)
        tables["repo_entries"] = len(self.repo) if self.repo is not None else 0
        tables["repo_bytes"] = self.repo.bytes_used if self.repo is not None else 0
        tables["objects"] = len(self.objects) if self.objects is not None else 0
        tables["object_bytes"] = self.objects.bytes_used if self.objects is not None else 0
        tables.update(self.contrib.stats(trio.current_time()))
        host = self.function_host
        counters.update(host.counters if host is not None else dict.fromkeys(HOST_COUNTERS, 0))
        tables.update(host.tables() if host is not None else dict.fromkeys(HOST_TABLES, 0))
        return {
            "name": self.name.to_uri(),
            "version": __version__,
            "uptime_s": round(time.time() - self.started_at, 3),
            "pid": os.getpid(),
            "socket": os.path.abspath(self.socket_path),
            "listen": self.listen_uris(),
            "ndn_listen": self.ndn_listen_uris(),
            "key": self.key.name.to_uri() if self.key is not None and self.key.name is not None else None,
            "counters": counters,
            "tables": tables,
        }


def _expand_listen(uri: str) -> list[str]:
    """`--listen HOST` means UDP and TCP on port 6363 of HOST; a URI is itself."""
    if "://" in uri:
        return [uri]
    host = f"[{uri}]" if ":" in uri and not uri.startswith("[") else uri
    return [f"udp://{host}:{DEFAULT_PORT}", f"tcp://{host}:{DEFAULT_PORT}"]
