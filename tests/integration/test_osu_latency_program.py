"""bench/osu_latency.py, the OSU-style latency program (issue #29, "Measured"), run
unchanged on icnd: ``icnd exec`` starts it on a real node with ``icnd.mpi`` as its
MPI, every row's last result checked against numpy by the program itself; and its
``--side-by-side`` view of two runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
PROGRAM = BENCH / "osu_latency.py"


def test_runs_unchanged_under_icnd_exec(node_socket: str) -> None:
    argv = [sys.executable, "-m", "icnd", "exec", "-n", "3", "--socket", node_socket, "--timeout", "20", "--",
            sys.executable, str(PROGRAM), "--json", "-m", "64", "-i", "3", "-x", "1"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert {(r["op"], r["bytes"]) for r in rows} == {
        ("allreduce", 4), ("allreduce", 16), ("allreduce", 64),  # float32: from 4 bytes
        ("bcast", 1), ("bcast", 4), ("bcast", 16), ("bcast", 64),
        ("allgather", 1), ("allgather", 4), ("allgather", 16), ("allgather", 64),
        ("barrier", 0)}
    for r in rows:
        assert r["impl"] == "icnd.mpi" and r["ranks"] == 3 and r["ok"] is True and r["iterations"] == 3
        assert 0 < r["min_us"] <= r["avg_us"] <= r["max_us"]


def test_side_by_side(tmp_path: Path) -> None:
    def row(impl: str, op: str, nbytes: int, avg: float) -> str:
        return json.dumps({"bench": "osu_latency", "impl": impl, "op": op, "bytes": nbytes, "ranks": 8,
                           "avg_us": avg, "min_us": avg, "max_us": avg, "iterations": 5, "ok": True})

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("\n".join([row("icnd.mpi", "bcast", 1024, 3000.0), row("icnd.mpi", "barrier", 0, 5000.0)]) + "\n")
    b.write_text("noise from mpirun\n" + "\n".join([row("mpi4py 4.1.2", "bcast", 1024, 100.0)]) + "\n")
    done = subprocess.run([sys.executable, str(PROGRAM), "--side-by-side", str(a), str(b)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "| size | icnd.mpi | mpi4py 4.1.2 | icnd.mpi / mpi4py 4.1.2 |" in done.stdout
    assert "| 1 KiB | 3000.0 | 100.0 | 30.0 |" in done.stdout
    assert "| - | 5000.0 | - | - |" in done.stdout  # a row only one side has: no invented figure
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    done = subprocess.run([sys.executable, str(PROGRAM), "--side-by-side", str(a), str(empty)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "no osu_latency lines" in done.stderr
