"""Reduction operations: `MPI.SUM`, `MPI.MAX`, `MPI.MIN`, `MPI.PROD`.

An `Op` names the communicator's op (``"sum"``, ...) that arrays are
reduced with in the network, and is also a function of two values (as
mpi4py's are: ``MPI.SUM(x, y) == x + y``) that the lower-case ``reduce`` and
``allreduce`` apply, in rank order, to values that are not numpy arrays
(Python numbers, lists, strings: ``comm.allreduce([rank], MPI.SUM)``
concatenates, as with mpi4py).
"""

from __future__ import annotations

import operator
from typing import Any, Callable


def _max(x: Any, y: Any) -> Any:
    return y if y > x else x


def _min(x: Any, y: Any) -> Any:
    return y if y < x else x


class Op:
    """A predefined reduction operation (only these four exist here; user-defined ones are not supported)."""

    __slots__ = ("name", "net", "_combine")

    def __init__(self, name: str, net: str, combine: Callable[[Any, Any], Any]) -> None:
        self.name = name
        self.net = net  # the communicator's op for arrays
        self._combine = combine

    def __call__(self, x: Any, y: Any) -> Any:
        """The operation on two Python values (what lower-case reductions of non-arrays apply)."""
        return self._combine(x, y)

    def Is_commutative(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"MPI.{self.name}"


SUM = Op("SUM", "sum", operator.add)
PROD = Op("PROD", "prod", operator.mul)
MAX = Op("MAX", "max", _max)
MIN = Op("MIN", "min", _min)


def as_op(op: Any, where: str, *, callables: bool = False) -> Any:
    """`op` checked: an `Op` (or, where `callables`, any function of two values,
    as mpi4py's lower-case reductions take); otherwise a `ValueError` naming it."""
    if isinstance(op, Op):
        return op
    if callables and callable(op):
        return op
    raise ValueError(f"{where}: unknown op {op!r}; icnd.mpi has MPI.SUM, MPI.MAX, MPI.MIN and MPI.PROD"
                     + (" (or a function of two values)" if callables else ""))


def fold(values: list[Any], op: Callable[[Any, Any], Any]) -> Any:
    """`op` applied left to right over `values` (rank order)."""
    result = values[0]
    for value in values[1:]:
        result = op(result, value)
    return result
