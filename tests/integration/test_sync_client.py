"""The blocking facade drives a real daemon from plain (non-async) code."""

from __future__ import annotations

import pytest

import icnd
from icnd.security import Ed25519Key
from icnd.testing.processes import Daemon
from icnd.trust.cert import self_signed


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path, "--name", "/node/s", "--listen", "udp://127.0.0.1:0", name="s")
    try:
        d.wait_ready()
        yield d.socket
    finally:
        d.stop()


def test_sync_publish_fetch_serve_and_errors(daemon) -> None:
    key = Ed25519Key.generate(icnd.Name("/sync"))  # c's answers are signed (and its certificate served)
    with icnd.sync.connect(daemon, key=key, cert=self_signed(key)) as c, icnd.sync.connect(daemon) as other:
        c.publish("/sync/hello", b"hi there", freshness=5)
        assert other.fetch("/sync/hello").content == b"hi there"
        with c.serve("/sync/echo", lambda interest: b"echo:" + bytes(interest.name[-1])):
            assert other.fetch("/sync/echo/abc").content == b"echo:abc"
        with pytest.raises(icnd.Nacked) as info:
            other.fetch("/sync/nobody", timeout=2)
        assert info.value.reason == "no-route"
        assert c.status()["name"] == "/node/s"


def test_sync_connect_to_missing_socket_fails_clearly(tmp_path) -> None:
    with pytest.raises(icnd.Error, match="cannot connect"):
        icnd.sync.connect(str(tmp_path / "nothing.sock"), timeout=1)
