"""What a rank is handed in shared memory (`reduce/fetch-shm`, issue #30): a
view no process can write through to the others, that outlives the node's
copy (lifetime), and a rank that dies holding it costs the node nothing."""

from __future__ import annotations

import mmap
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import trio

from icnd.daemon.mgmt import results
from icnd.faces import shm
from tests.daemon.test_result_handover import LOCAL, FakeReduce, _client, args, read

pytestmark = pytest.mark.skipif(not shm.available(), reason="sealed memory files need Linux (memfd_create)")


async def handed(monkeypatch: pytest.MonkeyPatch, ttl: float = 10.0) -> tuple[results.ResultHandOver, int, dict]:
    monkeypatch.setattr(results, "reduce", FakeReduce(delay=0.01))
    handover = results.ResultHandOver(_client, ttl=ttl)
    reply = await handover.fetch_shm(LOCAL, args())
    return handover, reply.fds[0], reply.result


async def test_never_a_writable_view(monkeypatch, autojump_clock) -> None:
    handover, fd, info = await handed(monkeypatch)
    size = info["size"]
    try:
        with pytest.raises(PermissionError):  # sealed against writes: no shared writable mapping...
            mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        with pytest.raises(PermissionError):  # ... no write through the descriptor...
            os.pwrite(fd, b"x", 0)
        with pytest.raises(PermissionError):  # ... and no resizing
            os.ftruncate(fd, size // 2)
        mine = shm.map_private(os.dup(fd), size)  # what a rank maps: copy-on-write
        view = np.frombuffer(mine, dtype=np.float64)
        view[:] = -1.0  # the rank's own pages change...
        again = (await handover.fetch_shm(LOCAL, args()))
        np.testing.assert_array_equal(read(again), np.arange(1000.0) + 1)  # ...never anyone else's
        del view
        mine.close()
    finally:
        os.close(fd)
        handover.close()


async def test_a_mapping_outlives_the_nodes_copy(monkeypatch, autojump_clock) -> None:
    handover, fd, info = await handed(monkeypatch, ttl=2.0)
    mine = shm.map_private(fd, info["size"])
    await trio.sleep(3)  # past the ttl: the node closed its copy
    assert handover.tables() == {"result_shm_files": 0, "result_shm_bytes": 0}
    np.testing.assert_array_equal(np.frombuffer(mine, dtype=np.float64), np.arange(1000.0) + 1)
    mine.close()
    handover.close()


async def test_a_rank_that_dies_holding_the_mapping_costs_the_node_nothing(monkeypatch, autojump_clock) -> None:
    handover, fd, info = await handed(monkeypatch, ttl=2.0)
    rank = subprocess.Popen(  # maps the file, says so, then waits to be killed
        [sys.executable, "-c", "import mmap, sys, time; fd = int(sys.argv[1]); "
         "m = mmap.mmap(fd, int(sys.argv[2]), flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ); "
         "print(m[:8].hex(), flush=True); time.sleep(60)", str(fd), str(info["size"])],
        pass_fds=[fd], stdout=subprocess.PIPE, text=True)
    try:
        assert rank.stdout is not None
        first = np.frombuffer(bytes.fromhex(rank.stdout.readline().strip()), dtype=np.float64)
        assert first[0] == 1.0  # it read the aggregate
        os.close(fd)
        rank.send_signal(signal.SIGKILL)
        assert rank.wait(timeout=10) == -signal.SIGKILL
        # the node serves the others as before, then closes its copy on time
        np.testing.assert_array_equal(read(await handover.fetch_shm(LOCAL, args())), np.arange(1000.0) + 1)
        await trio.sleep(3)
        assert handover.tables() == {"result_shm_files": 0, "result_shm_bytes": 0}
        assert handover.counters["result_shm_refused"] == 0
    finally:
        if rank.poll() is None:
            rank.kill()
            rank.wait()
        handover.close()
