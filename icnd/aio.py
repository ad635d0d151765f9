"""The client for asyncio programs (python-ndn, Jupyter, aiohttp, ...).

    import asyncio, icnd.aio

    async def main():
        async with icnd.aio.connect("/tmp/a.sock") as c:
            data = await c.fetch("/demo/hello")
            async with c.serve("/demo/echo", handler):   # handler: a plain or an asyncio `async def`
                ...

    asyncio.run(main())

    c = await icnd.aio.connect("/tmp/a.sock")   # in a notebook: a client for the next cells too
    ...
    await c.aclose()

icnd's client is written for trio; this facade runs it in a background
thread with its own trio loop (`icnd.sync.ClientThread`, the blocking
facade's engine) and makes each of its methods a coroutine of the caller's
asyncio loop that awaits the call's outcome (`asyncio.wrap_future`): the
asyncio loop never blocks, so it works inside a loop that already runs (a
notebook's).  Every public method of `icnd.Client` is offered under its own
name (the table `icnd.sync.METHODS`, checked by tests/test_facade.py):

- coroutine methods (``fetch``, ``publish``, ``call``, ...) and plain ones
  (``sign``, ...) are coroutines: ``await c.fetch(...)``;
- context managers (``serve``, ``host``, ``reflexive``, ``stream``) are
  async context managers: ``async with c.host({...}):``;
- ``submit`` gives an `AioFuture`: an `icnd.Future` (pass it to ``call``
  as any future) whose ``result()`` is awaited on your loop;
- ``communicator`` gives an `AioCommunicator`: the collectives of
  `icnd.collective.Communicator` as asyncio coroutines, and their
  ``i<name>`` forms returning an `AioRequest` (``await r.wait()``).

Errors keep their icnd types (`icnd.Timeout`, `icnd.Nacked`, ...).
Deadlines are the client's (each method's ``timeout``, the node command's
10 s); cancelling the awaiting asyncio task cancels the call in the trio
loop; a call waiting when the client closes raises `icnd.Error`.  `aclose`
(or leaving ``async with``) ends the thread.

Callables handed to the client: an ``async def`` (a ``serve`` handler, a
hosted function) is run on *your* asyncio loop (so it may use asyncio
freely); a plain callable runs in the client's thread (a handler that blocks
holds up the client; synchronous hosted functions run in worker threads as
always).  ``progress`` callbacks run in the client's thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
from contextlib import AbstractAsyncContextManager
from typing import Any, Callable, Generator


from icnd.client import Client
from icnd.collective import Communicator, Request
from icnd.compute.named import AioFuture
from icnd.compute.pool import wait_future
from icnd.errors import Error
from icnd.sync import (
    ASYNC_CONTEXT,
    CLOSE,
    CLOSE_TIMEOUT,
    COLLECTIVES,
    CONTEXT,
    CommunicatorView,
    METHODS,
    PLAIN,
    START_GRACE,
    ClientThread,
    Held,
    collective_method,
    facade_method,
)


class AsyncClient:
    """A connected client for asyncio: the methods of `icnd.Client` as
    asyncio coroutines and async context managers (module docstring).
    Made by `connect`."""

    def __init__(self, thread: ClientThread, loop: asyncio.AbstractEventLoop) -> None:
        self._thread = thread
        self._loop = loop

    async def _await(self, future: concurrent.futures.Future[Any]) -> Any:
        """`future`'s outcome, awaited without blocking the asyncio loop; if
        the awaiting task is cancelled, the call in the trio loop is too."""
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            self._thread.cancel(future)
            raise

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await self._await(self._thread.submit(fn, *self._bridge(args), **self._bridge(kwargs)))

    def _bridge(self, value: Any) -> Any:
        """Arguments with every asyncio ``async def`` (also among a dict's
        values or a list's items: ``host({...})``) replaced by a trio one that
        runs it on this asyncio loop."""
        if inspect.iscoroutinefunction(value):
            return _on_asyncio(value, self._loop)
        if isinstance(value, dict):
            return {k: self._bridge(v) for k, v in value.items()}
        if type(value) in (list, tuple):
            return type(value)(self._bridge(v) for v in value)
        return value

    @property
    def client(self) -> Client:
        """The trio client underneath (use it only from its own thread)."""
        if self._thread.client is None:
            raise Error("the icnd client is closed")
        return self._thread.client

    def __getattr__(self, attr: str) -> Any:
        """The client's public attributes (``socket_path``, ``counters``, ``key``, ...), read through."""
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(self.client, attr)

    async def aclose(self) -> None:
        """Close the client and end its thread (calls in progress raise `icnd.Error`)."""
        self._thread.stop()
        try:
            await asyncio.wait_for(asyncio.wrap_future(self._thread.finished), CLOSE_TIMEOUT)
        except asyncio.TimeoutError:
            raise Error(f"the icnd client thread did not end within {CLOSE_TIMEOUT:g}s") from None
        self._thread.join(1.0)  # its last statement ran: this returns at once

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class AsyncHeld:
    """The asyncio facade's async context manager around an `icnd.sync.Held`."""

    def __init__(self, owner: AsyncClient, held: Held) -> None:
        self._owner = owner
        self._held = held
        self._exited: concurrent.futures.Future[Any] | None = None

    async def __aenter__(self) -> Any:
        thread = self._owner._thread
        self._exited = thread.submit(self._held.run)
        entered, exited = asyncio.wrap_future(self._held.entered), asyncio.wrap_future(self._exited)
        try:
            await asyncio.wait([entered, exited], return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            thread.cancel(self._exited)
            raise
        if entered.done():
            return entered.result()
        entered.cancel()
        exited.result()  # raises why it could not be entered
        raise Error("the context ended before it was entered")

    async def __aexit__(self, *exc: object) -> None:
        assert self._exited is not None
        self._owner._thread.call_soon(self._held.leave.set)
        await self._owner._await(self._exited)


def _on_asyncio(fn: Callable[..., Any], loop: asyncio.AbstractEventLoop) -> Callable[..., Any]:
    """A trio coroutine function that runs the asyncio coroutine function
    `fn` on `loop` and returns (or raises) its outcome; cancelled in trio, it
    cancels the asyncio task.  Attributes (``@icnd.function``'s) are kept."""

    @functools.wraps(fn)
    async def on_asyncio(*args: Any, **kwargs: Any) -> Any:
        future = asyncio.run_coroutine_threadsafe(fn(*args, **kwargs), loop)
        await wait_future(future)
        return future.result()

    return on_asyncio


class AioRequest:
    """A nonblocking collective started by an `AioCommunicator`
    (``r = comm.iallreduce(x)``): ``await r.wait()`` returns its result (or
    raises its error); `test` and `done` say whether it has finished.  The
    call keeps its deadline, so `wait` never hangs."""

    def __init__(self, owner: AsyncClient, started: concurrent.futures.Future[Request], what: str) -> None:
        self._owner = owner
        self._started = started  # the trio request, once the call has taken its sequence number
        self.what = what

    @property
    def done(self) -> bool:
        return self.test()

    def test(self) -> bool:
        """True once the call has finished (`wait` then returns at once); a
        call that could not start (bad arguments) has finished too."""
        if not self._started.done():
            return False
        return self._started.exception() is not None or self._started.result().test()

    async def wait(self) -> Any:
        """The call's result, once it has finished (its error raised, if it failed or could not start)."""
        request = await self._owner._await(self._started)
        return await self._owner._await(self._owner._thread.submit(request.wait))

    def __repr__(self) -> str:
        return f"<AioRequest {self.what} {'done' if self.done else 'in flight'}>"


class AioCommunicator(CommunicatorView):
    """`icnd.collective.Communicator` for asyncio, made by
    `AsyncClient.communicator`: the same attributes (``rank``, ``size``,
    ``group``, ``member``, ``version``, ``members``), its collectives as
    asyncio coroutines (``await comm.allreduce(x)``), and their ``i<name>``
    forms, plain methods that return an `AioRequest` at once.

    Calls keep the order they are made in, as the collectives require: an
    ``i<name>`` call takes its sequence number in call order without
    blocking the asyncio loop (argument errors are then raised by the
    request's ``wait()``); a collective coroutine takes its number when it
    starts running.  Arrays handed to a call are read while it runs: leave
    them alone until it has finished."""

    def __init__(self, owner: AsyncClient, comm: Communicator) -> None:
        super().__init__(comm)
        self._owner = owner

    async def _call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return await self._owner._call(getattr(self._comm, name), *args, **kwargs)

    def _start(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> AioRequest:
        started = self._owner._thread.run_in_order(functools.partial(getattr(self._comm, name), *args, **kwargs))
        return AioRequest(self._owner, started, name[1:])

    def __repr__(self) -> str:
        return f"<AioCommunicator {self.group} v{self.version} rank {self.rank} of {self.size}>"


def _aio_collective(name: str) -> Callable[..., Any]:
    async def call(self: AioCommunicator, *args: Any, **kwargs: Any) -> Any:
        return await self._call(name, args, kwargs)

    def start(self: AioCommunicator, *args: Any, **kwargs: Any) -> AioRequest:
        return self._start(name, args, kwargs)
    return collective_method(name, AioCommunicator, start if name.startswith("i") else call, AioRequest)


for _name in COLLECTIVES:
    setattr(AioCommunicator, _name, _aio_collective(_name))
    setattr(AioCommunicator, "i" + _name, _aio_collective("i" + _name))


def _async_method(name: str, kind: str) -> Callable[..., Any]:
    if name == "submit":
        async def submit(self: AsyncClient, *args: Any, **kwargs: Any) -> AioFuture:
            future = await self._call(self.client.submit, *args, **kwargs)
            return AioFuture(future.name, owner=self)
        return facade_method(submit, name, AsyncClient, AioFuture)
    if name == "communicator":
        async def communicator(self: AsyncClient, *args: Any, **kwargs: Any) -> AioCommunicator:
            return AioCommunicator(self, await self._call(self.client.communicator, *args, **kwargs))
        return facade_method(communicator, name, AsyncClient, AioCommunicator)
    if kind in (ASYNC_CONTEXT, CONTEXT):
        def hold(self: AsyncClient, *args: Any, **kwargs: Any) -> AsyncHeld:
            held = Held(getattr(self.client, name), kind == ASYNC_CONTEXT, self._bridge(args), self._bridge(kwargs))
            return AsyncHeld(self, held)
        return facade_method(hold, name, AsyncClient, AbstractAsyncContextManager[Any])
    assert kind in (PLAIN, "call"), kind

    async def call(self: AsyncClient, *args: Any, **kwargs: Any) -> Any:
        return await self._call(getattr(self.client, name), *args, **kwargs)
    return facade_method(call, name, AsyncClient)


for _name, _kind in METHODS.items():
    if _kind != CLOSE and hasattr(Client, _name):  # AsyncClient.aclose is its own
        setattr(AsyncClient, _name, _async_method(_name, _kind))


class Connecting:
    """What `connect` returns: ``async with`` it (closed at the end of the
    block), or ``await`` it for a client you close yourself (`AsyncClient.aclose`;
    handy across a notebook's cells)."""

    def __init__(self, path: str | None, timeout: float, kwargs: dict[str, Any]) -> None:
        self._path, self._timeout, self._kwargs = path, timeout, kwargs
        self._client: AsyncClient | None = None

    async def _open(self) -> AsyncClient:
        thread = ClientThread(self._path, {"timeout": self._timeout, **self._kwargs})
        try:
            await asyncio.wait_for(asyncio.wrap_future(thread.ready), self._timeout + START_GRACE)
        except asyncio.TimeoutError:
            thread.stop()
            raise Error(f"the icnd client did not connect within {self._timeout + START_GRACE:g}s") from None
        except BaseException:
            thread.stop()
            raise
        return AsyncClient(thread, asyncio.get_running_loop())

    def __await__(self) -> Generator[Any, None, AsyncClient]:
        return self._open().__await__()

    async def __aenter__(self) -> AsyncClient:
        self._client = await self._open()
        return self._client

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            await self._client.aclose()


def connect(path: str | None = None, *, timeout: float = 5.0, **kwargs: Any) -> Connecting:
    """Connect to the local node (arguments as `icnd.connect`) from asyncio:
    ``async with icnd.aio.connect(path) as c``, or ``c = await
    icnd.aio.connect(path)`` and later ``await c.aclose()``.  Raises
    `icnd.Error` if the node does not answer (``cannot connect to icnd at
    ...``) -- the wait never blocks the asyncio loop."""
    return Connecting(path, timeout, kwargs)


__all__ = ["AioCommunicator", "AioFuture", "AioRequest", "AsyncClient", "Connecting", "connect"]
