"""The ``MPI`` namespace of icnd.mpi: ``from icnd.mpi import MPI`` where a
program had ``from mpi4py import MPI``.

What it offers (docs/mpi.md has the details and the porting guide):

- ``MPI.COMM_WORLD`` -- this process's rank in its job (made on first use,
  `icnd.mpi.world`): ``Get_rank()``, ``Get_size()``, ``.rank``, ``.size``,
  the collectives ``Barrier``, ``Bcast``, ``Reduce``, ``Allreduce``,
  ``Gather``, ``Scatter``, ``Allgather``, ``Alltoall``,
  ``Reduce_scatter_block``, their ``I...`` nonblocking forms, and the
  lower-case object forms ``barrier``, ``bcast``, ``reduce``, ``allreduce``,
  ``gather``, ``scatter``, ``allgather``, ``alltoall``;
- ``MPI.Request`` (``Wait``, ``Test``, ``Request.Waitall``, ``Request.Testall``);
- ``MPI.IN_PLACE``; the datatypes ``MPI.BYTE``, ``MPI.INT``, ``MPI.LONG``,
  ``MPI.FLOAT``, ``MPI.DOUBLE``; the ops ``MPI.SUM``, ``MPI.MAX``,
  ``MPI.MIN``, ``MPI.PROD``;
- ``MPI.Wtime()``, ``MPI.Wtick()``, ``MPI.Get_processor_name()``.

Every other name of MPI (``MPI.COMM_SELF``, ``comm.Send``, ``MPI.Op.Create``,
...) raises `icnd.mpi.comm.Unsupported`, a `NotImplementedError` naming it.
"""

from __future__ import annotations

import socket as _socket
import threading as _threading
import time as _time
from typing import Any

from icnd.mpi.buffers import BYTE, DOUBLE, FLOAT, IN_PLACE, INT, LONG, Datatype
from icnd.mpi.comm import Intracomm, Request, Unsupported, unsupported
from icnd.mpi.ops import MAX, MIN, PROD, SUM, Op

Comm = Intracomm  # mpi4py's base class; isinstance(MPI.COMM_WORLD, MPI.Comm) holds

_lock = _threading.Lock()


def Wtime() -> float:
    """Seconds since an arbitrary moment, for timing (a monotonic clock, as MPI_Wtime)."""
    return _time.perf_counter()


def Wtick() -> float:
    """The resolution of `Wtime`, in seconds."""
    return _time.get_clock_info("perf_counter").resolution


def Get_processor_name() -> str:
    """This host's name."""
    return _socket.gethostname()


def _world() -> Intracomm:
    from icnd.mpi.launch import detect
    from icnd.mpi.world import join

    launch = detect()
    return Intracomm(join(launch), launch.timeout)


def __getattr__(name: str) -> Any:
    """``COMM_WORLD`` on first use (joining the job); `Unsupported` for what icnd.mpi does not offer."""
    if name == "COMM_WORLD":
        with _lock:
            world = globals().get("COMM_WORLD")
            if world is None:
                world = _world()
                globals()["COMM_WORLD"] = world
        return world
    if name.startswith("_"):
        raise AttributeError(f"module 'icnd.mpi.MPI' has no attribute {name!r}")
    raise unsupported(f"MPI.{name}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"COMM_WORLD"})


__all__ = ["BYTE", "COMM_WORLD", "Comm", "DOUBLE", "Datatype", "FLOAT", "Get_processor_name", "INT", "IN_PLACE",
           "Intracomm", "LONG", "MAX", "MIN", "Op", "PROD", "Request", "SUM", "Unsupported", "Wtick", "Wtime"]
