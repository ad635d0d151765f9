"""Named functions, RICE-style, over reflexive forwarding: what both sides share.

The caller is `icnd.compute.caller`, the host `icnd.compute.host`; this
module holds the protocol between them: the names of its messages, the
limits both apply, what a small call's proof covers and how a session's
keys are derived (`icnd.compute.caller.CallerSessions` describes sessions).
Errors travel as signed ERROR Data (`icnd.errors.error_data`).

A call of ``/fn/NAME`` with arguments::

    client                                        host (serves /fn/NAME)
    TI  /fn/NAME/<call-id>/rnp=R  ───────────────►  admission (busy: Nack no-resources,
                                                    so the strategy tries another host)
        ◄─────────────── RI /rnp=R/auth/<challenge>
    D   {ti, pub} signed by the caller's key ─────►  signature + policy checked first
        ◄─────────────── RI /rnp=R/manifest           (refused: ERROR unauthorized)
    D   {segment_size, args: [{size, digests}]} ──►  limits checked before any bulk pull
        ◄─────────────── RI /rnp=R/arg/<i>/v=0/seg=<n>   (pipelined, checked by digest)
    D   segments ─────────────────────────────────►  the function starts
        ◄─────────────── TD /fn/NAME/<call-id>/rnp=R: the result inline (BLOB),
                         a THUNK {name, eta_ms, expires_ms}, or a signed ERROR
    poll <thunk name> at the ETA ───────────────────►  THUNK again (new ETA) while running;
                                                       the result as an object when done;
                                                       ERROR gone after the retention time

Reflexive Interests (RI) retrace the trigger's (TI's) path through the
forwarders' reflexive tables and keep the TI's PIT state alive, so a call
with megabytes of arguments needs no route back to the client.  The call-id
is reused on retransmissions: the host runs a call-id at most once.  Results
live under the host's own prefix (``/node/<host>/thunk/<128-bit id>``; an
application's host adds a tag of its own: ``/node/<host>/thunk/<tag>/<id>``) as a
versioned object, so PIT state stays flat however long the function runs,
and a result is fetched like any other named data.

Pure functions (`icnd.function(pure=True)`) may also be called as
``/fn/NAME/params-sha256=<digest>`` with the encoded arguments as the
Interest's parameters: the answer is cacheable, so equal calls from anyone
are answered by Content Stores; the host also memoizes pure RICE calls.
Such a call proves no caller, so it passes the same policy as any call as an
*anonymous* one: only a function without an allow list answers it; a host
with an allow list refuses it ``unauthorized`` -- before anything else, so
a caller it may refuse learns nothing of the function, not even whether it
is pure -- and the caller makes a proven call instead (whose answer,
memoized or not, is named by its call-id and never cacheable).
"""

from __future__ import annotations

import msgpack
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from icnd.name import Name, generic

AUTH = generic("auth")
MANIFEST = generic("manifest")
ARG = generic("arg")
THUNK = generic("thunk")
SESSION = generic("session")

MAX_ARGS = 64
MAX_POLL_WAIT = 5.0  # seconds: the longest a thunk's ETA makes a caller wait before it polls
SESSION_TTL = 600.0  # seconds a host keeps a session key it granted
SESSION_INFO = b"icnd/rice/session/v1"
MAX_OFFERED_SESSIONS = 4  # sessions a small call names (one per host of the function that granted one)


def call_proof(base: Name, ts: int, encoded: list[bytes], kx: bytes | None = None, *, future: bool = False) -> bytes:
    """What a small call's signature (or session MAC) covers: the call's name
    (function + call-id, as its wire-form components), the caller's clock (ms),
    the encoded arguments, when the caller offers a session its X25519 public
    key and, for a submitted call (`icnd.Future`), that it is one."""
    if future:
        return msgpack.packb([base.comps, ts, encoded, kx, "future"], use_bin_type=True)
    if kx is None:
        return msgpack.packb([base.comps, ts, encoded], use_bin_type=True)
    return msgpack.packb([base.comps, ts, encoded, kx], use_bin_type=True)


def session_keys(shared: bytes, sid: bytes, caller_kx: bytes, host_kx: bytes) -> tuple[bytes, bytes]:
    """The two keys of a session, from the X25519 shared secret: the first
    MACs the caller's proofs, the second the host's answers (one direction
    per key, so neither side's MAC can pass for the other's)."""
    okm = HKDF(SHA256(), 64, salt=sid, info=SESSION_INFO + caller_kx + host_kx).derive(shared)
    return okm[:32], okm[32:]


def session_key_name(sid: bytes) -> Name:
    """The key locator of answers MACed with session `sid`: ``/session/<sid>``."""
    return Name.from_wire((SESSION, generic(sid)))

