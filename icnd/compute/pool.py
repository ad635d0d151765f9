"""Worker processes for synchronous hosted functions (``function_pool =
"processes"``).

A function runs in a separate interpreter, started with the ``spawn`` method
(never ``fork``: the daemon has threads, and a forked copy of a trio process
is not safe), that imports it by its ``MODULE:CALLABLE`` name.  Arguments
and results cross the process boundary as icnd's encoded values
(`icnd.compute.values`), the same bytes as on the wire, so no argument or
result object is ever pickled; what the worker raises comes back as its type
name and message.  A worker that dies (a crash, ``os._exit``) fails the
calls it had with ``worker-crashed``, and the next call starts a fresh pool.
Closing the pool terminates its workers, so a function that never returns
cannot hold up the daemon's shutdown.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable

import trio

from .registry import load_callable
from .values import decode_value, encode_value

POOLS = ("threads", "processes")

_loaded: dict[str, Callable[..., Any]] = {}  # in a worker: the functions imported so far


class WorkerError(Exception):
    """A function run in a worker raised (or the worker died): the exception's type name and message."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message


def _run_encoded(target: str, encoded: list[bytes]) -> tuple[bool, bytes | tuple[str, str]]:
    """In a worker: (True, encoded result) or (False, (exception type, message))."""
    try:
        fn = _loaded.get(target)
        if fn is None:
            fn = _loaded[target] = load_callable(target)
        return True, encode_value(fn(*[decode_value(b) for b in encoded]))
    except Exception as exc:  # the caller gets a signed error naming it
        return False, (type(exc).__name__, str(exc))


class ProcessPool:
    """At most `workers` worker processes, started at the first call."""

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError("a process pool needs at least one worker")
        self.workers = workers
        self._executor: ProcessPoolExecutor | None = None
        self.closed = False

    async def run(self, target: str, args: list[Any]) -> bytes:
        """The encoded result of ``target(*args)`` run in a worker; raises
        `WorkerError` for what it raised, or when the worker died."""
        if self.closed:
            raise WorkerError("host-closed", "the function host is shutting down")
        if self._executor is None:
            self._executor = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
        executor = self._executor
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()

        def wake(_: Future) -> None:  # in the executor's thread, or here if already done
            try:
                token.run_sync_soon(done.set)
            except trio.RunFinishedError:
                pass

        future = executor.submit(_run_encoded, target, [encode_value(a) for a in args])
        future.add_done_callback(wake)
        try:
            await done.wait()
        except trio.Cancelled:
            future.cancel()  # not started yet: never starts; running: its result is dropped
            raise
        try:
            ok, value = future.result()
        except BrokenProcessPool:
            if self._executor is executor:
                self._executor = None
                executor.shutdown(wait=False, cancel_futures=True)
            raise WorkerError("worker-crashed", "the worker process running the function died") from None
        except Exception as exc:  # e.g. the arguments could not be sent to the worker
            raise WorkerError(type(exc).__name__, str(exc)) from None
        if not ok:
            raise WorkerError(*value)  # type: ignore[misc]
        return value  # type: ignore[return-value]

    def close(self) -> None:
        """Stop the workers now, running calls included."""
        self.closed = True
        executor, self._executor = self._executor, None
        if executor is None:
            return
        # ProcessPoolExecutor has no public way to stop a running call before Python
        # 3.14's terminate_workers(); its worker table has kept this name since 3.2
        processes = list(getattr(executor, "_processes", {}).values())
        executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.terminate()
