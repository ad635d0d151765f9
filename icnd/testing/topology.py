"""``icnd topo up`` in the background, for tests of the launcher and of ``icnd topo down``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio

from icnd.topology.state import STATE_FILE, LaunchError

_CLI = "import sys; from icnd.cli import main; sys.exit(main(sys.argv[1:]))"


async def start_background(
    topology: str | os.PathLike[str],
    workdir: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    netns: bool = False,
    prelude: str = "",
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 20.0,
) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    """Run ``icnd topo up TOPOLOGY --workdir WORKDIR [--netns]`` in a child process
    (stdout and stderr into the file `out`) and return it with its state
    (``topology.json``) once that says ready.

    `prelude` is Python the child runs first (e.g. to pretend not to be
    root).  The caller owns the process: stop it (``topo_down``, a signal)
    and reap it.  `LaunchError`, with the child's output, if it exits first
    or is not ready within `timeout` seconds (then it is killed here)."""
    argv = ["topo", "up", os.fspath(topology), "--workdir", os.fspath(workdir)] + (["--netns"] if netns else [])
    script = f"{prelude}; {_CLI}" if prelude else _CLI
    with open(out, "wb") as f:
        proc = subprocess.Popen([sys.executable, "-c", script, *argv], stdout=f, stderr=subprocess.STDOUT, cwd=cwd)
    state_file = Path(workdir, STATE_FILE)
    with trio.move_on_after(timeout):
        while proc.poll() is None:
            try:
                state = json.loads(state_file.read_text())
            except (OSError, ValueError):
                state = {}
            if state.get("ready"):
                return proc, state
            await trio.sleep(0.05)
    if proc.poll() is None:
        problem = f"not ready within {timeout:g}s"
        proc.kill()  # its daemons get SIGTERM from the kernel (the launcher's PR_SET_PDEATHSIG)
        proc.wait()
    else:
        problem = f"exited with {proc.returncode}"
    raise LaunchError(f"icnd topo up {os.fspath(topology)}: {problem}: {Path(out).read_text(errors='replace')}")
