"""`make docs` renders the API reference: pdoc on the Makefile's API_MODULES, with its
API_TEMPLATE, with no warning; the index is the map of the public API."""

from __future__ import annotations

import posixpath
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def make_variable(name: str) -> str:
    """A variable as the Makefile sets it (continuation lines joined)."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    match = re.search(rf"^{name}\s*:=\s*(.+)$", text, re.M)
    assert match, f"the Makefile has no {name}"
    return match.group(1).strip()


def api_modules() -> list[str]:
    return make_variable("API_MODULES").split()


def render(output: Path) -> None:
    """What `make docs` does, into `output`."""
    import pdoc
    import pdoc.render

    pdoc.render.configure(template_directory=ROOT / make_variable("API_TEMPLATE"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # pdoc warns (e.g. a module that fails to import) rather than raising
            pdoc.pdoc(*api_modules(), output_directory=output)
    finally:
        pdoc.render.configure()  # pdoc's defaults again


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The API reference, rendered once for this module's tests."""
    out = tmp_path_factory.mktemp("api")
    render(out)
    return out


def page_of(module: str) -> str:
    return module.replace(".", "/") + ".html"


def class_members(html: str, cls: str) -> list[str]:
    """The members of `cls` a page shows, in its order."""
    return re.findall(rf'<div id="{cls}\.(\w+)" class="classattr"', html)


def test_the_api_reference_renders_every_module_without_a_warning(api: Path) -> None:
    modules = api_modules()
    assert {"icnd", "icnd.client"} <= set(modules)  # (icnd documents its submodules sync and aio)
    assert (api / "index.html").exists()
    for module in modules:
        assert (api / page_of(module)).exists(), module
    sync = (api / "icnd" / "sync.html").read_text()
    for method in ("host", "serve", "fetch_object", "publish"):  # the facades list the client's methods
        assert f'id="SyncClient.{method}"' in sync, method
    assert 'id="AsyncClient.host"' in (api / "icnd" / "aio.html").read_text()


def test_the_index_maps_the_public_api_and_the_client_page_starts_with_what_people_use(api: Path) -> None:
    """Issue 27 item 14: the index linked only to `sync` and `aio`, and the `Client` page listed
    its attributes and plumbing (`face`, `socket_path`, `on_receive`, `send`, `express`) before
    `fetch`, `call` and `allreduce`."""
    index = (api / "index.html").read_text()
    redirect = re.search(r'http-equiv="refresh" content="0; url=\./([^"]+)"', index)
    start = redirect.group(1) if redirect else "index.html"  # pdoc's index: the root package's page
    html = (api / start).read_text()
    body = html[html.find("<main"):]  # the page, not its sidebar
    here = posixpath.dirname(start)
    linked = {posixpath.normpath(posixpath.join(here, href)) for href in re.findall(r'href="([^"#]+\.html)', body)}
    missing = [m for m in api_modules() if page_of(m) != start and page_of(m) not in linked]
    assert not missing, f"the index ({start}) does not link {missing}"

    client = (api / "icnd" / "client.html").read_text()
    members = class_members(client, "Client")
    for plumbing in ("on_receive", "send", "express", "passes_fds", "command_fd"):
        assert plumbing not in members, plumbing
    used_first = [members.index(m) for m in ("fetch", "call", "allreduce", "publish", "serve")]
    attributes = [members.index(a) for a in ("face", "socket_path", "key", "counters") if a in members]
    assert attributes and max(used_first) < min(attributes), members
    assert members[:2] == ["__init__", "fetch"], members
    nav = client[client.find("<nav"):client.find("</nav>")]
    assert re.findall(r'href="#Client\.(\w+)"', nav) == members  # the sidebar: the same order
    # the class's own docstring names the methods by task, linked
    assert '<a href="#Client.allreduce">allreduce</a>' in client.split('id="Client.__init__"')[0]
