"""Running icnd as a service (issue #19): ``ready`` on stdout, systemd's notify
protocol, and the shipped unit file and sample config (contrib/)."""

from __future__ import annotations

import os
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from icnd.daemon.config import load
from icnd.testing.processes import Daemon, short_tempdir, stop_process

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "contrib" / "icnd.service"
SAMPLE = ROOT / "contrib" / "icnd.toml"
STEP = 15.0  # seconds: the deadline of each wait


def start(workdir: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    with open(f"{workdir}/n.log", "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "icnd", "run", "--name", "/node/svc", "--socket", f"{workdir}/n.sock",
             "--listen", "tcp://127.0.0.1:0", *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, env={**os.environ, **(env or {})})


def first_line(proc: subprocess.Popen[bytes], timeout: float = STEP) -> bytes:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "nothing on stdout"
    return proc.stdout.readline()


def test_run_prints_ready_once_it_serves() -> None:
    with short_tempdir() as d:
        proc = start(d)
        try:
            assert first_line(proc) == b"ready\n"
            sock = socket.socket(socket.AF_UNIX)  # serving: the socket answers at once
            sock.connect(f"{d}/n.sock")
            sock.close()
        finally:
            stop_process(proc)
        assert proc.returncode == 0


@pytest.fixture(params=["path", "abstract"])
def notify_socket(request: pytest.FixtureRequest) -> Iterator[tuple[socket.socket, str]]:
    """A datagram socket standing in for systemd's, and the NOTIFY_SOCKET value naming it."""
    with short_tempdir() as d, socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        if request.param == "path":
            sock.bind(f"{d}/notify")
            yield sock, f"{d}/notify"
        else:
            name = f"icnd-test-{os.getpid()}-{time.monotonic_ns()}"
            sock.bind("\0" + name)
            yield sock, "@" + name


def receive(sock: socket.socket, timeout: float = STEP) -> dict[str, str]:
    sock.settimeout(timeout)
    message = sock.recv(4096).decode()
    return dict(line.split("=", 1) for line in message.splitlines())


def test_run_notifies_systemd_ready_reloading_and_stopping(notify_socket: tuple[socket.socket, str]) -> None:
    sock, address = notify_socket
    with short_tempdir() as d:
        proc = start(d, env={"NOTIFY_SOCKET": address})
        try:
            ready = receive(sock)
            assert ready["READY"] == "1" and ready["MAINPID"] == str(proc.pid)
            assert "/node/svc" in ready["STATUS"]
            assert first_line(proc) == b"ready\n"
            proc.send_signal(signal.SIGHUP)  # no config file: a reload that changes nothing
            reloading = receive(sock)
            assert reloading["RELOADING"] == "1" and int(reloading["MONOTONIC_USEC"]) > 0
            assert receive(sock)["READY"] == "1"
            proc.send_signal(signal.SIGTERM)
            assert receive(sock)["STOPPING"] == "1"
            assert proc.wait(STEP) == 0
        finally:
            stop_process(proc)


def exec_start() -> list[str]:
    line = next(x for x in UNIT.read_text().splitlines() if x.startswith("ExecStart="))
    return shlex.split(line.removeprefix("ExecStart="))


def test_the_unit_runs_the_shipped_config_as_written(tmp_path: Path) -> None:
    """ExecStart's arguments and contrib/icnd.toml, with only the paths moved
    (/etc, /run, /var/lib are not ours) and the listeners on loopback."""
    argv = exec_start()
    assert Path(argv[0]).name == "icnd" and argv[1] == "run"
    assert argv[argv.index("--config") + 1] == "/etc/icnd/icnd.toml"
    config = tmp_path / "icnd.toml"
    shutil.copy(SAMPLE, config)
    moved = {"/etc/icnd/icnd.toml": str(config), "/var/lib/icnd": str(tmp_path / "state")}
    args = [moved.get(a, a) for a in argv[2:]]
    i = args.index("--socket")
    del args[i:i + 2]  # Daemon puts its socket in tmp_path
    daemon = Daemon(tmp_path, *args, "--listen", "udp://127.0.0.1:0", name="svc")
    try:
        status = daemon.wait_ready(STEP)
        assert status["name"] == "/node/a" and (tmp_path / "state" / "identity.key").exists()
    finally:
        daemon.stop()
    assert daemon.proc.returncode == 0


def test_the_sample_config_loads() -> None:
    cfg = load(str(SAMPLE))
    assert cfg.name == "/node/a" and len(cfg.neighbors) == 2 and cfg.groups[0].name == "workers"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verifies_the_unit(tmp_path: Path) -> None:
    """The shipped unit names /usr/local/bin/icnd (where `pip install` as root puts it) and
    `verify` wants ExecStart's program to exist: the copy checked here names this
    environment's icnd instead, nothing else changed."""
    icnd = Path(sys.executable).parent / "icnd"
    assert icnd.exists(), f"{icnd}: the icnd console script is not installed"
    text = UNIT.read_text()
    copy = text.replace(f"ExecStart={exec_start()[0]} ", f"ExecStart={icnd} ")
    assert copy != text
    unit = tmp_path / "icnd.service"
    unit.write_text(copy)
    done = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "icnd.service" not in done.stderr, done.stderr  # warnings (an unknown key) do not fail verify
