"""One rank of a collective job started by ``icnd exec`` (docs/management.md, "Jobs: icnd exec").

    icnd exec -n 3 --socket a.sock --socket b.sock -- python -m apps.allreduce_job

Each rank attaches to its node (``ICND_SOCKET``) as its member of the job's
group (``ICND_GROUP``, ``ICND_MEMBER``), allreduces an array that depends on
its rank, gathers every rank's node id, and prints one line.  Every rank
prints the same sum: rank r contributes ``[0, 1, 2, 3] * (r + 1)``, so the sum
is ``[0, 1, 2, 3] * N(N+1)/2``.  The exit code is 1 if the sum is wrong.

The per-call deadline is the job's ``--timeout`` when given (``ICND_TIMEOUT``),
else the group's default; a rank that never takes part makes the others'
calls fail with `icnd.Timeout` naming it, never hang.
"""

from __future__ import annotations

import os
import sys

import numpy as np

import icnd


def main() -> int:
    socket, group, member = os.environ["ICND_SOCKET"], os.environ["ICND_GROUP"], os.environ["ICND_MEMBER"]
    timeout = float(os.environ["ICND_TIMEOUT"]) if "ICND_TIMEOUT" in os.environ else None
    with icnd.sync.connect(socket) as client:
        node = str(client.node_name())
        comm = client.communicator(group, member)
        x = np.arange(4, dtype=np.float64) * (comm.rank + 1)
        total = comm.allreduce(x, op="sum", timeout=timeout)
        nodes = comm.allgather(node, timeout=timeout)
        comm.barrier(timeout=timeout)
    expected = np.arange(4, dtype=np.float64) * comm.size * (comm.size + 1) / 2
    ok = bool(np.array_equal(total, expected))
    print(f"rank {comm.rank} of {comm.size} on {node}: allreduce sum = {total.tolist()} "
          f"({'ok' if ok else 'WRONG'}); ranks' nodes: {', '.join(nodes)}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
