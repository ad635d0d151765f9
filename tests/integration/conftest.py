"""Real daemons for integration tests: `icnd run` processes on loopback (`icnd.testing.Daemon`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from icnd.testing.processes import Daemon, lone_node

LOOPBACK = ("udp://127.0.0.1:0", "tcp://127.0.0.1:0")


@pytest.fixture
def node_socket(tmp_path):
    """The Unix socket of one ``icnd run`` (/node/s, UDP on loopback), stopped after the test."""
    with lone_node(tmp_path) as d:
        yield d.socket


class DaemonFactory:
    """Starts named daemons in one directory and stops every one it started."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.daemons: list[Daemon] = []

    async def start(self, name: str, *extra: str, listen: tuple[str, ...] = LOOPBACK,
                    timeout: float = 15) -> Daemon:
        args = ["--name", f"/node/{name}"]
        for uri in listen:
            args += ["--listen", uri]
        daemon = Daemon(self.tmp, *args, *extra, name=name)
        self.daemons.append(daemon)
        await daemon.until_ready(timeout)
        return daemon

    async def restart(self, daemon: Daemon) -> Daemon:
        """Stop `daemon` and start it again with the same arguments (new ports where they were 0)."""
        daemon.stop()
        self.daemons.remove(daemon)
        return await self.start(daemon.name, *daemon.args[2:], listen=())

    def stop_all(self) -> None:
        for d in self.daemons:
            d.stop()


@pytest.fixture
async def daemons(tmp_path: Path):
    factory = DaemonFactory(tmp_path)
    try:
        yield factory
    finally:
        factory.stop_all()
