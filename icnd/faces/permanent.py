"""Permanent faces: one face, one id, to a peer that may come and go.

A `PermanentFace` is what a neighbour or a configured route needs (NFD's
*permanent* persistency): the face exists from the moment its owner adds it,
whether or not the peer is up, and lives until it is destroyed or the node
stops.  Its ``run`` keeps a connection to the peer's URI:

1. connect (the owner's ``connect`` callable, within ``connect_timeout``):
   TCP: a new `StreamFace` (`icnd.faces.connect_face`); UDP: the listener's
   face toward the address (``UdpListener.face_to``);
2. run that *inner* face, handing every packet it receives to the permanent
   face's ``on_receive`` as the permanent face's own;
3. when the inner face ends (the peer closed or reset the connection, a
   refused connect, a framing error), wait -- exponential backoff from
   ``initial`` doubling to ``maximum``, reset to ``initial`` after a
   connection that lasted longer than ``maximum`` -- and go to 1.

Invariants:

- The owner (and the forwarder behind it) never sees the face go down while
  the peer is away: its id, its routes and its counters stay.  ``connected``
  and the ``on_state(connected)`` hook tell who cares (the routing shell);
  ``state`` is ``"up"`` or ``"down"``.
- `send` never blocks and never raises: while disconnected it drops the
  packet and counts it in ``counters.send_drops`` (the face contract,
  `icnd.faces.base`).
- One task per permanent face: ``run`` itself connects, runs the inner face
  and sleeps between attempts; every attempt has a deadline.  `aclose` (or
  cancelling ``run``) closes the inner face and stops the retries; a
  permanent face is never reopened.
- Counters survive reconnects: each inner face takes over the totals so far
  and counts on (``counters`` is the current inner face's object, which its
  transport and link emulator update directly, so the hot path pays nothing).

UDP is connectionless: the inner face is the listener's face toward the
peer's address, which lives as long as the listener does; a peer's restart
does not end it.  For UDP, "permanent" therefore means: never closed as idle,
never evicted, the same face across the peer's restarts; whether the peer is
actually there is for hellos to find out, not the transport.

A TCP inner face is accepted by the peer's listener as an ordinary
on-demand face there: the peer needs no configuration for it.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, fields

import trio

from icnd.faces.base import Face, OnReceive

log = logging.getLogger("icnd.faces")

Connect = Callable[[], Awaitable[Face]]
"""Makes a new inner face to the peer (raises `OSError`, `ValueError` or
`trio.ClosedResourceError` when it cannot; the permanent face retries)."""


@dataclass(frozen=True, slots=True)
class ReconnectPolicy:
    """How a permanent face retries (see the module docstring); all in seconds.

    ``jitter``: each wait is stretched by a random fraction up to this, so
    that faces cut at the same moment do not reconnect in lockstep."""

    initial: float = 0.1
    maximum: float = 10.0
    connect_timeout: float = 5.0
    jitter: float = 0.1

    def __post_init__(self) -> None:
        if not 0 < self.initial <= self.maximum:
            raise ValueError(f"reconnect: need 0 < initial ({self.initial:g}) <= maximum ({self.maximum:g})")
        if not self.connect_timeout > 0:
            raise ValueError("reconnect: connect_timeout must be > 0")
        if not 0 <= self.jitter <= 1:
            raise ValueError("reconnect: jitter must be within 0..1")


DEFAULT_RECONNECT = ReconnectPolicy()


class PermanentFace(Face):
    """A face that reconnects to ``remote_uri`` for as long as it lives (module docstring)."""

    def __init__(self, remote_uri: str, connect: Connect, *, local: bool = False,
                 policy: ReconnectPolicy = DEFAULT_RECONNECT) -> None:
        super().__init__(remote_uri=remote_uri, local_uri="", local=local, persistent=True)
        self.permanent = True
        self.policy = policy
        self.connected = False
        self.on_state: Callable[[bool], None] | None = None  # the owner's hook, called on every change
        self.connects = 0  # connections made (the first one included)
        self.connect_failures = 0  # attempts that failed or timed out
        self.last_error: str | None = None  # why the last attempt failed or the last connection ended
        self._connect = connect
        self._inner: Face | None = None
        self._stream = False  # its connections are streams (the first one's `reliable_state` said so)
        self._scope = trio.CancelScope()
        self._running = False

    @property
    def state(self) -> str:
        """``"up"`` while an inner face is connected, else ``"down"``."""
        return "up" if self.connected else "down"

    def send(self, wire: bytes) -> None:
        inner = self._inner
        if inner is None:
            self.counters.send_drops += 1
            return
        inner.send(wire)

    def reliable_state(self) -> tuple[int, bool] | None:
        """(connections made, connected) if the connections are streams (TCP):
        a reconnect is a new connection, and what the old one carried may be
        lost; None over UDP, or before the first connection (nothing known)."""
        if not self._stream:
            return None
        return (self.connects, self.connected)

    async def run(self, on_receive: OnReceive) -> None:
        if self._running:
            raise RuntimeError(f"{self!r} is already running")
        self._running = True

        def deliver(inner: Face, wire: bytes) -> None:
            on_receive(self, wire)

        policy = self.policy
        delay = policy.initial
        try:
            with self._scope:
                while not self.closed:
                    inner = await self._attempt()
                    if inner is not None:
                        started = trio.current_time()
                        await self._run_inner(inner, deliver)
                        if trio.current_time() - started > policy.maximum:
                            delay = policy.initial
                    if self.closed:
                        break
                    wait = delay * (1 + random.uniform(0, policy.jitter))
                    log.debug("face %d %s: next attempt in %.2fs", self.id, self.remote_uri, wait)
                    await trio.sleep(wait)
                    delay = min(delay * 2, policy.maximum)
        finally:
            self._close_now(self.close_reason or "run() ended")

    async def _attempt(self) -> Face | None:
        """One connection attempt, within the policy's deadline; None if it failed."""
        try:
            with trio.fail_after(self.policy.connect_timeout):
                inner = await self._connect()
        except (OSError, ValueError, trio.ClosedResourceError, trio.TooSlowError) as exc:
            self.connect_failures += 1
            reason = "timed out" if isinstance(exc, trio.TooSlowError) else str(exc) or type(exc).__name__
            if reason != self.last_error:  # the first failure, or a new reason: worth a line
                log.info("face %d %s: cannot connect (%s); retrying with backoff", self.id, self.remote_uri, reason)
            self.last_error = reason
            return None
        if self.closed:
            await inner.aclose()
            return None
        return inner

    async def _run_inner(self, inner: Face, deliver: OnReceive) -> None:
        """Run one connection: adopt its counters, report up, run it, report down."""
        _carry_counters(self.counters, inner)
        self.counters = inner.counters
        self.local_uri = inner.local_uri
        inner.hand_over = self.hand_over  # what this face's link service takes as views, on every connection
        self._inner = inner
        self._stream = inner.reliable_state() is not None
        self.connects += 1
        log.info("face %d %s: connected (%s)", self.id, self.remote_uri, inner.local_uri)
        self._set_state(True)
        try:
            await inner.run(deliver)
        except OSError as exc:  # a transport error the inner face did not turn into a close
            self.last_error = str(exc)
        finally:  # inner.run closed the inner face on its way out (the face contract)
            self._inner = None
            if inner.close_reason and inner.close_reason != "closed locally":
                self.last_error = inner.close_reason
            # cancelled (the node stops; the inner face may have ended quietly): nothing will reconnect
            stopping = trio.current_effective_deadline() == -math.inf
            if not self.closed and not stopping:
                log.info("face %d %s: disconnected (%s); reconnecting", self.id, self.remote_uri, self.last_error)
            self._set_state(False)

    def _set_state(self, connected: bool) -> None:
        if connected == self.connected:
            return
        self.connected = connected
        hook = self.on_state
        if hook is not None:
            try:
                hook(connected)
            except Exception:  # the owner's bug must not end the face
                log.exception("face %d %s: on_state hook failed", self.id, self.remote_uri)

    def _release(self) -> None:
        inner = self._inner
        if inner is not None:
            inner._close_now("closed locally")
        self._scope.cancel()


def _carry_counters(totals: object, inner: Face) -> None:
    """Add the totals so far into a new inner face's counters (fields both have)."""
    counters = inner.counters
    if counters is totals:
        return
    for f in fields(totals):  # type: ignore[arg-type]  # a FaceCounters dataclass instance; mypy sees a type var
        if hasattr(counters, f.name):
            setattr(counters, f.name, getattr(counters, f.name) + getattr(totals, f.name))
