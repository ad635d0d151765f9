"""Buffer specifications of the upper-case methods, as mpi4py reads them.

A message is any object with the buffer protocol (numpy arrays,
``bytearray``, ``mmap``, ``array.array``, ...), alone or in a list or tuple
with a count, a displacement and a datatype:

    buf                                 count and type from the buffer itself
    [buf, datatype]                     count = its bytes / the type's size
    [buf, count]  [buf, (count, displ)]
    [buf, count, datatype]  [buf, (count, displ), datatype]  [buf, count, displ, datatype]

Rules (mpi4py's ``message_simple``; a spec that breaks one raises
`ValueError`/`TypeError`/`BufferError` naming the method and the argument,
before anything is sent):

1. The memory must be contiguous (C or Fortran order: its elements are taken
   in memory order); a receive buffer must be writable.
2. Without a datatype, the buffer's own element type is used (a numpy
   array's dtype, a ``bytearray``'s unsigned bytes).  With one, the bytes are
   read as that type, whatever the buffer's own type (``[int64_array,
   MPI.INT]`` is twice as many C ints), as MPI does.
3. Without a count, the count is the bytes after the displacement divided
   by the type's size (they must divide), and divided again by the number
   of blocks where a buffer holds one block per rank (the receive buffer of
   ``Gather``/``Allgather``/``Alltoall``, the send buffer of ``Scatter``,
   ``Alltoall`` and ``Reduce_scatter_block``); a given count is per block.
4. A displacement (in elements of the type) skips that many elements.

`message` returns a `Message`: a 1-D numpy view of exactly the elements the
call moves (no copy), so results are written straight into the caller's
memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


class Datatype:
    """An MPI datatype: a name and the numpy dtype its elements are read as."""

    __slots__ = ("name", "dtype")

    def __init__(self, name: str, dtype: Any) -> None:
        self.name = name
        self.dtype = np.dtype(dtype)

    def Get_size(self) -> int:
        """Bytes per element (``MPI_Type_size``)."""
        return self.dtype.itemsize

    @property
    def size(self) -> int:
        return self.dtype.itemsize

    def __repr__(self) -> str:
        return f"MPI.{self.name}"


BYTE = Datatype("BYTE", np.uint8)  # reductions treat it as unsigned bytes (MPI allows only bit ops on it)
INT = Datatype("INT", np.intc)
LONG = Datatype("LONG", np.dtype("l"))
FLOAT = Datatype("FLOAT", np.float32)
DOUBLE = Datatype("DOUBLE", np.float64)
DATATYPES = (BYTE, INT, LONG, FLOAT, DOUBLE)


class InPlace:
    """`MPI.IN_PLACE`: the receive buffer holds this rank's data and gets the result."""

    _instance: "InPlace | None" = None

    def __new__(cls) -> "InPlace":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MPI.IN_PLACE"

    def __reduce__(self) -> str:
        return "IN_PLACE"


IN_PLACE = InPlace()


@dataclass(frozen=True)
class Message:
    """The elements a buffer spec names: `array` is a 1-D view of them
    (``count * blocks`` elements of `dtype`) into the caller's memory."""

    array: np.ndarray
    count: int  # elements per block
    blocks: int

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    def block(self, j: int) -> np.ndarray:
        """Block `j` of `blocks` (a view)."""
        return self.array[j * self.count:(j + 1) * self.count]


def _index(value: Any, what: str, where: str) -> int:
    try:
        n = value.__index__()
    except AttributeError:
        raise TypeError(f"{where}: the {what} must be an integer, not {type(value).__name__}") from None
    if n < 0:
        raise ValueError(f"{where}: negative {what} {n}")
    return int(n)


def _unpack(spec: Any, where: str) -> tuple[Any, Any, Any, Any]:
    """(buffer, count, displacement, datatype) of `spec`, the absent ones None."""
    if isinstance(spec, (list, tuple)):
        items = list(spec)
        count: Any = None
        displ: Any = None
        dtype: Any = None
        if len(items) == 2:
            buf, second = items
            if isinstance(second, Datatype):
                dtype = second
            elif isinstance(second, (list, tuple)):
                count, displ = _pair(second, where)
            else:
                count = second
        elif len(items) == 3:
            buf, count, dtype = items
            if isinstance(count, (list, tuple)):
                count, displ = _pair(count, where)
        elif len(items) == 4:
            buf, count, displ, dtype = items
        else:
            raise ValueError(f"{where}: a buffer spec is buf, [buf, datatype] or [buf, count, datatype] "
                             f"(2 to 4 items), not {len(items)} items")
        if dtype is not None and not isinstance(dtype, Datatype):
            raise TypeError(f"{where}: the datatype must be one of "
                            f"{', '.join(repr(t) for t in DATATYPES)}, not {dtype!r}")
        return buf, count, displ, dtype
    return spec, None, None, None


def _pair(value: Any, where: str) -> tuple[Any, Any]:
    if len(value) != 2:
        raise ValueError(f"{where}: (count, displacement) takes 2 items, not {len(value)}")
    return value[0], value[1]


def _elements(buf: Any, where: str, writable: bool) -> np.ndarray:
    """`buf`'s memory as a 1-D array of its own element type, in memory order (no copy)."""
    if isinstance(buf, np.ndarray):
        arr = buf
    else:
        try:
            view = memoryview(buf)
        except TypeError:
            raise TypeError(f"{where}: expected a buffer (numpy array, bytearray, mmap, ...) or a list "
                            f"[buf, count, datatype], not {type(buf).__name__}") from None
        try:
            arr = np.asarray(view)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{where}: cannot read a buffer of format {view.format!r}: {exc}") from None
    if not (arr.flags.c_contiguous or arr.flags.f_contiguous):
        raise BufferError(f"{where}: the buffer is not contiguous (pass a contiguous copy, e.g. "
                          "numpy.ascontiguousarray)")
    if writable and not arr.flags.writeable:
        raise BufferError(f"{where}: the buffer is read-only, and this one receives data")
    return arr.reshape(-1, order="A")


def message(spec: Any, *, where: str, writable: bool = False, blocks: int = 1) -> Message:
    """The `Message` buffer spec `spec` names (module docstring); `where`
    (e.g. ``"Allreduce recvbuf"``) starts every error message."""
    buf, count, displ, datatype = _unpack(spec, where)
    if buf is None or buf is IN_PLACE:
        raise TypeError(f"{where}: expected a buffer, not {buf!r}")
    flat = _elements(buf, where, writable)
    dtype = flat.dtype if datatype is None else datatype.dtype
    extent = dtype.itemsize
    if extent == 0:
        raise ValueError(f"{where}: elements of {dtype} have no size")
    raw = flat.view(np.uint8) if flat.dtype != np.uint8 else flat
    offset = 0 if displ is None else _index(displ, "displacement", where) * extent
    if offset > raw.size:
        raise ValueError(f"{where}: displacement {offset // extent} is beyond the buffer's "
                         f"{raw.size // extent} elements of {dtype}")
    if count is None:
        length = raw.size - offset
        if length % extent:
            raise ValueError(f"{where}: the buffer's {length} bytes are not a whole number of {dtype} "
                             f"elements ({extent} bytes each)")
        n = length // extent
        if n % blocks:
            raise ValueError(f"{where}: {n} elements cannot be split into {blocks} equal blocks (one per rank)")
        per = n // blocks
    else:
        per = _index(count, "count", where)
        if offset + per * blocks * extent > raw.size:
            raise ValueError(f"{where}: {blocks * per} elements of {dtype} need {blocks * per * extent} bytes, "
                             f"the buffer has {raw.size - offset}")
    view = raw[offset:offset + per * blocks * extent].view(dtype)
    return Message(view, per, blocks)
