"""``icnd call --ref/--future/--place``, ``icnd submit``, ``icnd result`` against a real daemon (issue 31).

One node hosts the functions and serves the published data; what is under
test is the shell's side: named arguments reach the host in the order
given, the ``--json`` shapes, a future's name printed and fetched again,
and one-line errors with exit code 1 when a result cannot be had."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
import trio

import icnd
from icnd.testing.processes import one_line_error, run_cli

A = np.arange(10.0)
B = np.array([[1.0, 2.0], [3.0, 4.0]])
M = np.array([[0.0, 1.0], [5.0, 0.0]])


async def icnd_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_cli(*args, timeout=timeout))


def ok(r: subprocess.CompletedProcess[bytes]) -> str:
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode()


@pytest.fixture
async def node(daemons, tmp_path):
    config = tmp_path / "node.toml"
    config.write_text("function_retention_s = 5.0\n")  # short, so that a test sees a result expire
    daemon = await daemons.start(
        "s", "--config", str(config),
        "--function", "apps.functions:total=/fn/total",
        "--function", "apps.functions:matmul=/fn/matmul",
        "--function", "apps.functions:double=/fn/double",
        "--function", "apps.functions:slow=/fn/slow",
        "--function", "apps.functions:fail=/fn/fail",
    )
    async with icnd.connect(daemon.socket) as c:
        await c.publish_value("/data/A", A)
        await c.publish_value("/data/B", B)
    return daemon


async def test_call_with_a_ref_prints_the_result_and_where_it_ran(node) -> None:
    sock = node.socket
    assert ok(await icnd_cli("call", "/fn/total", "--ref", "/data/A", "--socket", sock)).strip() == "45.0"
    assert json.loads(ok(await icnd_cli("call", "/fn/total", "--ref", "/data/A", "--json", "--socket", sock))) \
        == {"result": 45.0, "host": None}  # one host: the network chose
    placed = ok(await icnd_cli("call", "/fn/total", "--ref", "/data/A", "--place", "/node/s", "--json",
                               "--socket", sock))
    assert json.loads(placed) == {"result": 45.0, "host": "/node/s"}
    # without named arguments --json stays the bare result (scripts rely on it)
    assert json.loads(ok(await icnd_cli("call", "/fn/double", "21", "--json", "--socket", sock))) == 42


async def test_named_arguments_follow_the_others_in_the_order_given(node, tmp_path) -> None:
    sock = node.socket
    m = tmp_path / "m.npy"
    np.save(m, M)
    out = tmp_path / "p.npy"
    ok(await icnd_cli("call", "/fn/matmul", "--npy", str(m), "--ref", "/data/B", "-o", str(out), "--socket", sock))
    np.testing.assert_array_equal(np.load(out), M @ B)
    future = ok(await icnd_cli("submit", "/fn/double", "--npy", str(m), "--socket", sock)).strip()
    got = json.loads(ok(await icnd_cli("call", "/fn/matmul", "--future", future, "--ref", "/data/B", "--json",
                                       "--socket", sock)))
    assert got == {"result": (2 * M @ B).tolist(), "host": None}
    got = json.loads(ok(await icnd_cli("call", "/fn/matmul", "--ref", "/data/B", "--future", future, "--json",
                                       "--socket", sock)))
    assert got["result"] == (B @ (2 * M)).tolist()


async def test_submit_prints_a_name_that_result_fetches(node, tmp_path) -> None:
    sock = node.socket
    printed = ok(await icnd_cli("submit", "/fn/slow", "0.5", "hello", "--socket", sock))
    assert len(printed.splitlines()) == 1
    future = icnd.Name(printed.strip())
    assert ok(await icnd_cli("result", future.to_uri(), "--socket", sock)) == "hello\n"
    assert json.loads(ok(await icnd_cli("result", future.to_uri(), "--json", "--socket", sock))) == "hello"

    shaped = json.loads(ok(await icnd_cli("submit", "/fn/double", "--ref", "/data/A", "--json", "--socket", sock)))
    assert list(shaped) == ["future"] and icnd.Name(shaped["future"]) != future
    out = tmp_path / "twice.npy"
    assert "saved float64 (10,)" in ok(await icnd_cli("result", shaped["future"], "-o", str(out), "--socket", sock))
    np.testing.assert_array_equal(np.load(out), 2 * A)


async def test_results_that_cannot_be_had_are_one_line_errors(node) -> None:
    sock = node.socket
    failing = ok(await icnd_cli("submit", "/fn/fail", "bad things", "--socket", sock)).strip()
    r = await icnd_cli("result", failing, "--socket", sock)
    assert r.returncode == 1 and r.stdout == b""
    assert "ValueError" in one_line_error(r) and "bad things" in one_line_error(r)

    slow = ok(await icnd_cli("submit", "/fn/slow", "3", "--socket", sock)).strip()
    r = await icnd_cli("result", slow, "--timeout", "0.5", "--socket", sock)
    assert r.returncode == 1 and "no result within 0.5s" in one_line_error(r)
    assert ok(await icnd_cli("result", slow, "--json", "--socket", sock)) == '"done"\n'  # still there once done
    await trio.sleep(5.5)  # the node's retention (5 s) has passed
    r = await icnd_cli("result", slow, "--socket", sock)
    assert r.returncode == 1 and r.stdout == b""
    assert one_line_error(r).startswith(f"icnd: error: {slow}: ") and "no longer kept" in one_line_error(r)

    unknown = icnd.Name(slow)[:-1].append("00" * 16).to_uri()  # the host's prefix, a result it never had
    r = await icnd_cli("result", unknown, "--timeout", "5", "--socket", sock)
    assert r.returncode == 1 and one_line_error(r).startswith(f"icnd: error: {unknown}: ")


async def test_usage_errors_exit_2(node) -> None:
    r = await icnd_cli("call", "/fn/total", "--ref", "/data/A", "--place", "nearby", "--socket", node.socket)
    assert r.returncode == 2 and b"--place" in r.stderr and b"nearby" in r.stderr
    r = await icnd_cli("result", "", "--socket", node.socket)
    assert r.returncode == 2 and b"empty name" in r.stderr
