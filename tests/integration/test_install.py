"""What ``pip install .`` gives (issue #27, item 9): docs/deployment.md's install step, as written,
and the example functions every doc names (``--function apps.functions:...``) importable by a
daemon that runs from the installed packages alone, not from the checkout."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import warnings
from pathlib import Path

from icnd.testing.processes import short_tempdir, stop_process

ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT = 20.0


def test_the_deployment_install_step_installs_this_repository() -> None:
    text = (ROOT / "docs/deployment.md").read_text()
    section = text[text.index("## 1. Install"):text.index("## 2.")]
    targets = re.findall(r"pip install (\S+)", section)
    assert targets, section
    for target in targets:  # run from the repository's root, as the step says
        assert (ROOT / target / "pyproject.toml").is_file(), f"'pip install {target}' does not name the repository"


def _shipped_packages() -> list[str]:
    """The packages a build of this repository ships, as setuptools reads them from pyproject.toml."""
    from setuptools.config.pyprojecttoml import read_configuration

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "[tool.setuptools] is beta", and the license form this setuptools predates
        config = read_configuration(ROOT / "pyproject.toml", expand=True, ignore_option_errors=True)
    packages: list[str] = config["tool"]["setuptools"]["packages"]
    return packages


def _install(site: Path) -> None:
    """The shipped packages' files into `site`, as a wheel lays them out."""
    for package in _shipped_packages():
        source = ROOT / package.replace(".", "/")
        target = site / package.replace(".", "/")
        target.mkdir(parents=True, exist_ok=True)
        for item in source.iterdir():
            if item.is_file() and item.suffix != ".pyc":
                shutil.copy(item, target / item.name)


def test_an_installed_node_hosts_the_example_functions_and_answers_calls() -> None:
    with short_tempdir() as workdir:
        site, cwd = Path(workdir, "site"), Path(workdir, "elsewhere")
        site.mkdir()
        cwd.mkdir()
        _install(site)
        # -S: no .pth files, so the checkout's editable install is not on the path; the dependencies
        # come from this environment's site-packages, the installed icnd and apps from `site` alone
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), sysconfig.get_paths()["purelib"]]),
               "PYTHONUNBUFFERED": "1"}
        python = [sys.executable, "-S"]
        where = subprocess.run([*python, "-c", "import icnd; print(icnd.__file__)"], env=env, cwd=cwd,
                               capture_output=True, timeout=30)
        assert where.stdout.decode().startswith(str(site)), where
        sock = Path(workdir, "n.sock")
        with open(Path(workdir, "n.out"), "wb") as out, open(Path(workdir, "n.log"), "wb") as err:
            daemon = subprocess.Popen([*python, "-m", "icnd", "run", "--socket", str(sock), "--name", "/node/w",
                                       "--listen", "udp://127.0.0.1:0", "--function", "apps.functions:add=/fn/add"],
                                      env=env, cwd=cwd, stdout=out, stderr=err)
        try:
            deadline = time.monotonic() + READY_TIMEOUT
            while b"ready" not in Path(workdir, "n.out").read_bytes():
                log = Path(workdir, "n.log").read_text()
                assert daemon.poll() is None, f"the installed daemon exited: {log}"
                assert time.monotonic() < deadline, f"not ready: {log}"
                time.sleep(0.05)
            call = subprocess.run([*python, "-m", "icnd", "call", "/fn/add", "2", "3", "--socket", str(sock)],
                                  env=env, cwd=cwd, capture_output=True, timeout=30)
            assert call.returncode == 0, call.stderr.decode()
            assert call.stdout.decode().strip() == "5"
        finally:
            stop_process(daemon)
