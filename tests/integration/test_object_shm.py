"""`fetch_object` of an object the client's own node stores: handed over in a
sealed memory file (issue #18, ``object/read-shm``), every segment still
checked against the verified manifest; anything else, over the network."""

from __future__ import annotations

import os

import pytest
import trio

from icnd.errors import VerificationError
from icnd.faces import shm
from icnd.testing.processes import memfds, neighbours, short_tempdir

pytestmark = pytest.mark.skipif(not shm.available(), reason="sealed memory files need Linux (memfd_create)")

BLOB = os.urandom(3 * 1024 * 1024 + 12345)




@pytest.fixture
def pair():
    """Nodes a and b, neighbours over TCP on loopback (link-state routing)."""
    with short_tempdir() as workdir, \
            neighbours(workdir, transport="tcp", a=("--data-dir", os.path.join(workdir, "a"))) as both:
        yield both


async def shm_reads(client) -> int:
    return (await client.status())["counters"]["object_shm_reads"]


async def test_a_local_object_comes_in_shared_memory_a_remote_one_over_the_network(pair) -> None:
    a, b = pair
    async with a.connect() as ca, b.connect() as cb:
        await ca.publish_object("/node/a/blob", BLOB, segment_size=256 * 1024)
        await cb.publish_object("/node/b/blob", BLOB[::-1], segment_size=256 * 1024)
        before, mine = await shm_reads(ca), memfds()
        assert await ca.fetch_object("/node/a/blob") == BLOB
        assert await shm_reads(ca) == before + 1 and memfds() == mine
        buf = bytearray(b"old")
        assert await ca.fetch_object("/node/a/blob", out=buf) is buf and bytes(buf) == BLOB
        with trio.fail_after(10):  # b's object is not stored at a: fetched over the network
            while True:
                try:
                    got = await ca.fetch_object("/node/b/blob", timeout=2)
                    break
                except Exception:
                    await trio.sleep(0.2)  # routes still forming
        assert got == BLOB[::-1] and await shm_reads(ca) == before + 2


async def test_a_segment_changed_in_the_store_is_caught(pair) -> None:
    a, _ = pair
    async with a.connect() as ca:
        await ca.publish_object("/node/a/victim", BLOB, segment_size=256 * 1024)
        objects = os.path.join(a.args[a.args.index("--data-dir") + 1], "objects")
        (path,) = [os.path.join(objects, f) for f in os.listdir(objects) if not f.startswith("index")]
        with open(path, "r+b") as f:  # one byte of segment 5, behind the node's back
            f.seek(5 * 256 * 1024 + 17)
            byte = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([byte[0] ^ 1]))
        with pytest.raises(VerificationError, match="seg=5"):
            await ca.fetch_object("/node/a/victim")


async def test_publishing_hands_the_bytes_over_in_shared_memory_from_bytes_or_a_file(pair, tmp_path) -> None:
    a, b = pair
    path = tmp_path / "blob.bin"
    path.write_bytes(BLOB[::3])
    async with a.connect() as ca:
        before = (await ca.status())["counters"]["object_shm_appends"]
        await ca.publish_object("/node/a/from-bytes", BLOB, segment_size=300_000)
        await ca.publish_object("/node/a/from-file", str(path))
        small = b"s" * 1000  # below the threshold: commands, as before
        await ca.publish_object("/node/a/small", small)
        assert (await ca.status())["counters"]["object_shm_appends"] == before + 2
        assert memfds() == 0
    async with b.connect() as cb:  # fetched over the network from the other node: every segment checked
        with trio.fail_after(10):
            while True:
                try:
                    got = await cb.fetch_object("/node/a/from-file", timeout=2)
                    break
                except Exception:
                    await trio.sleep(0.2)
        assert got == BLOB[::3]
        assert await cb.fetch_object("/node/a/from-bytes") == BLOB
        assert await cb.fetch_object("/node/a/small") == small


def test_the_cli_says_when_an_object_came_in_shared_memory(pair, tmp_path) -> None:
    import json

    from icnd.testing.processes import run_cli

    a, _ = pair
    src, out = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(BLOB)
    assert run_cli("publish", "/node/a/cli", str(src), "--socket", a.socket).returncode == 0
    r = run_cli("fetch", "/node/a/cli", "-o", str(out), "--json", "--socket", a.socket)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["shared_memory"] is True and result["interests"] == 0 and out.read_bytes() == BLOB
