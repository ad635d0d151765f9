"""bench/compose.py (issue #31, "Measured"): one real ``--quick`` run on loopback
(three daemons, no root needed) whose JSON lines must have the bench's shape,
pass their checks and show what the cases are about (a's link carries ~0 of
the object with a ref or a future, twice the object by value; calls with a
ref placed at the data's node); and the parts a wrong answer or a failed
baseline goes through.  The full run (64 MiB, shaped links as root) is by hand."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

import numpy as np
import pytest

from tests.bench._load import BENCH, bench_module
MiB = 1 << 20
COMMON = {"bench", "case", "value", "unit", "baseline", "ratio", "links", "bytes", "reps", "checked"}


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    """bench/compose.py as a module; it puts bench/ on sys.path for _common, reduce and
    netns_reduce, undone after."""
    with bench_module("compose.py", helpers=("reduce", "_common", "netns_reduce")) as module:
        yield module


@pytest.fixture(scope="module")
def quick_run() -> tuple[int, list[dict[str, Any]], str]:
    proc = subprocess.run([sys.executable, str(BENCH / "compose.py"), "--quick", "--loopback", "--json-only"],
                          capture_output=True, text=True, timeout=240)
    lines = [json.loads(t) for t in proc.stdout.splitlines() if t.startswith("{")]
    return proc.returncode, lines, proc.stderr


def test_quick_run_prints_one_checked_line_per_case(quick_run: tuple[int, list[dict[str, Any]], str]) -> None:
    code, lines, err = quick_run
    assert code == 0, err[-2000:]
    assert [rec["case"] for rec in lines] == ["ref-vs-value", "pipeline", "placement"], lines
    for rec in lines:
        assert COMMON <= set(rec), (rec["case"], COMMON - set(rec))
        assert rec["bench"] == "compose" and rec["unit"] == "s" and rec["links"] == "loopback"
        assert rec["checked"] is True and "error" not in rec and "baseline_error" not in rec, rec
        assert rec["bytes"] == MiB and rec["reps"] >= 1
        assert rec["value"] > 0 and rec["baseline"] > 0
        assert rec["ratio"] == pytest.approx(rec["value"] / rec["baseline"], rel=0.01)
        assert "met" not in rec  # the time targets are for shaped links
        assert rec["one_hop_fetch_s"] > 0


def test_refs_and_futures_keep_the_object_off_the_callers_link(
        quick_run: tuple[int, list[dict[str, Any]], str]) -> None:
    _, lines, _ = quick_run
    by_case = {rec["case"]: rec for rec in lines}
    for case, way in (("ref-vs-value", "ref"), ("pipeline", "future")):
        x = by_case[case]["a_link_x_object"]
        assert x[way] < 0.05, (case, x)  # a name, a proof and routing hellos, not the object
        assert x["value"] >= 1.9, (case, x)  # fetched (or returned) once, sent on once (more if retransmitted)
        assert by_case[case]["a_link_bytes"][way] < by_case[case]["a_link_bytes"]["value"] / 20


def test_calls_with_a_ref_run_at_the_datas_node(quick_run: tuple[int, list[dict[str, Any]], str]) -> None:
    _, lines, _ = quick_run
    rec = next(r for r in lines if r["case"] == "placement")
    assert rec["placed_at_c"] == 1.0 and rec["placed_at_c_by_counters"] == 1.0 and rec["met_placed"] is True
    assert rec["hosts"] == {"/node/c": rec["calls"]}
    assert rec["host_executions"] == {"near": {"b": 0, "c": rec["calls"]},
                                      "forced_b": {"b": rec["forced_calls"], "c": 0}}


def test_the_array_is_within_the_size_and_its_sums_are_exact(bench: ModuleType) -> None:
    from icnd.compute.values import encode_value

    for nbytes in (64 * 1024, MiB, 64 * MiB):
        x, ones = bench.make_array(nbytes, seed=7)
        encoded = len(encode_value(x))
        assert nbytes - 4 < encoded <= nbytes, (nbytes, encoded)
        assert x.dtype == np.float32 and ones == int(np.sum(x, dtype=np.int64))
        assert float(x.sum()) == float(ones) and float((2 * x).sum()) == float(2 * ones)
    a, _ = bench.make_array(MiB, seed=1)
    b, _ = bench.make_array(MiB, seed=2)
    assert not np.array_equal(a, b)  # each repetition publishes other bytes


def test_a_wrong_result_fails_the_check(bench: ModuleType) -> None:
    bench.check_sum(12.0, 12, "ok")
    for got in (13.0, 12, "12", None, np.float32(12.0)):
        with pytest.raises(bench.CheckFailed):
            bench.check_sum(got, 12, "wrong")


def test_a_failed_case_or_baseline_has_no_ratio(bench: ModuleType) -> None:
    failed_baseline = bench.Samples(value=[1.0, 2.0, 3.0], baseline=[4.0], baseline_error="Timeout: x")
    rec = bench.case_line("ref-vs-value", failed_baseline, links="loopback", nbytes=MiB, reps=3)
    assert rec["value"] == 2.0 and rec["baseline"] is None and rec["ratio"] is None and rec["checked"] is True
    assert rec["baseline_error"] == "Timeout: x"
    failed = bench.Samples(value=[1.0], baseline=[2.0], error="CheckFailed: total")
    rec = bench.case_line("pipeline", failed, links="shaped100", nbytes=MiB, reps=3)
    assert rec["checked"] is False and rec["error"] == "CheckFailed: total"
    short = bench.case_line("pipeline", bench.Samples(value=[1.0], baseline=[2.0]), links="loopback", nbytes=MiB,
                            reps=3)
    assert short["checked"] is False  # fewer repetitions than asked
    ok = bench.case_line("pipeline", bench.Samples(value=[1.0, 3.0, 2.0], baseline=[4.0, 8.0, 6.0]),
                         links="loopback", nbytes=MiB, reps=3)
    assert (ok["value"], ok["baseline"], ok["ratio"], ok["checked"]) == (2.0, 6.0, 0.333, True)


def test_the_line_is_shaped_only_in_namespaces(bench: ModuleType) -> None:
    from icnd.topology import parse

    for shaped, mbps in ((True, 100), (False, 0)):
        spec = parse(bench.topology_dict(shaped))
        assert list(spec.nodes) == ["a", "b", "c"] and spec.routing == "link-state"
        assert [tuple(link.ends) for link in spec.links] == [("a", "b"), ("b", "c")]
        assert all(link.bandwidth_mbps == mbps and link.transport == "tcp" for link in spec.links)
        assert spec.nodes["a"].functions == []
        assert "apps.functions:total=/fn/placed" in spec.nodes["b"].functions
        assert "apps.functions:total=/fn/placed" in spec.nodes["c"].functions


@pytest.mark.parametrize("argv", [
    ["--cases", "ref-vs-valeu"], ["--cases", ""], ["--reps", "0"], ["--size-mib", "0"], ["--size-mib", "65"]])
def test_bad_options_are_usage_errors(bench: ModuleType, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        bench.parse_args(argv)
    assert exc.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_quick_and_case_selection(bench: ModuleType) -> None:
    opts = bench.parse_args(["--quick", "--loopback", "--cases", "placement,pipeline"])
    assert (opts.size_mib, opts.reps, opts.cases, opts.links) == (1, 1, ["placement", "pipeline"], "loopback")
    full = bench.parse_args(["--loopback"])
    assert (full.size_mib, full.reps, full.cases) == (64, 3, ["ref-vs-value", "pipeline", "placement"])
