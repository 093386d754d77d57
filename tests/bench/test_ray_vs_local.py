"""tools/measure/ray_vs_local.py's comparison of two pass records (issue 21): a pass cut by a time limit
keeps what it measured, and the comparison never calls a partial or one-sided result identical."""

from __future__ import annotations

import importlib.util
import json
import random
import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[2] / "tools" / "measure" / "ray_vs_local.py"
spec = importlib.util.spec_from_file_location("ray_vs_local", TOOL)
ray_vs_local = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ray_vs_local)


def record(kind: str, rows: list[tuple[str, str]], complete: bool = True, n_ops: int | None = None) -> dict:
    ops = sorted({op for op, _ in rows})
    if n_ops is not None:
        ops += [f"op{i}" for i in range(n_ops - len(ops))]
    return {"executor": kind, "gpu": "NVIDIA H200", "ops": ops, "presets": ["s"], "wall_s": 10.0,
            "complete": complete,
            "results": [{"op": op, "preset": "s", "status": status, "runtime_us": random.uniform(1, 100),
                         "device": "0"} for op, status in rows]}


def ops(n: int) -> list[tuple[str, str]]:
    return [(f"op{i:02d}", "verified") for i in range(n)]


def test_same_complete_passes_are_identical():
    rows = ops(random.randint(3, 9))
    joined, identical = ray_vs_local.compare(record("local", rows), record("ray", rows))
    assert identical and joined["same_verdicts"] and joined["complete"]
    assert len(joined["results"]) == len(rows)


def test_a_different_verdict_is_not_identical():
    rows = ops(6)
    other = list(rows)
    k = random.randrange(len(other))
    other[k] = (other[k][0], "slower")
    joined, identical = ray_vs_local.compare(record("local", rows), record("ray", other))
    assert not identical and not joined["same_verdicts"]


def test_cut_passes_compare_what_both_measured_but_are_never_identical():
    full = ops(10)
    local = record("local", full[:7], complete=False, n_ops=10)
    ray = record("ray", full[:8], complete=False, n_ops=10)
    joined, identical = ray_vs_local.compare(local, ray)
    assert joined["same_verdicts"]            # the 7 results both passes have agree
    assert not identical and not joined["complete"]
    assert (joined["local_results"], joined["ray_results"]) == (7, 8)
    assert sum(r["local"] is None for r in joined["results"]) == 1


def test_the_command_joins_two_records_and_exits_1_for_a_cut_pass(tmp_path):
    rows = ops(4)
    (tmp_path / "local.json").write_text(json.dumps(record("local", rows)))
    (tmp_path / "ray.json").write_text(json.dumps(record("ray", rows[:3], complete=False, n_ops=4)))
    done = subprocess.run([sys.executable, str(TOOL), "--compare", str(tmp_path / "local.json"),
                           str(tmp_path / "ray.json"), "--out", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "cut short: ray (3 of 4 results)" in done.stdout
    assert json.loads((tmp_path / "ray_vs_local.json").read_text())["identical"] is False


class _Result:
    def __init__(self, op: str):
        self.op, self.preset, self.status, self.runtime_us, self.device = op, "s", "verified", 1.0, "0"


def test_a_pass_killed_midway_leaves_the_results_it_measured(tmp_path, monkeypatch):
    """one_pass's record is rewritten after each result and replaced, never torn; an old record at the path is
    overwritten before the first result, so it cannot stand in for a pass that died at once."""
    path = tmp_path / "ray.json"
    path.write_text(json.dumps(record("ray", ops(5))))          # a previous, complete pass
    done_before_kill = random.randint(0, 4)

    def dying_bench(ops_, dtype, impl, presets, results, executor_kind, progress):
        for i in range(done_before_kill):
            progress(_Result(f"op{i:02d}"), i + 1, len(ops_))
        raise KeyboardInterrupt   # the time limit's signal

    monkeypatch.setattr(ray_vs_local, "run_bench", dying_bench)
    try:
        ray_vs_local.one_pass("ray", [f"op{i:02d}" for i in range(5)], ["s"], tmp_path / "r", path)
    except KeyboardInterrupt:
        pass
    kept = json.loads(path.read_text())
    assert kept["complete"] is False and len(kept["results"]) == done_before_kill
    assert not list(tmp_path.glob("*.partial"))
