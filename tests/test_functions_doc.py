"""docs/functions.md runs as written (issue 27: its first hosting example did not).

Its ```sh and ```python blocks run in order, as `test_readme` runs the
README's (and with its machinery): the shell blocks in one bash session
(the node its first block starts with ``&`` stays up for the others), each
Python block as a script, in a scratch directory.  One thing is set around
them, not in them: ``ICND_SOCKET``, so that the page's default socket is a
scratch one (the page's commands and clients all resolve it the same way).
Every process the blocks started is ended at the end."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from test_readme import ROOT, blocks, run_blocks

from icnd.testing.processes import short_tempdir

FUNCTIONS_MD = ROOT / "docs" / "functions.md"


def test_the_blocks_are_found() -> None:
    found = [(lang, code) for lang, code, runs in blocks(FUNCTIONS_MD.read_text()) if runs]
    assert [lang for lang, _ in found].count("python") >= 2
    ran = "\n".join(code for _, code in found)
    for needed in ("icnd run", "c.host(", "icnd.connect()", 'call("/fn/slow"', "icnd call"):
        assert needed in ran, needed


def test_functions_md_runs_as_written() -> None:
    with short_tempdir("icnd-fndoc-") as scratch:
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               "PYTHONUNBUFFERED": "1", "ICND_SOCKET": os.path.join(scratch, "icnd.sock")}
        outputs = run_blocks(FUNCTIONS_MD, scratch, env)
        hosting = [out for code, out in outputs.items() if 'c.host({"/fn/double": double})' in code]
        assert hosting and hosting[0].split() == ["42"], hosting
