"""`make docs` renders the API reference: pdoc on the Makefile's API_MODULES, with no warning."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def api_modules() -> list[str]:
    """API_MODULES as the Makefile lists them (continuation lines joined)."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    match = re.search(r"^API_MODULES\s*:=\s*(.+)$", text, re.M)
    assert match, "the Makefile has no API_MODULES"
    return match.group(1).split()


def test_the_api_reference_renders_every_module_without_a_warning(tmp_path: Path) -> None:
    import pdoc

    modules = api_modules()
    assert {"icnd", "icnd.client"} <= set(modules)  # (icnd documents its submodules sync and aio)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pdoc warns (e.g. a module that fails to import) rather than raising
        pdoc.pdoc(*modules, output_directory=tmp_path)
    assert (tmp_path / "index.html").exists()
    for module in modules:
        assert (tmp_path / (module.replace(".", "/") + ".html")).exists(), module
    sync = (tmp_path / "icnd" / "sync.html").read_text()
    for method in ("host", "serve", "fetch_object", "publish"):  # the facades list the client's methods
        assert f'id="SyncClient.{method}"' in sync, method
    assert 'id="AsyncClient.host"' in (tmp_path / "icnd" / "aio.html").read_text()
