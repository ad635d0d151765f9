"""The packet half of the client's `icnd.endpoint.Endpoint`: one stream face to the node.

`FaceEndpoint` is the plumbing every feature (`icnd.objects.fetch`,
`icnd.compute.caller`, `icnd.compute.host`, `icnd.reduction.consumer`)
reaches through the protocol: a local face of the node (a Unix stream
connection) plus a receive task that matches incoming Data and Nacks to
pending Interests (`FaceEndpoint.express`), streams a fetch's segments to it
(`FaceEndpoint.stream`) and hands incoming Interests to served handlers and
to the reflexive handlers of calls in progress.  `icnd.client.facade.Client`
builds on it: keys and trust, management commands, serving, and the
application's methods.
"""

from __future__ import annotations

import inspect
import logging
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

import trio

from icnd.codec import encode, full_name
from icnd.endpoint import DEFAULT_TIMEOUT, RETX_INTERVAL, Handler, OnPacket
from icnd.errors import DecodeError, Error, Timeout, error_data
from icnd.faces import shm
from icnd.faces.base import Face
from icnd.faces.service import NativeLinkService
from icnd.faces.stream import StreamFace
from icnd.name import T_DIGEST, T_RNP, Name
from icnd.objects import fetch as objects
from icnd.packet import Data, Interest, Nack, NackReason, Packet

log = logging.getLogger("icnd.client")


def _names_digest(interest: Interest) -> bool:
    comps = interest.name.comps
    return bool(comps) and comps[-1][0] == T_DIGEST


class _Pending:
    __slots__ = ("interest", "event", "result")

    def __init__(self, interest: Interest) -> None:
        self.interest = interest
        self.event = trio.Event()
        self.result: Data | Nack | None = None


class FaceEndpoint:
    """The packet half of the client's `icnd.endpoint.Endpoint`: one stream
    face to the node, the Interests waiting on it, and the handlers its
    incoming Interests go to.  It lives in `nursery` (where each served
    Interest is answered in its own task); the owner runs
    ``face.run(endpoint.on_receive)`` there (`icnd.connect` does).  Answers
    a handler returns unsigned are signed with `sign`.  `icnd.client.Client`
    adds the rest of the protocol (keys, trust, commands) and the
    application's methods."""

    def __init__(self, face: Face, nursery: trio.Nursery, *, socket_path: str,
                 sign: Callable[[Data], Data]) -> None:
        self.face = face
        self._decode = NativeLinkService(face).decode  # icnd's format (large Data handed over, not copied)
        self.socket_path = socket_path
        self._nursery = nursery
        self._sign_answer = sign
        self._pending: dict[tuple[bytes, ...], list[_Pending]] = {}
        self._prefix_pending = 0
        self._digest_pending = 0  # pending Interests named by an implicit digest (matched by full name)
        # object fetches in progress: N/v=V -> callback(packet) for its segments
        self._streams: dict[tuple[bytes, ...], OnPacket] = {}
        # calls in progress: rnp= component -> answers the host's reflexive Interests
        self._reflexive: dict[bytes, Handler] = {}
        self._served: list[tuple[Name, Handler]] = []  # (prefix, handler) while `serve` runs

    # --- plumbing -----------------------------------------------------------------------
    def on_receive(self, face: Face, wire: bytes) -> None:
        """The face's receive callback: hands each packet from the node to its waiter.
        Endpoint plumbing (`icnd.endpoint`), @private: not in the API reference."""
        try:
            packet = self._decode(wire)
        except DecodeError as exc:
            log.warning("malformed packet from node: %s", exc)
            return
        if type(packet) is Interest:
            self._on_interest(packet)
        elif type(packet) is Data:
            self._on_data(packet)
        else:
            self._on_nack(packet)  # type: ignore[arg-type]  # a Nack: `type() is` narrows no else branch

    def _on_data(self, data: Data) -> None:
        comps = data.name.comps
        if self._streams:
            stream = self._streams.get(comps[:-1])
            if stream is not None:
                stream(data)
                return
        waiters = self._pending.pop(comps, [])
        if self._digest_pending:
            waiters.extend(self._pending.pop(full_name(data).comps, ()))
        if self._prefix_pending:
            for n in range(len(comps)):
                cands = self._pending.get(comps[:n])
                if cands:
                    keep = [p for p in cands if not p.interest.can_be_prefix]
                    waiters.extend(p for p in cands if p.interest.can_be_prefix)
                    if keep:
                        self._pending[comps[:n]] = keep
                    else:
                        del self._pending[comps[:n]]
        for p in waiters:
            self._resolve(p, data)

    def _on_nack(self, nack: Nack) -> None:
        if self._streams:
            stream = self._streams.get(nack.name.comps[:-1])
            if stream is not None:
                stream(nack)
                return
        waiters = self._pending.get(nack.name.comps)
        if not waiters:
            return
        for p in list(waiters):
            if p.interest.nonce == nack.nonce:
                waiters.remove(p)
                self._resolve(p, nack)
        if not waiters:
            self._pending.pop(nack.name.comps, None)

    def _resolve(self, p: _Pending, result: Data | Nack) -> None:
        if p.interest.can_be_prefix:
            self._prefix_pending -= 1
        if _names_digest(p.interest):
            self._digest_pending -= 1
        p.result = result
        p.event.set()

    def _add_pending(self, p: _Pending) -> None:
        self._pending.setdefault(p.interest.name.comps, []).append(p)
        if p.interest.can_be_prefix:
            self._prefix_pending += 1
        if _names_digest(p.interest):
            self._digest_pending += 1

    def _drop_pending(self, p: _Pending) -> None:
        waiters = self._pending.get(p.interest.name.comps)
        if waiters and p in waiters:
            waiters.remove(p)
            if not waiters:
                del self._pending[p.interest.name.comps]
            if p.interest.can_be_prefix:
                self._prefix_pending -= 1
            if _names_digest(p.interest):
                self._digest_pending -= 1

    def send(self, packet: Packet) -> None:
        """Send one packet to the node as it is; nothing waits for an answer.
        Raises Error once the connection is closed.
        Endpoint plumbing (`icnd.endpoint`), @private: not in the API reference."""
        if self.face.closed:
            raise Error(f"connection to the node at {self.socket_path} is closed")
        self.face.send(encode(packet))

    # --- consumer -----------------------------------------------------------------------
    async def express(self, interest: Interest, *, timeout: float = DEFAULT_TIMEOUT,
                      retx: float | None = RETX_INTERVAL) -> Data:
        """Send `interest` and wait for its Data: the raw exchange every other
        method builds on (no verification, no segments).  Every `retx` seconds
        (None: never) it is sent again with a fresh nonce, so one loss does not
        cost the whole `timeout`.  A Nack ends the wait at once.  Raises
        `Nacked` (``.reason``: no-route, congestion, ...) or `Timeout` after
        `timeout` seconds, never later.
        Endpoint plumbing (`icnd.endpoint`), @private: not in the API reference."""
        return await self._express(interest, timeout, retx, ())

    async def _express(self, interest: Interest, timeout: float, retx: float | None, fds: Sequence[int]) -> Data:
        """`express`; with `fds`, the Interest is sent once, with the descriptors attached."""
        deadline = trio.current_time() + timeout
        face = self.face
        if fds and not (isinstance(face, StreamFace) and face.can_pass_fds):
            raise Error(f"the connection to {self.socket_path} cannot pass descriptors (not a Unix socket)")
        while True:
            p = _Pending(interest)
            self._add_pending(p)
            try:
                if not fds:
                    self.send(interest)
                wait = deadline - trio.current_time()
                if retx and not fds:
                    wait = min(wait, retx)
                with trio.move_on_after(max(wait, 0)):
                    if fds:
                        assert isinstance(face, StreamFace)
                        if face.closed:
                            raise Error(f"connection to the node at {self.socket_path} is closed")
                        face.send_with_fds(encode(interest), list(fds))
                    await p.event.wait()
            finally:
                if p.result is None:
                    self._drop_pending(p)
            result = p.result
            if isinstance(result, Data):
                return result
            if isinstance(result, Nack):
                raise objects.nacked(result)
            if fds or trio.current_time() >= deadline:
                raise Timeout(f"no answer for {interest.name} within {timeout:g}s")
            interest = interest.forwarded(interest.hop_limit, nonce=Interest(interest.name).nonce)

    def passes_fds(self) -> bool:
        """True if this connection passes descriptors (a Unix socket to a node on this host).
        Endpoint plumbing (`icnd.endpoint`), @private: not in the API reference."""
        face = self.face
        return isinstance(face, StreamFace) and face.can_pass_fds and shm.available()

    # --- producer -----------------------------------------------------------------------
    @contextmanager
    def reflexive(self, component: bytes, handler: Handler) -> Iterator[None]:
        """Answer reflexive Interests starting with `component` (an rnp=) meanwhile.
        Endpoint plumbing (`icnd.endpoint`), @private: not in the API reference."""
        self._reflexive[component] = handler
        try:
            yield
        finally:
            del self._reflexive[component]

    @contextmanager
    def stream(self, prefix: Name, on_packet: OnPacket) -> Iterator[None]:
        """Hand Data and Nacks named `prefix` plus one component to `on_packet` meanwhile.
        Endpoint plumbing (`icnd.endpoint`), @private: not in the API reference."""
        key = prefix.comps
        self._streams[key] = on_packet
        try:
            yield
        finally:
            self._streams.pop(key, None)

    def _on_interest(self, interest: Interest) -> None:
        comps = interest.name.comps
        if comps and comps[0][0] == T_RNP:
            handler = self._reflexive.get(comps[0])
            if handler is None:  # a finished (or never made) call: stop the host asking
                self.send(Nack.for_interest(interest, NackReason.PROHIBITED, "no call in progress"))
            else:
                self._nursery.start_soon(self._answer, handler, interest)
            return
        best: tuple[Name, Handler] | None = None
        for prefix, handler in self._served:
            if prefix.is_prefix_of(interest.name) and (best is None or len(prefix) > len(best[0])):
                best = (prefix, handler)
        if best is None:
            self.send(Nack.for_interest(interest, NackReason.NO_ROUTE, "not served by this application"))
            return
        self._nursery.start_soon(self._answer, best[1], interest)

    async def _answer(self, handler: Handler, interest: Interest) -> None:
        try:
            reply = handler(interest)
            if inspect.isawaitable(reply):
                reply = await reply
        except Exception as exc:
            log.warning("handler for %s raised %s", interest.name, exc)
            reply = error_data(interest.name, type(exc).__name__, str(exc))
        if reply is None:
            return
        if isinstance(reply, Nack):
            if not self.face.closed:
                self.send(reply)
            return
        if isinstance(reply, (bytes, bytearray, memoryview)):
            reply = Data(interest.name, bytes(reply))
        if not isinstance(reply, Data):
            log.warning("handler for %s returned %s, not bytes/Data/None", interest.name, type(reply).__name__)
            return
        if not reply.sig_value:
            reply = self._sign_answer(reply)
        if not self.face.closed:
            self.send(reply)
