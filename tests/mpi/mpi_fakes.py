"""A job of N ranks in one process, for testing `icnd.mpi` without daemons.

`FakeWorld(n)` hands out one `FakeCommunicator` per rank, with the blocking
communicator's API (`icnd.sync.SyncCommunicator`'s: the collectives and
their ``i<name>`` forms).  Each rank runs in its own thread; calls are
matched by sequence number (taken at call time, as the real communicator
does), wait for every rank with a deadline, and are answered with plain
numpy -- an implementation independent of the network's.  Arrays come back
read-only, as the network hands them over.  Ranks that call different
collectives get an error naming them, as with the real one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from icnd.errors import Error, Timeout

OPS: dict[str, Callable[..., Any]] = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}
COLLECTIVES = ("barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather", "alltoall",
               "reduce_scatter")


def _frozen(value: Any) -> Any:
    """A read-only copy of every array in `value` (what decoding from the network gives)."""
    if isinstance(value, np.ndarray):
        copy = np.array(value, copy=True)
        copy.flags.writeable = False
        return copy
    if isinstance(value, list):
        return [_frozen(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return {k: _frozen(v) for k, v in value.items()}
    return value


class FakeWorld:
    def __init__(self, size: int, timeout: float = 5.0) -> None:
        self.size = size
        self.timeout = timeout
        self.calls: dict[int, dict[int, tuple[str, tuple[Any, ...], dict[str, Any]]]] = {}
        self.cond = threading.Condition()
        self.log: list[tuple[int, str, tuple[Any, ...], dict[str, Any]]] = []  # (rank, name, args, kwargs)

    def comm(self, rank: int) -> "FakeCommunicator":
        return FakeCommunicator(self, rank)

    def post(self, seq: int, rank: int, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        with self.cond:
            self.calls.setdefault(seq, {})[rank] = (name, _frozen(args), dict(kwargs))
            self.log.append((rank, name, args, dict(kwargs)))
            self.cond.notify_all()

    def result(self, seq: int, rank: int) -> Any:
        with self.cond:
            if not self.cond.wait_for(lambda: len(self.calls.get(seq, {})) == self.size, self.timeout):
                missing = sorted(set(range(self.size)) - set(self.calls.get(seq, {})))
                raise Timeout(f"fake call {seq}: ranks {missing} did not take part",
                              missing=[f"rank{r}" for r in missing], ranks=missing)
            calls = self.calls[seq]
        names = {calls[r][0] for r in calls}
        if len(names) > 1:
            raise Error(f"fake call {seq}: ranks called different collectives: "
                        + ", ".join(f"rank {r} {calls[r][0]}" for r in sorted(calls)))
        name = calls[rank][0]
        args = [calls[r][1] for r in range(self.size)]
        kwargs = calls[rank][2]
        return _frozen(getattr(self, "_" + name)(rank, args, kwargs))

    # --- the answers, with numpy -------------------------------------------------------------------
    def _barrier(self, rank: int, args: list[tuple[Any, ...]], kwargs: dict[str, Any]) -> Any:
        return None

    def _bcast(self, rank: int, args: list[tuple[Any, ...]], kwargs: dict[str, Any]) -> Any:
        root = args[rank][1]
        return args[root][0]

    def _reduced(self, args: list[tuple[Any, ...]]) -> np.ndarray:
        arrays = [np.asarray(a[0]) for a in args]
        for j, a in enumerate(arrays):
            if (a.dtype, a.shape) != (arrays[0].dtype, arrays[0].shape):
                raise Error(f"fake: rank {j} contributed {a.dtype} {a.shape}, rank 0 {arrays[0].dtype} "
                            f"{arrays[0].shape}")
        result = arrays[0].copy()
        for a in arrays[1:]:
            OPS[args[0][1]](result, a, out=result)
        return result

    def _allreduce(self, rank: int, args: list[tuple[Any, ...]], kwargs: dict[str, Any]) -> Any:
        result = self._reduced(args)
        out = kwargs.get("out")
        if out is not None:
            np.copyto(out, result.reshape(out.shape))
            return out
        return result

    def _reduce(self, rank: int, args: list[tuple[Any, ...]], kwargs: dict[str, Any]) -> Any:
        return self._reduced(args) if rank == args[rank][2] else None

    def _reduce_scatter(self, rank: int, args: list[tuple[Any, ...]], kwargs: dict[str, Any]) -> Any:
        return np.array_split(self._reduced(args), self.size)[rank]

    def _gather(self, rank: int, args: list[tuple[Any, ...]], kwargs: dict[str, Any]) -> Any:
        return [a[0] for a in args] if rank == args[rank][1] else None

    def _allgather(self, rank: int, args: list[tuple[Any, ...]], kwargs: dict[str, Any]) -> Any:
        return [a[0] for a in args]

    def _scatter(self, rank: int, args: list[tuple[Any, ...]], kwargs: dict[str, Any]) -> Any:
        root = args[rank][1]
        return list(args[root][0])[rank]

    def _alltoall(self, rank: int, args: list[tuple[Any, ...]], kwargs: dict[str, Any]) -> Any:
        return [list(a[0])[rank] for a in args]


class FakeRequest:
    def __init__(self, world: FakeWorld, seq: int, rank: int) -> None:
        self.world, self.seq, self.rank = world, seq, rank

    @property
    def done(self) -> bool:
        return self.test()

    def test(self) -> bool:
        with self.world.cond:
            return len(self.world.calls.get(self.seq, {})) == self.world.size

    def wait(self) -> Any:
        return self.world.result(self.seq, self.rank)


class FakeCommunicator:
    def __init__(self, world: FakeWorld, rank: int) -> None:
        self.world = world
        self.rank = rank
        self.size = world.size
        self.group = "fake"
        self.member = f"rank{rank}"
        self.members = [f"rank{r}" for r in range(world.size)]
        self.version = 1
        self.seq = 0

    def _post(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
        seq, self.seq = self.seq, self.seq + 1
        self.world.post(seq, self.rank, name, args, kwargs)
        return seq

    def __getattr__(self, name: str) -> Any:
        if name in COLLECTIVES:
            def call(*args: Any, **kwargs: Any) -> Any:
                return self.world.result(self._post(name, args, kwargs), self.rank)
            return call
        if name.startswith("i") and name[1:] in COLLECTIVES:
            def start(*args: Any, **kwargs: Any) -> FakeRequest:
                return FakeRequest(self.world, self._post(name[1:], args, kwargs), self.rank)
            return start
        raise AttributeError(name)


def run_ranks(size: int, program: Callable[[Any], Any], timeout: float = 10.0) -> list[Any]:
    """Run ``program(comm)`` for every rank of a `FakeWorld` of `size`, each in
    its own thread, with `comm` an `icnd.mpi.MPI.Intracomm`; the list of
    their return values (an exception in a rank is raised here)."""
    from icnd.mpi.comm import Intracomm

    world = FakeWorld(size)
    results: list[Any] = [None] * size
    errors: list[BaseException | None] = [None] * size

    def run(rank: int) -> None:
        try:
            results[rank] = program(Intracomm(world.comm(rank)))
        except BaseException as exc:  # reported below, by rank
            errors[rank] = exc

    threads = [threading.Thread(target=run, args=(r,), daemon=True) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        if t.is_alive():
            raise AssertionError(f"a rank did not finish within {timeout}s")
    for rank, exc in enumerate(errors):
        if exc is not None:
            raise AssertionError(f"rank {rank} failed: {exc!r}") from exc
    return results
