"""The status page in a real browser (issue 19, acceptance): headless Chromium loads the
page of a two-node network; the DOM it built shows the node, its faces and its routes,
and a screenshot is saved under the test's tmp dir.

Debian's ``chromium``: ``make test`` installs it when run as root; elsewhere the test
is skipped with that reason.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import trio

from tests.integration.status_net import two_nodes

CHROMIUM = "/usr/bin/chromium"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def chromium(binary: str, tmp_path: Path, profile: str, *args: str) -> subprocess.CompletedProcess[str]:
    """One headless Chromium run with a new, empty profile; 60 s at most."""
    user_data = tmp_path / profile
    user_data.mkdir()
    return subprocess.run([binary, *FLAGS, f"--user-data-dir={user_data}", *args],
                          capture_output=True, text=True, timeout=60)


async def test_status_page_in_chromium(tmp_path: Path) -> None:
    binary = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    if binary is None:
        pytest.skip(f"chromium not installed (make test installs it as root): no {CHROMIUM}, none on PATH")
    a, b = await two_nodes(tmp_path, "127.0.0.1:0")
    try:
        status = await a.get_status()
        url = status["http"]
        async with a.connect() as client:
            # the network's faces (this client's own local face is gone by the time the page loads)
            faces = [face for face in await client.command("face", "list") if not face["local"]]
        assert faces
        dom = await trio.to_thread.run_sync(lambda: chromium(binary, tmp_path, "dom", "--dump-dom", url))
        assert dom.returncode == 0, dom.stderr[-2000:]
        html = dom.stdout
        assert '<h1 id="node-name">/node/a</h1>' in html
        assert f'id="node-version">{status["version"]}<' in html
        assert 'id="faces"' in html and 'id="routes"' in html and 'id="neighbors"' in html
        for face in faces:
            assert f'id="face-{face["id"]}"' in html
            assert f'<td class="mono face-uri">{face["remote_uri"]}</td>' in html
        for prefix in ("/node/a", "/node/b"):
            assert f'<td class="mono route-prefix">{prefix}</td>' in html
        assert 'id="traffic-plot"' in html

        png = tmp_path / "status.png"
        shot = await trio.to_thread.run_sync(
            lambda: chromium(binary, tmp_path, "shot", f"--screenshot={png}", "--window-size=1200,1600", url))
        assert shot.returncode == 0, shot.stderr[-2000:]
        image = png.read_bytes()
        assert image.startswith(PNG_MAGIC) and len(image) > 20_000  # a rendered page, not a blank one
        width, height = int.from_bytes(image[16:20], "big"), int.from_bytes(image[20:24], "big")
        assert (width, height) == (1200, 1600)
    finally:
        a.stop()
        b.stop()
