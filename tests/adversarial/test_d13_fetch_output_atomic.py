"""D13: `icnd fetch -o FILE` that times out midway must not leave a partial file.

The attack: an object whose segments stop arriving (a silent or hostile
producer).  Before the fix, `fetch_object(out=path)` created the final name at
once, truncated it to the object's full size and filled it as segments came:
a timeout left a full-size, partly unfilled file under the final name.  Now it
writes a temporary file in the same directory and renames it on success only.
"""

from __future__ import annotations

import hashlib
import types
import os
from pathlib import Path

import pytest
import trio

from icnd import Name
from icnd.errors import Timeout
from icnd.objects import fetch as fetch_mod
from icnd.objects.manifest import Manifest
from icnd.name import version

SEG = 4096
_NO_SHM = types.SimpleNamespace(passes_fds=lambda: False)  # an endpoint without shared memory
BLOB = bytes(range(256)) * 64  # 16 KiB: 4 segments


def _manifest() -> Manifest:
    digests = b"".join(hashlib.sha256(BLOB[i:i + SEG]).digest() for i in range(0, len(BLOB), SEG))
    return Manifest(Name("/p/obj"), 1, len(BLOB), SEG, digests)


def _patch(monkeypatch: pytest.MonkeyPatch, *, complete: bool) -> None:
    async def fake_manifest(ep, name, **kw):  # type: ignore[no-untyped-def]
        return _manifest()

    async def fake_fetch_into(ep, manifest, sink, progress, stats=None, deadline=None):  # type: ignore[no-untyped-def]
        sink.write(0, BLOB[:SEG])  # the first segment arrives ...
        if complete:
            for off in range(SEG, len(BLOB), SEG):
                sink.write(off, BLOB[off:off + SEG])
            return
        await trio.sleep_forever()  # ... the rest never does

    monkeypatch.setattr(fetch_mod, "fetch_manifest", fake_manifest)
    monkeypatch.setattr(fetch_mod, "_fetch_into", fake_fetch_into)


def _name() -> Name:
    return Name("/p/obj").append_wire(version(1))  # versioned: no discovery step


async def test_timeout_midway_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _patch(monkeypatch, complete=False)
    out = tmp_path / "obj.bin"
    with pytest.raises(Timeout):
        await fetch_mod.fetch_object(_NO_SHM, _name(), timeout=0.3, out=out)  # type: ignore[arg-type]
    assert not out.exists(), "a partial file was left under the final name"
    assert os.listdir(tmp_path) == [], "the temporary file was not removed"


async def test_timeout_midway_keeps_an_existing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _patch(monkeypatch, complete=False)
    out = tmp_path / "obj.bin"
    out.write_bytes(b"previous contents")
    with pytest.raises(Timeout):
        await fetch_mod.fetch_object(_NO_SHM, _name(), timeout=0.3, out=out)  # type: ignore[arg-type]
    assert out.read_bytes() == b"previous contents"
    assert os.listdir(tmp_path) == ["obj.bin"]


async def test_success_writes_the_whole_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _patch(monkeypatch, complete=True)
    out = tmp_path / "obj.bin"
    out.write_bytes(b"old")
    os.chmod(out, 0o640)
    assert await fetch_mod.fetch_object(_NO_SHM, _name(), timeout=5, out=out) == b""  # type: ignore[arg-type]
    assert out.read_bytes() == BLOB
    assert out.stat().st_mode & 0o777 == 0o640  # the replaced file keeps its mode
    assert os.listdir(tmp_path) == ["obj.bin"]
