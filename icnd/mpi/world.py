"""``MPI.COMM_WORLD``: this process joins its job's group as its rank.

`join` reads the launcher's environment (`icnd.mpi.launch`), connects a
blocking client (`icnd.sync`, a background thread) to this host's node and
opens the group's communicator as this rank's member:

- under ``icnd exec`` the group exists already (``icnd exec`` made it);
- under an external launcher (Slurm, ``mpirun``, PMI), rank 0 makes the
  group unless its node already knows one of that name with members
  ``rank0..rank<N-1>`` (members on its own node, or round-robin on the
  nodes of ``ICND_NODES``); the other ranks wait for it to reach their node;
- a lone process (no launcher) needs no node: `LoneCommunicator`.

Every wait has the start deadline: ``ICND_TIMEOUT``, else `START_TIMEOUT`;
past it, `icnd.Timeout` says what was awaited.  The client is closed when
the interpreter exits.
"""

from __future__ import annotations

import atexit
import time
from typing import TYPE_CHECKING, Any

from icnd.errors import CommandError, Timeout
from icnd.mpi.launch import Launch, detect
from icnd.mpi.lone import LoneCommunicator

if TYPE_CHECKING:
    from icnd.sync import SyncClient

START_TIMEOUT = 30.0  # seconds to connect, find or make the group and open the communicator
POLL = 0.05  # seconds between looks for a group another rank makes


def _member_ids(info: dict[str, Any]) -> list[str]:
    return [str(m).partition("@")[0] for m in info.get("members", [])]


def _wait_for_group(client: "SyncClient", launch: Launch, deadline: float) -> None:
    """Return once this rank's node knows `launch.group` with the expected members."""
    assert launch.group is not None
    expected = [f"rank{i}" for i in range(launch.size)]
    seen: list[str] | None = None
    while True:
        try:
            info = client.group(launch.group)
        except CommandError as exc:
            if exc.status != 404:
                raise
        else:
            seen = _member_ids(info)
            if not launch.create or seen == expected:  # icnd exec's group: the communicator checks the member
                return
        if time.monotonic() >= deadline:
            found = "not there" if seen is None else f"members {', '.join(seen)}"
            raise Timeout(f"icnd.mpi: rank {launch.rank} waited for group {launch.group} (made by "
                          f"{'rank 0' if launch.create else 'icnd exec'}) on its node and found it "
                          f"{found} by the deadline")
        time.sleep(POLL)


def _make_group(client: "SyncClient", launch: Launch) -> None:
    """Rank 0 under an external launcher: make the group unless its node has it already."""
    assert launch.group is not None
    expected = [f"rank{i}" for i in range(launch.size)]
    try:
        if _member_ids(client.group(launch.group)) == expected:
            return
    except CommandError as exc:
        if exc.status != 404:
            raise
    own = bytes(client.node_name()[-1]).decode("utf-8", "replace")
    client.create_group(launch.group, members=launch.members(own))


def join(launch: Launch | None = None) -> Any:
    """The blocking communicator of this process's rank (module docstring)."""
    launch = detect() if launch is None else launch
    if launch.launcher is None:
        return LoneCommunicator(launch.member)
    from icnd.sync import connect  # the client and its thread only for a rank of a real job

    budget = launch.timeout or START_TIMEOUT
    deadline = time.monotonic() + budget
    client = connect(launch.socket, timeout=min(budget, 10.0))
    atexit.register(client.close)
    try:
        if launch.create and launch.rank == 0:
            _make_group(client, launch)
        else:
            _wait_for_group(client, launch, deadline)
        return client.communicator(launch.group, launch.member)
    except BaseException:
        client.close()
        raise
