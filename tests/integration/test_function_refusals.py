"""A function's policy comes before anything else a caller may learn (issue 27 items 4 and 13).

A caller the allow list refuses learns nothing about the function: a
``pure=True`` call of a non-pure function is ``Unauthorized``, not
``not-pure``.  And a refusal says "unauthorized" and names no file of the
host (a trust schema's refusal used to quote the schema's path)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import icnd
from icnd.name import Name
from icnd.security import Ed25519Key
from icnd.testing.processes import Daemon, run_cli, short_tempdir
from icnd.keyfiles import save_certificate
from icnd.trust import self_signed

ANCHOR_SCHEMA = """\
anchors = ["anchor.cert"]
[[rule]]
name = "user-certs"
data = "/net/<user>/KEY/<**>"
signer = "/net/KEY/<*>"
"""


@pytest.fixture
def tmp():
    with short_tempdir() as path:
        yield Path(path)


async def _host(tmp: Path, config: str) -> Daemon:
    (tmp / "host.toml").write_text(config)
    d = Daemon(tmp, "--name", "/node/h", "--listen", "udp://127.0.0.1:0", "--config", str(tmp / "host.toml"),
               name="h")
    try:
        await d.until_ready()
    except BaseException:
        d.stop()
        raise
    return d


async def test_a_refused_caller_asking_for_a_pure_call_is_unauthorized_and_learns_nothing(tmp) -> None:
    d = await _host(tmp, '[[function]]\ntarget = "tests.integration.hosted:echo"\nprefix = "/fn/guarded"\n'
                         'allow = ["/client/alice"]\n'
                         '[[function]]\ntarget = "tests.integration.hosted:echo"\nprefix = "/fn/open"\n')
    try:
        bob = Ed25519Key.generate(Name("/client/bob"))
        for key in (bob, None):  # a caller with a key the list does not name, and a keyless one
            async with icnd.connect(d.socket, key=key) as c:
                for reflexive in (False, True):
                    with pytest.raises(icnd.Unauthorized, match="unauthorized"):
                        await c.call("/fn/guarded", 1, pure=True, reflexive=reflexive, timeout=10)
        alice = Ed25519Key.generate(Name("/client/alice"))
        async with icnd.connect(d.socket, key=alice) as c:
            # the anonymous pure call is refused; the proven call it falls back to runs (echo is not pure)
            assert await c.call("/fn/guarded", 1, pure=True) == 1
            # a function anyone may call tells that it is not pure (nothing to hide from anyone)
            with pytest.raises(icnd.RemoteError) as not_pure:
                await c.call("/fn/open", 1, pure=True)
            assert not_pure.value.code == "not-pure"
        counters = (await d.get_status())["counters"]
        assert counters["fn_executions"] == 1 and counters["fn_unauthorized"] >= 6
    finally:
        d.stop()


async def test_a_refusal_under_a_trust_schema_says_unauthorized_and_names_no_file_of_the_host(tmp) -> None:
    anchor = Ed25519Key.generate(Name("/net"))
    save_certificate(self_signed(anchor, now=time.time() - 60), tmp / "anchor.cert")
    (tmp / "schema.toml").write_text(ANCHOR_SCHEMA)
    d = await _host(tmp, 'trust = "schema.toml"\n[[function]]\ntarget = "tests.integration.hosted:echo"\n'
                         'prefix = "/fn/echo"\nallow = ["/net/<user>/KEY/<*>"]\n')
    try:
        mallory = Ed25519Key.generate(Name("/net/mallory"))  # certified by herself only
        (tmp / "mallory.key").write_bytes(mallory.to_bytes())
        save_certificate(self_signed(mallory, now=time.time()), tmp / "mallory.cert")
        async with icnd.connect(d.socket, key=mallory, cert=tmp / "mallory.cert") as c:
            with pytest.raises(icnd.Unauthorized) as refused:
                await c.call("/fn/echo", 1, timeout=10)
        message = str(refused.value)
        assert "unauthorized" in message and "self-signed" in message
        assert str(tmp) not in message and "schema.toml" not in message
        out = run_cli("call", "--socket", d.socket, "--key", str(tmp / "mallory.key"), "--cert",
                      str(tmp / "mallory.cert"), "/fn/echo", "1")
        err = out.stderr.decode()
        assert out.returncode == 1 and "unauthorized" in err and str(tmp) not in err, err
    finally:
        d.stop()
