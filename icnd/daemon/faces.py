"""The node's face table: every face, its link service and link emulator, and its task.

A face enters through `FaceTable.add` (a listener's new connection or
datagram peer, `open` for ``face create URI``, the function host's memory
face): it gets the next id, a link service picked by its ``wire_format``
(`link_services`: icnd's `NativeLinkService` always, NDN's when the node
listens for NDN applications), and a task that runs ``face.run`` with the
receive function the node makes for it; the node is told (``on_up``: the
forwarder learns the face).  When ``run`` returns (the peer closed, an
error, `destroy`), the face leaves every table here and the node is told
(``on_down``).

`links` (face id -> link service) is the node's send path: the node reads
it directly for every packet it sends.  `set_link` puts a link emulator
(`ShapedSender`) in front of a face's transport by swapping its link
service's ``transmit``.

Faces the configuration names (``--face``, ``--route``, ``--neighbor``)
are *permanent* (`open` with ``permanent=True``; `icnd.faces.permanent`):
added at once whether or not the peer is up, they reconnect with backoff
and never go down, so the forwarder keeps their routes across the peer's
restarts.  A permanent UDP face takes its peer's address on the listener
(an on-demand face already there is replaced); `_claimed` remembers which
listener faces permanent faces hold, so no one else ever runs them.

Managers are handed this table, not the node: it is the face-table
interface of `icnd.daemon.mgmt.faces` and `icnd.ndn.management`.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import Literal, overload

import trio

from icnd.faces import (
    DEFAULT_RECONNECT,
    Face,
    LinkService,
    NativeLinkService,
    OnReceive,
    PermanentFace,
    ReconnectPolicy,
    UdpListener,
    connect_face,
    parse_face_uri,
)
from icnd.faces.uri import FaceUri
from icnd.faces.link import LinkModel, LinkParams, ShapedSender

log = logging.getLogger("icnd.node")

IDLE_SWEEP_INTERVAL = 30.0
CLAIM_ATTEMPTS = 3  # a permanent UDP face's tries to take its address from on-demand faces, per connect


class FaceTable:
    """Faces by id; see the module docstring."""

    def __init__(
        self,
        *,
        first_id: int,
        receiver: Callable[[Face, LinkService], OnReceive],
        on_up: Callable[[Face], None],
        on_down: Callable[[Face], None],
    ) -> None:
        self.faces: dict[int, Face] = {}
        self.links: dict[int, LinkService] = {}
        # wire format -> the link service a face of that format gets
        self.link_services: dict[str, Callable[[Face], LinkService]] = {"icnd": NativeLinkService}
        self.udp_listeners: list[UdpListener] = []  # `open` makes UDP faces on these (well-known port)
        self._shapers: dict[int, tuple[ShapedSender, trio.CancelScope]] = {}
        self._ids = itertools.count(first_id)
        self._receiver = receiver
        self._on_up = on_up
        self._on_down = on_down
        self._nursery: trio.Nursery | None = None
        self._idle_seen: dict[int, tuple[int, float]] = {}
        self.reconnect: ReconnectPolicy = DEFAULT_RECONNECT  # how permanent faces retry
        # listener face -> the permanent face running it (at most one entry per permanent face, see _claim)
        self._claimed: dict[Face, PermanentFace] = {}

    def start(self, nursery: trio.Nursery) -> None:
        """Faces added from now on run in `nursery`."""
        self._nursery = nursery

    # --- looking faces up ------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.faces)

    def __contains__(self, face_id: object) -> bool:
        return face_id in self.faces

    def __iter__(self) -> Iterator[Face]:
        """The faces in id order (a snapshot)."""
        return iter(sorted(self.faces.values(), key=lambda f: f.id))

    def get(self, face_id: int) -> Face | None:
        return self.faces.get(face_id)

    def find(self, uri: str) -> Face | None:
        """The face whose remote URI is `uri`."""
        for face in self.faces.values():
            if face.remote_uri == uri:
                return face
        return None

    def link(self, face_id: int) -> LinkService | None:
        """The link service of a face."""
        return self.links.get(face_id)

    def shaper(self, face_id: int) -> ShapedSender | None:
        """The link emulator in front of a face, if `set_link` put one there."""
        shaped = self._shapers.get(face_id)
        return shaped[0] if shaped is not None else None

    # --- adding and removing -----------------------------------------------------------
    def add(self, face: Face) -> Face:
        """Give `face` an id and a link service and run it; returns it."""
        assert self._nursery is not None, "node is not running"
        face.id = next(self._ids)
        link = self.link_services[face.wire_format](face)
        self.faces[face.id] = face
        self.links[face.id] = link
        self._on_up(face)
        self._nursery.start_soon(self._run, face, link, self._receiver(face, link))
        log.debug("face %d up: %s", face.id, face.remote_uri)
        return face

    async def _run(self, face: Face, link: LinkService, on_receive: OnReceive) -> None:
        try:
            await face.run(on_receive)
        except Exception:  # a bug in one face closes that face, never the node
            log.exception("face %d %s failed; closing it", face.id, face.remote_uri)
            await face.aclose()
        finally:
            self.faces.pop(face.id, None)
            self.links.pop(face.id, None)
            link.close()
            shaped = self._shapers.pop(face.id, None)
            if shaped is not None:
                shaped[1].cancel()
            self._idle_seen.pop(face.id, None)
            self._on_down(face)
            log.debug("face %d down: %s (%s)", face.id, face.remote_uri, face.close_reason)

    @overload
    async def open(self, uri: str, *, permanent: Literal[True]) -> PermanentFace: ...

    @overload
    async def open(self, uri: str, *, permanent: bool = False) -> Face: ...

    async def open(self, uri: str, *, permanent: bool = False) -> Face:
        """The face to `uri`, created if it does not exist yet (``face create``).

        ``permanent=True`` (what the configuration's faces get): a
        `PermanentFace`, added at once without waiting for the peer (so only
        a bad URI raises); an existing permanent face to `uri` is returned,
        an existing other face to `uri` is closed and replaced."""
        parsed = parse_face_uri(uri)
        canonical = str(parsed)
        existing = self.find(canonical)
        if permanent:
            if isinstance(existing, PermanentFace):
                return existing
            if existing is not None:
                log.info("face %d %s: replaced by a permanent face", existing.id, canonical)
                await existing.aclose()
            return self._add_permanent(parsed)
        if existing is not None:
            existing.persistent = True  # asked for by name: an operator's face now, not on-demand
            return existing
        if parsed.scheme == "udp":
            assert parsed.port is not None
            listener = self._udp_listener_for(parsed.host)
            if listener is None:
                raise ValueError(f"no UDP listener for {'IPv6' if ':' in parsed.host else 'IPv4'}; "
                                 "add --listen udp://...")
            face = await listener.face_to(parsed.host, parsed.port)
            owner = self._claimed.get(face)
            if owner is not None and not face.closed:
                return owner  # the same peer under another name: its permanent face
            face.persistent = True
            if face.id and face.id in self.faces:
                return face
            return self.add(face)
        return self.add(await connect_face(parsed))

    def _udp_listener_for(self, host: str) -> UdpListener | None:
        want_v6 = ":" in host
        for listener in self.udp_listeners:
            if (":" in listener.local_address[0]) == want_v6:
                return listener
        return None

    def _add_permanent(self, parsed: FaceUri) -> PermanentFace:
        connect: Callable[[], Awaitable[Face]]
        if parsed.scheme == "udp":
            async def connect() -> Face:
                return await self._claim(parsed, face)
        else:
            async def connect() -> Face:
                return await connect_face(parsed)
        face = PermanentFace(str(parsed), connect, local=parsed.scheme == "unix", policy=self.reconnect)
        self.add(face)
        return face

    async def _claim(self, parsed: FaceUri, owner: PermanentFace) -> Face:
        """A permanent UDP face's connect: the listener's face toward the peer, held by `owner` alone.

        An on-demand face the peer made first is closed so that its address
        becomes the permanent face's; without a UDP listener of the address
        family, a face on its own ephemeral socket."""
        for held in [held for held in self._claimed if held.closed]:
            del self._claimed[held]
        listener = self._udp_listener_for(parsed.host)
        if listener is None:
            return await connect_face(parsed)
        assert parsed.port is not None
        for _ in range(CLAIM_ATTEMPTS):
            face = await listener.face_to(parsed.host, parsed.port)
            holder = self._claimed.get(face)
            if holder is not None:
                raise ValueError(f"{parsed} is the address of permanent face {holder.id} ({holder.remote_uri})")
            if not face.id:
                self._claimed[face] = owner
                return face
            log.info("face %d %s: replaced by permanent face %d", face.id, face.remote_uri, owner.id)
            await face.aclose()
        raise OSError(f"{parsed}: new on-demand faces keep taking the address")

    async def destroy(self, face_id: int) -> bool:
        face = self.faces.get(face_id)
        if face is None:
            return False
        await face.aclose()
        return True

    async def aclose(self) -> None:
        """Close every face (the node is stopping)."""
        for face in list(self.faces.values()):
            await face.aclose()

    # --- link emulation ------------------------------------------------------------------
    def set_link(self, face_id: int, params: LinkParams, seed: int | None = None) -> LinkModel:
        """Emulate delay/loss/bandwidth/up-down on `face_id`'s outgoing traffic.

        The first call puts a `ShapedSender` (one task) in front of the face's
        transport; later calls change its parameters at run time (cut:
        ``up=False``).  Raises KeyError for an unknown face."""
        face = self.faces.get(face_id)
        if face is None:
            raise KeyError(face_id)
        shaped = self._shapers.get(face_id)
        if shaped is not None:
            shaped[0].model.set_params(params)
            return shaped[0].model
        assert self._nursery is not None
        model = LinkModel(params, seed=face_id if seed is None else seed)
        sender = ShapedSender(model, face.send)
        scope = trio.CancelScope()
        self._shapers[face_id] = (sender, scope)
        self.links[face_id].transmit = sender.send

        async def run_sender() -> None:
            with scope:
                await sender.run()

        self._nursery.start_soon(run_sender)
        return model

    # --- idle faces ----------------------------------------------------------------------
    async def close_idle(self, timeout: float) -> None:
        """Forever: close on-demand UDP faces that have been silent for `timeout` seconds."""
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
