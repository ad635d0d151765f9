"""Where synchronous hosted functions run: worker threads (the default) or
worker processes (``function_pool = "processes"``).

Threads: `ThreadPool`, daemon threads (a function that never returns cannot
hold up the daemon's exit) taking calls from a queue.  Each finished call is
handed back to the trio thread, and one wake-up of the trio loop takes every
call finished meanwhile: under load that costs a fraction of a wake-up per
call, where `trio.to_thread.run_sync` costs a task switch, a thread hand-off
and a wake-up each (measured on this machine, 64 calls in flight: ~16 µs of
CPU per call against ~100 µs).

Processes:
A function runs in a separate interpreter, started with the ``spawn`` method
(never ``fork``: the daemon has threads, and a forked copy of a trio process
is not safe), that imports it by its ``MODULE:CALLABLE`` name.  Arguments
and results cross the process boundary as icnd's encoded values
(`icnd.compute.values`), the same bytes as on the wire, so no argument or
result object is ever pickled; what the worker raises comes back as its type
name and message.  A worker that dies (a crash, ``os._exit``, the OOM
killer) fails the calls the pool had with ``worker-crashed`` (one sent just
as an idle worker died may fail so without having run), and the next call
starts a fresh pool.
Closing the pool terminates its workers, so a function that never returns
cannot hold up the daemon's shutdown.
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from queue import SimpleQueue
from typing import Any, Callable

import trio

from icnd.compute.registry import load_callable
from icnd.compute.values import decode_value, encode_value
from icnd.errors import Error

log = logging.getLogger("icnd.compute")

POOLS = ("threads", "processes")

_loaded: dict[str, Callable[..., Any]] = {}  # in a worker: the functions imported so far


class WorkerError(Error):
    """A function run in a worker raised (or the worker died): the exception's type name and message."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message


Outcome = tuple[bool, Any]  # (True, the value) or (False, the exception)


class ThreadPool:
    """At most `workers` daemon threads, started as calls come.  `submit` and
    the `on_done` callbacks run in the trio thread; `on_done` must not raise."""

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError("a thread pool needs at least one worker")
        self.workers = workers
        self._calls: SimpleQueue[tuple[Callable[[], Any], Callable[[Outcome], None]] | None] = SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._finished: deque[tuple[Callable[[Outcome], None], Outcome]] = deque()
        self._lock = threading.Lock()
        self._drain_pending = False  # a _drain is scheduled in the trio thread (under _lock)
        self._token: trio.lowlevel.TrioToken | None = None
        self.closed = False

    def submit(self, call: Callable[[], Any], on_done: Callable[[Outcome], None]) -> None:
        """Run `call()` in a worker; later, in the trio thread, ``on_done(outcome)``."""
        if self.closed:
            on_done((False, WorkerError("host-closed", "the function host is shutting down")))
            return
        if self._token is None:
            self._token = trio.lowlevel.current_trio_token()
        if len(self._threads) < self.workers:
            thread = threading.Thread(target=self._work, args=(self._token,), name=f"icnd-fn-{len(self._threads)}",
                                      daemon=True)
            self._threads.append(thread)
            thread.start()
        self._calls.put((call, on_done))

    def _work(self, token: trio.lowlevel.TrioToken) -> None:
        calls, finished, lock = self._calls, self._finished, self._lock
        while True:
            item = calls.get()
            if item is None:
                return
            call, on_done = item
            if self.closed:  # queued before the host stopped: not run
                outcome: Outcome = (False, WorkerError("host-closed", "the function host stopped first"))
            else:
                try:
                    outcome = (True, call())
                except BaseException as exc:  # whatever the function raised goes back to the caller
                    outcome = (False, exc)
            finished.append((on_done, outcome))
            with lock:
                if self._drain_pending:
                    continue
                self._drain_pending = True
            try:
                token.run_sync_soon(self._drain)
            except trio.RunFinishedError:
                return

    def _drain(self) -> None:
        with self._lock:
            self._drain_pending = False  # before taking: what finishes from now on schedules anew
        finished = self._finished
        while finished:
            on_done, outcome = finished.popleft()
            try:
                on_done(outcome)
            except Exception:  # an exception here would end the whole trio run
                log.exception("a finished function call could not be handed back")

    def close(self) -> None:
        """No more calls; idle workers exit (a running call finishes in its daemon thread)."""
        self.closed = True
        for _ in self._threads:
            self._calls.put(None)


def _run_encoded(target: str, encoded: list[bytes]) -> tuple[bool, bytes | tuple[str, str]]:
    """In a worker: (True, encoded result) or (False, (exception type, message))."""
    try:
        fn = _loaded.get(target)
        if fn is None:
            fn = _loaded[target] = load_callable(target)
        return True, encode_value(fn(*[decode_value(b) for b in encoded]))
    except BaseException as exc:  # even SystemExit: the caller gets a signed error naming it
        return False, (type(exc).__name__, str(exc))


async def wait_future(future: Future[Any]) -> None:
    """Wait, without blocking trio, until `future` (run in another thread or
    process, or on another event loop) is done; cancelled meanwhile, cancel
    the future too (not started yet: it never starts; running: its outcome
    is dropped) and re-raise."""
    token = trio.lowlevel.current_trio_token()
    done = trio.Event()

    def wake(_: Future[Any]) -> None:  # in the future's thread, or here if already done
        try:
            token.run_sync_soon(done.set)
        except trio.RunFinishedError:
            pass

    future.add_done_callback(wake)
    try:
        await done.wait()
    except BaseException:
        future.cancel()
        raise


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
        encoded = [encode_value(a) for a in args]
        for attempt in range(2):  # a pool whose idle worker died refuses at once: start a fresh one
            if self._executor is None:
                self._executor = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
            executor = self._executor
            try:
                future = executor.submit(_run_encoded, target, encoded)
                break
            except (BrokenProcessPool, RuntimeError, OSError):
                self._discard(executor)
                if attempt:
                    raise WorkerError("worker-crashed", "the worker processes cannot be started") from None
        await wait_future(future)
        try:
            ok, value = future.result()
        except BrokenProcessPool:
            self._discard(executor)
            raise WorkerError("worker-crashed", "the worker process running the function died") from None
        except BaseException as exc:  # e.g. the arguments could not be sent to the worker
            raise WorkerError(type(exc).__name__, str(exc)) from None
        if not ok:
            raise WorkerError(*value)
        return value  # type: ignore[return-value]  # ok: value is the encoded result

    def _discard(self, executor: ProcessPoolExecutor) -> None:
        """Stop using a broken pool (the next call starts a fresh one)."""
        if self._executor is executor:
            self._executor = None
        executor.shutdown(wait=False, cancel_futures=True)

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
