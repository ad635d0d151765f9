"""A neighbour that does not answer is in the log (issue #27, item 10).

A ``--neighbor`` on a wrong port "connects" (UDP) and, before, nothing more
was said: the node looked healthy.  Now: a warning once no hello has come
back within the dead interval, the neighbour's first answer said at the
same level, and a warning when an up neighbour is lost."""

from __future__ import annotations

import signal
import time

from icnd.testing.processes import Daemon, free_ports, short_tempdir

READY_TIMEOUT = 15.0
TIMERS = ("--hello-interval", "0.2", "--dead-interval", "0.6")


def _log_line(daemon: Daemon, *parts: str, timeout: float = 10.0) -> str:
    """The first line of `daemon`'s log that contains every one of `parts`, once it is there."""
    deadline = time.monotonic() + timeout
    while True:
        for line in daemon.stderr_path.read_text().splitlines():
            if all(part in line for part in parts):
                return line
        assert time.monotonic() < deadline, f"no log line with {parts}: {daemon.log_tail()}"
        time.sleep(0.05)


def test_a_silent_neighbor_is_a_warning_then_its_answer_and_its_loss_are_said() -> None:
    with short_tempdir() as workdir:
        pa, pb = free_ports(2)
        peer = f"udp://127.0.0.1:{pb}"
        a = Daemon(workdir, "--name", "/node/a", "--listen", f"udp://127.0.0.1:{pa}", "--neighbor", peer, *TIMERS,
                   name="a")
        b = None
        try:
            a.wait_ready(READY_TIMEOUT)
            line = _log_line(a, "WARNING", peer, "no hello answered within 0.6 s")
            assert "is an icnd node listening there?" in line
            b = Daemon(workdir, "--name", "/node/b", "--listen", peer, "--neighbor", f"udp://127.0.0.1:{pa}",
                       "--hello-interval", "0.2", name="b")  # dead interval 3 s: a loaded machine does not make it warn
            b.wait_ready(READY_TIMEOUT)
            _log_line(a, "WARNING", "neighbor /node/b", peer, "answers hellos again")
            _log_line(b, "INFO", "neighbor /node/a", "up")  # b's own first answer: said, not warned
            assert "WARNING" not in b.stderr_path.read_text()
            b.stop(signal.SIGKILL)
            _log_line(a, "WARNING", "neighbor /node/b", peer, "down, no hello answered for 0.6 s")
        finally:
            a.stop()
            if b is not None:
                b.stop()
