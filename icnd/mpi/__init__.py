"""An mpi4py-compatible façade over icnd's communicator (interface §15).

    from icnd.mpi import MPI          # instead of: from mpi4py import MPI
    comm = MPI.COMM_WORLD
    comm.Allreduce(x, y, op=MPI.SUM)

Run the program with ``icnd exec -n N -- python prog.py``, or with the
cluster's own launcher (``srun``, ``mpirun``): each rank finds its rank,
its job's group and its node in its environment (`icnd.mpi.launch`) and
every byte travels through icnd.  docs/mpi.md: porting, what is supported,
the environment variables, running across hosts.

    MPI.py      the namespace programs import (COMM_WORLD, IN_PLACE, ops, datatypes, Wtime)
    comm.py     Intracomm and Request: mpi4py's methods over a blocking communicator
    buffers.py  buffer specs ``buf`` / ``[buf, count, datatype]`` and the datatypes
    ops.py      MPI.SUM, MAX, MIN, PROD
    launch.py   rank, size and group from icnd exec / Slurm / Open MPI / PMI
    world.py    joining the job: connect, find or make the group, open the communicator
    lone.py     the communicator of a process started without a launcher (rank 0 of 1)
"""

from icnd.mpi import MPI

__all__ = ["MPI"]
