"""`make demo` installs only what the demo needs, quietly (issue #19): the package
itself, not the test extras, under its own stamp (checked with ``make -n -B``,
which prints the recipe without running it)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_installs_the_package_alone_and_quietly() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}  # (under make test)
    recipe = subprocess.run(["make", "--no-print-directory", "-n", "-B", "demo"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=30)
    assert recipe.returncode == 0, recipe.stderr
    installs = [line for line in recipe.stdout.splitlines() if "pip install" in line and " -e " in line]
    assert installs and all("--quiet" in line for line in installs)
    assert not any("[test" in line or "[bench" in line for line in installs), installs
    assert recipe.stdout.rstrip().endswith("-m icnd.demo")
    # the flat layout is declared, so an editable install prints no setuptools warning about it
    assert 'package-dir = {"" = "."}' in (ROOT / "pyproject.toml").read_text()
