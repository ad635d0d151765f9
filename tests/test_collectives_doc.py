"""docs/collectives.md runs as written: its node and its three-rank job
(run as `test_functions_doc` runs docs/functions.md, with a scratch
``ICND_SOCKET``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from test_readme import ROOT, blocks, run_blocks

from icnd.testing.processes import short_tempdir

COLLECTIVES_MD = ROOT / "docs" / "collectives.md"


def test_collectives_md_runs_as_written() -> None:
    found = [code for lang, code, runs in blocks(COLLECTIVES_MD.read_text()) if runs and lang == "python"]
    assert any("c.communicator(" in code for code in found)
    with short_tempdir("icnd-colldoc-") as scratch:
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               "PYTHONUNBUFFERED": "1", "ICND_SOCKET": os.path.join(scratch, "icnd.sock")}
        outputs = run_blocks(COLLECTIVES_MD, scratch, env)
        job = [out for code, out in outputs.items() if "c.communicator(" in code]
        lines = job[0].strip().splitlines()
        assert lines[:3] == ["[0.0, 6.0, 12.0, 18.0] {'lr': 0.1} [0, 10, 20]"] * 3, lines
        assert lines[3] == "[ 0.  6. 12. 18.]", lines
