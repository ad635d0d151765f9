"""A two-node network for the status-page tests: ``icnd run`` processes a and b on
loopback, neighbours of each other (link-state routing), a serving ``--http``."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from pathlib import Path

import trio

from icnd.testing.processes import Daemon, free_ports

CONVERGE = 15.0  # hellos every second: the adjacency and the route to /node/b come within a few


class Response:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def text(self) -> str:
        return self.body.decode()


def _request(url: str, method: str) -> Response:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            return Response(r.status, {k.lower(): v for k, v in r.headers.items()}, r.read())
    except urllib.error.HTTPError as exc:
        return Response(exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read())


async def http(url: str, method: str = "GET") -> Response:
    """`method` `url` (in a thread: urllib blocks), with a 5 s deadline."""
    return await trio.to_thread.run_sync(_request, url, method)


async def two_nodes(workdir: Path, http_address: str) -> tuple[Daemon, Daemon]:
    """a (``--http http_address``) and b, neighbours; returned once a has a route to /node/b.
    The caller stops both (`Daemon.stop`), whatever happens."""
    pa, pb = free_ports(2)
    a = Daemon(workdir, "--name", "/node/a", "--listen", f"udp://127.0.0.1:{pa}",
               "--neighbor", f"udp://127.0.0.1:{pb}", "--http", http_address, name="a")
    b = Daemon(workdir, "--name", "/node/b", "--listen", f"udp://127.0.0.1:{pb}",
               "--neighbor", f"udp://127.0.0.1:{pa}", name="b")
    try:
        await a.until_ready()
        await b.until_ready()
        with trio.fail_after(CONVERGE):
            while True:
                async with a.connect() as client:
                    routes = await client.command("route", "list")
                if any(r["prefix"] == "/node/b" for r in routes):
                    break
                await trio.sleep(0.2)
    except BaseException:
        a.stop()
        b.stop()
        raise
    return a, b


def free_tcp_port() -> int:
    return free_ports(1, socket.SOCK_STREAM)[0]
