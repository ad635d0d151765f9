"""Synchronous hosted functions in worker processes (``function_pool =
"processes"``): from an application (`Client.host(pool=...)`) and from a
daemon (``icnd run --function-pool processes``)."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest
import trio

import icnd
from icnd.security import Ed25519Key
from icnd.topology import launch, parse
from icnd.trust.cert import self_signed
from tests.integration.hosted import crash, echo, exit_now, pid, sleep


def _alive(p: int) -> bool:
    """A running (not zombie) process."""
    try:
        with open(f"/proc/{p}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone (the read may race its reaping)
        return False


async def test_client_hosted_functions_run_in_worker_processes(tmp_path) -> None:
    async with launch(parse({"nodes": {"a": {}}})) as net:
        caller = await net.connect("a")
        functions = {"/fn/pid": pid, "/fn/echo": echo, "/fn/crash": crash, "/fn/sleep": sleep, "/fn/exit": exit_now,
                     "/fn/fail": __import__("apps.functions", fromlist=["fail"]).fail}
        key = Ed25519Key.generate(icnd.Name("/fn/host"))  # the host signs its answers (callers verify them)
        async with icnd.connect(net.nodes["a"].socket, key=key, cert=self_signed(key, now=time.time())) as host_client, \
                host_client.host(functions, workers=2, pool="processes"):
            workers = {await caller.call("/fn/pid", timeout=30) for _ in range(6)}
            assert os.getpid() not in workers and (await net.status("a"))["pid"] not in workers
            assert 1 <= len(workers) <= 2
            a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
            np.testing.assert_array_equal(await caller.call("/fn/echo", a, reflexive=True), a)
            with pytest.raises(icnd.RemoteError) as info:
                await caller.call("/fn/fail", "kaput")
            assert info.value.code == "ValueError" and "kaput" in info.value.message
            with pytest.raises(icnd.RemoteError) as info:
                await caller.call("/fn/crash")
            assert info.value.code == "worker-crashed"
            assert await caller.call("/fn/echo", 7) == 7  # a fresh pool after the crash
            with pytest.raises(icnd.RemoteError) as info:  # SystemExit in a worker ends nothing but the call
                await caller.call("/fn/exit")
            assert info.value.code == "SystemExit"
            idle = await caller.call("/fn/pid")
            os.kill(idle, signal.SIGKILL)  # a worker killed while idle (the OOM killer, say)
            with trio.fail_after(10):
                while _alive(idle):
                    await trio.sleep(0.05)
            await trio.sleep(0.2)
            assert await caller.call("/fn/echo", 8) == 8  # again a fresh pool
            workers |= {await caller.call("/fn/pid")}
            pid_file = tmp_path / "sleeper"
            async with trio.open_nursery() as nursery:  # a call still running when the host stops
                nursery.start_soon(lambda: caller.call("/fn/sleep", 30.0, str(pid_file), timeout=60))
                with trio.fail_after(20):
                    while not pid_file.exists() or not pid_file.read_text():
                        await trio.sleep(0.05)
                workers.add(int(pid_file.read_text()))
                nursery.cancel_scope.cancel()
        # stopping the host terminated its workers, the one sleeping included
        with trio.fail_after(10):
            while any(_alive(p) for p in workers):
                await trio.sleep(0.1)


async def test_functions_that_cannot_run_in_a_process_are_refused_at_start() -> None:
    async with launch(parse({"nodes": {"a": {}}})) as net:
        c = await net.connect("a")
        with pytest.raises(ValueError, match="not importable"):
            async with c.host({"/fn/double": lambda x: 2 * x}, pool="processes"):
                pass
        with pytest.raises(ValueError, match="function pool"):
            async with c.host({"/fn/pid": pid}, pool="fibers"):
                pass


async def test_daemon_runs_its_functions_in_processes(daemons) -> None:
    d = await daemons.start("h", "--function-pool", "processes", "--function", "tests.integration.hosted:pid=/fn/pid")
    async with d.connect() as c:
        worker = await c.call("/fn/pid", timeout=30)
    assert worker != d.proc.pid and _alive(worker)
    assert d.stop(signal.SIGTERM) == 0
    with trio.fail_after(10):
        while _alive(worker):
            await trio.sleep(0.1)
