"""bench/reduce.py's issue #30 part 3 cases, run for real in their quick mode
(loopback daemons, no root): ``rendezvous-killed`` (a rendezvous SIGKILLed
while it aggregates: the round completes through the next rendezvous, or
fails, within deadline + 1 s) and ``straggler`` (one member 2x slower,
partial results by a deadline: p99 of the round time against the median)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_the_rendezvous_killed_and_straggler_cases_in_quick_mode() -> None:
    argv = [sys.executable, str(BENCH / "reduce.py"), "--quick", "--extra-only", "--extra",
            "rendezvous-killed,straggler", "--json-only"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = {rec["case"]: rec for rec in (json.loads(t) for t in proc.stdout.splitlines() if t.startswith("{"))}
    assert sorted(lines) == ["rendezvous-killed-4MiB-8", "straggler-64KiB-8"]
    for rec in lines.values():  # the bench convention: no baseline ran, so no ratio
        assert rec["bench"] == "reduce" and rec["unit"] == "s" and rec["value"] > 0 and not rec.get("error")
        assert rec["baseline"] is None and "ratio" not in rec and rec["note"]

    killed = lines["rendezvous-killed-4MiB-8"]
    assert killed["reps"] == 3 and killed["killed"] == "root" and killed["within_limit"]
    assert killed["max_s"] <= killed["timeout_s"] + 1.0 == killed["limit_s"]
    assert killed["agg_roots_undisturbed"]["root"] == 1  # one segment, which starts at root
    if killed["outcome"] == "completed":  # through the next rendezvous: agg1 aggregated it again
        assert killed["values_checked"] and all(roots["agg1"] >= 1 for roots in killed["agg_roots"])
    else:
        assert killed["outcome"] in ("failed", "mixed") and killed["errors"]

    straggler = lines["straggler-64KiB-8"]
    assert straggler["rounds"] == 5 and straggler["values_checked"] and straggler["straggler"] == "w8"
    assert straggler["value"] == straggler["p99_s"] >= straggler["median_s"] > straggler["compute_s"]
    assert 0 <= straggler["partial_rounds"] <= straggler["rounds"]
    assert straggler["p99_over_median"] >= 1.0
