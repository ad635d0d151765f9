"""Fixtures of the topology tests: short work directories, topologies started in the background."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from icnd.testing.processes import short_tempdir
from icnd.testing.topology import start_background

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def workdir():
    """A fresh work directory with a short path (Unix sockets), removed afterwards."""
    with short_tempdir("icnd-t-") as path:
        yield path


@pytest.fixture
def background():
    """`icnd.testing.topology.start_background`, run from the repository root; a
    launcher still running when the test ends is killed (its daemons follow)."""
    procs: list[subprocess.Popen] = []

    async def start(topology, workdir, out, **options):
        proc, state = await start_background(topology, workdir, out, cwd=ROOT, **options)
        procs.append(proc)
        return proc, state

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
