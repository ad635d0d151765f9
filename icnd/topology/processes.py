"""Process control for daemons started from Python: whether a recorded process
still runs, stopping processes with a bounded wait, and reading what they
left behind (a socket file, the end of a log).

Used by the topology launcher (`icnd.topology.launcher`, ``icnd topo
down``) and by the test helpers (`icnd.testing.processes`).  A process is
known by its pid *and* its start time (``/proc/<pid>/stat``), so a pid the
kernel recycled is never signalled.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import stat
import subprocess
import sys
import time
from typing import Any

__all__ = ["Target", "child_setup", "is_running", "log_tail", "remove_socket", "start_time", "stop_process",
           "stop_processes"]

log = logging.getLogger("icnd.topology")

STOP_TIMEOUT = 5.0  # s a process gets to exit after SIGTERM, before SIGKILL
KILL_TIMEOUT = 2.0  # s a process gets to disappear after SIGKILL

try:
    _prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
except (OSError, AttributeError):  # pragma: no cover - not Linux
    _prctl = None
_PR_SET_PDEATHSIG = 1


def child_setup() -> None:
    """In a forked child (``preexec_fn``): get SIGTERM when the parent dies (no orphaned daemons)."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """``(state, start time in clock ticks)`` of ``pid``, or None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    try:
        return fields[0], int(fields[19])
    except (IndexError, ValueError):
        return None


def start_time(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot), or None if there is no such process."""
    info = _proc_stat(pid)
    return info[1] if info else None


def is_running(pid: int | None, start: int | None = None) -> bool:
    """True if ``pid`` runs and is not a zombie, and is the very process recorded (same `start`, if given)."""
    if not pid:
        return False
    info = _proc_stat(pid)
    if info is None or info[0] in ("Z", "X"):
        return False
    return start is None or info[1] == start


class Target:
    """A process to stop: our own child (``popen``) or a recorded pid + start time."""

    def __init__(self, pid: int, start: int | None, popen: subprocess.Popen[Any] | None = None) -> None:
        self.pid, self.start, self.popen = pid, start, popen

    def running(self) -> bool:
        if self.popen is not None:
            return self.popen.poll() is None
        return is_running(self.pid, self.start)

    def signal(self, sig: int) -> None:
        if self.running():
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass


def stop_processes(targets: list[Target], timeout: float = STOP_TIMEOUT) -> list[int]:
    """SIGTERM every target, wait up to ``timeout``, SIGKILL the rest; returns the pids stopped."""
    live = [t for t in targets if t.running()]
    for t in live:
        t.signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while any(t.running() for t in live) and time.monotonic() < deadline:
        time.sleep(0.02)
    stubborn = [t for t in live if t.running()]
    for t in stubborn:
        log.warning("pid %d did not stop within %gs; killing it", t.pid, timeout)
        t.signal(signal.SIGKILL)
    deadline = time.monotonic() + KILL_TIMEOUT
    while any(t.running() for t in stubborn) and time.monotonic() < deadline:
        time.sleep(0.02)
    return [t.pid for t in live]


def stop_process(proc: subprocess.Popen[Any], timeout: float = STOP_TIMEOUT) -> None:
    """End a child process (SIGTERM, then SIGKILL after `timeout`), reap it and close its pipes."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def remove_socket(path: str) -> None:
    """Remove the Unix socket file at `path`, if that is what is there."""
    try:
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)
    except OSError:
        pass


def log_tail(path: str, limit: int = 2000) -> str:
    """The last `limit` bytes of the log at `path`, stripped (or a note that there is none)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            text = f.read().decode("utf-8", "replace").strip()
    except OSError:
        return "(no log)"
    return text or "(log is empty)"
