"""`Intracomm` (what `MPI.COMM_WORLD` is) and `Request`, over a blocking communicator.

The blocking communicator is `icnd.sync.SyncCommunicator` (a rank of a
group on a node) or `icnd.mpi.lone.LoneCommunicator` (a lone process): its
collectives take numpy arrays and plain values and return results, its
``i<name>`` forms return requests with ``wait()`` and ``test()``.  This
module maps mpi4py's methods onto them:

- **upper-case methods** (``Allreduce``, ``Bcast``, ...) read their buffer
  specs (`icnd.mpi.buffers`), hand the communicator 1-D views of the
  caller's memory (no copy on the way out) and write results into the
  receive buffers; ``I<name>`` forms return a `Request` that writes them on
  ``Wait``/``Test`` (until then the buffers must be left alone, as in MPI);
- **lower-case methods** (``allreduce``, ``bcast``, ...) move values as
  they are (numpy arrays and the function values of interface §9, never
  pickled); ``reduce``/``allreduce`` of numeric numpy arrays and scalars
  with a predefined op are combined in the network, anything else (Python
  numbers, lists, a function as op) is gathered and combined in rank order
  with the op's Python meaning, exactly as mpi4py does;
- arrays received by lower-case methods are writable (copies where the
  network handed over read-only ones), as unpickled ones are with mpi4py.

Errors: argument mistakes found locally (a root out of range, an unknown
op, a buffer that is too small or read-only) raise `ValueError`,
`TypeError` or `BufferError` naming the method before anything is sent;
failures of the call itself are the communicator's (`icnd.Timeout` naming
the missing ranks, `icnd.Error` for ranks that disagree).  Whatever MPI
offers and this module does not raises `Unsupported`, a `NotImplementedError`
naming it.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

import numpy as np

from icnd.mpi.buffers import IN_PLACE, Message, message
from icnd.mpi.ops import SUM, Op, as_op, fold

DOCS = "docs/mpi.md lists what icnd.mpi supports"


class Unsupported(NotImplementedError, AttributeError):
    """A part of MPI that icnd.mpi does not offer.  A `NotImplementedError`
    naming it; also an `AttributeError`, so that ``hasattr(MPI, "Send")`` and
    ``getattr(comm, "Split", None)`` say "not there" as they would for any
    missing attribute."""


def unsupported(what: str) -> Unsupported:
    return Unsupported(f"icnd.mpi does not implement {what} ({DOCS})")


class Strict(type):
    """A metaclass whose classes raise `Unsupported` for unknown public
    attributes (``MPI.Request.Waitany``)."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise unsupported(f"MPI.{cls.__name__}.{name}")


Finish = Callable[[Any], Any]


def _nothing(result: Any) -> None:
    return None


def _same(result: Any) -> Any:
    return result


class Request(metaclass=Strict):
    """A nonblocking call in flight (``req = comm.Iallreduce(...)``).

    ``Wait()`` blocks until it has finished, writes its result into the
    receive buffer and returns True, or raises the call's error; ``Test()``
    does the same if it has finished and says whether it has.  The call has
    its deadline, so ``Wait`` never hangs.  Waiting again returns at once
    (an error is raised again)."""

    def __init__(self, inner: Any, finish: Finish = _nothing) -> None:
        self._inner = inner
        self._finish = finish
        self._done = False
        self._error: BaseException | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise unsupported(f"MPI.Request.{name}")

    def Wait(self, status: Any = None) -> bool:
        if not self._done:
            try:
                self._finish(self._inner.wait())
            except BaseException as exc:
                self._error = exc
                raise
            finally:
                self._done = True
                self._finish = _nothing  # let go of the buffers (an mmap can close once no view exports it)
        elif self._error is not None:
            raise self._error
        return True

    def Test(self, status: Any = None) -> bool:
        if not self._done and not self._inner.test():
            return False
        return self.Wait()

    @classmethod
    def Waitall(cls, requests: Any, statuses: Any = None) -> bool:
        """Wait for every request (each has its deadline); the first error, if any, is raised after all ended."""
        first: BaseException | None = None
        for request in requests:
            try:
                request.Wait()
            except Exception as exc:  # the others still finish: every request ends within its deadline
                first = first or exc
        if first is not None:
            raise first
        return True

    @classmethod
    def Testall(cls, requests: Any, statuses: Any = None) -> bool:
        """Whether every request has finished (those that have are completed)."""
        finished = [request.Test() for request in requests]
        return all(finished)

    def __repr__(self) -> str:
        return f"<MPI.Request {'done' if self._done else 'in flight'}>"


def _store(dst: np.ndarray, value: Any, whose: str) -> None:
    """Write `value` (an array from the network) into `dst` (a view of a
    receive buffer): the same number of bytes, or a ValueError naming `whose`."""
    if not isinstance(value, np.ndarray):
        raise ValueError(f"{whose} sent {type(value).__name__}, not an array: did it call the lower-case form?")
    if value.nbytes != dst.nbytes:
        raise ValueError(f"{whose} sent {value.size} x {value.dtype} ({value.nbytes} bytes), this rank's "
                         f"receive buffer takes {dst.size} x {dst.dtype} ({dst.nbytes} bytes)")
    if dst.nbytes == 0 or _same_memory(value, dst):
        return
    if value.dtype == dst.dtype:
        np.copyto(dst, value.reshape(dst.shape))
    else:  # another type of the same size in bytes: the bytes, as MPI moves them
        dst.view(np.uint8)[:] = np.ascontiguousarray(value).reshape(-1).view(np.uint8)


def _same_memory(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(a.__array_interface__["data"][0] == b.__array_interface__["data"][0] and a.nbytes == b.nbytes)


def _bytes_match(sent: Message, received: Message, what: str) -> None:
    """A rank's own send and receive sides of a moving collective must agree in bytes per block."""
    got = sent.count * sent.dtype.itemsize
    want = received.count * received.dtype.itemsize
    if got != want:
        raise ValueError(f"{what}: the send buffer holds {sent.count} x {sent.dtype} ({got} bytes) per rank, "
                         f"the receive buffer {received.count} x {received.dtype} ({want} bytes)")


def _types_match(sent: Message, received: Message, what: str) -> None:
    """A reduction's send and receive buffers must agree in type and count (mpi4py's check)."""
    if sent.dtype != received.dtype:
        raise ValueError(f"{what}: the send buffer holds {sent.dtype}, the receive buffer {received.dtype}")
    if sent.count != received.count:
        raise ValueError(f"{what}: the send buffer holds {sent.count} elements, the receive buffer {received.count}")


def _fresh(value: Any) -> Any:
    """`value` with every read-only array replaced by a writable copy (as unpickling gives with mpi4py)."""
    if isinstance(value, np.ndarray):
        return value if value.flags.writeable else value.copy()
    if type(value) is list:
        return [_fresh(v) for v in value]
    if type(value) is tuple:
        return tuple(_fresh(v) for v in value)
    if type(value) is dict:
        return {k: _fresh(v) for k, v in value.items()}
    return value


def _networked(value: Any, op: Any) -> bool:
    """Whether a lower-case reduction of `value` under `op` is combined in the
    network: numeric numpy arrays and scalars under a predefined op (bools
    keep numpy's ``+`` = or, so they are combined in Python like other values)."""
    return isinstance(op, Op) and isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind in "iufc"


class Intracomm(metaclass=Strict):
    """A communicator of mpi4py's kind (``MPI.COMM_WORLD``): see the module docstring.

    `comm` is the blocking communicator underneath; `timeout` (seconds) is
    passed to every call (None: the communicator's default, the group's
    deadline or 30 s)."""

    def __init__(self, comm: Any, timeout: float | None = None) -> None:
        self._comm = comm
        self._kw: dict[str, Any] = {} if timeout is None else {"timeout": timeout}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise unsupported(f"Comm.{name}")

    def __repr__(self) -> str:
        return f"<icnd.mpi.MPI.Intracomm rank {self.rank} of {self.size}>"

    @property
    def communicator(self) -> Any:
        """The icnd communicator underneath (its ``group``, ``members``, partial results, ...)."""
        return self._comm

    # --- who ------------------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return int(self._comm.rank)

    @property
    def size(self) -> int:
        return int(self._comm.size)

    def Get_rank(self) -> int:
        return self.rank

    def Get_size(self) -> int:
        return self.size

    def Abort(self, errorcode: int = 0) -> None:
        """End this process at once with exit code `errorcode` (``icnd exec`` and
        ``mpirun`` then stop the other ranks; their calls name this rank as missing)."""
        sys.stderr.write(f"icnd.mpi: rank {self.rank} called Abort({errorcode})\n")
        sys.stderr.flush()
        os._exit(errorcode)

    # --- the machinery ---------------------------------------------------------------------------
    def _root(self, root: Any, what: str) -> int:
        try:
            r = root.__index__()
        except AttributeError:
            raise TypeError(f"{what}: root must be an integer, not {type(root).__name__}") from None
        if not 0 <= r < self.size:
            raise ValueError(f"{what}: root {r} is out of range (ranks 0..{self.size - 1}), at rank {self.rank}")
        return int(r)

    def _go(self, name: str, args: tuple[Any, ...], finish: Finish = _same, *, nonblocking: bool = False,
            **kwargs: Any) -> Any:
        """Call the communicator's collective `name` (its ``i<name>`` form if
        `nonblocking`: then a `Request` that applies `finish` to the result)."""
        kwargs.update(self._kw)
        if nonblocking:
            return Request(getattr(self._comm, "i" + name)(*args, **kwargs), finish)
        return finish(getattr(self._comm, name)(*args, **kwargs))

    # --- upper case: buffers ----------------------------------------------------------------------
    def _barrier(self, nonblocking: bool) -> Any:
        return self._go("barrier", (), nonblocking=nonblocking)

    def _bcast_buffer(self, buf: Any, root: Any, nonblocking: bool) -> Any:
        what = "Ibcast" if nonblocking else "Bcast"
        root = self._root(root, what)
        if self.rank == root:
            m = message(buf, where=f"{what} buf")
            return self._go("bcast", (m.array, root), nonblocking=nonblocking)
        m = message(buf, where=f"{what} buf", writable=True)
        return self._go("bcast", (None, root), lambda r: _store(m.array, r, f"{what}: root {root}"),
                        nonblocking=nonblocking)

    def _reduce_buffer(self, sendbuf: Any, recvbuf: Any, op: Any, root: Any, nonblocking: bool) -> Any:
        what = "Ireduce" if nonblocking else "Reduce"
        op = as_op(op, what)
        root = self._root(root, what)
        if self.rank != root:
            s = message(sendbuf, where=f"{what} sendbuf")
            return self._go("reduce", (s.array, op.net, root), nonblocking=nonblocking)
        r = message(recvbuf, where=f"{what} recvbuf", writable=True)
        s = r if sendbuf is IN_PLACE else message(sendbuf, where=f"{what} sendbuf")
        _types_match(s, r, what)
        x = s.array.copy() if np.shares_memory(s.array, r.array) else s.array
        return self._go("reduce", (x, op.net, root), lambda res: _store(r.array, res, f"{what} result"),
                        nonblocking=nonblocking)

    def _allreduce_buffer(self, sendbuf: Any, recvbuf: Any, op: Any, nonblocking: bool) -> Any:
        what = "Iallreduce" if nonblocking else "Allreduce"
        op = as_op(op, what)
        r = message(recvbuf, where=f"{what} recvbuf", writable=True)
        s = r if sendbuf is IN_PLACE else message(sendbuf, where=f"{what} sendbuf")
        _types_match(s, r, what)
        x = s.array.copy() if np.shares_memory(s.array, r.array) else s.array
        return self._go("allreduce", (x, op.net), lambda res: _store(r.array, res, f"{what} result"),
                        nonblocking=nonblocking, out=r.array)

    def _gather_buffer(self, sendbuf: Any, recvbuf: Any, root: Any, nonblocking: bool) -> Any:
        what = "Igather" if nonblocking else "Gather"
        root = self._root(root, what)
        if self.rank != root:
            s = message(sendbuf, where=f"{what} sendbuf")
            return self._go("gather", (s.array, root), nonblocking=nonblocking)
        x, finish = self._into_blocks(sendbuf, recvbuf, root, what)
        return self._go("gather", (x, root), finish, nonblocking=nonblocking)

    def _scatter_buffer(self, sendbuf: Any, recvbuf: Any, root: Any, nonblocking: bool) -> Any:
        what = "Iscatter" if nonblocking else "Scatter"
        root = self._root(root, what)
        if self.rank != root:
            r = message(recvbuf, where=f"{what} recvbuf", writable=True)
            return self._go("scatter", (None, root), lambda res: _store(r.array, res, f"{what}: root {root}"),
                            nonblocking=nonblocking)
        s = message(sendbuf, where=f"{what} sendbuf", blocks=self.size)
        blocks = [s.block(j) for j in range(self.size)]
        if recvbuf is IN_PLACE:
            return self._go("scatter", (blocks, root), nonblocking=nonblocking)
        r = message(recvbuf, where=f"{what} recvbuf", writable=True)
        _bytes_match(s, r, what)
        return self._go("scatter", (blocks, root), lambda res: _store(r.array, res, f"{what}: root {root}"),
                        nonblocking=nonblocking)

    def _allgather_buffer(self, sendbuf: Any, recvbuf: Any, nonblocking: bool) -> Any:
        what = "Iallgather" if nonblocking else "Allgather"
        x, finish = self._into_blocks(sendbuf, recvbuf, self.rank, what)
        return self._go("allgather", (x,), finish, nonblocking=nonblocking)

    def _into_blocks(self, sendbuf: Any, recvbuf: Any, own: int, what: str) -> tuple[Any, Callable[[list[Any]], None]]:
        """For a gather into `recvbuf`'s blocks (one per rank): what this rank
        sends (`sendbuf`, or with IN_PLACE its own block `own` of `recvbuf`),
        and the callback storing every rank's value in its block."""
        r = message(recvbuf, where=f"{what} recvbuf", writable=True, blocks=self.size)
        if sendbuf is IN_PLACE:
            x = r.block(own)
        else:
            s = message(sendbuf, where=f"{what} sendbuf")
            _bytes_match(s, r, what)
            x = s.array

        def finish(values: list[Any]) -> None:
            for j, value in enumerate(values):
                _store(r.block(j), value, f"{what}: rank {j}")
        return x, finish

    def _alltoall_buffer(self, sendbuf: Any, recvbuf: Any, nonblocking: bool) -> Any:
        what = "Ialltoall" if nonblocking else "Alltoall"
        r = message(recvbuf, where=f"{what} recvbuf", writable=True, blocks=self.size)
        if sendbuf is IN_PLACE:
            s = r
        else:
            s = message(sendbuf, where=f"{what} sendbuf", blocks=self.size)
            _bytes_match(s, r, what)
        blocks = [s.block(j) for j in range(self.size)]

        def finish(values: list[Any]) -> None:
            for j, value in enumerate(values):
                _store(r.block(j), value, f"{what}: rank {j}")
        return self._go("alltoall", (blocks,), finish, nonblocking=nonblocking)

    def _reduce_scatter_block_buffer(self, sendbuf: Any, recvbuf: Any, op: Any, nonblocking: bool) -> Any:
        what = "Ireduce_scatter_block" if nonblocking else "Reduce_scatter_block"
        op = as_op(op, what)
        if sendbuf is IN_PLACE:
            r = message(recvbuf, where=f"{what} recvbuf", writable=True, blocks=self.size)
            x, dst = r.array.copy(), r.block(0)
        else:
            s = message(sendbuf, where=f"{what} sendbuf", blocks=self.size)
            r = message(recvbuf, where=f"{what} recvbuf", writable=True)
            _types_match(s, r, what)
            x = s.array.copy() if np.shares_memory(s.array, r.array) else s.array
            dst = r.array
        return self._go("reduce_scatter", (x, op.net), lambda res: _store(dst, res, f"{what} result"),
                        nonblocking=nonblocking)

    def Barrier(self) -> None:
        """Return once every rank has called it."""
        self._barrier(False)

    def Bcast(self, buf: Any, root: int = 0) -> None:
        """Root's `buf` into every rank's `buf`."""
        self._bcast_buffer(buf, root, False)

    def Reduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0) -> None:
        """The element-wise `op` of every rank's `sendbuf` into root's `recvbuf` (others may pass None)."""
        self._reduce_buffer(sendbuf, recvbuf, op, root, False)

    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        """The element-wise `op` of every rank's `sendbuf` into every rank's `recvbuf`."""
        self._allreduce_buffer(sendbuf, recvbuf, op, False)

    def Gather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        """Every rank's `sendbuf`, in rank order, into root's `recvbuf` (one block per rank)."""
        self._gather_buffer(sendbuf, recvbuf, root, False)

    def Scatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        """Block `rank` of root's `sendbuf` (one block per rank) into each rank's `recvbuf`."""
        self._scatter_buffer(sendbuf, recvbuf, root, False)

    def Allgather(self, sendbuf: Any, recvbuf: Any) -> None:
        """Every rank's `sendbuf`, in rank order, into every rank's `recvbuf`."""
        self._allgather_buffer(sendbuf, recvbuf, False)

    def Alltoall(self, sendbuf: Any, recvbuf: Any) -> None:
        """Block j of each rank's `sendbuf` into block `rank` of rank j's `recvbuf`."""
        self._alltoall_buffer(sendbuf, recvbuf, False)

    def Reduce_scatter_block(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        """Block `rank` of the element-wise `op` of every rank's `sendbuf` (one block per rank) into `recvbuf`."""
        self._reduce_scatter_block_buffer(sendbuf, recvbuf, op, False)

    def Ibarrier(self) -> Request:
        return self._barrier(True)

    def Ibcast(self, buf: Any, root: int = 0) -> Request:
        return self._bcast_buffer(buf, root, True)

    def Ireduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0) -> Request:
        return self._reduce_buffer(sendbuf, recvbuf, op, root, True)

    def Iallreduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> Request:
        return self._allreduce_buffer(sendbuf, recvbuf, op, True)

    def Igather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Request:
        return self._gather_buffer(sendbuf, recvbuf, root, True)

    def Iscatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Request:
        return self._scatter_buffer(sendbuf, recvbuf, root, True)

    def Iallgather(self, sendbuf: Any, recvbuf: Any) -> Request:
        return self._allgather_buffer(sendbuf, recvbuf, True)

    def Ialltoall(self, sendbuf: Any, recvbuf: Any) -> Request:
        return self._alltoall_buffer(sendbuf, recvbuf, True)

    def Ireduce_scatter_block(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> Request:
        return self._reduce_scatter_block_buffer(sendbuf, recvbuf, op, True)

    # --- lower case: values -------------------------------------------------------------------------
    def barrier(self) -> None:
        """Return once every rank has called it."""
        self._go("barrier", ())

    def bcast(self, obj: Any, root: int = 0) -> Any:
        """Root's `obj` at every rank (the others' `obj` is ignored)."""
        root = self._root(root, "bcast")
        return self._go("bcast", (obj if self.rank == root else None, root), _fresh)

    def reduce(self, sendobj: Any, op: Any = SUM, root: int = 0) -> Any:
        """`op` over every rank's `sendobj` at root, None elsewhere (module docstring: how)."""
        op = as_op(op, "reduce", callables=True)
        root = self._root(root, "reduce")
        if _networked(sendobj, op):
            result = self._go("reduce", (np.asarray(sendobj), op.net, root))
            return None if result is None else _like(result, sendobj)
        items = self._go("gather", (sendobj, root))
        return None if items is None else _fresh(fold(items, op))

    def allreduce(self, sendobj: Any, op: Any = SUM) -> Any:
        """`op` over every rank's `sendobj`, at every rank (module docstring: how)."""
        op = as_op(op, "allreduce", callables=True)
        if _networked(sendobj, op):
            return _like(self._go("allreduce", (np.asarray(sendobj), op.net)), sendobj)
        return _fresh(fold(self._go("allgather", (sendobj,)), op))

    def gather(self, sendobj: Any, root: int = 0) -> list[Any] | None:
        """Every rank's `sendobj`, in rank order, at root; None elsewhere."""
        root = self._root(root, "gather")
        return self._go("gather", (sendobj, root), _fresh)

    def scatter(self, sendobj: Any, root: int = 0) -> Any:
        """Item `rank` of root's `sendobj` (a sequence of `size` values; ignored elsewhere)."""
        root = self._root(root, "scatter")
        if self.rank == root:
            if sendobj is None or not hasattr(sendobj, "__len__"):
                raise TypeError(f"scatter: root {root} must pass a sequence of {self.size} values, "
                                f"not {type(sendobj).__name__}")
            if len(sendobj) != self.size:
                raise ValueError(f"scatter: root {root} passed {len(sendobj)} values for {self.size} ranks")
        return self._go("scatter", (sendobj if self.rank == root else None, root), _fresh)

    def allgather(self, sendobj: Any) -> list[Any]:
        """Every rank's `sendobj`, in rank order, at every rank."""
        return self._go("allgather", (sendobj,), _fresh)

    def alltoall(self, sendobj: Any) -> list[Any]:
        """Item j of every rank's `sendobj` (a sequence of `size` values) goes to rank j: item i of the result came from rank i."""
        if sendobj is None or not hasattr(sendobj, "__len__") or len(sendobj) != self.size:
            raise ValueError(f"alltoall: each rank passes a sequence of {self.size} values (one per rank), "
                             f"rank {self.rank} passed {type(sendobj).__name__}"
                             + (f" of {len(sendobj)}" if hasattr(sendobj, "__len__") else ""))
        return self._go("alltoall", (sendobj,), _fresh)


def _like(result: Any, sent: Any) -> Any:
    """A network reduction's result in the form of what was sent: a numpy
    scalar for a numpy scalar, a writable array for an array."""
    if isinstance(sent, np.generic):
        return np.asarray(result)[()]
    return _fresh(result)
