"""tools/measure/floor_reach.py: the geomean a report's runs would reach at a share of their roofline floors."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[2] / "tools" / "measure" / "floor_reach.py"


def test_each_run_is_lifted_to_the_share_of_its_floor_and_never_lowered(tmp_path):
    rng = random.Random()
    runs = [{"dtype": "fp32", "engine": True, "speedup": rng.uniform(1.0, 3.0), "floor_speedup": rng.uniform(1.2, 40)}
            for _ in range(7)]
    runs.append({"dtype": "fp32", "engine": True, "speedup": 1.5, "floor_speedup": None})      # no floor: kept
    runs.append({"dtype": "bf16", "engine": True, "speedup": 50.0, "floor_speedup": 60.0})     # other dtype: out
    runs.append({"dtype": "fp32", "engine": False, "speedup": 9.0, "floor_speedup": 10.0})     # ablation: out
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"runs": runs}))
    out = subprocess.run([sys.executable, str(TOOL), str(report)], capture_output=True, text=True, check=True).stdout
    mine = runs[:8]

    def geomean(values):
        return math.exp(sum(math.log(v) for v in values) / len(values))

    assert f"8 fp32 runs (engine on); geomean speedup now {geomean([r['speedup'] for r in mine]):.2f}x" in out
    half = [max(r["speedup"], 0.5 * r["floor_speedup"]) if r["floor_speedup"] else r["speedup"] for r in mine]
    assert f"every run at >= 50% of its floor: geomean {geomean(half):.2f}x" in out
    assert f"runs whose floor is under 2.5x: {sum(r['floor_speedup'] < 2.5 for r in mine[:7])}" in out


def test_a_report_without_such_runs_is_a_one_line_error(tmp_path):
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"runs": []}))
    done = subprocess.run([sys.executable, str(TOOL), str(report)], capture_output=True, text=True)
    assert done.returncode != 0 and done.stderr.strip() == f"error: no timed fp32 runs in {report}"
