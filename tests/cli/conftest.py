"""Fixtures of the CLI tests: a fake node behind `icnd.cli.session.command`
(what a command sends, canned answers) and a real daemon for what only one
can show (waiting for it, relative socket paths, links, transfers)."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from icnd.cli import session
from icnd.cli.errors import CliError
from icnd.testing.processes import Daemon, short_tempdir

READY_TIMEOUT = 15.0


class FakeNode:
    """Stands in for `session.command`: records each command, answers from `results`."""

    def __init__(self) -> None:
        self.sent: list[tuple[str | None, str, str, dict[str, Any]]] = []
        self.results: dict[tuple[str, str], Any] = {}

    def command(self, socket: str | None, module: str, verb: str, **params: Any) -> Any:
        self.sent.append((socket, module, verb, params))
        result = self.results[(module, verb)]
        if isinstance(result, CliError):
            raise result
        return result


@pytest.fixture
def node(monkeypatch: pytest.MonkeyPatch) -> FakeNode:
    fake = FakeNode()
    monkeypatch.setattr(session, "command", fake.command)
    return fake


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    """One ``icnd run`` on loopback for a test module (socket ``<dir>/t.sock``, a short path)."""
    with short_tempdir("icnd-cli-") as workdir:
        d = Daemon(workdir, "--name", "/node/t", "--listen", "udp://127.0.0.1:0", "--listen", "tcp://127.0.0.1:0")
        try:
            d.wait_ready(READY_TIMEOUT)
            yield d
        finally:
            d.kill()
