"""The session keys a function host granted its callers (the host's side of
`icnd.compute.caller.CallerSessions`).

A caller's Ed25519-signed small call may offer an X25519 key; the host then
grants a session (`HostSessions.grant`): both sides derive the same two HMAC
keys (`icnd.compute.rice.session_keys`), one for the caller's proofs of its
later small calls, one for the host's answers to them.  A session lasts
`icnd.compute.rice.SESSION_TTL` seconds; at most `capacity` are kept, the
least recently used dropped first.  `HostSessions.find` picks, among the
sessions a call names, the one this host holds and checks its MAC.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from icnd.compute.rice import SESSION_TTL, session_key_name, session_keys
from icnd.name import Name
from icnd.security import HmacKey, HmacVerifyKey


@dataclass
class HostSession:
    """A session key this host granted (see `icnd.compute.caller.CallerSessions`)."""

    proofs: HmacVerifyKey  # checks the caller's small-call proofs
    answers: HmacKey  # MACs the answers, named `session_key_name(sid)`
    principal: Name  # the caller's key name, proven by the Ed25519-signed call that asked for it
    public_key: bytes  # the caller's public key (checked again, through the validator's cache, per call)
    expires: float  # trio time


class HostSessions:
    """The sessions a host granted, by session id, least recently used first."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._sessions: OrderedDict[bytes, HostSession] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def __iter__(self) -> Iterator[bytes]:
        """The ids of the sessions held."""
        return iter(self._sessions)

    def find(self, offered: list[list[bytes]], message: bytes, now: float) -> tuple[HostSession | None, bool]:
        """(the session of ours among `offered` -- [sid, MAC] pairs -- if its
        MAC over `message` is valid, else None; whether one was ours).
        Sessions expired at `now` are forgotten here."""
        for sid, mac in offered:
            session = self._sessions.get(sid)
            if session is None:
                continue
            if session.expires <= now:
                del self._sessions[sid]
                continue
            self._sessions.move_to_end(sid)
            return (session if session.proofs.is_valid(message, mac) else None), True
        return None, False

    def grant(self, kx: bytes, principal: Name, public_key: bytes, now: float) -> tuple[bytes, bytes] | None:
        """A new session for `principal` (key `public_key`), keyed by X25519
        between the caller's offer `kx` and a fresh key of ours: (its id, our
        public key), or None for a degenerate `kx` (no session)."""
        mine = X25519PrivateKey.generate()
        try:
            shared = mine.exchange(X25519PublicKey.from_public_bytes(kx))
        except ValueError:
            return None
        sid = secrets.token_bytes(16)
        host_kx = mine.public_key().public_bytes_raw()
        proof_key, answer_key = session_keys(shared, sid, kx, host_kx)
        self._sessions[sid] = HostSession(HmacVerifyKey(proof_key), HmacKey(session_key_name(sid), answer_key),
                                          principal, public_key, now + SESSION_TTL)
        while len(self._sessions) > self.capacity:
            self._sessions.popitem(last=False)
        return sid, host_kx
