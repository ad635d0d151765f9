"""A launched topology's record: ``<workdir>/topology.json``, and cleaning up by it.

The launcher (`icnd.topology.launcher`) writes the record atomically
whenever it changes: its own pid, every node's pid (with its start time, so
a recycled pid is never killed), socket and URIs, and -- *before* they are
created -- every namespace and veth name.  `stop_recorded` (``icnd topo
down``) asks a live launcher to tear down, and removes what a dead one left
behind, by the recorded pids and names only.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from icnd.errors import Error
from icnd.topology import netns as _netns
from icnd.topology.processes import STOP_TIMEOUT, Target, is_running, remove_socket, stop_processes

STATE_FILE = "topology.json"
STATE_FORMAT = 1
LAUNCHER_KILL_WAIT = 0.2  # s after SIGKILL to a launcher that did not stop, before its record is read again


class LaunchError(Error):
    """A topology could not be started (a node failed, a name is taken, ...)."""


def state_path(workdir: str) -> str:
    return os.path.join(workdir, STATE_FILE)


def read_state(workdir: str) -> dict[str, Any] | None:
    """The record in `workdir`, None if there is none (`LaunchError` if it is unreadable)."""
    path = state_path(workdir)
    try:
        with open(path, encoding="utf-8") as f:
            state = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise LaunchError(f"{path}: unreadable topology state: {exc}") from None
    if not isinstance(state, dict):
        raise LaunchError(f"{path}: unreadable topology state: not an object")
    return state


def write_state(workdir: str, state: dict[str, Any]) -> None:
    """Replace the record in `workdir` atomically (a reader sees the old one or the new one)."""
    path = state_path(workdir)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(state, f, indent=2)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def remove_state(workdir: str) -> None:
    try:
        os.unlink(state_path(workdir))
    except FileNotFoundError:
        pass


def launcher_running(state: dict[str, Any]) -> bool:
    launcher = state.get("launcher") or {}
    return is_running(launcher.get("pid"), launcher.get("start"))


def cleanup_recorded(state: dict[str, Any], *,
                     timeout: float = STOP_TIMEOUT) -> tuple[list[int], list[str], list[str]]:
    """Stop the recorded node processes, delete the recorded namespaces and sockets.

    Returns ``(pids stopped, namespaces deleted, problems)``."""
    nodes = state.get("nodes") or {}
    targets = [
        Target(int(info["pid"]), info.get("start"))
        for info in nodes.values()
        if isinstance(info, dict) and info.get("pid")
    ]
    stopped = stop_processes(targets, timeout)
    namespaces = [ns for ns in state.get("netns") or [] if isinstance(ns, str)]
    veths = [v for v in state.get("veths") or [] if isinstance(v, str)]
    present = set(_netns.existing_namespaces()) if namespaces and shutil.which("ip") else set()
    problems = _netns.destroy(namespaces, veths)
    deleted = [ns for ns in namespaces if ns in present and not any(ns in p for p in problems)]
    for info in nodes.values():
        if isinstance(info, dict) and info.get("socket"):
            remove_socket(info["socket"])
    return stopped, deleted, problems


def default_workdir() -> str:
    """Where ``icnd topo up``/``down`` keep their state without ``--workdir``:
    ``$XDG_RUNTIME_DIR/icnd-topo``, else ``/tmp/icnd-topo-$UID``."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "icnd-topo")
    return os.path.join(tempfile.gettempdir(), f"icnd-topo-{os.getuid()}")


@dataclass
class Teardown:
    """What `stop_recorded` did."""

    workdir: str
    recorded: bool = False  # there was a record (else nothing ran there)
    launcher_pid: int | None = None  # a live launcher asked to tear down
    launcher_killed: bool = False  # ... which did not stop within the timeout (SIGKILL)
    by_launcher: bool = False  # the launcher tore everything down itself
    stopped: list[int] = field(default_factory=list)  # node pids stopped here (the launcher was gone)
    deleted: list[str] = field(default_factory=list)  # namespaces deleted here
    problems: list[str] = field(default_factory=list)  # what could not be removed (the record is kept)


def stop_recorded(workdir: str, *, timeout: float = 30.0) -> Teardown:
    """Stop the topology recorded in `workdir` (``icnd topo down``).

    A live launcher is asked to tear down (SIGTERM) and waited for `timeout`
    seconds (then killed); what a dead launcher left behind (node processes,
    namespaces, sockets, the record) is removed here, by the recorded pids
    and names only.  Idempotent.  `LaunchError` if the record is unreadable."""
    done = Teardown(workdir)
    state = read_state(workdir)
    if state is None:
        return done
    done.recorded = True
    launcher = state.get("launcher") or {}
    pid = launcher.get("pid")
    if pid and pid != os.getpid() and launcher_running(state):  # (no pid: nothing running)
        done.launcher_pid = pid
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while launcher_running(state) and time.monotonic() < deadline:
            time.sleep(0.05)
        if launcher_running(state):
            done.launcher_killed = True
            Target(pid, launcher.get("start")).signal(signal.SIGKILL)
            time.sleep(LAUNCHER_KILL_WAIT)
        try:
            state = read_state(workdir)
        except LaunchError:
            pass
        if state is None:
            done.by_launcher = True
            return done
    done.stopped, done.deleted, done.problems = cleanup_recorded(state)
    if not done.problems:
        remove_state(workdir)
    return done
