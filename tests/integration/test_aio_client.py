"""The asyncio facade (`icnd.aio`) drives a real daemon from asyncio programs:
one run by `asyncio.run`, and one inside a loop that already runs (as in
Jupyter), which the facade must never block."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import icnd
import icnd.aio
from icnd.security import Ed25519Key
from icnd.trust.cert import self_signed


async def triple(x: int) -> int:
    """An asyncio function hosted through the facade: it runs on the program's asyncio loop."""
    await asyncio.sleep(0.01)
    return 3 * x


def test_an_asyncio_program_fetches_serves_hosts_and_gets_icnd_errors(node_socket) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        key = Ed25519Key.generate(icnd.Name("/aio"))
        async with icnd.aio.connect(node_socket, key=key, cert=self_signed(key, now=time.time())) as c, \
                icnd.aio.connect(node_socket) as other:
            await c.publish("/aio/hello", b"hi", freshness=5)
            assert (await other.fetch("/aio/hello")).content == b"hi"

            async def echo(interest: icnd.Interest) -> bytes:  # asyncio code, on this loop
                assert asyncio.get_running_loop() is loop
                await asyncio.sleep(0.01)
                return b"echo:" + bytes(interest.name[-1])

            async with c.serve("/aio/echo", echo), c.serve("/aio/plain", lambda interest: b"plain"):
                assert (await other.fetch("/aio/echo/abc")).content == b"echo:abc"
                assert (await other.fetch("/aio/plain/1")).content == b"plain"
            async with c.host({"/fn/triple": triple}) as functions:
                assert functions is not None
                assert await other.call("/fn/triple", 14) == 42
            with pytest.raises(icnd.Nacked) as info:
                await other.fetch("/aio/nobody", timeout=0.5)
            assert info.value.reason == "no-route"
            assert (await c.status())["name"] == "/node/s"
            assert (await c.sign(icnd.Data("/aio/x", b"x"))).sig_value  # a plain method: a coroutine too
            # cancelling the awaiting task cancels the call: the client goes on working
            async with c.serve("/aio/silent", lambda interest: None):
                started = time.monotonic()
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(other.fetch("/aio/silent/x", timeout=30), 0.3)
                assert time.monotonic() - started < 2
            assert (await other.fetch("/aio/hello")).content == b"hi"
        with pytest.raises(icnd.Error, match="closed"):
            await c.status()
        assert not [t for t in threading.enumerate() if t.name == "icnd-client"]  # the threads ended

    asyncio.run(main())


def test_inside_a_running_loop_the_facade_never_blocks_it(node_socket) -> None:
    """Jupyter-style: the program's loop already runs other tasks; a ticker
    keeps ticking while a call waits 0.5 s on a handler that blocks the
    client's own thread."""

    async def notebook_cell(ticks: list[float]) -> None:
        key = Ed25519Key.generate(icnd.Name("/aio"))
        async with icnd.aio.connect(node_socket, key=key, cert=self_signed(key, now=time.time())) as server, \
                icnd.aio.connect(node_socket) as c:
            def slow(interest: icnd.Interest) -> bytes:  # plain: runs (and blocks) in the client's thread
                time.sleep(0.5)
                return b"slow"

            async with server.serve("/aio/slow", slow):
                before = len(ticks)
                assert (await c.fetch("/aio/slow/1", timeout=5)).content == b"slow"
                assert len(ticks) - before >= 20  # 10 ms ticks went on for the 0.5 s
        later = await icnd.aio.connect(node_socket)  # a client kept across cells, closed by hand
        assert (await later.status())["name"] == "/node/s"
        await later.aclose()
        with pytest.raises(icnd.Error, match="closed"):
            await later.status()

    async def running_loop() -> None:
        ticks: list[float] = []

        async def ticker() -> None:
            while True:
                ticks.append(time.monotonic())
                await asyncio.sleep(0.01)

        task = asyncio.create_task(ticker())
        try:
            await asyncio.wait_for(notebook_cell(ticks), 20)
        finally:
            task.cancel()

    asyncio.run(running_loop())


def test_connecting_to_no_node_fails_clearly_without_blocking(tmp_path) -> None:
    async def main() -> None:
        with pytest.raises(icnd.Error, match="cannot connect"):
            async with icnd.aio.connect(str(tmp_path / "nothing.sock"), timeout=1):
                pass

    asyncio.run(main())
