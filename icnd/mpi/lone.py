"""The communicator of a lone process: rank 0 of 1, no node needed.

mpi4py run without a launcher is a job of one process ("singleton"), and
its collectives return this process's own data; `LoneCommunicator` does
the same here with the blocking communicator's methods (those of
`icnd.sync.SyncCommunicator`), checking arguments as a real one does, so a
program developed alone fails the same way under ``icnd exec``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

OPS = ("sum", "max", "min", "prod", "mean")


class LoneRequest:
    """A finished nonblocking call: `wait` gives its result at once.  (Argument
    errors were raised by the call itself, as `icnd.sync.SyncCommunicator`'s are.)"""

    done = True

    def __init__(self, result: Any) -> None:
        self._result = result

    def test(self) -> bool:
        return True

    def wait(self) -> Any:
        return self._result


def _array(x: Any, what: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype.kind not in "biufc":
        raise TypeError(f"{what} takes numpy arrays of numeric dtype, not {arr.dtype}")
    return arr


def _op(op: str) -> str:
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}; known: {', '.join(OPS)}")
    return op


def _root(root: int) -> int:
    if type(root) is not int or root != 0:
        raise ValueError(f"root {root!r} is out of range: a lone process has rank 0 only")
    return root


def _one(values: Any, what: str) -> list[Any]:
    try:
        items = list(values)
    except TypeError:
        raise TypeError(f"{what} takes a sequence of 1 value (one per rank), not {type(values).__name__}") from None
    if len(items) != 1:
        raise ValueError(f"{what} takes 1 value (one per rank), got {len(items)}")
    return items


class LoneCommunicator:
    """Rank 0 of a job of one (module docstring)."""

    rank = 0
    size = 1
    group = None
    version = 0

    def __init__(self, member: str = "rank0") -> None:
        self.member = member
        self.members = [member]

    def __repr__(self) -> str:
        return "<LoneCommunicator rank 0 of 1>"

    def barrier(self, *, timeout: float | None = None) -> None:
        return None

    def bcast(self, value: Any, root: int = 0, *, timeout: float | None = None) -> Any:
        _root(root)
        return value

    def allreduce(self, x: Any, op: str = "sum", *, timeout: float | None = None, partial: bool = False,
                  out: Any = None) -> Any:
        arr = _array(x, "allreduce")
        result = arr / 1 if _op(op) == "mean" and arr.dtype.kind in "biu" else arr.copy()
        if out is not None:
            np.copyto(out.reshape(result.shape), result)
            return out
        return result

    def reduce(self, x: Any, op: str = "sum", root: int = 0, *, timeout: float | None = None,
               partial: bool = False) -> Any:
        _root(root)
        return self.allreduce(x, op)

    def reduce_scatter(self, x: Any, op: str = "sum", *, timeout: float | None = None) -> Any:
        arr = _array(x, "reduce_scatter")
        if arr.ndim == 0:
            raise ValueError("reduce_scatter splits axis 0: a 0-d array has none")
        return self.allreduce(arr, op)

    def gather(self, value: Any, root: int = 0, *, timeout: float | None = None, partial: bool = False) -> Any:
        _root(root)
        return [value]

    def allgather(self, value: Any, *, timeout: float | None = None, partial: bool = False) -> list[Any]:
        return [value]

    def scatter(self, values: Any, root: int = 0, *, timeout: float | None = None) -> Any:
        _root(root)
        return _one(values, "scatter")[0]

    def alltoall(self, values: Any, *, timeout: float | None = None) -> list[Any]:
        return _one(values, "alltoall")

    def __getattr__(self, name: str) -> Any:
        """``i<name>``: the call made at once, as a finished `LoneRequest`."""
        if name.startswith("i") and name[1:] in COLLECTIVES:
            call = getattr(self, name[1:])
            return lambda *args, **kwargs: LoneRequest(call(*args, **kwargs))
        raise AttributeError(name)


COLLECTIVES = ("barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather", "alltoall",
               "reduce_scatter")
