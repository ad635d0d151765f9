"""The systemd notify protocol (`icnd.daemon.notify`): one datagram, never a failure of the node."""

from __future__ import annotations

import logging
import os
import socket

import pytest

from icnd.daemon.notify import ENV, Notifier
from icnd.testing.processes import short_tempdir


def test_from_environ_takes_the_variable_so_children_never_speak_for_the_node(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "@icnd-notify-test")
    notifier = Notifier.from_environ()
    assert notifier.address == "\0icnd-notify-test"
    assert ENV not in os.environ


def test_one_datagram_of_assignments() -> None:
    with short_tempdir() as d, socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(f"{d}/n")
        assert Notifier(f"{d}/n").notify("READY=1", "STATUS=serving /node/a")
        assert sock.recv(100) == b"READY=1\nSTATUS=serving /node/a"


def test_without_a_service_manager_nothing_is_sent() -> None:
    assert Notifier(None).ready("serving") is False


def test_an_unreachable_socket_is_logged_once_and_never_raises(caplog: pytest.LogCaptureFixture) -> None:
    with short_tempdir() as d, caplog.at_level(logging.WARNING, "icnd.notify"):
        notifier = Notifier(f"{d}/nobody-listens")
        assert notifier.ready("serving") is False
        assert notifier.stopping() is False
    assert len([r for r in caplog.records if "cannot notify" in r.getMessage()]) == 1
