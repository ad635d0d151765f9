"""bench/collectives.py (issue #29, "Measured"): which cases a run selects, that every
result is checked against numpy's answer (a wrong one fails), that a JSON line never
carries a baseline that was not measured, the issue's targets, and one real (small)
run against a launched node.  The full matrix runs by hand (minutes, 12 daemons)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

import numpy as np
import pytest

from tests.bench._load import BENCH, bench_module
KiB, MiB = 1 << 10, 1 << 20


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    """bench/collectives.py as a module; it puts bench/ on sys.path for _common and reduce, undone after."""
    with bench_module("collectives.py", helpers=("reduce", "_common")) as module:
        yield module


def test_full_run_is_the_issues_matrix(bench: ModuleType) -> None:
    opts = bench.parse_args([])
    assert opts.placements == ["one-node", "tree"] and opts.reps == 5
    names = [bench.case_name(op, b, "tree") for op, b in opts.cases]
    assert len(names) == 16 and "barrier-0B-8-tree" in names
    for op in ("bcast", "allgather", "alltoall", "reduce_scatter", "allreduce"):
        for size in ("1KiB", "1MiB", "16MiB"):
            assert f"{op}-{size}-8-tree" in names
    quick = bench.parse_args(["--quick"])
    assert quick.reps == 3 and len(quick.cases) == 11 and (("bcast", 16 * MiB) not in quick.cases)


def test_cases_and_placements_select(bench: ModuleType) -> None:
    opts = bench.parse_args(["--cases", "allreduce,bcast-16MiB,barrier", "--placements", "tree"])
    assert opts.cases == [("bcast", 16 * MiB), ("allreduce", KiB), ("allreduce", MiB), ("allreduce", 16 * MiB),
                          ("barrier", 0)]
    assert opts.placements == ["tree"]
    assert bench.parse_args(["--cases", "barrier-0B"]).cases == [("barrier", 0)]


@pytest.mark.parametrize("argv, message", [
    (["--cases", "allreduse"], "no case matches"),
    (["--placements", "two-nodes"], "--placements"),
    (["--reps", "2"], "at least 3"),
    (["--sizes", "1000"], "multiples of 32"),
])
def test_bad_options_are_usage_errors(bench: ModuleType, capsys: pytest.CaptureFixture[str],
                                      argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exc:
        bench.parse_args(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def numpy_answer(op: str, inputs: list[Any], rank: int, n: int) -> Any:
    """What rank `rank` must get, computed here independently of the bench's Payload."""
    if op == "allreduce":
        return np.sum(inputs, axis=0, dtype=np.float32)
    if op == "reduce_scatter":
        return np.array_split(np.sum(inputs, axis=0, dtype=np.float32), n)[rank]
    if op == "bcast":
        return inputs[0]
    if op == "allgather":
        return list(inputs)
    return [inputs[j][rank] for j in range(n)]  # alltoall: what each rank j sent to `rank`


@pytest.mark.parametrize("op", ["allreduce", "reduce_scatter", "bcast", "allgather", "alltoall"])
def test_payload_accepts_numpys_answer_and_nothing_else(bench: ModuleType, op: str) -> None:
    n = 8
    p = bench.Payload(op, KiB, n)
    for r in range(n):
        right = numpy_answer(op, p.inputs, r, n)
        p.check(r, right, "right")
        if isinstance(right, list):
            with pytest.raises(bench.R.CheckFailed):  # two ranks' blocks swapped
                p.check(r, [right[1], right[0], *right[2:]], "swapped")
            with pytest.raises(bench.R.CheckFailed):  # one block missing
                p.check(r, right[:-1], "short")
        else:
            wrong = right.copy()
            wrong[-1] += 1
            with pytest.raises(bench.R.CheckFailed, match="1 wrong elements"):
                p.check(r, wrong, "wrong")
            with pytest.raises(bench.R.CheckFailed, match="expected"):
                p.check(r, right.astype(np.float64), "dtype")


def test_payload_sizes_follow_the_nccl_tests_convention(bench: ModuleType) -> None:
    """size = the largest buffer a rank holds: allgather contributes size/N and receives size."""
    n, size = 8, MiB
    assert bench.Payload("allreduce", size, n).inputs[3].nbytes == size
    assert bench.Payload("bcast", size, n).inputs[0].nbytes == size
    gather = bench.Payload("allgather", size, n)
    assert gather.inputs[5].nbytes == size // n and sum(a.nbytes for a in gather.expected[0]) == size
    a2a = bench.Payload("alltoall", size, n)
    assert sum(a.nbytes for a in a2a.inputs[2]) == size and sum(a.nbytes for a in a2a.expected[2]) == size
    assert bench.Payload("reduce_scatter", size, n).expected[1].nbytes == size // n
    blocks = {int(a[0]) for row in a2a.inputs for a in row}
    assert len(blocks) == n * n  # every (source, destination) block distinct: a misplaced one shows


def test_lines_never_carry_an_unmeasured_baseline(bench: ModuleType) -> None:
    cases = [("allreduce", KiB), ("allreduce", 16 * MiB), ("barrier", 0)]
    icnd = {("allreduce", KiB): bench.R.Timing(0.0008, 0.0007, 0.0009, 3, {"other_cpu": 0.1}),
            ("allreduce", 16 * MiB): bench.R.Timing(0.3, 0.28, 0.31, 3, {}),
            ("barrier", 0): bench.R.Timing(error="CheckFailed: boom")}
    lines, rows = bench.build_lines("one-node", cases, icnd, None, {}, "mpirun (Open MPI) not found")
    assert [line["case"] for line in lines] == ["allreduce-1KiB-8-one-node", "allreduce-16MiB-8-one-node",
                                                "barrier-0B-8-one-node"]
    for line in lines:
        assert "baseline" not in line and "ratio" not in line
        assert line["mpi"] == {"error": "mpirun (Open MPI) not found"}
    assert lines[0]["target"] == {"max_s": 0.001, "met": True}
    assert lines[1]["target"] == {"max_ratio": 2.0, "met": None}  # a ratio target without a baseline: unknown
    assert lines[2]["value"] is None and lines[2]["error"] == "CheckFailed: boom" and "FAILED" in rows[2]

    mpi = {("allreduce", 16 * MiB): bench.R.Timing(0.1, 0.09, 0.12, 3, {"other_cpu": 0.5})}
    lines, _ = bench.build_lines("one-node", cases[1:2], icnd, None, mpi, None)
    line = lines[0]
    assert line["baseline"] == 0.1 and line["baseline_name"] == "mpi-shm" and line["ratio"] == 3.0
    assert line["target"] == {"max_ratio": 2.0, "met": False} and line["contended"] is True
    lines, _ = bench.build_lines("tree", [("bcast", 16 * MiB)], {("bcast", 16 * MiB): bench.R.Timing(0.15, 0.1, 0.2, 3)},
                                 None, {("bcast", 16 * MiB): bench.R.Timing(0.1, 0.1, 0.1, 3)}, None)
    assert lines[0]["baseline_name"] == "mpi-tcp" and lines[0]["target"]["met"] is True


def test_a_small_real_run(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    """One node, 8 ranks: results checked against numpy inside the run, JSON lines out."""
    code = bench.main(["--placements", "one-node", "--sizes", "1KiB", "--cases", "alltoall,reduce_scatter,barrier",
                       "--reps", "3", "--no-mpi", "--json-only", "--timeout", "20"])
    out = capsys.readouterr().out
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert code == 0, out
    assert [line["case"] for line in lines] == ["alltoall-1KiB-8-one-node", "reduce_scatter-1KiB-8-one-node",
                                                "barrier-0B-8-one-node"]
    for line in lines:
        assert line["bench"] == "collectives" and line["value"] > 0 and line["reps"] == 3
        assert line["min_s"] <= line["value"] <= line["max_s"] and "baseline" not in line
