"""A client without a key hosts functions anyone can call (issue 27 item 1).

Since callers refuse digest-only answers, a keyless host's answers would
verify for nobody; its node signs them with its own key instead
(``signing/add``, `icnd.daemon.producers.KeylessSigning`), as it signs what
a keyless client publishes.  One real daemon; the host and the callers are
clients of it, none with a key (the suite's other hosting tests give their
clients keys, which is how this went unnoticed)."""

from __future__ import annotations

import time

import pytest
import trio

import icnd
from icnd.errors import CommandError
from icnd.testing.processes import Daemon


def double(x: int) -> int:
    return 2 * x


def slow(x: int) -> int:
    time.sleep(0.4)  # longer than the inline budget (0.2 s): the caller gets a thunk and polls it
    return x


def big(n: int) -> bytes:
    return bytes(range(256)) * (n // 256)  # larger than an inline result: stored as an object


def boom(x: int) -> int:
    raise ValueError(f"no {x}")


@icnd.function(pure=True)
def square(x: int) -> int:
    return x * x


FUNCTIONS = {"/fn/double": double, "/fn/slow": slow, "/fn/big": big, "/fn/boom": boom, "/fn/square": square}


@pytest.fixture
async def node(tmp_path):
    d = Daemon(tmp_path, "--name", "/node/s", "--listen", "udp://127.0.0.1:0", name="s")
    try:
        await d.until_ready()
        yield d
    finally:
        d.stop()


async def test_a_keyless_host_answers_a_keyless_caller_inline_thunked_large_pure_and_failing(node) -> None:
    async with node.connect() as host, node.connect() as caller:
        assert host.key is None and caller.key is None
        async with host.host(FUNCTIONS):
            with trio.fail_after(30):
                assert await caller.call("/fn/double", 21) == 42
                assert await caller.call("/fn/double", 4) == 8  # again: under the session the first granted
                assert await caller.call("/fn/double", 5, reflexive=True) == 10  # the RICE handshake
                assert await caller.call("/fn/slow", 7) == 7  # a thunk, polled
                assert await caller.call("/fn/big", 300 * 1024) == bytes(range(256)) * 1200  # an object
                assert await caller.call("/fn/square", 9, pure=True) == 81  # cacheable, by params-sha256
                with pytest.raises(icnd.RemoteError) as failed:
                    await caller.call("/fn/boom", 3)
                assert failed.value.code == "ValueError" and "no 3" in failed.value.message
    status = await node.get_status()
    assert status["counters"]["app_data_signed"] >= 6  # the node signed them, with its key


async def test_the_node_signs_only_under_prefixes_the_application_serves_outside_its_own(node) -> None:
    """``signing/add`` is refused for a prefix the client does not serve, for
    the node's own names, and for key names; each refusal is counted."""
    async with node.connect() as c:
        async with c.serve("/app/x", lambda interest: b"x"), c.serve("/node/s/status", lambda interest: b"x"), \
                c.serve("/app/KEY", lambda interest: b"x"):
            refusals = [("/app/y", 409), ("/node/s", 403), ("/node/s/status", 403), ("/", 403), ("/app/KEY", 403)]
            for prefix, status in refusals:
                with pytest.raises(CommandError) as refused:
                    await c.command("signing", "add", prefix=prefix)
                assert refused.value.status == status, prefix
            assert (await c.command("signing", "add", prefix="/app/x"))["key"] == (await c.status())["key"]
            await c.command("signing", "remove", prefix="/app/x")
        assert (await c.status())["counters"]["signing_refused"] == len(refusals)


async def test_a_keyless_serve_is_not_signed_unless_asked_and_a_stopped_host_stops_the_signing(node) -> None:
    """What a keyless ``serve`` answers stays digest-only (refused by
    verifying consumers, docs/security.md); a host that stops withdraws its
    registrations."""
    async with node.connect() as producer, node.connect() as consumer:
        async with producer.serve("/app/plain", lambda interest: b"plain"), \
                producer.serve("/app/other", lambda interest: b"other"):
            with pytest.raises(icnd.VerificationError, match="digest-only"):
                await consumer.fetch("/app/plain", timeout=4)
            await producer.command("signing", "add", prefix="/app/plain")
            data = await consumer.fetch("/app/plain", timeout=4, must_be_fresh=True)
            assert data.content == b"plain" and data.signer == icnd.Name((await consumer.status())["key"])
            with pytest.raises(icnd.VerificationError, match="digest-only"):  # not under a registered prefix
                await consumer.fetch("/app/other", timeout=4)
        async with producer.host({"/fn/double": double}):
            assert await consumer.call("/fn/double", 1) == 2
        with pytest.raises(CommandError) as gone:
            await producer.command("signing", "remove", prefix="/fn/double")
        assert gone.value.status == 404
