"""Real daemons for integration tests: `icnd run` processes on loopback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import trio

import icnd


@dataclass
class Daemon:
    name: str
    socket: str
    proc: subprocess.Popen
    log_path: Path
    args: list[str] = field(default_factory=list)
    status: dict = field(default_factory=dict)

    def uri(self, scheme: str = "udp") -> str:
        return next(u for u in self.status["listen"] if u.startswith(scheme + "://"))

    def connect(self):
        return icnd.connect(self.socket)

    async def get_status(self) -> dict:
        async with icnd.connect(self.socket) as c:
            return await c.status()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


class DaemonFactory:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.daemons: list[Daemon] = []

    async def start(self, name: str, *extra: str, listen: tuple[str, ...] = ("udp://127.0.0.1:0", "tcp://127.0.0.1:0"),
                    timeout: float = 15) -> Daemon:
        sock = str(self.tmp / f"{name}.sock")
        args = [sys.executable, "-m", "icnd", "run", "--name", f"/node/{name}", "--socket", sock]
        for uri in listen:
            args += ["--listen", uri]
        args += list(extra)
        log_path = self.tmp / f"{name}.log"
        log = open(log_path, "ab")
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        log.close()
        daemon = Daemon(name, sock, proc, log_path, args)
        self.daemons.append(daemon)
        with trio.fail_after(timeout):
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"daemon {name} exited {proc.returncode}: {log_path.read_text()[-2000:]}")
                try:
                    daemon.status = await daemon.get_status()
                    return daemon
                except icnd.Error:
                    await trio.sleep(0.05)

    async def restart(self, daemon: Daemon) -> Daemon:
        daemon.stop()
        self.daemons.remove(daemon)
        extra = daemon.args[daemon.args.index("--socket") + 2:]
        return await self.start(daemon.name, *[a for a in extra], listen=())

    def stop_all(self) -> None:
        for d in self.daemons:
            d.stop()


@pytest.fixture
async def daemons(tmp_path: Path):
    factory = DaemonFactory(tmp_path)
    try:
        yield factory
    finally:
        factory.stop_all()
