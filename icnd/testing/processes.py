"""Real processes for tests: an ``icnd run`` daemon, the CLI, and their end.

Every helper is explicit about time: readiness is polled with a deadline
(never slept for), and a daemon that exits or stays silent raises
`DaemonNotReady` with the end of its log, so a failing test says why."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from pathlib import Path
from typing import Any

import trio

from icnd.client import Client, connect
from icnd.errors import Error
from icnd.topology.processes import is_running, log_tail
from icnd.topology.processes import stop_process as stop_process  # a helper of this module too

LOG_TAIL = 2000  # characters of a daemon's log quoted in `DaemonNotReady`


class DaemonNotReady(Error):
    """An ``icnd run`` daemon exited, or did not answer ``status``, before its deadline."""


def run_cli(*args: str, input: bytes | None = None, timeout: float = 20.0,
            cwd: str | os.PathLike[str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """``python -m icnd ARGS`` with this interpreter; output captured as bytes."""
    return subprocess.run([sys.executable, "-m", "icnd", *args], input=input, capture_output=True,
                          timeout=timeout, cwd=cwd)


def one_line_error(r: subprocess.CompletedProcess[bytes]) -> str:
    """The stderr of an expected CLI failure, which must be exactly one
    ``icnd: error:`` line and no traceback (AssertionError otherwise)."""
    text = r.stderr.decode()
    if "Traceback" in text:
        raise AssertionError(text)
    lines = text.splitlines()
    if len(lines) != 1 or not lines[0].startswith("icnd: error: "):
        raise AssertionError(text)
    return lines[0]


def free_ports(n: int = 1, kind: int = socket.SOCK_DGRAM) -> list[int]:
    """`n` distinct loopback ports free now (bound together, then released for daemons to bind):
    a port closed and asked for again at once may be handed out twice."""
    socks = [socket.socket(socket.AF_INET, kind) for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def memfds(pid: int | str = "self") -> int:
    """How many memory-file descriptors (memfd) process `pid` holds open (a
    mapping does not count): what shared-memory tests check for leaks."""
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            n += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/memfd:")
        except OSError:
            pass  # closed meanwhile
    return n


def gone(pid: int | None) -> bool:
    """Whether process `pid` no longer runs (no such process, or a zombie)."""
    return not is_running(pid)


async def wait_exit(proc: subprocess.Popen[Any], timeout: float = 15.0) -> int:
    """`proc`'s exit code, once it has exited (`trio.TooSlowError` after `timeout` seconds)."""
    with trio.fail_after(timeout):
        while proc.poll() is None:
            await trio.sleep(0.05)
    return proc.returncode


@contextmanager
def short_tempdir(prefix: str = "icnd-") -> Iterator[str]:
    """A fresh directory under the system's temporary directory, removed afterwards.

    Short on purpose: Unix socket paths in it stay well under their 108 bytes,
    which pytest's own ``tmp_path`` does not promise."""
    path = tempfile.mkdtemp(prefix=prefix)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


class Daemon:
    """An ``icnd run`` subprocess whose socket, stdout and stderr are files in `workdir`.

    ``Daemon(workdir, "--name", "/node/a", ...)`` starts it at once (the
    socket ``<workdir>/<name>.sock``, stdout ``<name>.out``, stderr
    ``<name>.log``); `wait_ready` (plain code) or `until_ready` (trio) waits
    until it prints ``ready`` and answers ``status``; `stop` and `kill` end it.  The owner must end
    it (a fixture's finalizer), whatever happens."""

    def __init__(self, workdir: str | os.PathLike[str], *args: str, name: str = "t") -> None:
        workdir = Path(workdir)
        self.name = name
        self.args = list(args)
        self.sock = workdir / f"{name}.sock"
        self.stdout_path = workdir / f"{name}.out"
        self.stderr_path = workdir / f"{name}.log"
        self.status: dict[str, Any] = {}
        with open(self.stdout_path, "ab") as out, open(self.stderr_path, "ab") as err:
            self._stdout_start = out.tell()  # an earlier run's "ready" (a restart) is not this one's
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "icnd", "run", "--socket", str(self.sock), *args],
                stdout=out, stderr=err, env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )

    @property
    def socket(self) -> str:
        """The path of its local socket, as clients take it."""
        return str(self.sock)

    def connect(self) -> AbstractAsyncContextManager[Client]:
        """A client of this daemon (``async with daemon.connect() as client``)."""
        return connect(str(self.sock))

    def uri(self, scheme: str = "udp") -> str:
        """The first address the daemon listens on with `scheme` (from its last `status`)."""
        return next(u for u in self.status["listen"] if u.startswith(scheme + "://"))

    async def get_status(self) -> dict[str, Any]:
        async with self.connect() as client:
            status: dict[str, Any] = await client.status()
            return status

    def said_ready(self) -> bool:
        """Whether it printed ``ready`` on stdout: it serves, its configured faces made and functions
        hosted (its socket answers ``status`` a little earlier, while those are still being set up)."""
        with open(self.stdout_path, "rb") as out:
            out.seek(self._stdout_start)
            return b"ready\n" in out.read().splitlines(keepends=True)

    async def until_ready(self, timeout: float = 15.0) -> dict[str, Any]:
        """Its ``status``, once it said ``ready`` and answers; `DaemonNotReady` if it exits or `timeout` passes."""
        try:
            with trio.fail_after(timeout):
                while True:
                    if self.proc.poll() is not None:
                        raise DaemonNotReady(
                            f"daemon {self.name} exited with {self.proc.returncode}: {self.log_tail()}")
                    if not self.said_ready():
                        await trio.sleep(0.05)
                        continue
                    try:
                        self.status = await self.get_status()
                        return self.status
                    except Error:
                        await trio.sleep(0.05)
        except trio.TooSlowError:
            raise DaemonNotReady(f"daemon {self.name} not ready within {timeout:g}s: {self.log_tail()}") from None

    def wait_ready(self, timeout: float = 15.0) -> dict[str, Any]:
        """`until_ready` from plain (non-trio) code."""
        return trio.run(self.until_ready, timeout)

    def log_tail(self) -> str:
        return log_tail(str(self.stderr_path), LOG_TAIL)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        """Send `sig` (a clean shutdown by default), SIGKILL after `timeout`; the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def kill(self) -> None:
        self.stop(signal.SIGKILL)


@contextmanager
def lone_node(workdir: str | os.PathLike[str], *args: str) -> Iterator[Daemon]:
    """One node, ``/node/s`` listening on UDP on 127.0.0.1, ready (`args`:
    more ``icnd run`` arguments); stopped when the block ends, whatever happens."""
    daemon = Daemon(workdir, "--name", "/node/s", "--listen", "udp://127.0.0.1:0", *args, name="s")
    try:
        daemon.wait_ready()
        yield daemon
    finally:
        daemon.stop()


@contextmanager
def neighbours(workdir: str | os.PathLike[str], *, transport: str = "udp", a: tuple[str, ...] = (),
               b: tuple[str, ...] = (), b_cost: int | None = None) -> Iterator[tuple[Daemon, Daemon]]:
    """Nodes ``/node/a`` and ``/node/b`` on 127.0.0.1, each the other's
    ``--neighbor`` over `transport` (link-state routing), ready; stopped when
    the block ends, whatever happens.  `a`, `b`: more ``icnd run`` arguments
    for each; `b_cost`: the cost b gives its link to a."""
    pa, pb = free_ports(2, socket.SOCK_STREAM if transport == "tcp" else socket.SOCK_DGRAM)
    cost = "" if b_cost is None else f",cost={b_cost}"
    da = Daemon(workdir, "--name", "/node/a", "--listen", f"{transport}://127.0.0.1:{pa}",
                "--neighbor", f"{transport}://127.0.0.1:{pb}", *a, name="a")
    db = Daemon(workdir, "--name", "/node/b", "--listen", f"{transport}://127.0.0.1:{pb}",
                "--neighbor", f"{transport}://127.0.0.1:{pa}{cost}", *b, name="b")
    try:
        da.wait_ready()
        db.wait_ready()
        yield da, db
    finally:
        da.stop()
        db.stop()
