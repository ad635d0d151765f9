"""`icnd call` and `--function` hosting through the CLI."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
import trio

import icnd
from icnd.testing.processes import run_cli


def icnd_cli(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return run_cli(*args, timeout=timeout)


@pytest.fixture
async def daemon(daemons):
    return await daemons.start(
        "fnhost",
        "--function", "apps.functions:add=/fn/add",
        "--function", "apps.functions:matmul=/fn/matmul",
        "--function", "apps.functions:fail=/fn/fail",
    )


async def test_call_prints_results_and_errors(daemon, tmp_path) -> None:
    sock = daemon.socket
    r = await trio.to_thread.run_sync(lambda: icnd_cli("call", "/fn/add", "2", "3.5", "--socket", sock))
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().strip() == "5.5"
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(a, np.eye(2) * 3)
    np.save(b, np.arange(4.0).reshape(2, 2))
    out = tmp_path / "p.npy"
    r = await trio.to_thread.run_sync(
        lambda: icnd_cli("call", "/fn/matmul", "--npy", str(a), "--npy", str(b), "-o", str(out), "--socket", sock))
    assert r.returncode == 0, r.stderr.decode()
    np.testing.assert_array_equal(np.load(out), (np.eye(2) * 3) @ np.arange(4.0).reshape(2, 2))
    r = await trio.to_thread.run_sync(
        lambda: icnd_cli("call", "/fn/matmul", "--json-args", "[[[1, 2]], [[3], [4]]]", "--json", "--socket", sock))
    assert json.loads(r.stdout) == [[11]]
    r = await trio.to_thread.run_sync(lambda: icnd_cli("call", "/fn/fail", "bad things", "--socket", sock))
    assert r.returncode == 1 and b"ValueError" in r.stderr and b"bad things" in r.stderr
    r = await trio.to_thread.run_sync(lambda: icnd_cli("call", "/fn/none", "--socket", sock, "--timeout", "0.5"))
    assert r.returncode == 1 and b"/fn/none: nobody serves it (no route after" in r.stderr


async def test_unknown_function_module_is_a_startup_error(tmp_path) -> None:
    r = await trio.to_thread.run_sync(lambda: icnd_cli(
        "run", "--socket", str(tmp_path / "x.sock"), "--listen", "udp://127.0.0.1:0",
        "--function", "apps.functions:nope=/fn/nope"))
    assert r.returncode == 2
    assert b"apps.functions" in r.stderr and b"nope" in r.stderr
    assert len(r.stderr.decode().strip().splitlines()) == 1


async def test_status_after_calls(daemon) -> None:
    async with icnd.connect(daemon.socket) as c:
        assert await c.call("/fn/add", 1, 2) == 3
        status = await c.status()
    assert status["tables"]["rf_entries"] == 0
