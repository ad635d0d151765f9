"""bench/reduce.py's options and layouts (issue #18, "What MPI cannot do"): which
case families a run selects (the full run all of them, ``--quick`` none,
``--extra-only`` no matrix and no MPI), refusals of bad values, and the
topologies the member-dies / late-consumer / incast cases launch.  The cases
themselves launch 11..37 daemons and are run by hand, not here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Iterator

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def reduce_bench() -> Iterator[ModuleType]:
    """bench/reduce.py as a module, registered while the tests run (its dataclasses need
    that); it puts bench/ on sys.path for _common, undone at once."""
    name = "icnd_bench_reduce"
    saved = list(sys.path)
    try:
        spec = importlib.util.spec_from_file_location(name, BENCH / "reduce.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved
    yield module
    sys.modules.pop(name, None)


def test_full_run_includes_every_extra_case(reduce_bench: ModuleType) -> None:
    opts = reduce_bench.parse_args([])
    assert opts.extra == ["member-dies", "late-consumer", "incast", "rendezvous-killed", "straggler"]
    assert not opts.extra_only and not opts.no_mpi


def test_quick_runs_no_extra_case_unless_asked(reduce_bench: ModuleType) -> None:
    assert reduce_bench.parse_args(["--quick"]).extra == []
    assert reduce_bench.parse_args(["--quick", "--extra", "late-consumer"]).extra == ["late-consumer"]
    assert reduce_bench.parse_args(["--quick", "--extra", "all"]).extra == list(reduce_bench.EXTRAS)


def test_extra_only_skips_mpi_and_defaults_to_all(reduce_bench: ModuleType) -> None:
    opts = reduce_bench.parse_args(["--extra-only"])
    assert opts.extra == list(reduce_bench.EXTRAS) and opts.no_mpi
    opts = reduce_bench.parse_args(["--quick", "--extra-only", "--extra", "incast,member-dies"])
    assert opts.extra == ["incast", "member-dies"] and opts.no_mpi
    assert reduce_bench.parse_args(["--extra", "none"]).extra == []


@pytest.mark.parametrize("argv, message", [
    (["--extra", "member-died"], "--extra: expected all, none or a comma-separated list"),
    (["--extra-only", "--extra", "none"], "nothing to run"),
])
def test_bad_extra_is_a_usage_error(reduce_bench: ModuleType, capsys: pytest.CaptureFixture[str],
                                    argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exc:
        reduce_bench.parse_args(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_tree_layouts(reduce_bench: ModuleType) -> None:
    workers, aggs = reduce_bench.layout_nodes(5, "tree")  # the matrix's layout: two aggregators, first one larger
    assert aggs == {"agg1": ["w1", "w2", "w3"], "agg2": ["w4", "w5"], "root": ["agg1", "agg2"]}
    workers, aggs = reduce_bench.layout_nodes(32, "tree", 4)  # incast: 4 aggregators of 8
    assert len(workers) == 32 and aggs["root"] == ["agg1", "agg2", "agg3", "agg4"]
    assert [len(aggs[f"agg{k}"]) for k in range(1, 5)] == [8, 8, 8, 8]
    assert sorted(w for k in range(1, 5) for w in aggs[f"agg{k}"]) == sorted(workers)


def test_extra_topologies(reduce_bench: ModuleType) -> None:
    opts = reduce_bench.parse_args(["--extra-only"])
    spec = reduce_bench.topology(8, opts, rendezvous=reduce_bench.extra_rendezvous(opts),
                                 deadline_ms=reduce_bench.DIES_DEADLINE_MS)
    group = spec.groups[reduce_bench.GROUP]
    assert group.rendezvous == ["root"] and group.deadline_ms == 2000 and len(group.members) == 8
    assert reduce_bench.late_node(opts) == "root" and "root" not in [m.node for m in group.members]
    star = reduce_bench.topology(32, opts, layout="star", rendezvous=["hub"])
    assert set(star.nodes) == {f"w{i}" for i in range(1, 33)} | {"hub"} and star.groups["bench"].deadline_ms == 0
    starred = reduce_bench.parse_args(["--layout", "star"])
    assert reduce_bench.extra_rendezvous(starred) == ["hub"] and reduce_bench.late_node(starred) == "hub"
