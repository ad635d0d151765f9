"""The caller's side of named functions (the protocol is in `icnd.compute.rice`).

`Caller.call` picks one of three ways to invoke ``/fn/NAME``:

- a *pure* call (``pure=True``): ``/fn/NAME/params-sha256=<digest>`` with
  the encoded arguments as the Interest's parameters, cacheable anywhere;
- a *small* call (encoded arguments up to `SMALL_CALL_MAX`): the arguments
  and the caller's proof of identity ride in the trigger itself (one round
  trip), proven by an Ed25519 signature or by MACs under session keys the
  function's hosts granted (`CallerSessions`);
- a *RICE* call: the trigger names an rnp= component and the host pulls the
  caller's proof, an argument manifest and the arguments by reflexive
  Interests, which this caller answers while the call lasts.

Every way ends the same: the result inline, a thunk polled until the result
is stored as an object, or a signed ERROR raised as its exception.  A busy
host (Nack no-resources) is retried with backoff under the same call-id,
so no host ever runs a call twice; so is a function nobody serves yet (Nack
no-route), until the call's deadline (`icnd.objects.fetch.RouteWait`): a
host that starts, or a route that comes back, within it is waited for.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import msgpack
import trio
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from icnd.codec import encode, signed_portion_of_wire
from icnd.compute.rice import (
    ARG,
    AUTH,
    MANIFEST,
    MAX_ARGS,
    MAX_OFFERED_SESSIONS,
    SESSION_TTL,
    call_proof,
    session_key_name,
    session_keys,
)
from icnd.compute.named import encode_named, is_named
from icnd.compute.resolve import await_result, thunk_fields
from icnd.compute.values import decode_value, encode_value
from icnd.endpoint import Endpoint
from icnd.errors import (
    Error,
    Nacked,
    RemoteError,
    Timeout,
    Unauthorized,
    VerificationError,
    error_exception,
    error_fields,
)
from icnd.name import T_SEGMENT, Name, generic, rnp, segment
from icnd.objects.fetch import MAX_PUBLISH_CONTENT, RouteWait, express_routed, fresh
from icnd.objects.manifest import DEFAULT_SEGMENT_SIZE, segment_count
from icnd.packet import ContentType, Data, Interest, Nack, NackReason, SigType
from icnd.security import DigestKey, Ed25519Key, HmacVerifyKey

log = logging.getLogger("icnd.compute")

TI_LIFETIME = 4.0  # seconds; the client re-expresses the same TI name after this much silence
SMALL_CALL_MAX = 8 * 1024  # encoded arguments up to this ride in the trigger (one round trip)
BUSY_BACKOFF = 0.05  # first wait after every host said no-resources; doubles, with jitter
MAX_BUSY_BACKOFF = 1.0
SESSION_RENEW = 30.0  # a caller stops using a session this long before the host would forget it
MAX_CALLER_FUNCTIONS = 256  # functions a caller keeps sessions for, least recently called dropped

_DIGEST = DigestKey()


@dataclass
class CallSession:
    """A session key a host granted this caller (see `CallerSessions`)."""

    sid: bytes
    proof_key: bytes  # MACs this caller's small-call proofs
    answers: HmacVerifyKey  # checks the host's answers
    key_name: Name  # the answers' key locator
    host: Name  # the host's key name: who granted it
    expires: float  # trio time; a little before the host forgets it

    def mac(self, message: bytes) -> bytes:
        return hmac.new(self.proof_key, message, hashlib.sha256).digest()


class CallerSessions:
    """A caller's session keys, per function and host.

    A small call offers an X25519 public key inside its Ed25519-signed proof;
    the host answers with a signed GRANT (its own X25519 key and a session
    id) around the usual answer, and both derive the session's keys.  Later
    small calls of the same function carry, instead of an Ed25519 signature,
    one HMAC per session the caller holds for that function (at most one per
    host, `MAX_OFFERED_SESSIONS`): whichever host the call reaches checks the
    MAC of its own session and MACs its answer back.  A host that knows none
    of them answers ``session-unknown``, and the caller calls again with a
    fresh call-id, signed.  Bounded: `MAX_CALLER_FUNCTIONS` functions,
    `MAX_OFFERED_SESSIONS` hosts each; expired sessions are dropped when met.
    """

    def __init__(self) -> None:
        self._by_fn: OrderedDict[tuple[bytes, ...], dict[Name, CallSession]] = OrderedDict()
        self._offering: set[tuple[bytes, ...]] = set()  # functions with a key offer in flight

    def for_call(self, fn: Name) -> list[CallSession]:
        hosts = self._by_fn.get(fn.comps)
        if not hosts:
            return []
        self._by_fn.move_to_end(fn.comps)
        now = trio.current_time()
        live = [s for s in hosts.values() if s.expires > now]
        if len(live) != len(hosts):
            self._by_fn[fn.comps] = {s.host: s for s in live}
        return live

    def start_offer(self, fn: Name, *, force: bool) -> bool:
        """Whether this call should offer a key: `force`d (a host did not know
        our sessions), or no other call of `fn` is offering one."""
        if not force and fn.comps in self._offering:
            return False
        self._offering.add(fn.comps)
        return True

    def end_offer(self, fn: Name) -> None:
        self._offering.discard(fn.comps)

    def add(self, fn: Name, session: CallSession) -> None:
        hosts = self._by_fn.setdefault(fn.comps, {})
        self._by_fn.move_to_end(fn.comps)
        hosts[session.host] = session
        while len(hosts) > MAX_OFFERED_SESSIONS:
            del hosts[min(hosts.values(), key=lambda s: s.expires).host]
        while len(self._by_fn) > MAX_CALLER_FUNCTIONS:
            self._by_fn.popitem(last=False)


T = TypeVar("T")


class _Refusals:
    """How a call takes the Nacks of its trigger: every host busy
    (no-resources, congestion) → back off (50 ms doubling to 1 s, jittered);
    no route → wait for one (`RouteWait`, until the call's deadline, then
    the "nobody serves it" error); any other reason is raised.  The caller
    then sends the same call again."""

    def __init__(self, fn: Name, deadline: float) -> None:
        self.busy = BUSY_BACKOFF
        self.routes = RouteWait(fn, deadline)

    @classmethod
    async def retrying(cls, fn: Name, deadline: float, attempt: Callable[[], Awaitable[T]]) -> T:
        """`attempt()`'s result, sending the call again after each refusal waited out."""
        refusals = cls(fn, deadline)
        while True:
            try:
                return await attempt()
            except Nacked as exc:
                await refusals.wait(exc)

    async def wait(self, exc: Nacked) -> None:
        if exc.reason in ("no-resources", "congestion"):
            await trio.sleep(self.busy * (0.5 + secrets.randbelow(1000) / 1000))
            self.busy = min(self.busy * 2, MAX_BUSY_BACKOFF)
        else:
            await self.routes.retry(exc)


class Caller:
    """Calls named functions through `ep`, with one identity and one set of
    sessions for all of them."""

    def __init__(self, ep: Endpoint) -> None:
        self.ep = ep
        self.sessions = CallerSessions()  # session keys function hosts granted (small calls)
        self._key: Ed25519Key | None = None
        self._cert_wire: tuple[Any, bytes] | None = None  # (the endpoint's certificate, its encoding)

    def key(self) -> Ed25519Key:
        """The key that proves who is calling: the endpoint's own Ed25519 key,
        or an ephemeral identity made once per caller."""
        if isinstance(self.ep.key, Ed25519Key):
            return self.ep.key
        if self._key is None:
            self._key = Ed25519Key.generate(Name(["client", secrets.token_hex(8)]))
        return self._key

    def certificate(self) -> bytes | None:
        """The wire encoding of the endpoint's certificate (its ``cert``, if it
        has one) when it certifies the key calls are signed with."""
        cert = getattr(self.ep, "cert", None)
        key = self.key()
        if cert is None or getattr(cert, "key_name", None) != key.name or cert.public_key != key.public_bytes():
            return None
        if self._cert_wire is None or self._cert_wire[0] is not cert:
            self._cert_wire = (cert, encode(cert.data))
        return self._cert_wire[1]

    async def call(self, fn: Name, args: tuple[Any, ...], *, timeout: float, pure: bool,
                   lifetime: float = TI_LIFETIME, segment_size: int = DEFAULT_SEGMENT_SIZE,
                   reflexive: bool = False, place: str = "near", future: bool = False,
                   info: dict[str, Any] | None = None) -> Any:
        """The result of `fn` applied to `args` (see `Client.call`); with
        `future`, the name its result will be stored under (`Client.submit`).
        `info`, if given, is filled with where the call went (``host``: the
        node it was placed at, None when the network chose)."""
        if place not in ("near", "any") and not place.startswith("/"):
            raise ValueError(f"place={place!r}: expected 'near', 'any' or a node's name (/node/b)")
        named = any(is_named(a) for a in args)
        encoded = [encode_named(a) if is_named(a) else encode_value(a) for a in args]
        if len(encoded) > MAX_ARGS:
            raise ValueError(f"at most {MAX_ARGS} arguments")
        deadline = trio.current_time() + timeout
        try:
            with trio.fail_at(deadline):
                target = await self._placed(fn, args, place, info) if named or place not in ("near", "any") else fn
                # a call with named arguments never takes the params-sha256 form: its name would stand for
                # the refs' names, and a cache could answer it after a name came to mean other bytes
                if pure and not named and not future:
                    params = msgpack.packb(encoded, use_bin_type=True)
                    if len(params) <= MAX_PUBLISH_CONTENT:
                        try:
                            return await self._pure_call(fn, params, deadline, lifetime)
                        except Unauthorized:  # the host admits proven callers only: a proven call
                            pass              # (still memoized there, shared among admitted callers)
                if not reflexive and sum(len(b) for b in encoded) <= SMALL_CALL_MAX:
                    answer = await self._small_call(target, encoded, deadline, lifetime, future)
                else:
                    answer = await self._rice_call(target, encoded, segment_size, deadline, lifetime, future)
                    await self.ep.verify(answer)
                if future:
                    return self._future_name(answer, fn)
                return await self._result(answer, deadline, verified=True, what=fn)
        except trio.TooSlowError:
            raise Timeout(f"{fn}: no result within {timeout:g}s") from None

    async def result(self, name: Name, *, timeout: float) -> Any:
        """The result stored under `name` (a `Future`'s), waiting for it at
        most `timeout` seconds (`Client.result`)."""
        try:
            with trio.fail_after(timeout):
                return await await_result(self.ep, name, trio.current_time() + timeout)
        except trio.TooSlowError:
            raise Timeout(f"{name}: no result within {timeout:g}s") from None

    async def _placed(self, fn: Name, args: tuple[Any, ...], place: str, info: dict[str, Any] | None) -> Name:
        """The name to send the call to: ``<host node>/<fn>`` for a host
        `place` names, or (``place="near"``) the one the caller's node finds
        nearest the named arguments' producers (``routing/place``); `fn` itself
        (the network picks) with ``place="any"``, or when the node has no
        link-state routing or knows of one host at most."""
        host: str | None = None
        if place not in ("near", "any"):
            host = Name(place).to_uri()
        elif place == "near":
            refs = [a.name.to_uri() for a in args if is_named(a)]
            try:
                hosts = (await self.ep.command("routing", "place", fn=fn.to_uri(), refs=refs))["hosts"]
            except Error as exc:  # no link-state routing here (409), or an older node: the network picks
                log.debug("%s: no placement (%s)", fn, exc)
                hosts = []
            if len(hosts) > 1 and hosts[0].get("cost") is not None:
                host = hosts[0]["node"]
        if info is not None:
            info["host"] = host
        return fn if host is None else Name(host).append_wire(*fn.comps)

    @staticmethod
    def _future_name(answer: Data, fn: Name) -> Name:
        """The result name a submitted call's (verified) answer gives."""
        if answer.content_type == ContentType.ERROR:
            raise error_exception(answer, fn)
        if answer.content_type != ContentType.THUNK:
            raise RemoteError("protocol", f"{fn}: the host answered a submitted call with content type "
                                          f"{answer.content_type}, not a thunk (a host from before submit?)")
        return thunk_fields(answer)[0]

    # --- small calls ----------------------------------------------------------------------------
    async def _small_call(self, fn: Name, encoded: list[bytes], deadline: float, lifetime: float,
                          future: bool) -> Data:
        """Small arguments ride in the trigger itself, with the caller's proof of
        identity: one round trip instead of the reflexive handshake (the result
        still comes back inline or as a thunk).  The proof is MACs under session
        keys the function's hosts granted (`CallerSessions`), or an Ed25519
        signature: at once when there are none, else when the host that got the
        call holds none of them.  Both attempts carry the same call-id, so
        however the first one was answered the host never runs the call twice.
        Returns the verified answer."""
        sessions = self.sessions
        call_id = secrets.token_bytes(16)
        offered = sessions.for_call(fn)
        if offered:
            answer = await self._small_attempt(fn, call_id, encoded, offered, None, offered, deadline, lifetime,
                                               future)
            if answer is not None:
                return answer
        exchange = X25519PrivateKey.generate() if sessions.start_offer(fn, force=bool(offered)) else None
        try:
            answer = await self._small_attempt(fn, call_id, encoded, [], exchange, offered, deadline, lifetime,
                                               future)
        finally:
            if exchange is not None:
                sessions.end_offer(fn)
        if answer is None:
            raise RemoteError("protocol", f"{fn}: a signed call was answered session-unknown")
        return answer

    async def _small_attempt(self, fn: Name, call_id: bytes, encoded: list[bytes], sent: list[CallSession],
                             exchange: X25519PrivateKey | None, known: list[CallSession], deadline: float,
                             lifetime: float, future: bool) -> Data | None:
        """One small call, proven by MACs under the `sent` sessions or (none
        sent) signed, offering `exchange`'s key if given; its verified answer,
        None if the host held none of the `sent` sessions.  `known`: sessions
        whose MACs answers may carry (a signed retry may meet the answer of an
        earlier attempt that was MACed)."""
        interest = self._small_trigger(fn, call_id, encoded, sent, exchange, lifetime, future)
        data = await self._express_busy(fn, interest, deadline, lifetime)
        return await self._open_small_answer(fn, data, known, exchange, asked_sessions=bool(sent))

    def _small_trigger(self, fn: Name, call_id: bytes, encoded: list[bytes], offered: list[CallSession],
                       exchange: X25519PrivateKey | None, lifetime: float, future: bool = False) -> Interest:
        base = fn.append_wire(generic(call_id))
        ts = time.time_ns() // 1_000_000
        body: dict[str, Any] = {"args": encoded, "ts": ts}
        if future:  # (covered by the proof: nobody on the way can turn a submit into a call or back)
            body["future"] = True
        if offered:
            message = call_proof(base, ts, encoded, future=future)
            body["sessions"] = [[s.sid, s.mac(message)] for s in offered]
        else:
            key = self.key()
            kx = None if exchange is None else exchange.public_key().public_bytes_raw()
            if kx is not None:
                body["kx"] = kx
            body.update(pub=key.public_bytes(), key=key.name.comps,
                        sig=key.sign_bytes(call_proof(base, ts, encoded, kx, future=future)))
            cert = self.certificate()
            if cert is not None:  # so that a host with a trust schema need not fetch it
                body["cert"] = cert
        return Interest.with_params(base, msgpack.packb(body, use_bin_type=True), lifetime_ms=int(lifetime * 1000))

    async def _express_busy(self, fn: Name, interest: Interest, deadline: float, lifetime: float) -> Data:
        """Express; every host busy, or no route yet → wait (`_Refusals`) and
        send the same trigger again (same call-id, so no host runs it twice)."""
        async def express() -> Data:
            nonlocal interest
            try:
                return await self.ep.express(interest, timeout=max(deadline - trio.current_time(), 0.01),
                                             retx=lifetime)
            except Nacked:
                interest = fresh(interest)  # the same trigger, a fresh nonce
                raise

        return await _Refusals.retrying(fn, deadline, express)

    async def _open_small_answer(self, fn: Name, data: Data, offered: list[CallSession],
                                 exchange: X25519PrivateKey | None, *, asked_sessions: bool = True) -> Data | None:
        """The verified answer to a small call (a grant unwrapped and its session
        kept); None when the call named sessions (`asked_sessions`) and the host
        knew none of them.  A MACed answer must be under one of `offered`."""
        if data.sig_type == SigType.HMAC_SHA256 and offered:
            session = next((s for s in offered if s.key_name == data.key_locator), None)
            if session is None:
                raise VerificationError(f"{data.name}: MACed with {data.key_locator}, not a session this call offered")
            if len(data.sig_value) != 32 or not session.answers.verifies(signed_portion_of_wire(data), data.sig_value):
                raise VerificationError(f"{data.name}: bad MAC under session {data.key_locator}")
            return data
        await self.ep.verify(data)
        if data.content_type == ContentType.ERROR and error_fields(data)[0] == "session-unknown":
            if not asked_sessions:
                raise RemoteError("protocol", f"{data.name}: a signed call was answered session-unknown")
            return None
        if data.content_type == ContentType.GRANT:
            if exchange is None:
                raise RemoteError("protocol", f"{data.name}: a session grant this call did not ask for")
            return _accept_grant(self.sessions, fn, data, exchange)
        return data

    # --- pure and RICE calls ----------------------------------------------------------------------
    async def _pure_call(self, fn: Name, params: bytes, deadline: float, lifetime: float) -> Any:
        interest = Interest.with_params(fn, params, lifetime_ms=int(lifetime * 1000))
        data = await express_routed(self.ep, interest, timeout=max(deadline - trio.current_time(), 0.01),
                                    retx=lifetime, what=fn)
        return await self._result(data, deadline, what=fn)

    async def _rice_call(self, fn: Name, encoded: list[bytes], segment_size: int,
                         deadline: float, lifetime: float, future: bool) -> Data:
        """Invoke; every host busy, or no route yet → wait (`_Refusals`) and try
        again with the same call-id (so no host ever runs it twice) and a fresh
        RNP.  Returns the answer, unverified."""
        call_id = secrets.token_bytes(16)
        return await _Refusals.retrying(
            fn, deadline, lambda: self._rice_attempt(fn, call_id, encoded, segment_size, lifetime, future))

    async def _rice_attempt(self, fn: Name, call_id: bytes, encoded: list[bytes], segment_size: int,
                            lifetime: float, future: bool) -> Data:
        reflexive = rnp(secrets.token_bytes(16))
        ti_name = fn.append_wire(generic(call_id), reflexive)
        key = self.key()
        digests = [_segment_digests(blob, segment_size) for blob in encoded]
        plan: dict[str, Any] = {"segment_size": segment_size,
                                "args": [{"size": len(b), "digests": d} for b, d in zip(encoded, digests)]}
        if future:
            plan["future"] = True
        manifest = msgpack.packb(plan)
        activity = [trio.current_time()]

        def on_reflexive(interest: Interest) -> Data | Nack:
            activity[0] = trio.current_time()
            comps = interest.name.comps
            what = comps[1] if len(comps) > 1 else b""
            if what == AUTH and len(comps) == 3:
                proof: dict[str, Any] = {"ti": ti_name.to_uri(), "pub": key.public_bytes()}
                cert = self.certificate()
                if cert is not None:
                    proof["cert"] = cert
                body = msgpack.packb(proof, use_bin_type=True)
                return key.sign(Data(interest.name, body))
            if what == MANIFEST and len(comps) == 2:
                return _DIGEST.sign(Data(interest.name, manifest))
            if what == ARG and len(comps) == 5:
                try:
                    blob = encoded[int(comps[2][1:].decode())]
                except (ValueError, IndexError):
                    return Nack.for_interest(interest, NackReason.NO_ROUTE, "no such argument")
                index = int.from_bytes(comps[4][1:], "big")
                last = segment_count(len(blob), segment_size) - 1
                if comps[4][0] != T_SEGMENT or index > last:
                    return Nack.for_interest(interest, NackReason.NO_ROUTE, "no such argument segment")
                content = blob[index * segment_size:(index + 1) * segment_size]
                return _DIGEST.sign(Data(interest.name, content, final_block_id=segment(last)))
            return Nack.for_interest(interest, NackReason.PROHIBITED, "not part of this call")

        with self.ep.reflexive(reflexive, on_reflexive):
            while True:
                interest = Interest(ti_name, lifetime_ms=int(lifetime * 1000))
                try:
                    data = await self.ep.express(interest, timeout=lifetime, retx=None)
                    break
                except Timeout:
                    # the host is still pulling arguments (RIs keep the TI alive): wait on;
                    # silence for a whole lifetime means the TI was lost: re-express it
                    while trio.current_time() - activity[0] < lifetime:
                        await trio.sleep(lifetime - (trio.current_time() - activity[0]))
        return data

    # --- the answer -------------------------------------------------------------------------------
    async def _result(self, data: Data, deadline: float, *, verified: bool = False,
                      what: Name | None = None) -> Any:
        """Turn a trigger answer (inline, thunk or error) into the result;
        an error names `what` (the function) rather than the trigger."""
        if not verified:
            await self.ep.verify(data)
        if data.content_type == ContentType.BLOB:
            return decode_value(data.content)
        if data.content_type == ContentType.THUNK:
            return await await_result(self.ep, thunk_fields(data)[0], deadline, answer=data, what=what)
        if data.content_type == ContentType.ERROR:
            raise error_exception(data, what)
        raise RemoteError("protocol", f"{data.name}: unexpected content type {data.content_type}")


def _accept_grant(sessions: CallerSessions, fn: Name, data: Data, exchange: X25519PrivateKey) -> Data:
    """Keep the session a GRANT carries (verified like any answer of the
    host: the session is as trustworthy as its signature); the answer it
    wraps."""
    try:
        body = msgpack.unpackb(data.content, raw=False)
        sid, host_kx, ttl_ms = body["sid"], body["kx"], body["ttl_ms"]
        inner_type, inner = body["type"], body["content"]
        if not (isinstance(sid, bytes) and len(sid) == 16 and isinstance(host_kx, bytes) and len(host_kx) == 32
                and type(ttl_ms) is int and type(inner_type) is int and isinstance(inner, bytes)):
            raise ValueError
        shared = exchange.exchange(X25519PublicKey.from_public_bytes(host_kx))
    except Exception:
        raise RemoteError("protocol", f"{data.name}: malformed session grant") from None
    ttl = min(ttl_ms / 1000.0, SESSION_TTL) - SESSION_RENEW
    if ttl > 0:
        proof_key, answer_key = session_keys(shared, sid, exchange.public_key().public_bytes_raw(), host_kx)
        key_name = session_key_name(sid)
        # one session per host key (a host signing with digests only has none: one per grant)
        sessions.add(fn, CallSession(sid, proof_key, HmacVerifyKey(answer_key), key_name,
                                     data.key_locator or key_name, trio.current_time() + ttl))
    return Data(data.name, inner, inner_type, data.freshness_ms)


def _segment_digests(blob: bytes, segment_size: int) -> bytes:
    n = segment_count(len(blob), segment_size)
    return b"".join(hashlib.sha256(blob[i * segment_size:(i + 1) * segment_size]).digest() for i in range(n))
