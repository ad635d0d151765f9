"""The HTTP shell: hypercorn's trio worker serving a small ASGI app on the node's loop.

Why it cannot hurt forwarding:

- **No parsing of our own.** HTTP/1.1 (h11) and HTTP/2 (h2) are hypercorn's;
  the app sees only ASGI events.
- **Bounded.** A request head larger than `MAX_HEAD_BYTES` is refused by
  hypercorn; an idle keep-alive connection is closed after
  `KEEP_ALIVE_TIMEOUT` s and a connection that sends nothing for
  `READ_TIMEOUT` s is dropped, so a slow client holds one small task and
  its buffer for seconds, never the loop (hypercorn writes with trio's
  flow control: a client that does not read blocks only its own task).
  Request bodies are never read (GET and HEAD only; anything else is
  405).
- **Off the forwarding loop.** A page is made in two steps: a snapshot
  taken on the loop, bounded whatever the node holds (`page.snapshot`: at
  most `page.MAX_ROWS` rows per table, never a walk of the routes or the
  faces; `metrics.NodeCollector.read`: at most `metrics.MAX_FACE_SERIES`
  faces read one by one, the counters of the rest summed without a row
  each), then its formatting (jinja2, the Prometheus text, JSON) in a
  worker thread.  One page is made at a time (`_render_slot`),
  so concurrent clients hold one snapshot and one thread, not one each; a
  request that waits more than `RENDER_WAIT` s for its turn is answered 503
  (counted in ``http_refused``).  A response that left rows out or summed
  faces is counted in ``http_truncated``.
- **Read-only.** No handler changes the node; the page has no forms and
  the responses forbid scripts, frames and outside resources
  (Content-Security-Policy), since names on it come from the network.

The listening socket is bound by `StatusServer.bind` during the node's
`bind()` (a bad address or a port in use is a start-up error, exit 2) and
handed to hypercorn as a duplicate descriptor (``fd://``), so each side
closes its own.  `run` lives in the node's nursery: the node's shutdown
cancels it (and the shutdown trigger lets hypercorn finish promptly).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections import deque
from functools import partial
from typing import TYPE_CHECKING

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from hypercorn.typing import (
    ASGIReceiveCallable,
    ASGISendCallable,
    HTTPResponseBodyEvent,
    HTTPResponseStartEvent,
    Scope,
)
from prometheus_client import CONTENT_TYPE_LATEST

from icnd.daemon.http.metrics import NodeCollector, exposition
from icnd.daemon.http.page import Sample, render_page, snapshot, status_json

if TYPE_CHECKING:
    from icnd.daemon.status import StatusView

log = logging.getLogger("icnd.http")
# hypercorn's own messages: its warnings and errors, not its banner ("Running on ... CTRL + C to quit")
_HYPERCORN_LOG = logging.getLogger("icnd.http.hypercorn")
_HYPERCORN_LOG.setLevel(logging.WARNING)

MAX_HEAD_BYTES = 16 * 1024  # request line and headers (h11); HTTP/2 header lists alike
KEEP_ALIVE_TIMEOUT = 5.0  # s an idle keep-alive connection stays open
READ_TIMEOUT = 10  # s without a byte from the client: the connection is dropped
GRACEFUL_TIMEOUT = 1.0  # s connections get to finish at shutdown
BACKLOG = 32
SAMPLE_INTERVAL = 2.0  # s between samples of the traffic counters (the plot)
SAMPLES = 180  # samples kept: the plot covers the last SAMPLES * SAMPLE_INTERVAL s (6 minutes)
RENDER_WAIT = 10.0  # s a request may wait for its turn (the pages asked for before it); then 503
ALLOWED = b"GET, HEAD"
PATHS = ("/", "/status.json", "/metrics")

_SECURITY_HEADERS: list[tuple[bytes, bytes]] = [
    (b"cache-control", b"no-store"),
    (b"x-content-type-options", b"nosniff"),
    (b"content-security-policy",
     b"default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; "
     b"frame-ancestors 'none'"),
    (b"referrer-policy", b"no-referrer"),
]



class StatusServer:
    """The status page, ``/status.json`` and ``/metrics`` of one node (see the module docstring)."""

    def __init__(self, node: StatusView, host: str, port: int) -> None:
        self.node = node  # what the pages read of the node, and nothing else
        self.host = host
        self.port = port
        self.samples: deque[Sample] = deque(maxlen=SAMPLES)
        # in the node's status counters: requests answered; refused (a method other than GET or
        # HEAD, 405, an unknown path, 404, or too many pages waiting, 503); failed (a bug while
        # building a page, 500); truncated (a page that left rows out, metrics that summed faces)
        self.counters = {"http_requests": 0, "http_refused": 0, "http_errors": 0, "http_truncated": 0}
        self._collector = NodeCollector(node)
        self._render_slot = trio.Lock()  # one page made at a time (module docstring)
        self._socket: socket.socket | None = None
        self._stopped = trio.Event()

    def bind(self) -> None:
        """Open the listening socket (OSError: the address is unusable or taken)."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        info = socket.getaddrinfo(self.host, self.port, family, socket.SOCK_STREAM)
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(info[0][4])
            sock.listen(BACKLOG)
        except BaseException:
            sock.close()
            raise
        self._socket = sock
        self.port = sock.getsockname()[1]

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def close(self) -> None:
        """Close the listening socket (hypercorn's duplicate closes with its worker); idempotent."""
        self._stopped.set()
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled (the node's shutdown) or `close`; `bind` must have succeeded."""
        assert self._socket is not None, "StatusServer.bind() first"
        config = Config()
        config.bind = [f"fd://{os.dup(self._socket.fileno())}"]
        config.backlog = BACKLOG
        config.keep_alive_timeout = KEEP_ALIVE_TIMEOUT
        config.read_timeout = READ_TIMEOUT
        config.graceful_timeout = GRACEFUL_TIMEOUT
        config.h11_max_incomplete_size = MAX_HEAD_BYTES
        config.h2_max_header_list_size = MAX_HEAD_BYTES
        config.h2_max_concurrent_streams = 8
        config.max_app_queue_size = 4
        config.websocket_max_message_size = 1024
        config.include_server_header = False
        config.accesslog = None
        config.errorlog = _HYPERCORN_LOG
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._sample)
                await nursery.start(partial(serve, self.app, config, shutdown_trigger=self._stopped.wait))
                log.info("status page on %s (metrics at %smetrics)", self.url, self.url)
                task_status.started()
                await self._stopped.wait()
                nursery.cancel_scope.cancel()
        finally:
            self.close()

    async def _sample(self) -> None:
        """Every `SAMPLE_INTERVAL` s, the node's traffic counters into the bounded ring the plot draws."""
        while True:
            counters = self.node.status()["counters"]
            self.samples.append(Sample(time.monotonic(), counters.get("interests_in", 0),
                                       counters.get("data_out", 0)))
            await trio.sleep(SAMPLE_INTERVAL)

    # --- the ASGI app ---------------------------------------------------------------------
    async def app(self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return  # a WebSocket: hypercorn refuses it when the app does not accept
        self.counters["http_requests"] += 1
        method = scope["method"]
        if method not in ("GET", "HEAD"):
            self.counters["http_refused"] += 1
            await _respond(send, 405, b"text/plain; charset=utf-8",
                           f"{method} not allowed: this server is read-only (GET, HEAD)\n".encode(),
                           extra=[(b"allow", ALLOWED)])
            return
        path = scope["path"]
        if path not in PATHS:
            self.counters["http_refused"] += 1
            await _respond(send, 404, b"text/plain; charset=utf-8", b"not found: try /, /status.json or /metrics\n")
            return
        try:
            with trio.fail_after(RENDER_WAIT):
                await self._render_slot.acquire()
        except trio.TooSlowError:
            self.counters["http_refused"] += 1
            await _respond(send, 503, b"text/plain; charset=utf-8",
                           b"busy: other requests for this status page are being answered; try again\n",
                           extra=[(b"retry-after", b"1")])
            return
        try:
            status, content_type, body = await self._page(path)
        except Exception as exc:  # a bug must not take the node down; the log says which
            log.exception("status page %s failed", path)
            self.counters["http_errors"] += 1
            status, content_type, body = 500, b"text/plain; charset=utf-8", \
                f"internal error: {exc.__class__.__name__}\n".encode()
        finally:
            self._render_slot.release()
        await _respond(send, status, content_type, body, head=method == "HEAD")

    async def _page(self, path: str) -> tuple[int, bytes, bytes]:
        """A snapshot on the loop, its formatting in a worker thread (module docstring)."""
        node = self.node
        if path == "/":
            view, samples = snapshot(node), tuple(self.samples)
            if view["truncated"]:
                self.counters["http_truncated"] += 1
            html = await trio.to_thread.run_sync(render_page, view, samples)
            return 200, b"text/html; charset=utf-8", html.encode()
        if path == "/metrics":
            figures = self._collector.read()
            if figures["other_faces"] is not None:
                self.counters["http_truncated"] += 1
            return 200, CONTENT_TYPE_LATEST.encode(), await trio.to_thread.run_sync(exposition, figures)
        text = await trio.to_thread.run_sync(status_json, node.status())
        return 200, b"application/json", text.encode()


async def _respond(send: ASGISendCallable, status: int, content_type: bytes, body: bytes, *, head: bool = False,
                   extra: list[tuple[bytes, bytes]] | None = None) -> None:
    headers: list[tuple[bytes, bytes]] = [(b"content-type", content_type), (b"content-length", str(len(body)).encode()),
               *_SECURITY_HEADERS, *(extra or [])]
    start: HTTPResponseStartEvent = {"type": "http.response.start", "status": status, "headers": headers}
    await send(start)
    done: HTTPResponseBodyEvent = {"type": "http.response.body", "body": b"" if head else body, "more_body": False}
    await send(done)
