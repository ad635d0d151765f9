"""A blocking facade over the trio client, for scripts and notebooks.

    with icnd.sync.connect() as c:
        data = c.fetch("/demo/hello")

The trio client runs in a background thread with its own trio loop; each
method call is carried into that loop with `trio.from_thread.run` and blocks
until it returns: every coroutine method of `icnd.Client` (fetch, publish,
call, announce, withdraw, routing, status, ...) is offered under its own
name by `__getattr__`, so the facade never lags the client.  `serve` takes
a plain (synchronous) handler and returns a context manager.  Errors are
the same `icnd.Error` subclasses.
"""

from __future__ import annotations

import inspect
import threading
from contextlib import contextmanager
from typing import Any, Iterator

import trio

from icnd.client.door import Client, unwrap
from icnd.client.door import connect as async_connect
from icnd.endpoint import Handler
from icnd.errors import Error


class SyncClient:
    def __init__(self, path: str | None = None, *, timeout: float = 5.0, **kwargs: Any) -> None:
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._client: Client | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self._thread = threading.Thread(target=trio.run, args=(self._main, path, kwargs), daemon=True,
                                        name="icnd-sync-client")
        self._thread.start()
        if not self._ready.wait(timeout + 5):
            raise Error("icnd client thread did not start")
        if self._error is not None:
            raise self._error

    async def _main(self, path: str | None, kwargs: dict) -> None:
        try:
            async with async_connect(path, **kwargs) as client:
                self._client = client
                self._token = trio.lowlevel.current_trio_token()
                self._stop = trio.Event()
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:  # reported to the constructing thread
            self._error = exc
            self._ready.set()

    def _call(self, fn, *args: Any, **kwargs: Any) -> Any:
        if self._token is None:
            raise Error("client is closed")

        async def run() -> Any:
            return await fn(*args, **kwargs)

        try:
            return trio.from_thread.run(run, trio_token=self._token)
        except BaseExceptionGroup as group:
            raise unwrap(group) from None

    def __getattr__(self, attr: str) -> Any:
        client = self.__dict__.get("_client")
        if client is None:
            raise AttributeError(attr)
        target = getattr(client, attr)
        if not callable(target):
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._call(target, *args, **kwargs) if _is_async(target) else target(*args, **kwargs)

        return call

    @contextmanager
    def serve(self, prefix: Any, handler: Handler, **kwargs: Any) -> Iterator[None]:
        """Serve `prefix` with `handler` (called in the client thread) while the block runs."""
        assert self._client is not None
        manager = self._client.serve(prefix, handler, **kwargs)
        self._call(manager.__aenter__)
        try:
            yield
        finally:
            self._call(manager.__aexit__, None, None, None)

    def close(self) -> None:
        token, self._token = self._token, None
        if token is not None and self._stop is not None:
            trio.from_thread.run_sync(self._stop.set, trio_token=token)
        self._thread.join(timeout=10)

    def __enter__(self) -> "SyncClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn)


def connect(path: str | None = None, **kwargs: Any) -> SyncClient:
    """Connect to the local node; use as a context manager or call `close()`."""
    return SyncClient(path, **kwargs)
