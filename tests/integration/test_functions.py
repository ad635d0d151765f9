"""Named functions across real daemons: two hosts, a client two hops away."""

from __future__ import annotations

import dataclasses
import secrets
import time

import msgpack
import numpy as np
import pytest
import trio

import icnd
from icnd.errors import error_fields
from icnd.topology import launch, parse
from icnd.trust.cert import self_signed

FUNCTIONS = [
    "apps.functions:matmul=/fn/matmul",
    "apps.functions:add=/fn/add",
    "apps.functions:slow=/fn/slow",
    "apps.functions:fail=/fn/fail",
    "tests.integration.hosted:echo=/fn/echo",
    "tests.integration.hosted:counted=/fn/counted",
    "tests.integration.hosted:big=/fn/big",
]

SPEC = {
    # client - r - h1, r - h2: both hosts two hops from the client
    # static: a test takes h1 out of service by removing r's static routes to it
    "routing": "static",
    "nodes": {"client": {}, "r": {}, "h1": {"functions": FUNCTIONS}, "h2": {"functions": FUNCTIONS}},
    "links": [{"ends": ["client", "r"]}, {"ends": ["r", "h1"]}, {"ends": ["r", "h2"], "cost": 2}],
}


@pytest.fixture
async def net():
    async with launch(parse(SPEC)) as network:
        yield network


@pytest.mark.parametrize("reflexive", [False, True], ids=["small-call", "reflexive-handshake"])
async def test_scalar_and_numpy_calls(net, reflexive: bool) -> None:
    c = await net.connect("client")
    assert await c.call("/fn/add", 40, 2, reflexive=reflexive) == 42
    assert await c.call("/fn/add", 2, 3.5) == 5.5
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.ones((4, 2), dtype=np.float32)
    np.testing.assert_array_equal(await c.call("/fn/matmul", a, b), a @ b)
    assert await c.call("/fn/echo", {"k": [1, (2, 3)], "b": b"\x00\x01"}) == {"k": [1, (2, 3)], "b": b"\x00\x01"}


async def test_large_arguments_and_results(net) -> None:
    c = await net.connect("client")
    arg = np.random.default_rng(1).standard_normal(1024 * 1024).astype(np.float32)  # 4 MiB
    back = await c.call("/fn/echo", arg, timeout=60)
    np.testing.assert_array_equal(back, arg)
    big = await c.call("/fn/big", 16 * 1000 * 1000, timeout=60)  # a 16 MB result
    assert isinstance(big, np.ndarray) and big.nbytes == 16 * 1000 * 1000 and int(big[-1]) == (16 * 10**6 - 1) % 251


async def test_long_call_completes_through_a_thunk(net) -> None:
    c = await net.connect("client")
    for reflexive in (False, True):
        start = trio.current_time()
        # three trigger lifetimes of work: the trigger is answered with a thunk, then polled
        assert await c.call("/fn/slow", 3.0, "finished", timeout=30, lifetime=1.0, reflexive=reflexive) == "finished"
        assert trio.current_time() - start >= 3.0


async def test_errors(net) -> None:
    c = await net.connect("client")
    with pytest.raises(icnd.RemoteError) as info:
        await c.call("/fn/fail", "kaput")
    assert info.value.code == "ValueError" and "kaput" in info.value.message
    assert await c.call("/fn/add", 1, 1) == 2  # the host keeps serving
    with pytest.raises(icnd.RemoteError) as info:
        await c.call("/fn/add/not-a-call-shape/x")
    assert info.value.code == "no-such-function"
    with pytest.raises(icnd.Nacked) as nack:
        await c.call("/fn/nobody-serves-this", 1, timeout=0.5)  # after waiting for a route that never came
    assert nack.value.reason == "no-route" and "/fn/nobody-serves-this: nobody serves it" in str(nack.value)


async def test_pure_function_runs_once_for_equal_calls(net) -> None:
    c = await net.connect("client")
    other = await net.connect("r")
    for client in (c, c, other):
        assert await client.call("/fn/counted", 21, pure=True) == 42
    counts = [await (await net.connect(h)).call("/fn/counted", -1) for h in ("h1",)]
    # only the probe call (-1) and one execution of counted(21) happened on h1 (the cheapest host)
    assert counts == [1]


async def test_100_concurrent_calls_and_both_hosts_used(net) -> None:
    c = await net.connect("client")
    results = {}

    async def one(i: int) -> None:
        results[i] = await c.call("/fn/slow", 0.3, i, timeout=60)

    async with trio.open_nursery() as nursery:
        for i in range(100):
            nursery.start_soon(one, i)
    assert results == {i: i for i in range(100)}
    executed = [(await net.status(h))["counters"]["interests_in"] for h in ("h1", "h2")]
    assert all(n > 0 for n in executed), f"calls per host (Interests in): {executed}"


@pytest.mark.parametrize("reflexive", [False, True], ids=["small-call", "reflexive-handshake"])
async def test_unauthorized_caller_never_runs_the_function(net, tmp_path, reflexive: bool) -> None:
    calls = []

    def guarded(x):
        calls.append(x)
        return x

    allowed_key = icnd.security.Ed25519Key.generate(icnd.Name("/client/alice"))
    host_key = icnd.security.Ed25519Key.generate(icnd.Name("/fn/guarded/host"))  # signs its answers; its
    # certificate, served by h1, is reached along the /fn/guarded routes
    async with icnd.connect(net.nodes["h1"].socket, key=host_key, cert=self_signed(host_key, now=time.time())) as host_client, \
            host_client.host({"/fn/guarded": guarded}, allow={"/fn/guarded": ["/client/alice"]}):
        await (await net.connect("r")).command("route", "add", prefix="/fn/guarded", face=net.nodes["h1"].udp_uri)
        async with icnd.connect(net.nodes["client"].socket) as stranger:
            await stranger.command("route", "add", prefix="/fn/guarded", face=net.nodes["r"].udp_uri)
            with pytest.raises(icnd.Unauthorized):
                await stranger.call("/fn/guarded", 1, reflexive=reflexive)
        async with icnd.connect(net.nodes["client"].socket, key=allowed_key) as alice:
            assert await alice.call("/fn/guarded", 2, reflexive=reflexive) == 2
    assert calls == [2]


async def test_vanished_client_leaves_no_state_behind(net) -> None:
    async with icnd.connect(net.nodes["client"].socket) as c:
        with trio.move_on_after(0.5):
            await c.call("/fn/slow", 5.0, timeout=30, reflexive=True)
    # the caller is gone; after the trigger's lifetime every table drains
    with trio.fail_after(20):
        while True:
            tables = [(await net.status(n))["tables"] for n in ("client", "r")]
            if all(t["pit_entries"] == 0 and t.get("rf_entries", 0) == 0 for t in tables):
                break
            await trio.sleep(0.5)


async def _fn_counters(net, *hosts: str) -> dict[str, int]:
    """The function hosts' fn_* counters, summed over `hosts`."""
    total: dict[str, int] = {}
    for h in hosts:
        for k, v in (await net.status(h))["counters"].items():
            if k.startswith("fn_"):
                total[k] = total.get(k, 0) + v
    return total


async def test_small_calls_switch_to_a_session_after_the_first(net) -> None:
    c = await net.connect("client")
    for i in range(10):
        assert await c.call("/fn/add", i, 1) == i + 1
    n = await _fn_counters(net, "h1", "h2")
    # every call was proven either by a signature or by a session MAC, never both or neither
    assert n["fn_session_calls"] + n["fn_signed_calls"] == 10, n
    # a signed call offers a key and is granted a session: at most one per host (a host
    # that did not know the caller's session said so once, and the caller called again, signed)
    assert n["fn_signed_calls"] == n["fn_sessions_granted"] == 1 + n["fn_session_unknown"] <= 2, n
    assert (await net.status("client"))["tables"]["fn_sessions"] == 0  # the client node hosts nothing


async def test_a_host_without_the_session_gets_a_signed_call(net) -> None:
    c = await net.connect("client")
    assert await c.call("/fn/counted", 1) == 2
    r = await net.connect("r")
    for prefix in ("/fn/counted", "/fn/add"):
        await r.command("route", "remove", prefix=prefix, face=net.nodes["h1"].udp_uri)
    # only h2 serves now; it never granted this caller a session
    assert await c.call("/fn/counted", 5) == 10
    h2 = await _fn_counters(net, "h2")
    assert h2["fn_session_unknown"] == 1 and h2["fn_signed_calls"] == 1 and h2["fn_sessions_granted"] == 1, h2
    assert await c.call("/fn/counted", -1) == 1  # on h2, counted(5) ran once: the refused attempt ran nothing
    assert len(c.caller.sessions.for_call(icnd.Name("/fn/counted"))) == 2  # one per host
    assert (await _fn_counters(net, "h2"))["fn_session_calls"] == 1  # the probe used the new session


async def test_forged_or_stale_session_proofs_are_refused(net, monkeypatch) -> None:
    from icnd.compute import caller
    from icnd.compute.values import encode_value

    c = await net.connect("client")
    # every call of this test to one host (the one holding the session): best-route, not load-balance,
    # whose probes may send a call to the other host, which has no session
    for node in ("client", "r"):
        await (await net.connect(node)).command("strategy", "set", prefix="/fn/counted", strategy="best-route")
    assert await c.call("/fn/counted", 3) == 6  # establishes a session
    (session,) = c.caller.sessions.for_call(icnd.Name("/fn/counted"))
    before = await _fn_counters(net, "h1", "h2")

    async def answer(offered, ts_shift_ms: int = 0) -> icnd.Data:
        real = caller.time.time_ns
        monkeypatch.setattr(caller.time, "time_ns", lambda: real() + ts_shift_ms * 1_000_000)
        try:
            ti = c.caller._small_trigger(icnd.Name("/fn/counted"), secrets.token_bytes(16), [encode_value(7)],
                                         offered, None, 4.0)
        finally:
            monkeypatch.setattr(caller.time, "time_ns", real)
        return await c.express(ti, timeout=5)

    forged = dataclasses.replace(session, proof_key=b"\x00" * 32)
    # a forged MAC is refused under the host's signature; a genuine one with a stale
    # clock under the session's MAC
    for data, sig_type in ((await answer([forged]), icnd.SigType.ED25519),
                           (await answer([session], ts_shift_ms=-600_000), icnd.SigType.HMAC_SHA256)):
        assert (data.content_type, data.sig_type) == (icnd.ContentType.ERROR, sig_type)
        opened = await c.caller._open_small_answer(icnd.Name("/fn/counted"), data, [session], None)
        with pytest.raises(icnd.Unauthorized):
            await c.caller._result(opened, trio.current_time() + 5, verified=True)
    after = await _fn_counters(net, "h1", "h2")
    assert after["fn_unauthorized"] - before["fn_unauthorized"] == 2
    assert after["fn_executions"] == before["fn_executions"]  # counted(7) never ran
    # malformed session proofs are a bad call, not a crash
    bad = icnd.Interest.with_params(icnd.Name("/fn/counted").append(b"x" * 16),
                                    msgpack.packb({"args": [], "ts": 0, "sessions": [[1, 2]]}))
    data = await c.express(bad, timeout=5)
    with pytest.raises(icnd.RemoteError, match="malformed session proofs"):
        await c.caller._result(data, trio.current_time() + 5)
    assert await c.call("/fn/counted", 4) == 8  # and the session still works


async def test_a_call_id_asked_again_under_another_name_never_runs_again_nor_leaks(net) -> None:
    """What a forged session-unknown would make a caller do: the same call-id,
    signed, reaches the host that already ran it; and what an eavesdropper
    could try: the same call-id with other parameters and no proof.  Neither
    runs the call again nor gets its answer.  (Call-ids are remembered per
    host: h2 is taken out of the anycast so that every attempt reaches h1.)"""
    from icnd.compute.values import decode_value, encode_value

    await (await net.connect("r")).command("route", "remove", prefix="/fn/counted", face=net.nodes["h2"].udp_uri)
    c = await net.connect("client")
    assert await c.call("/fn/counted", 8) == 16  # a session
    offered = c.caller.sessions.for_call(icnd.Name("/fn/counted"))
    before = await _fn_counters(net, "h1", "h2")
    call_id = secrets.token_bytes(16)
    fn = icnd.Name("/fn/counted")
    first = c.caller._small_trigger(fn, call_id, [encode_value(9)], offered, None, 4.0)
    data = await c.express(first, timeout=5)
    assert decode_value((await c.caller._open_small_answer(fn, data, offered, None)).content) == 18
    retry = c.caller._small_trigger(fn, call_id, [encode_value(9)], [], None, 4.0)  # signed, same call-id
    stranger = icnd.Interest.with_params(fn.append_wire(icnd.name.generic(call_id)), b"\xc0")  # no proof at all
    for ti in (retry, stranger):
        data = await c.express(ti, timeout=5)
        assert data.content_type == icnd.ContentType.ERROR and error_fields(data)[0] == "call-id-reused"
    again = await c.express(first.forwarded(first.hop_limit, nonce=1234), timeout=5)  # the exact name: its answer
    assert decode_value((await c.caller._open_small_answer(fn, again, offered, None)).content) == 18
    after = await _fn_counters(net, "h1", "h2")
    assert after["fn_executions"] - before["fn_executions"] == 1


async def test_a_key_offer_in_a_session_call_is_refused(net) -> None:
    """A session call's MAC does not cover a key offer: taking one would let
    anyone on the path get a session as that caller."""
    from icnd.compute import caller
    from icnd.compute.values import encode_value

    c = await net.connect("client")
    assert await c.call("/fn/counted", 10) == 20
    offered = c.caller.sessions.for_call(icnd.Name("/fn/counted"))
    ti = c.caller._small_trigger(icnd.Name("/fn/counted"), secrets.token_bytes(16), [encode_value(11)], offered,
                                 None, 4.0)
    body = msgpack.unpackb(ti.app_params, raw=False)
    body["kx"] = secrets.token_bytes(32)  # the attacker's key, added on the way
    forged = icnd.Interest.with_params(ti.name[:-1], msgpack.packb(body, use_bin_type=True))
    granted = (await _fn_counters(net, "h1", "h2"))["fn_sessions_granted"]
    data = await c.express(forged, timeout=5)
    assert data.content_type == icnd.ContentType.ERROR and error_fields(data)[0] == "bad-arguments"
    assert (await _fn_counters(net, "h1", "h2"))["fn_sessions_granted"] == granted
