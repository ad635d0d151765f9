"""The blocking facade drives a real daemon from plain (non-async) code."""

from __future__ import annotations

import threading
import time

import pytest

import icnd
from icnd.security import Ed25519Key
from icnd.trust.cert import self_signed


def test_sync_publish_fetch_serve_and_errors(node_socket) -> None:
    key = Ed25519Key.generate(icnd.Name("/sync"))  # c's answers are signed (and its certificate served)
    with icnd.sync.connect(node_socket, key=key, cert=self_signed(key, now=time.time())) as c, icnd.sync.connect(node_socket) as other:
        c.publish("/sync/hello", b"hi there", freshness=5)
        assert other.fetch("/sync/hello").content == b"hi there"
        with c.serve("/sync/echo", lambda interest: b"echo:" + bytes(interest.name[-1])):
            assert other.fetch("/sync/echo/abc").content == b"echo:abc"
        with pytest.raises(icnd.Nacked) as info:
            other.fetch("/sync/nobody", timeout=0.5)
        assert info.value.reason == "no-route"
        assert c.status()["name"] == "/node/s"


def test_sync_connect_to_missing_socket_fails_clearly(tmp_path) -> None:
    with pytest.raises(icnd.Error, match="cannot connect"):
        icnd.sync.connect(str(tmp_path / "nothing.sock"), timeout=1)


def double(x: int) -> int:
    return 2 * x


def test_sync_host_serve_and_contexts_enter_and_leave_in_the_client_loop(node_socket) -> None:
    """`host` and `serve` (async context managers) and `reflexive`/`stream`
    (context managers) work as plain `with` blocks; leaving them stops serving."""
    key = Ed25519Key.generate(icnd.Name("/synchost"))
    with icnd.sync.connect(node_socket, key=key, cert=self_signed(key, now=time.time())) as host, icnd.sync.connect(node_socket) as caller:
        with host.host({"/fn/double": double}) as functions:
            assert functions is not None  # the FunctionHost, as `async with c.host(...) as h` gives
            assert caller.call("/fn/double", 21) == 42
        with pytest.raises(icnd.Nacked):
            caller.call("/fn/double", 1, timeout=0.5)
        with host.serve("/synchost/a", lambda interest: b"a"), host.serve("/synchost/b", lambda interest: b"b"):
            assert caller.fetch("/synchost/b/1").content == b"b"
            assert caller.fetch("/synchost/a/1").content == b"a"
        with pytest.raises(icnd.Nacked):
            caller.fetch("/synchost/a/2", timeout=0.5)
        with host.reflexive(b"\x01", lambda interest: None), host.stream(icnd.Name("/synchost/s"), print):
            assert b"\x01" in host.client._reflexive and icnd.Name("/synchost/s").comps in host.client._streams
        assert not host.client._reflexive and not host.client._streams
        assert host.sign(icnd.Data("/synchost/x", b"x")).sig_value  # a plain method, run in the client loop
        assert host.node_name() == icnd.Name("/node/s")
        assert host.socket_path == node_socket  # attributes read through


def test_sync_errors_keep_their_types_and_a_closed_client_says_so(node_socket) -> None:
    c = icnd.sync.connect(node_socket)
    with icnd.sync.connect(node_socket) as other, pytest.raises(icnd.Timeout):
        with c.serve("/sync/silent", lambda interest: None):
            other.fetch("/sync/silent/x", timeout=0.5)
    with pytest.raises(ValueError, match="at least one component"):
        with c.host({"/": double}):
            pass
    c.close()
    assert not [t for t in threading.enumerate() if t.name == "icnd-client"]  # its thread ended
    with pytest.raises(icnd.Error, match="closed"):
        c.status()
    with pytest.raises(icnd.Error, match="closed"):
        with c.serve("/sync/late", lambda interest: b""):
            pass
