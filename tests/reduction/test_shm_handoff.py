"""A contribution handed to the node in sealed shared memory (issue #18,
`icnd.faces.shm`): the whole array in one memory file passed over the Unix
socket with one command; the node maps it read-only and serves views of it.

Against a real daemon: the result is right and nothing leaks on either
side; a client that dies right after handing over loses nothing; a bad
descriptor, size or layout is a clear 400 and a counter, never a crash; a
duplicate hand-over never counts twice; descriptors sent without a command
to take them are bounded and closed."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest
import trio

import icnd
from icnd.errors import CommandError
from icnd.faces import shm
from icnd.reduction.segment import SegmentMeta, segment_head
from icnd.testing.processes import Daemon, memfds, short_tempdir

pytestmark = pytest.mark.skipif(not shm.available(), reason="sealed memory files need Linux (memfd_create)")

MIB = 1 << 20


@pytest.fixture
def daemon():
    with short_tempdir() as workdir:
        d = Daemon(workdir, "--name", "/node/a", "--listen", "udp://127.0.0.1:0", "--group", "g=a", name="a")
        try:
            d.wait_ready()
            yield d
        finally:
            d.stop()


def open_fds(pid: int | str = "self") -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))




async def counters(client: icnd.Client) -> dict[str, int]:
    return (await client.status())["counters"]


async def test_a_large_contribution_travels_in_shared_memory_and_nothing_leaks(daemon) -> None:
    x = np.arange(3 * MIB // 4, dtype=np.float32)  # 3 MiB: 6 segments
    async with daemon.connect() as client:
        mine = open_fds()
        before = await counters(client)
        info = await client.contribute("g", 1, x, member="a")
        assert info["segments"] == 6 and info["added"] == 6
        after = await counters(client)
        assert after["contrib_shm"] == before["contrib_shm"] + 1
        assert open_fds() == mine  # the client closed its descriptor
        # the node closed the descriptor it received; the one mapping it keeps holds one of its own
        assert memfds() == 0
        assert memfds(daemon.proc.pid) == 1 == (await client.status())["tables"]["shm_mappings"]
        got = await client.reduce("g", 1, "sum", timeout=5)
        assert got.contributors == ["a"] and got.array.tobytes() == x.tobytes()


async def test_a_client_that_dies_after_handing_over_loses_nothing(daemon) -> None:
    script = textwrap.dedent(f"""
        import os, numpy as np, trio, icnd
        async def main():
            async with icnd.connect({daemon.socket!r}) as c:
                await c.contribute("g", 7, np.full(MIB, 3, dtype=np.int32), member="a")
            os._exit(0)
        MIB = {MIB}
        trio.run(main)
    """)
    proc = await trio.to_thread.run_sync(lambda: subprocess.run([sys.executable, "-c", script], timeout=30,
                                                                capture_output=True))
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    async with daemon.connect() as client:
        got = await client.reduce("g", 7, "sum", timeout=5)
        assert got.contributors == ["a"] and got.array.shape == (MIB,) and (got.array == 3).all()


def _segment_file(x: np.ndarray, seg_bytes: int, *, seal: bool) -> tuple[int, int, list[list[int]]]:
    """A memory file laid out as the client lays out a contribution."""
    flat = x.reshape(-1)
    per = seg_bytes // x.itemsize
    nseg = -(-flat.size // per)
    parts, spans, at = [], [], 0
    for s in range(nseg):
        part = segment_head(SegmentMeta(x.dtype.str, x.shape, nseg, s)) + flat[s * per:(s + 1) * per].tobytes()
        parts.append(part)
        spans.append([at, len(part)])
        at += len(part)
    blob = b"".join(parts)
    if seal:
        return shm.create_sealed(len(blob), lambda fd: shm.write_all(fd, [blob], 0)), len(blob), spans
    fd = os.memfd_create("unsealed", os.MFD_CLOEXEC)
    os.write(fd, blob)
    return fd, len(blob), spans


async def test_bad_descriptors_sizes_and_layouts_are_refused_with_a_counter(daemon) -> None:
    x = np.arange(MIB // 4, dtype=np.float32)  # 1 MiB, 2 segments of the default 512 KiB
    seg = 512 * 1024
    async with daemon.connect() as client:
        base = await counters(client)

        async def refused(fds: list[int], *, rnd: int = 1, **overrides) -> str:
            args = {"group": "g", "member": "a", "round": rnd, **overrides}
            try:
                with pytest.raises(CommandError) as info:
                    await client.command("reduce", "contribute-shm", fds=fds, timeout=5, **args)
            finally:
                for fd in fds:
                    os.close(fd)
            assert info.value.status == 400, info.value
            return str(info.value)

        fd, size, spans = _segment_file(x, seg, seal=False)
        assert "not sealed" in await refused([fd], size=size, segments=spans)
        with tempfile.TemporaryFile() as f:
            f.write(b"x" * 4096)
            f.flush()
            message = await refused([os.dup(f.fileno())], size=4096, segments=[[0, 4096]])
            assert "not sealed" in message or "memory file" in message
        fd, size, spans = _segment_file(x, seg, seal=True)
        assert "command says" in await refused([fd], size=size - 1, segments=[[0, size - 1]])
        fd, size, spans = _segment_file(x, seg, seal=True)  # spans must tile the whole file: all of it is held
        assert "tile the memory file" in await refused([fd], size=size, segments=[[0, 10]])
        fd, size, spans = _segment_file(x, seg, seal=True)
        huge = 2 << 40
        assert "outside" in await refused([fd], size=huge, segments=[[0, huge]])
        garbage = shm.create_sealed(seg, lambda fd: shm.write_all(fd, [b"\xff" * seg], 0))
        assert "header" in await refused([garbage], size=seg, segments=[[0, seg]])
        with pytest.raises(CommandError) as info:  # no descriptor at all
            await client.command("reduce", "contribute-shm", group="g", member="a", round=1, size=1,
                                 segments=[[0, 1]])
        assert info.value.status == 400 and "no shared-memory descriptor" in str(info.value)
        after = await counters(client)
        assert after["contrib_shm_refused"] - base["contrib_shm_refused"] == 7
        assert after["contrib_shm"] == base["contrib_shm"]
        # and the node is fine: a good hand-over still works
        fd, size, spans = _segment_file(x, seg, seal=True)
        try:
            result = await client.command("reduce", "contribute-shm", fds=[fd], group="g", member="a", round=2,
                                          size=size, segments=spans)
        finally:
            os.close(fd)
        assert result == {"added": 2, "version": 1}  # (the newest version of the group, for caching clients)


async def test_a_duplicate_hand_over_never_counts_twice(daemon) -> None:
    x = np.full(MIB // 4, 2.0, dtype=np.float32)
    async with daemon.connect() as client:
        assert (await client.contribute("g", 3, x, member="a"))["added"] == 2
        assert (await client.contribute("g", 3, x, member="a"))["added"] == 0  # the same again: no change
        with pytest.raises(CommandError) as info:  # different data for the same round: refused
            await client.contribute("g", 3, x + 1, member="a")
        assert info.value.status == 409
        got = await client.reduce("g", 3, "sum", timeout=5)
        assert got.contributors == ["a"] and (got.array == 2.0).all()


async def test_descriptors_no_command_takes_are_bounded_and_closed(daemon) -> None:
    async with daemon.connect() as client:
        for _ in range(5):  # 4 descriptors each with a command that takes none: 20 sent, 8 held at most
            fds = [shm.create_sealed(16, lambda fd: None) for _ in range(4)]
            try:
                await client.command("status", "get", fds=fds)
            finally:
                for fd in fds:
                    os.close(fd)
        assert memfds(daemon.proc.pid) == 8  # held, none mapped
        faces = await client.command("face", "list")
        mine = [f for f in faces if f["counters"].get("fds_received")]
        assert len(mine) == 1
        assert mine[0]["counters"]["fds_received"] == 8 and mine[0]["counters"]["fds_refused"] == 12
    with trio.fail_after(5):  # the client went away: its held descriptors were closed
        while memfds(daemon.proc.pid):
            await trio.sleep(0.05)


def test_a_sealed_memory_file_cannot_be_changed_or_written_through_its_view() -> None:
    fd = shm.create_sealed(4096, lambda fd: shm.write_all(fd, [b"abc"], 0))
    try:
        with pytest.raises(PermissionError):
            os.write(fd, b"zzz")
        with pytest.raises(PermissionError):
            mmap.mmap(fd, 4096)  # a writable shared mapping is refused by F_SEAL_WRITE
        with pytest.raises(PermissionError):
            os.ftruncate(fd, 1)
        view = shm.map_sealed(os.dup(fd), 4096, max_bytes=1 << 20)
        assert view.readonly and bytes(view[:3]) == b"abc"
        with pytest.raises(TypeError):
            view[0] = 1
    finally:
        os.close(fd)


async def test_allreduce_writes_into_a_reused_output_array(daemon) -> None:
    """``out=``, as an MPI receive buffer: the same memory every round, no fresh allocation."""
    buf = np.zeros(MIB // 4, dtype=np.float32)
    async with daemon.connect() as client:
        for rnd, value in ((11, 1.5), (12, 2.5)):
            got = await client.allreduce("g", rnd, np.full(MIB // 4, value, dtype=np.float32), member="a", out=buf)
            assert np.shares_memory(got, buf) and (buf == value).all()
        with pytest.raises(ValueError, match="out="):
            await client.allreduce("g", 13, np.ones(4, dtype=np.float32), member="a", out=np.zeros(5, np.float32))


async def test_concurrent_hand_overs_on_one_connection_never_swap_descriptors(daemon) -> None:
    """Each command takes the descriptor that came with it (taken as it arrives, not when its task
    happens to start): four equal-size contributions to four rounds, all at once on one client."""
    arrays = {rnd: np.full(MIB // 4, float(rnd), dtype=np.float32) for rnd in range(21, 25)}
    async with daemon.connect() as client:
        async with trio.open_nursery() as nursery:
            for rnd, x in arrays.items():
                nursery.start_soon(lambda r=rnd, a=x: client.contribute("g", r, a, member="a"))
        for rnd, x in arrays.items():
            got = await client.reduce("g", rnd, "sum", timeout=5)
            assert (got.array == float(rnd)).all(), rnd
        from icnd.reduction import consumer

        with pytest.raises(ValueError, match="mean"):  # out= is the aggregate's buffer, not the mean's
            await consumer.reduce(client, "g", 21, "mean", timeout=5, partial=False,
                                  out=np.empty(MIB // 4, np.float32))


async def test_a_bad_object_hand_over_closes_its_descriptor(daemon) -> None:
    async with daemon.connect() as client:
        for bad in ({"upload": "nope", "size": "x"}, {"size": 3}, {"upload": "nope", "size": 16}):
            fd = shm.create_sealed(16, lambda f: shm.write_all(f, [b"0123456789abcdef"], 0))
            try:
                with pytest.raises(CommandError):
                    await client.command("object", "append-shm", fds=[fd], **bad)
            finally:
                os.close(fd)
        assert memfds(daemon.proc.pid) == 0


async def test_a_group_of_4_mib_segments_goes_in_shared_memory_only(daemon, monkeypatch) -> None:
    """Segments up to 4 MiB (fewer, larger segments on stream links): such a
    contribution travels in shared memory; the command path, which carries
    one segment per Interest (at most 1 MiB of parameters), refuses it with a
    clear error before sending anything; a larger segment size is refused."""
    from icnd.reduction import consumer

    async with daemon.connect() as client:
        info = await client.create_group("big", ["a"], segment_bytes=4 * MIB)
        assert info["segment_bytes"] == 4 * MIB
        x = np.arange(10 * MIB // 4, dtype=np.float32)  # 10 MiB: 3 segments
        got = await client.allreduce("big", 1, x, timeout=20)
        assert got.tobytes() == x.tobytes()
        before = await counters(client)
        monkeypatch.setattr(consumer, "SHM_MIN", 1 << 40)  # as a client that cannot pass descriptors
        with pytest.raises(ValueError, match="shared memory"):
            await client.contribute("big", 2, x, timeout=5)
        small = np.arange(1000, dtype=np.float32)  # one segment of 4000 bytes: a command carries it
        assert (await client.contribute("big", 2, small, timeout=5))["added"] == 1
        assert (await counters(client))["contrib_refused"] == before["contrib_refused"]
        with pytest.raises((ValueError, CommandError)):
            await client.create_group("bigger", ["a"], segment_bytes=4 * MIB + 1)


def _sparse_sealed(size: int, heads: list[tuple[int, bytes]]) -> int:
    """A sealed memory file of `size` bytes in which only `heads` ([offset, bytes]) are written:
    the rest is holes, costing nothing until something reads or maps it populated."""
    def fill(fd: int) -> None:
        for at, b in heads:
            shm.write_all(fd, [b], at)

    return shm.create_sealed(size, fill)


def _layout(x_elems: int, seg_bytes: int) -> list[tuple[int, bytes, int]]:
    """[offset, header, length] of each segment of a float32 array of `x_elems`, as a client lays it out."""
    per = seg_bytes // 4
    nseg = -(-x_elems // per)
    out, at = [], 0
    for s in range(nseg):
        head = segment_head(SegmentMeta("<f4", (x_elems,), nseg, s))
        length = len(head) + 4 * min(per, x_elems - s * per)
        out.append((at, head, length))
        at += length
    return out


async def test_a_large_sparse_file_with_a_bad_layout_is_refused_before_it_is_mapped(daemon) -> None:
    """Issue 26 S1: a 256 MiB sparse sealed memory file with a bad layout was mapped with
    MAP_POPULATE -- every page of it allocated and zeroed by the node, 0.8 s on its event loop --
    before its first header was read.  Now every header is read first (a few bytes each) and the
    file is refused without the node touching the rest: it stays as sparse as the client made it."""
    async with daemon.connect() as client:
        base = await counters(client)
        tables = (await client.status())["tables"]

        async def refused(fd: int, size: int, spans: list[list[int]]) -> str:
            blocks = os.fstat(fd).st_blocks
            try:
                with pytest.raises(CommandError) as info:
                    await client.command("reduce", "contribute-shm", fds=[fd], timeout=10, group="g",
                                         member="a", round=1, size=size, segments=spans)
                assert os.fstat(fd).st_blocks == blocks  # nothing of the file was populated
            finally:
                os.close(fd)
            assert info.value.status == 400, info.value
            return str(info.value)

        size = 256 * MIB  # the whole file as one segment, no header at all
        assert "header" in await refused(_sparse_sealed(size, []), size, [[0, size]])
        # as a client lays out 252 MiB, every header right but the last one's, never written
        layout = _layout(63 * MIB, 512 * 1024)
        size = sum(length for _, _, length in layout)
        fd = _sparse_sealed(size, [(at, head) for at, head, _ in layout[:-1]])
        message = await refused(fd, size, [[at, length] for at, _, length in layout])
        assert f"segment {len(layout) - 1} " in message and "header" in message
        after = await counters(client)
        assert after["contrib_shm_refused"] - base["contrib_shm_refused"] == 2
        assert after["contrib_shm"] == base["contrib_shm"]
        assert (await client.status())["tables"]["contributions"] == tables["contributions"]  # none stored


async def test_a_sparse_file_with_a_good_layout_is_mapped_without_populating_its_holes(daemon) -> None:
    """A file whose headers are right but whose payload was never written (holes read as zeros) is
    a valid contribution, but populating it would allocate and zero all of it at once on the
    node's event loop: it is mapped lazily, its pages allocated only as they are read."""
    layout = _layout(8 * MIB, 512 * 1024)  # 32 MiB of float32, 64 segments
    size = sum(length for _, _, length in layout)
    fd = _sparse_sealed(size, [(at, head) for at, head, _ in layout])
    async with daemon.connect() as client:
        try:
            blocks = os.fstat(fd).st_blocks
            result = await client.command("reduce", "contribute-shm", fds=[fd], timeout=10, group="g", member="a",
                                          round=5, size=size, segments=[[at, length] for at, _, length in layout])
            assert result == {"added": len(layout), "version": 1}
            assert os.fstat(fd).st_blocks == blocks  # mapped, not populated
        finally:
            os.close(fd)
        got = await client.reduce("g", 5, "sum", timeout=10)
        assert got.contributors == ["a"] and got.array.shape == (8 * MIB,) and not got.array.any()


async def test_a_large_sparse_object_hand_over_for_no_upload_is_refused_before_it_is_mapped(daemon) -> None:
    """The same for ``object/append-shm``: the upload and the size are checked before the file is
    mapped, and the refusal is counted."""
    size = 256 * MIB
    fd = _sparse_sealed(size, [])
    async with daemon.connect() as client:
        before = (await counters(client))["object_shm_refused"]
        try:
            with pytest.raises(CommandError) as info:
                await client.command("object", "append-shm", fds=[fd], timeout=10, upload="nope", size=size)
            assert os.fstat(fd).st_blocks == 0
        finally:
            os.close(fd)
        assert info.value.status == 409 and "no upload 'nope'" in str(info.value)
        assert (await counters(client))["object_shm_refused"] == before + 1
        assert memfds(daemon.proc.pid) == 0
