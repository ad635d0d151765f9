"""bench/verify_cost.py prints one well-formed JSON line per scheme and segment size."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_verify_cost_prints_a_line_per_scheme_and_segment() -> None:
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "verify_cost.py"), "--total-mib", "1", "--reps", "1",
                        "--segments", "64KiB,1MiB"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert [x["case"] for x in lines] == [f"{s}-{seg}" for seg in ("64KiB", "1MiB")
                                         for s in ("per-segment-ed25519", "digest-list", "sha256")]
    for x in lines:
        assert x["bench"] == "verify_cost" and x["unit"] == "ms/MiB" and x["baseline"] > 0
        assert x["value"] > 0 and abs(x["ratio"] - x["value"] / x["baseline"]) < 0.01 * x["ratio"] + 0.01
