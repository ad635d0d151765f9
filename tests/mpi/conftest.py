"""What the mpi tests share: one node of their own per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from icnd.testing.processes import Daemon, short_tempdir


@pytest.fixture(scope="module")
def node() -> Iterator[Daemon]:
    with short_tempdir() as tmp:
        daemon = Daemon(tmp, "--name", "/node/s", "--listen", "udp://127.0.0.1:0", name="s")
        try:
            daemon.wait_ready()
            yield daemon
        finally:
            daemon.stop()
