"""The README runs as written.

Its ```sh and ```python blocks are run in order, as a reader following it
would: the shell blocks in one bash session (so ``&`` daemons started in one
block are still there, as jobs, in the next), each Python block as a script,
all in a scratch directory.  Substituted, and nothing else: the example
ports 7001-7003 become free ones and ``/tmp/icnd-demo`` the scratch
directory (which links ``topologies/`` to the repository's, as the reader's
working directory has it).  Blocks fenced ```sh no-test (``make test``
itself, the virtual environment this test already runs in) are left out.
Any command failing fails the test, naming the block; every process it
started is ended at the end.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from icnd.testing.processes import free_ports, short_tempdir

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```\s*$", re.M | re.S)
SCRATCH = "/tmp/icnd-demo"  # the README's scratch directory
EXAMPLE_PORTS = ("7001", "7002", "7003")  # the README's UDP ports
BLOCK_TIMEOUT = 150.0  # seconds for one block (a topology starting on a loaded machine)
MARK = "__readme_block_done__"


def blocks(text: str) -> list[tuple[str, str, bool]]:
    """The README's sh and python blocks in order: (language, code, runs)."""
    found = []
    for lang, info, code in FENCE.findall(text):
        if lang in ("sh", "python"):
            found.append((lang, code, "no-test" not in info.split()))
    return found


def substitute(code: str, scratch: str, ports: dict[str, str]) -> str:
    code = code.replace(SCRATCH, scratch)
    for example, port in ports.items():
        code = re.sub(rf"(?<=127\.0\.0\.1:){example}\b", port, code)
    return code


def test_the_blocks_are_found_and_the_convention_holds() -> None:
    found = blocks(README.read_text())
    assert [lang for lang, _, runs in found if runs].count("python") >= 4
    skipped = [code for _, code, runs in found if not runs]
    assert 1 <= len(skipped) <= 3 and any("make test" in code for code in skipped)
    ran = "\n".join(code for _, code, runs in found if runs)
    for needed in ("status --wait", "fetch_object", "icnd.sync", "icnd.aio", "allreduce", "topo down"):
        assert needed in ran, needed
    assert substitute("udp://127.0.0.1:7001 /tmp/icnd-demo/a.sock", "/x", {"7001": "9"}) == "udp://127.0.0.1:9 /x/a.sock"


class Shell:
    """One bash session (``set -e``) fed block by block; its output read by a thread."""

    def __init__(self, cwd: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=cwd, env=env,
                                     text=True, start_new_session=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.output: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._send("set -e\n")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _send(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text)
        self.proc.stdin.flush()

    def run(self, code: str, n: int, timeout: float) -> str:
        """Run `code`; its output.  Fails if a command fails (the shell exits) or `timeout` passes."""
        start = len(self.output)
        self._send(f"{code}\necho {MARK}{n}\n")
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"README sh block {n} did not finish within {timeout:g}s:\n{code}\n--- output:\n"
                            + "".join(self.output[start:]))
            if line is None:
                pytest.fail(f"README sh block {n} failed (exit {self.proc.wait()}):\n{code}\n--- output:\n"
                            + "".join(self.output[start:]))
            if line.strip() == f"{MARK}{n}":
                return "".join(self.output[start:])
            self.output.append(line)

    def close(self) -> None:
        """End the shell and every process of its group (its ``&`` jobs)."""
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._reader.join(5)  # it ends at the output's end: closing the pipe under it would fail its read
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


def processes_naming(path: str) -> list[int]:
    """Pids of this user's processes whose command line names `path` (what the README started there)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if path in cmdline:
            pids.append(int(entry))
    return pids


def end_all(path: str) -> None:
    """SIGTERM (then SIGKILL) whatever still runs naming `path`: daemons of a topology left up."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = processes_naming(path)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5
        while processes_naming(path) and time.monotonic() < deadline:
            time.sleep(0.1)


def run_blocks(doc: Path, scratch: str, env: dict[str, str],
               transform: Callable[[str], str] = lambda code: code) -> dict[str, str]:
    """Run `doc`'s runnable blocks in order in `scratch`: ```sh blocks in one bash session, each
    ```python block as a script; every block must succeed.  Returns each Python block's stdout by code."""
    shell = Shell(scratch, env)
    outputs: dict[str, str] = {}
    try:
        for n, (lang, code, runs) in enumerate(blocks(doc.read_text())):
            if not runs:
                continue
            code = transform(code)
            if lang == "sh":
                shell.run(code, n, BLOCK_TIMEOUT)
                continue
            script = Path(scratch) / f"block{n}.py"
            script.write_text(code)
            try:
                result = subprocess.run([sys.executable, str(script)], cwd=scratch, env=env,
                                        capture_output=True, text=True, timeout=BLOCK_TIMEOUT)
            except subprocess.TimeoutExpired:
                pytest.fail(f"{doc.name} python block {n} did not finish within {BLOCK_TIMEOUT:g}s:\n{code}")
            assert result.returncode == 0, \
                f"{doc.name} python block {n} failed:\n{code}\n--- output:\n{result.stdout}{result.stderr}"
            outputs[code] = result.stdout
    finally:
        shell.close()
        end_all(scratch)
    return outputs


def test_the_readme_runs_as_written() -> None:
    with short_tempdir("icnd-readme-") as scratch:
        ports = dict(zip(EXAMPLE_PORTS, map(str, free_ports(len(EXAMPLE_PORTS)))))
        os.symlink(ROOT / "topologies", Path(scratch) / "topologies")
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               "PYTHONUNBUFFERED": "1"}
        env.pop("ICND_SOCKET", None)
        run_blocks(README, scratch, env, lambda code: substitute(code, scratch, ports))
        assert not processes_naming(scratch)
