"""What the mpi tests share: one node of their own per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from icnd.testing.processes import Daemon, lone_node, short_tempdir


@pytest.fixture(scope="module")
def node() -> Iterator[Daemon]:
    with short_tempdir() as tmp, lone_node(tmp) as daemon:
        yield daemon
