"""Launch a topology: one ``icnd run`` daemon per node (interface §6).

    async with icnd.topology.launch("topologies/grid9.toml") as net:
        c = await net.connect("n00")            # a Client, closed with the topology
        await net.kill("n11"); await net.restart("n11")
        await net.cut("n00", "n01"); await net.heal("n00", "n01")

Two modes:

- processes (default): every node is an ``icnd run`` process on loopback,
  listening on UDP and TCP ports the kernel picks (``127.0.0.1:0``); the
  launcher reads the bound URIs back from ``status`` and records them, so a
  restarted node comes back on the *same* ports and its neighbours' faces
  stay valid;
- network namespaces (``netns=True``, root only; see `icnd.topology.netns`):
  one namespace per node, a veth pair per link, the daemon listening on port
  6363 of its link addresses; bandwidth limits are tbf qdiscs.

In both modes the Unix sockets, logs (``<node>.log``, the daemon's stderr)
and data directories (``<node>/data``: identity key and published data)
live in the work directory, and links are emulated in user space through the
faces (``face link``: delay, loss and, in process mode, bandwidth; each side
shapes its own outgoing direction, with deterministic seeds).

Routes depend on the topology's ``routing`` (interface §12):

- ``"link-state"`` (the default): every node starts with ``--neighbor`` for
  each of its links (the peer's listener URI, ``cost=`` the link's cost) and
  no routes; the nodes' routing protocol makes them.  In process mode the
  listening ports are therefore chosen *before* the daemons start (bound
  once to port 0 by the launcher, released, and handed to the daemon), since
  every neighbour must be told them; the faces the link emulation shapes are
  the permanent neighbour faces (and, over TCP, the connections the peer
  opened), looked up by URI whenever a link changes, because a TCP
  neighbour's reconnection brings a new accepted face.
- ``"static"``: the routes `derive_routes` computes, installed with
  ``route add`` toward each neighbour's face (made with ``face create``).

Either way every function prefix the derivation routes gets the
``load-balance`` strategy on every node (``strategy set``), so calls spread
over the hosts by measured RTT and load.

Readiness is checked, never slept for: the launcher polls each node's
``status`` over its socket until it answers (or the node exits, or the
deadline passes: the error carries the end of the node's log).  Under
link-state routing the topology is ready only once every live node has a
``routing`` route to the ``/node/<n>`` prefix of every other node it can
reach over up links, and to the function prefixes those nodes host
(`Network.wait_routes`); `launch` and `Network.restart`
wait for that within ``ready_timeout``, and the error names the nodes still
missing routes and the last link-state record each refused (a trust schema
without a rule for link state shows up there).

State and cleanup.  ``<workdir>/topology.json`` (`icnd.topology.state`)
records the launcher's pid, every node's pid (with its start time, so a
recycled pid is never killed), socket and URIs, and -- written *before* they
are created -- every namespace and veth name.  On exit, error or
cancellation the launcher stops every node (SIGTERM, then SIGKILL after a
bounded wait; `icnd.topology.processes`), removes the sockets and deletes
exactly the recorded namespaces.  The daemons also get SIGTERM from the
kernel if the launcher dies (``PR_SET_PDEATHSIG``); whatever else a crashed
launcher leaves (its namespaces, its state file) is removed by `topo_down`
or by the next launch in the same work directory.  What ``icnd topo up`` and
``icnd topo down`` print is `icnd.topology.console`'s.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from types import MappingProxyType
from typing import Any, AsyncIterator

import trio

from icnd.client import Client
from icnd.client import connect as _connect
from icnd.errors import Error
from icnd.excgroups import lone
from icnd.topology import netns as _netns
from icnd.topology.console import topo_down
from icnd.topology.processes import (
    STOP_TIMEOUT,
    Target,
    child_setup,
    log_tail,
    remove_socket,
    start_time,
    stop_processes,
)
from icnd.topology.routes import FUNCTION_STRATEGY, Route, derive_routes, function_route_prefixes
from icnd.topology.spec import LinkSpec, TopologyError, TopologySpec, load, node_prefix
from icnd.topology.state import (
    STATE_FILE,
    STATE_FORMAT,
    LaunchError,
    cleanup_recorded,
    default_workdir,
    launcher_running,
    read_state,
    remove_state,
    state_path,
    write_state,
)

__all__ = [
    "STATE_FILE",
    "LaunchError",
    "Network",
    "NodeHandle",
    "default_workdir",
    "launch",
    "topo_down",
    "topo_up",
]

log = logging.getLogger("icnd.topology")

READY_TIMEOUT = 20.0
COMMAND_TIMEOUT = 10.0
MAX_SOCKET_PATH = 107  # sizeof(sun_path) - 1


# --- the handles --------------------------------------------------------------------------------


class NodeHandle:
    """One node of a launched topology (attributes are kept current by the `Network`)."""

    def __init__(self, name: str, workdir: str, namespace: str | None, addresses: list[str]) -> None:
        self.name = name
        self.prefix = node_prefix(name)
        self.socket = os.path.join(workdir, f"{name}.sock")
        self.log_path = os.path.join(workdir, f"{name}.log")
        self.data_dir = os.path.join(workdir, name, "data")
        self.netns = namespace
        self.addresses = list(addresses)  # netns mode: one per link, in link order
        self.udp_uri = ""
        self.tcp_uri = ""
        self.listen: list[str] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self._start: int | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def __repr__(self) -> str:
        return f"NodeHandle({self.name!r}, pid={self.pid}, socket={self.socket!r}, alive={self.alive})"

    def _state(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "start": self._start,
            "alive": self.alive,
            "socket": self.socket,
            "udp_uri": self.udp_uri,
            "tcp_uri": self.tcp_uri,
            "log": self.log_path,
            "data_dir": self.data_dir,
            "netns": self.netns,
            "addresses": self.addresses,
        }


class Network:
    """A running topology (yielded by `launch`).  Node arguments are names or `NodeHandle`s."""

    def __init__(self, spec: TopologySpec, workdir: str, *, netplan: _netns.NetnsPlan | None,
                 log_level: str, ready_timeout: float) -> None:
        self.spec = spec
        self.workdir = workdir
        self.netplan = netplan
        self.run_id = netplan.run_id if netplan else secrets.token_hex(3)
        self.log_level = log_level
        self.ready_timeout = ready_timeout
        self.link_state = spec.routing == "link-state"  # else "static": derived routes, route add
        self.converged_s: float | None = None  # link-state: launch to every node routing to every node
        self.daemons_ready_s: float | None = None  # launch to every daemon answering status
        self.routes: dict[str, list[Route]] = derive_routes(spec)
        self.function_prefixes: list[str] = function_route_prefixes(spec, self.routes)
        self._nodes = {
            name: NodeHandle(
                name, workdir,
                netplan.namespaces[name] if netplan else None,
                netplan.addresses(name) if netplan else [],
            )
            for name in spec.nodes
        }
        self.nodes: Mapping[str, NodeHandle] = MappingProxyType(self._nodes)
        # current emulated parameters of every link, by link index
        self._params: list[dict[str, Any]] = [
            {"delay_ms": link.delay_ms, "loss": link.loss, "bandwidth_mbps": link.bandwidth_mbps, "up": True}
            for link in spec.links
        ]
        self._index = {frozenset(link.ends): i for i, link in enumerate(spec.links)}
        # (node, neighbour) -> face ids at node toward neighbour; the first carries the routes
        self._faces: dict[tuple[str, str], list[int]] = {}
        self._shaped: set[tuple[str, str]] = set()
        self._nursery: trio.Nursery | None = None
        self._closing = trio.Event()
        self._ready = False
        self._lock = trio.Lock()

    @property
    def netns(self) -> bool:
        return self.netplan is not None

    def __getitem__(self, node: str) -> NodeHandle:
        return self._nodes[node]

    # --- public coroutines ---------------------------------------------------------------------
    async def connect(self, node: str | NodeHandle) -> Client:
        """A `Client` connected to ``node``; it is closed when the topology exits."""
        handle = self._handle(node)
        if self._nursery is None or self._closing.is_set():
            raise LaunchError("the topology is not running")
        return await self._nursery.start(self._client_task, handle.socket)

    async def status(self, node: str | NodeHandle) -> dict[str, Any]:
        """``node``'s status (the same object as ``icnd status --json``)."""
        async with _connect(self._handle(node).socket) as client:
            return await client.status()

    async def kill(self, node: str | NodeHandle) -> None:
        """Crash ``node``: SIGKILL, no clean shutdown (its socket file stays until restart/exit)."""
        handle = self._handle(node)
        async with self._lock:
            proc = handle._proc
            if proc is not None and proc.poll() is None:
                proc.kill()
                with trio.move_on_after(STOP_TIMEOUT):
                    while proc.poll() is None:
                        await trio.sleep(0.01)
            # its own faces are gone; the neighbours' faces toward it survive (UDP) or
            # close on their own (TCP), and `restart` re-creates whatever is missing
            for key in [k for k in self._faces if k[0] == handle.name]:
                del self._faces[key]
            self._save()

    async def stop(self, node: str | NodeHandle) -> None:
        """Stop ``node`` cleanly (SIGTERM, then SIGKILL after a bounded wait)."""
        handle = self._handle(node)
        async with self._lock:
            if handle._proc is not None:
                await trio.to_thread.run_sync(stop_processes, [Target(handle._proc.pid, None, handle._proc)])
            self._save()

    async def restart(self, node: str | NodeHandle) -> None:
        """Start ``node`` again (stopping it first if it runs) with the same ports and data
        directory; re-create its faces, link emulation and routes, and wait until it is ready.
        Under link-state routing the node's ``--neighbor`` faces come back with it and the
        neighbours' permanent faces reconnect by themselves: nothing is re-added, the link
        emulation is re-applied to the new faces, and it returns once routes have converged
        again (`wait_routes`)."""
        handle = self._handle(node)
        async with self._lock:
            proc = handle._proc
            if proc is not None and proc.poll() is None:  # alive
                await trio.to_thread.run_sync(stop_processes, [Target(proc.pid, None, proc)])
            self._spawn(handle, restart=True)
            self._save()
            await self._wait_ready(handle, trio.current_time() + self.ready_timeout)
            self._save()
            alive_links = [
                (i, link) for i, link in enumerate(self.spec.links)
                if handle.name in link.ends and self._nodes[link.other(handle.name)].alive
            ]
            names = {handle.name} | {link.other(handle.name) for _, link in alive_links}
            async with self._clients(names) as clients:
                if self.link_state:  # its --neighbor faces are back; the neighbours' reconnect by themselves
                    await self._wait_tcp_links(alive_links, clients)
                for i, link in alive_links:
                    await self._setup_link(i, link, clients)
                await self._install_routes(clients[handle.name], handle.name)
                for _, link in alive_links:
                    peer = link.other(handle.name)
                    await self._install_routes(clients[peer], peer, via=handle.name)
            self._save()
            await self.wait_routes()

    async def cut(self, a: str | NodeHandle, b: str | NodeHandle) -> None:
        """Cut the link a-b: both ends drop everything they send on it (``face link up=False``)."""
        await self._update_link(a, b, up=False)

    async def heal(self, a: str | NodeHandle, b: str | NodeHandle) -> None:
        """Undo `cut`."""
        await self._update_link(a, b, up=True)

    async def set_link(self, a: str | NodeHandle, b: str | NodeHandle, *, delay_ms: float | None = None,
                       loss: float | None = None, bandwidth_mbps: float | None = None) -> None:
        """Change the link a-b's emulated parameters at run time (None: unchanged, 0: off)."""
        await self._update_link(a, b, delay_ms=delay_ms, loss=loss, bandwidth_mbps=bandwidth_mbps)

    def link_params(self, a: str | NodeHandle, b: str | NodeHandle) -> dict[str, Any]:
        """The link a-b's current parameters: delay_ms, loss, bandwidth_mbps, up."""
        return dict(self._params[self._link_index(a, b)])

    async def wait_routes(self, *, timeout: float | None = None) -> float:
        """Link-state: wait until every live node has a ``routing`` route to the ``/node/<n>`` prefix
        of every other live node it reaches over up links (its connected component now), and to
        the function prefixes those nodes host (so a call right after `launch` finds its way); returns
        the seconds waited.  Routes toward nodes that are gone are not waited out (the protocol
        drops them after the dead interval).  Raises `LaunchError` after ``timeout`` (default
        ``ready_timeout``) naming the nodes still missing routes and the link-state records they
        last refused.  With ``routing = "static"`` it returns 0 at once."""
        if not self.link_state:
            return 0.0
        start = trio.current_time()
        deadline = start + (self.ready_timeout if timeout is None else timeout)
        while True:
            missing = await self._missing_routes()
            if not missing:
                return trio.current_time() - start
            if trio.current_time() >= deadline:
                break
            await trio.sleep(0.05)
        lines = [f"{node} lacks {', '.join(sorted(prefixes))}" for node, prefixes in sorted(missing.items())]
        refusals = []
        for node in sorted(n for n, h in self._nodes.items() if h.alive):
            with trio.move_on_after(2.0):
                try:
                    async with _connect(self._nodes[node].socket, timeout=1.0) as client:
                        status = await client.command("routing", "status", timeout=1.0)
                except Error:
                    continue
                if status.get("last_refusal"):
                    refusals.append(f"{node}: {status['last_refusal']}")
        raise LaunchError(
            f"{self.spec.source}: link-state routing did not converge within {deadline - start:.1f}s; "
            f"routes missing: {'; '.join(lines)}"
            + (f"; last refused link state: {'; '.join(refusals)}" if refusals else
               "; no node refused link state (see the nodes' logs and `icnd routing`)")
        )

    def _components(self) -> dict[str, set[str]]:
        """Live node -> the live nodes it reaches over up links (itself included)."""
        alive = {n for n, h in self._nodes.items() if h.alive}
        adjacent: dict[str, set[str]] = {n: set() for n in alive}
        for i, link in enumerate(self.spec.links):
            if self._params[i]["up"] and link.a in alive and link.b in alive:
                adjacent[link.a].add(link.b)
                adjacent[link.b].add(link.a)
        component: dict[str, set[str]] = {}
        for node in alive:
            if node in component:
                continue
            seen, todo = {node}, [node]
            while todo:
                for peer in adjacent[todo.pop()] - seen:
                    seen.add(peer)
                    todo.append(peer)
            for member in seen:
                component[member] = seen
        return component

    async def _missing_routes(self) -> dict[str, set[str]]:
        """Live node -> the prefixes it should but does not route to (origin ``routing``): the node
        prefixes of the nodes it reaches and the function prefixes they host (and it does not)."""
        missing: dict[str, set[str]] = {}
        for node, reach in self._components().items():
            want = {self._nodes[peer].prefix for peer in reach if peer != node}
            hosted = set(self.spec.nodes[node].function_prefixes)
            want |= {fn for peer in reach for fn in self.spec.nodes[peer].function_prefixes} - hosted
            if not want:
                continue
            have: set[str] = set()
            with trio.move_on_after(COMMAND_TIMEOUT):
                try:
                    async with _connect(self._nodes[node].socket, timeout=1.0) as client:
                        routes = await client.command("route", "list", timeout=2.0)
                    have = {r["prefix"] for r in routes
                            if any(h.get("origin") == "routing" for h in r.get("nexthops") or ())}
                except Error:
                    pass
            if want - have:
                missing[node] = want - have
        return missing

    # --- helpers ------------------------------------------------------------------------------------
    def _handle(self, node: str | NodeHandle) -> NodeHandle:
        name = node.name if isinstance(node, NodeHandle) else node
        try:
            return self._nodes[name]
        except KeyError:
            raise KeyError(f"no node {name!r} in {self.spec.source}") from None

    def _link_index(self, a: str | NodeHandle, b: str | NodeHandle) -> int:
        na, nb = self._handle(a).name, self._handle(b).name
        try:
            return self._index[frozenset((na, nb))]
        except KeyError:
            raise KeyError(f"no link {na}-{nb} in {self.spec.source}") from None

    async def _client_task(self, socket_path: str, *,
                           task_status: trio.TaskStatus[Client] = trio.TASK_STATUS_IGNORED) -> None:
        started = False
        try:
            async with _connect(socket_path) as client:
                task_status.started(client)
                started = True
                await self._closing.wait()
        except Exception as exc:
            if not started:
                raise
            log.debug("client of %s ended: %s", socket_path, exc)

    @asynccontextmanager
    async def _clients(self, names: set[str] | list[str]) -> AsyncIterator[dict[str, Client]]:
        async with AsyncExitStack() as stack:
            clients = {}
            for name in names:
                clients[name] = await stack.enter_async_context(_connect(self._nodes[name].socket))
            yield clients

    def _state(self) -> dict[str, Any]:
        return {
            "format": STATE_FORMAT,
            "source": self.spec.source,
            "workdir": self.workdir,
            "mode": "netns" if self.netplan else "process",
            "routing": self.spec.routing,
            "run_id": self.run_id,
            "ready": self._ready,
            "launcher": {"pid": os.getpid(), "start": start_time(os.getpid())},
            "nodes": {name: h._state() for name, h in self._nodes.items()},
            "netns": self.netplan.namespace_names() if self.netplan else [],
            "veths": self.netplan.veth_names() if self.netplan else [],
        }

    def _save(self) -> None:
        write_state(self.workdir, self._state())

    # --- starting ----------------------------------------------------------------------------------
    def _argv(self, handle: NodeHandle, *, restart: bool) -> list[str]:
        argv = [sys.executable, "-m", "icnd", "run", "--name", handle.prefix, "--socket", handle.socket,
                "--data-dir", handle.data_dir, "--log-level", self.log_level]
        if self.netplan is not None:
            listen = [f"udp://0.0.0.0:{_netns.PORT}", f"tcp://0.0.0.0:{_netns.PORT}"]
        elif (restart or self.link_state) and handle.udp_uri and handle.tcp_uri:
            # the same ports: neighbours' faces stay valid (link-state: chosen by _reserve_ports)
            listen = [handle.udp_uri, handle.tcp_uri]
        else:
            listen = ["udp://127.0.0.1:0", "tcp://127.0.0.1:0"]
        for uri in listen:
            argv += ["--listen", uri]
        if self.link_state:
            for peer, link in self.spec.neighbours(handle.name):
                argv += ["--neighbor", f"{self._peer_uri(handle.name, peer, link)},cost={link.cost}"]
        node = self.spec.nodes[handle.name]
        for entry in node.functions:
            argv += ["--function", entry]
        for flag, path in (("--key", node.key), ("--cert", node.cert), ("--trust", node.trust)):
            if path is not None:
                argv += [flag, path]
        for group in self.spec.groups.values():
            argv += ["--group", group.flag()]
        if handle.netns is not None:
            argv = _netns.exec_prefix(handle.netns) + argv
        return argv

    def _reserve_ports(self) -> None:
        """Link-state in process mode: choose every node's UDP and TCP port before any daemon starts
        (each neighbour's ``--neighbor`` names them).  All sockets are bound at once, so no two nodes
        get the same port, then released for the daemons to bind; another process taking one in
        between makes that node fail to start, reported like any start failure."""
        held: list[socket.socket] = []
        try:
            for handle in self._nodes.values():
                if handle.udp_uri and handle.tcp_uri:
                    continue
                ports = []
                for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
                    sock = socket.socket(socket.AF_INET, kind)
                    held.append(sock)
                    sock.bind(("127.0.0.1", 0))
                    ports.append(sock.getsockname()[1])
                handle.udp_uri = f"udp://127.0.0.1:{ports[0]}"
                handle.tcp_uri = f"tcp://127.0.0.1:{ports[1]}"
        finally:
            for sock in held:
                sock.close()

    def _spawn(self, handle: NodeHandle, *, restart: bool = False) -> None:
        os.makedirs(handle.data_dir, exist_ok=True)
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        # the daemons run the same icnd as the launcher, installed or not
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        env.pop("ICND_SOCKET", None)
        with open(handle.log_path, "ab") as logf:
            if restart:
                logf.write(f"--- restarted by the topology launcher at {time.ctime()} ---\n".encode())
                logf.flush()
            handle._proc = subprocess.Popen(
                self._argv(handle, restart=restart),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=logf,
                env=env, start_new_session=True, preexec_fn=child_setup,
            )
        handle._start = start_time(handle._proc.pid)

    async def _wait_ready(self, handle: NodeHandle, deadline: float) -> None:
        proc = handle._proc
        assert proc is not None
        while True:
            code = proc.poll()
            if code is not None:
                raise LaunchError(
                    f"node {handle.name} exited with code {code} while starting; "
                    f"end of {handle.log_path}:\n{log_tail(handle.log_path)}"
                )
            if trio.current_time() >= deadline:
                raise LaunchError(
                    f"node {handle.name} was not ready within {self.ready_timeout:g}s; "
                    f"end of {handle.log_path}:\n{log_tail(handle.log_path)}"
                )
            status = None
            if os.path.exists(handle.socket):
                try:
                    with trio.move_on_after(max(0.1, min(2.0, deadline - trio.current_time()))):
                        async with _connect(handle.socket, timeout=1.0) as client:
                            status = await client.command("status", "get", timeout=2.0)
                except Error:
                    status = None
            if status is not None and status.get("pid") == proc.pid:
                handle.listen = list(status.get("listen") or [])
                if self.netplan is None:
                    handle.udp_uri = next((u for u in handle.listen if u.startswith("udp://")), "")
                    handle.tcp_uri = next((u for u in handle.listen if u.startswith("tcp://")), "")
                else:
                    host = handle.addresses[0] if handle.addresses else "0.0.0.0"
                    handle.udp_uri = f"udp://{host}:{_netns.PORT}"
                    handle.tcp_uri = f"tcp://{host}:{_netns.PORT}"
                return
            await trio.sleep(0.05)

    async def _start(self) -> None:
        started = trio.current_time()
        self._save()  # every name we are about to create is on disk first
        if self.netplan is not None:
            await _netns.create(self.netplan)
        elif self.link_state:
            self._reserve_ports()
        for handle in self._nodes.values():
            self._spawn(handle)
        self._save()
        deadline = trio.current_time() + self.ready_timeout
        errors: list[str] = []

        async def ready(handle: NodeHandle) -> None:
            try:
                await self._wait_ready(handle, deadline)
            except LaunchError as exc:
                errors.append(str(exc))

        async with trio.open_nursery() as nursery:
            for handle in self._nodes.values():
                nursery.start_soon(ready, handle)
        if errors:
            # the first failure with its log tail; the others one line each
            others = [e.splitlines()[0].removesuffix(":") for e in errors[1:]]
            raise LaunchError(f"{self.spec.source}: " + "\n".join([errors[0], *others]))
        self._save()
        self.daemons_ready_s = trio.current_time() - started
        async with self._clients(list(self._nodes)) as clients:
            if self.link_state:
                await self._wait_tcp_links(list(enumerate(self.spec.links)), clients)
            for i, link in enumerate(self.spec.links):
                await self._setup_link(i, link, clients)
            async with trio.open_nursery() as nursery:
                for name in self._nodes:
                    nursery.start_soon(self._install_routes, clients[name], name)
        if self.link_state:
            await self.wait_routes(timeout=max(0.0, deadline - trio.current_time()))
            self.converged_s = trio.current_time() - started
        self._ready = True
        self._save()

    # --- links and routes -------------------------------------------------------------------------
    def _peer_uri(self, node: str, peer: str, link: LinkSpec) -> str:
        if self.netplan is not None:
            return f"{link.transport}://{self.netplan.peer_address(node, peer)}:{_netns.PORT}"
        handle = self._nodes[peer]
        return handle.udp_uri if link.transport == "udp" else handle.tcp_uri

    async def _setup_link(self, index: int, link: LinkSpec, clients: Mapping[str, Client]) -> None:
        a, b = link.a, link.b
        if self.link_state:  # the daemons made their neighbour faces: find them, shape them
            await self._find_link_faces(link, clients)
            await self._shape(clients[a], index, a, b)
            await self._shape(clients[b], index, b, a)
            return
        fa = await clients[a].command("face", "create", uri=self._peer_uri(a, b, link), timeout=COMMAND_TIMEOUT)
        fb = await clients[b].command("face", "create", uri=self._peer_uri(b, a, link), timeout=COMMAND_TIMEOUT)
        faces_a, faces_b = [fa["id"]], [fb["id"]]
        if link.transport == "tcp":
            # the far end answers on the connection it accepted: shape that direction too
            faces_a += await self._accepted_faces(clients[a], fb["local_uri"])
            faces_b += await self._accepted_faces(clients[b], fa["local_uri"])
        self._faces[(a, b)] = faces_a
        self._faces[(b, a)] = faces_b
        await self._shape(clients[a], index, a, b)
        await self._shape(clients[b], index, b, a)

    async def _find_link_faces(self, link: LinkSpec, clients: Mapping[str, Client]) -> None:
        """Link-state: record the faces each end of `link` sends on toward the other -- its permanent
        neighbour face (made at start, kept across reconnects) and, over TCP, the connection the
        other end's neighbour face opened (new after every reconnect, hence looked up again on each
        link change).  An end not (yet) connected contributes what it has."""
        ends = [e for e in link.ends if e in clients]
        lists: dict[str, list[dict[str, Any]]] = {}
        for end in ends:
            lists[end] = await clients[end].command("face", "list", timeout=COMMAND_TIMEOUT)
        neighbour_face: dict[str, dict[str, Any]] = {}
        for end in ends:
            uri = self._peer_uri(end, link.other(end), link)
            face = next((f for f in lists[end] if f["remote_uri"] == uri), None)
            if face is not None:
                neighbour_face[end] = face
        for end in ends:
            peer = link.other(end)
            faces = [neighbour_face[end]["id"]] if end in neighbour_face else []
            if link.transport == "tcp" and peer in neighbour_face and neighbour_face[peer].get("local_uri"):
                accepted = neighbour_face[peer]["local_uri"]
                faces += [f["id"] for f in lists[end] if f["remote_uri"] == accepted and f["id"] not in faces]
            self._faces[(end, peer)] = faces

    async def _wait_tcp_links(self, links: list[tuple[int, LinkSpec]], clients: Mapping[str, Client]) -> None:
        """Link-state: wait (bounded, 5 s for all) until both ends' permanent neighbour faces of each
        TCP link in `links` have connected, so that `_find_link_faces` sees the connection each end
        accepted from the other -- the one it answers on, which link emulation must shape too.  A
        permanent face's ``local_uri`` is that of its last connection: after the peer restarted it
        names nothing at the peer until the face has reconnected."""
        with trio.move_on_after(5.0):
            for _, link in links:
                if link.transport != "tcp" or not all(end in clients for end in link.ends):
                    continue
                for end in link.ends:
                    peer = link.other(end)
                    uri = self._peer_uri(end, peer, link)
                    while True:
                        faces = await clients[end].command("face", "list", timeout=COMMAND_TIMEOUT)
                        face = next((f for f in faces if f["remote_uri"] == uri), None)
                        if face is not None and face.get("local_uri"):
                            theirs = await clients[peer].command("face", "list", timeout=COMMAND_TIMEOUT)
                            if any(f["remote_uri"] == face["local_uri"] for f in theirs):
                                break
                        await trio.sleep(0.05)
            return
        log.warning("%s: some TCP neighbour connections did not come up within 5s; their link "
                    "emulation is applied when the link next changes", self.spec.source)

    async def _accepted_faces(self, client: Client, remote_uri: str) -> list[int]:
        with trio.move_on_after(5.0):
            while True:
                faces = await client.command("face", "list", timeout=COMMAND_TIMEOUT)
                found = [f["id"] for f in faces if f["remote_uri"] == remote_uri]
                if found:
                    return found
                await trio.sleep(0.01)
        log.warning("no accepted face from %s appeared", remote_uri)
        return []

    async def _shape(self, client: Client, index: int, node: str, peer: str) -> None:
        params = self._params[index]
        bandwidth = 0 if self.netplan is not None else params["bandwidth_mbps"]  # netns: tbf does it
        active = params["delay_ms"] or params["loss"] or bandwidth or not params["up"]
        key = (node, peer)
        if not active and key not in self._shaped:
            return
        self._shaped.add(key)
        direction = 0 if node == self.spec.links[index].a else 1
        for k, face in enumerate(self._faces.get(key, [])):
            await client.command(
                "face", "link", face=face, delay_ms=params["delay_ms"], loss=params["loss"],
                bandwidth_mbps=bandwidth, up=params["up"], seed=(index * 2 + direction) * 4 + k + 1,
                timeout=COMMAND_TIMEOUT,
            )

    async def _install_routes(self, client: Client, node: str, via: str | None = None) -> None:
        """Install `node`'s routes (only those through `via` if given); a full
        install also sets the function prefixes' strategy first.  Under
        link-state routing only the strategies: routing makes the routes."""
        if via is None:
            for prefix in self.function_prefixes:
                await client.command("strategy", "set", prefix=prefix, strategy=FUNCTION_STRATEGY,
                                     timeout=COMMAND_TIMEOUT)
        if self.link_state:
            return
        for route in self.routes[node]:
            if via is not None and route.via != via:
                continue
            faces = self._faces.get((node, route.via))
            if not faces:
                continue
            await client.command("route", "add", prefix=route.prefix, face=faces[0], cost=route.cost,
                                 origin="static", timeout=COMMAND_TIMEOUT)

    async def _update_link(self, a: str | NodeHandle, b: str | NodeHandle, **changes: Any) -> None:
        index = self._link_index(a, b)
        link = self.spec.links[index]
        params = self._params[index]
        for key, value in changes.items():
            if value is None:
                continue
            if key == "loss" and not 0 <= value <= 1:
                raise ValueError(f"loss must be between 0 and 1, got {value!r}")
            if key != "up" and value < 0:
                raise ValueError(f"{key} must be >= 0, got {value!r}")
            params[key] = value
        async with self._lock:
            if self.netplan is not None and changes.get("bandwidth_mbps") is not None:
                lp = self.netplan.links[index]
                for node in link.ends:
                    veth = lp.end(node)[0]
                    await _netns.set_bandwidth(self.netplan.namespaces[node], veth, params["bandwidth_mbps"])
            alive = [node for node in link.ends if self._nodes[node].alive]
            async with self._clients(alive) as clients:
                if self.link_state:
                    await self._find_link_faces(link, clients)
                for node in alive:
                    await self._shape(clients[node], index, node, link.other(node))

    # --- stopping ----------------------------------------------------------------------------------
    def _teardown(self) -> list[str]:
        """Stop everything, delete namespaces and sockets, forget the state (sync, idempotent)."""
        targets = [Target(h._proc.pid, h._start, h._proc) for h in self._nodes.values() if h._proc is not None]
        stop_processes(targets)
        problems: list[str] = []
        if self.netplan is not None:
            problems = _netns.destroy(self.netplan.namespace_names(), self.netplan.veth_names())
        for handle in self._nodes.values():
            remove_socket(handle.socket)
        if problems:
            self._save()  # keep the record so that `icnd topo down` can retry
            for problem in problems:
                log.error("cleanup: %s", problem)
        else:
            remove_state(self.workdir)
        return problems


# --- launch -----------------------------------------------------------------------------------------


def _as_spec(spec_or_path: TopologySpec | str | os.PathLike[str]) -> TopologySpec:
    if isinstance(spec_or_path, TopologySpec):
        return spec_or_path
    if isinstance(spec_or_path, (str, os.PathLike)):
        return load(spec_or_path)
    raise TypeError(f"launch() takes a TopologySpec or a path, not {type(spec_or_path).__name__}")


def _prepare_workdir(workdir: str, spec: TopologySpec, *, clean: bool) -> None:
    os.makedirs(workdir, exist_ok=True)
    state = read_state(workdir)
    if state is not None:
        if launcher_running(state):
            pid = (state.get("launcher") or {}).get("pid")
            raise LaunchError(
                f"a topology is already running in {workdir} (launcher pid {pid}); "
                f"stop it first with `icnd topo down --workdir {workdir}`"
            )
        log.warning("%s: cleaning up after a launcher that is gone", state_path(workdir))
        _, _, problems = cleanup_recorded(state)
        if problems:
            raise LaunchError(f"cannot clean up the previous topology in {workdir}: {'; '.join(problems)}")
        os.unlink(state_path(workdir))
    for name in spec.nodes:
        sock = os.path.join(workdir, f"{name}.sock")
        if len(os.fsencode(sock)) > MAX_SOCKET_PATH:
            raise LaunchError(f"socket path {sock} is longer than {MAX_SOCKET_PATH} bytes; use a shorter workdir")
        if clean:
            remove_socket(sock)
            for path in (os.path.join(workdir, f"{name}.log"),):
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
            shutil.rmtree(os.path.join(workdir, name), ignore_errors=True)


@asynccontextmanager
async def launch(
    spec_or_path: TopologySpec | str | os.PathLike[str],
    *,
    workdir: str | os.PathLike[str] | None = None,
    netns: bool = False,
    log_level: str = "info",
    ready_timeout: float = READY_TIMEOUT,
    clean_workdir: bool = False,
) -> AsyncIterator[Network]:
    """Start the topology, yield a `Network`, tear everything down on exit.

    ``workdir``: where sockets, logs, data and ``topology.json`` go (default: a
    fresh temporary directory, removed on exit; a given one is kept, and a
    node's data directory in it survives across launches unless
    ``clean_workdir``).  ``netns=True`` needs root (`NetnsUnavailable`
    otherwise).  Raises `LaunchError` if a node does not become ready within
    ``ready_timeout`` seconds, `TopologyError` for an invalid file.
    """
    spec = _as_spec(spec_or_path)
    netplan = None
    if netns:
        _netns.check_available(need_tc=any(link.bandwidth_mbps > 0 for link in spec.links))
    owned = workdir is None
    wd = tempfile.mkdtemp(prefix="icnd-topo-") if workdir is None else os.path.abspath(os.fspath(workdir))
    try:
        _prepare_workdir(wd, spec, clean=clean_workdir)
        if netns:
            netplan = _netns.plan(spec, secrets.token_hex(3))
        net = Network(spec, wd, netplan=netplan, log_level=log_level, ready_timeout=ready_timeout)
    except BaseException:
        if owned:
            shutil.rmtree(wd, ignore_errors=True)
        raise
    try:
        try:
            async with trio.open_nursery() as nursery:
                net._nursery = nursery
                try:
                    await net._start()
                    yield net
                finally:
                    net._closing.set()  # closes the clients handed out by connect()
        except BaseExceptionGroup as group:
            raise lone(group) from None
    finally:
        with trio.CancelScope(shield=True):
            problems = await trio.to_thread.run_sync(net._teardown)
        if owned and not problems:
            shutil.rmtree(wd, ignore_errors=True)


async def topo_up(
    path: TopologySpec | str | os.PathLike[str],
    *,
    workdir: str | os.PathLike[str] | None = None,
    netns: bool = False,
    log_level: str = "info",
    ready_callback: Callable[[Network], Any] | None = None,
    clean_workdir: bool = False,
) -> None:
    """Launch and stay up until SIGINT/SIGTERM (or cancellation), then tear down.

    ``ready_callback(net)`` runs once every node is ready."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:

            async def on_signal() -> None:
                async for signum in signals:
                    log.info("received %s, tearing the topology down", signal.Signals(signum).name)
                    nursery.cancel_scope.cancel()
                    return

            nursery.start_soon(on_signal)
            async with launch(path, workdir=workdir, netns=netns, log_level=log_level,
                              clean_workdir=clean_workdir) as net:
                if ready_callback is not None:
                    ready_callback(net)
                await trio.sleep_forever()
