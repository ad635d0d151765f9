"""RICE session keys (icnd.compute.caller / host): a small call's Ed25519-signed
key offer, the host's GRANT, and the MACs both sides check afterwards."""

from __future__ import annotations

import dataclasses

import msgpack
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from icnd import Name, RemoteError, VerificationError
from icnd.compute import host as host_module
from icnd.compute import rice
from icnd.compute.caller import MAX_CALLER_FUNCTIONS, SESSION_RENEW, Caller, CallerSessions, CallSession
from icnd.compute.host import FunctionHost, HostLimits
from icnd.compute.rice import MAX_OFFERED_SESSIONS, SESSION_TTL
from icnd.errors import error_fields
from icnd.compute.registry import hosted
from icnd.packet import ContentType, Data, Interest, SigType
from icnd.security import Ed25519Key, HmacKey, HmacVerifyKey, KeyChain

FN = Name("/fn/f")
CALLER = Name("/client/alice/KEY/12345678")


class _HostClient:
    """What a FunctionHost needs of its client to grant and answer."""

    def __init__(self) -> None:
        self.key = Ed25519Key.generate(Name("/node/h"))
        self.keychain = KeyChain()
        self.keychain.add_signing_key(self.key)

    def sign(self, data: Data) -> Data:
        return self.key.sign(data)


class _CallerEndpoint:
    """What the caller side needs of its endpoint here: a verifier for the host's key."""

    def __init__(self, host: _HostClient) -> None:
        self.keychain = host.keychain

    async def verify(self, data: Data) -> None:
        self.keychain.verify(data)


def _caller(host: _HostClient) -> Caller:
    return Caller(_CallerEndpoint(host))  # type: ignore[arg-type]  # a fake endpoint with only what is used


def _host(**limits) -> tuple[FunctionHost, _HostClient]:
    client = _HostClient()
    return FunctionHost(client, [], Name("/node/h"), limits=HostLimits(**limits)), client  # type: ignore[arg-type]  # a fake endpoint with only what is used


async def _establish(host: FunctionHost, caller: Caller, answer: bytes = b"result") -> tuple[Data, CallSession]:
    """One signed small call's answer, granted and accepted: (what the caller reads, its session)."""
    exchange = X25519PrivateKey.generate()
    kx = exchange.public_key().public_bytes_raw()
    plain = host._result_data(FN.append("call"), answer, 0)
    grant = host._grant(plain, kx, CALLER, b"\x01" * 32)
    assert grant.content_type == ContentType.GRANT and grant.sig_type == SigType.ED25519
    opened = await caller._open_small_answer(FN, grant, [], exchange)
    (session,) = caller.sessions.for_call(FN)
    return opened, session


async def test_a_grant_gives_both_sides_the_same_keys() -> None:
    host, host_client = _host()
    caller = _caller(host_client)
    opened, session = await _establish(host, caller)
    assert (opened.content, opened.content_type) == (b"result", ContentType.BLOB)
    assert session.host == host_client.key.name  # one session per host key
    assert host.counters["fn_sessions_granted"] == 1 and host.tables()["fn_sessions"] == 1

    # the caller's proof MAC passes the host's check and names the caller the grant was for
    message = rice.call_proof(FN.append("call-2"), 1, [b"\x01"])
    found, ours = host.sessions.find([[session.sid, session.mac(message)]], message, trio.current_time())
    assert ours and found is not None and found.principal == CALLER
    # the host's answer MAC passes the caller's check
    answer = found.answers.sign(Data(FN.append("call-2"), b"42"))
    assert answer.sig_type == SigType.HMAC_SHA256 and answer.key_locator == session.key_name
    assert await caller._open_small_answer(FN, answer, [session], None) is answer


async def test_forged_and_foreign_macs_are_refused() -> None:
    host, host_client = _host()
    caller = _caller(host_client)
    _, session = await _establish(host, caller)
    message = rice.call_proof(FN.append("call-2"), 1, [b"\x01"])
    # a session of ours with a wrong MAC: refused (not "unknown", which would invite a signed retry)
    assert host.sessions.find([[session.sid, b"\x00" * 32]], message, trio.current_time()) == (None, True)
    other = rice.call_proof(FN.append("call-3"), 1, [b"\x01"])
    assert host.sessions.find([[session.sid, session.mac(other)]], message, trio.current_time()) == (None, True)
    # sessions we never granted
    assert host.sessions.find([[b"\x07" * 16, session.mac(message)]], message, trio.current_time()) == (None, False)

    found, _ = host.sessions.find([[session.sid, session.mac(message)]], message, trio.current_time())
    assert found is not None
    # an answer MACed with the caller's direction of the session, or with some other key
    reflected = HmacKey(session.key_name, session.proof_key).sign(Data(FN.append("x"), b"1"))
    other_key = HmacKey(rice.session_key_name(b"\x09" * 16), b"k" * 32).sign(Data(FN.append("x"), b"1"))
    for bad in (reflected, other_key):
        with pytest.raises(VerificationError):
            await caller._open_small_answer(FN, bad, [session], None)
    # tampered content under the right key
    good = found.answers.sign(Data(FN.append("x"), b"1"))
    tampered = dataclasses.replace(good, content=b"2")
    with pytest.raises(VerificationError):
        await caller._open_small_answer(FN, tampered, [session], None)


async def test_sessions_expire_on_both_sides(autojump_clock) -> None:
    host, host_client = _host()
    caller = _caller(host_client)
    _, session = await _establish(host, caller)
    await trio.sleep(SESSION_TTL - SESSION_RENEW + 1)
    assert caller.sessions.for_call(FN) == []  # the caller stops using it before the host forgets it
    message = rice.call_proof(FN.append("c"), 1, [])
    assert host.sessions.find([[session.sid, session.mac(message)]], message, trio.current_time())[0] is not None
    await trio.sleep(SESSION_RENEW)
    assert host.sessions.find([[session.sid, session.mac(message)]], message, trio.current_time()) == (None, False)
    assert host.tables()["fn_sessions"] == 0


async def test_a_degenerate_key_offer_gets_the_plain_answer() -> None:
    host, _ = _host()
    plain = host._result_data(FN.append("call"), b"r", 0)
    assert host._grant(plain, b"\x00" * 32, CALLER, b"\x01" * 32) is plain
    assert host.tables()["fn_sessions"] == 0


async def test_a_malformed_grant_is_a_protocol_error() -> None:
    host, host_client = _host()
    caller = _caller(host_client)
    bad = host_client.sign(Data(FN.append("call"), b"\x93\x01\x02\x03", ContentType.GRANT))
    with pytest.raises(RemoteError, match="malformed session grant"):
        await caller._open_small_answer(FN, bad, [], X25519PrivateKey.generate())
    # a grant the call did not ask for
    with pytest.raises(RemoteError, match="did not ask for"):
        await caller._open_small_answer(FN, bad, [], None)


async def test_tables_are_bounded() -> None:
    host, _ = _host(max_sessions=3)
    for _ in range(5):
        host._grant(host._result_data(FN, b"", 0), X25519PrivateKey.generate().public_key().public_bytes_raw(), CALLER,
                    b"\x01" * 32)
    assert host.tables()["fn_sessions"] == 3 and host.counters["fn_sessions_granted"] == 5

    sessions = CallerSessions()
    now = trio.current_time()

    def session(host_id: int, expires: float) -> CallSession:
        sid = bytes([host_id]) * 16
        return CallSession(sid, b"p" * 32, HmacVerifyKey(b"a" * 32), rice.session_key_name(sid),
                           Name(f"/node/h{host_id}/KEY/12345678"), expires)

    for i in range(MAX_OFFERED_SESSIONS + 2):
        sessions.add(FN, session(i, now + 100 + i))
    kept = sessions.for_call(FN)
    assert len(kept) == MAX_OFFERED_SESSIONS
    assert {s.sid[0] for s in kept} == set(range(2, MAX_OFFERED_SESSIONS + 2))  # the longest-lived kept
    for i in range(MAX_CALLER_FUNCTIONS + 5):
        sessions.add(Name(f"/fn/g{i}"), session(1, now + 100))
    assert sessions.for_call(FN) == [] and sessions.for_call(Name("/fn/g4")) == []
    assert len(sessions.for_call(Name(f"/fn/g{MAX_CALLER_FUNCTIONS + 4}"))) == 1


async def test_one_key_offer_at_a_time_per_function() -> None:
    sessions = CallerSessions()
    assert sessions.start_offer(FN, force=False)
    assert not sessions.start_offer(FN, force=False)  # another call is already offering
    assert sessions.start_offer(FN, force=True)  # a host did not know our sessions: offer anyway
    sessions.end_offer(FN)
    assert sessions.start_offer(FN, force=False)


_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.binary(max_size=40) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=5),
    max_leaves=12,
)
_bodies = st.dictionaries(st.sampled_from(["args", "ts", "pub", "key", "sig", "kx", "sessions"]), _values,
                          max_size=7)


@settings(max_examples=300, deadline=None)
@given(body=_bodies | st.binary(max_size=64).map(lambda b: {"__raw__": b}), known=st.booleans())
async def test_no_malformed_small_call_crashes_the_host_or_runs_anything(body: dict, known: bool) -> None:
    """Whatever the parameters, the host answers a signed or MACed ERROR
    (bad-arguments, unauthorized, session-unknown): it never raises, and
    never starts the function."""
    ran = []
    host, host_client = _host()
    host.functions = [hosted("/fn/f", ran.append)]
    if known:  # a live session, so that sids and MACs may meet one
        await _establish(host, _caller(host_client))
        (sid,) = host.sessions
        body = {**body, "sessions": [[sid, b"\x00" * 32]]} if "sessions" in body else body
    params = body["__raw__"] if "__raw__" in body else msgpack.packb(body, use_bin_type=True)
    ti = Interest.with_params(FN.append(b"c" * 16), params)
    try:
        answer = await host._small_call(host.functions[0], ti)
    except host_module._NotOurs as exc:  # session-unknown: `_on_call` answers it without remembering the call-id
        answer = exc.answer
    assert answer.content_type == ContentType.ERROR
    assert error_fields(answer)[0] in ("bad-arguments", "unauthorized", "session-unknown")
    assert ran == [] and host.counters["fn_executions"] == 0
