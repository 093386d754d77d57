"""tools/measure/aa_bias.py's CPU-checkable parts (issue 16): its arguments, the budget that stops it cleanly
with what it measured, and the report from given figures. The judgements themselves need the H200."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "tools" / "measure" / "aa_bias.py"
spec = importlib.util.spec_from_file_location("aa_bias", TOOL)
aa_bias = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = aa_bias       # dataclasses look their module up while the file executes
spec.loader.exec_module(aa_bias)


class Clock:
    """A clock the fake judgements advance."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def timing(speedup: float, verdict: str, shared: bool) -> dict:
    return {"speedup": speedup, "verdict": verdict, "spread": 0.004, "timer": "cupti", "shared_slots": shared,
            "batch": 4, "cold_l2": False, "baseline_us": 5.0 * speedup, "candidate_us": 5.0, "baseline_iqr_us": 0.02,
            "candidate_iqr_us": 0.02, "n": 100}


def test_the_default_kernels_exist_with_their_presets(tmp_path):
    args = aa_bias.parse_args(["--out", str(tmp_path)])
    assert [k.name for k in args.kernel_list] == list(aa_bias.DEFAULT_KERNELS)
    assert (args.repeats, args.per_process, args.budget_s) == (4, 3, 330.0)
    by_name = {k.name: k for k in args.kernel_list}
    assert by_name["vector_add:small"].source == REPO / "examples" / "vector_add" / "vector_add.cu"
    assert by_name["ops/softmax:l"].source == REPO / "bench" / "ops" / "softmax" / "fp32.cu"
    assert by_name["ops/softmax:l"].preset == "l"


def test_a_kernel_given_as_a_path(tmp_path):
    path = REPO / "examples" / "naive_sgemm" / "naive_sgemm.cu"
    [kernel] = aa_bias.parse_args(["--out", str(tmp_path), "--kernels", f"{path}:small"]).kernel_list
    assert kernel.source == path and kernel.preset == "small"


@pytest.mark.parametrize("argv, message", [
    (["--kernels", "vector_add:huge"], "no size preset 'huge'"),
    (["--kernels", "ops/no_such_op:s"], "no_such_op/fp32.cu with its fp32.task.yaml beside it"),
    (["--kernels", "vector_add"], "is not SOURCE:PRESET"),
    (["--kernels", " , "], "--kernels: none given"),
    (["--repeats", "0"], "--repeats must be at least 1"),
    (["--budget-s", "-5"], "--budget-s must be above 0"),
])
def test_bad_arguments_are_one_line_and_exit_2(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as exited:
        aa_bias.main(["--out", str(tmp_path), *argv])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err.strip().splitlines()[-1]


def test_the_schedule_covers_every_kernel_and_mode_each_round_and_alternates_which_goes_first(tmp_path):
    kernels = aa_bias.parse_args(["--out", str(tmp_path), "--kernels", "vector_add:small,ops/softmax:s"]).kernel_list
    order = [(r, k.name, mode) for r, k, mode in aa_bias.schedule(kernels, 3)]
    assert len(order) == 3 * 2 * 2
    first_round = [x[1:] for x in order[:4]]
    assert first_round == [("vector_add:small", "separate"), ("vector_add:small", "shared"),
                           ("ops/softmax:s", "shared"), ("ops/softmax:s", "separate")]
    assert [x[2] for x in order[4:6]] == ["shared", "separate"]     # round 2 starts with the other mode


def test_the_budget_estimates_a_run_from_its_kernels_longest():
    clock = Clock()
    budget = aa_bias.Budget(100.0, clock=clock)
    assert budget.estimate_s("a") == aa_bias.FIRST_RUN_S and budget.allows("a")
    budget.record("a", 40.0)
    clock.now += 40.0
    assert budget.estimate_s("a") == pytest.approx(50.0) and budget.allows("a")     # 60 s left
    assert budget.estimate_s("b") == aa_bias.FIRST_RUN_S and budget.allows("b")     # unknown: the first-run guess
    budget.record("a", 10.0)
    clock.now += 20.0
    assert budget.estimate_s("a") == pytest.approx(50.0) and not budget.allows("a")  # its longest, not its last
    assert budget.left_s() == pytest.approx(40.0)


def test_a_run_stops_cleanly_at_the_budget_and_writes_what_it_measured(tmp_path):
    clock = Clock()
    args = aa_bias.parse_args(["--out", str(tmp_path), "--kernels", "vector_add:small,ops/softmax:s",
                               "--repeats", "5", "--per-process", "2", "--budget-s", "200"])
    seconds = {"vector_add:small": 20.0, "ops/softmax:s": 15.0}
    seen = []

    def judge(kernel, copy, mode, per_process, target_s, timeout_s):
        assert copy.read_bytes() == kernel.source.read_bytes() and copy != kernel.source, "a byte-identical copy"
        assert per_process == 2 and timeout_s <= 200
        seen.append((kernel.name, mode))
        clock.now += seconds[kernel.name]
        return {"status": "ok", "reason": "", "timings": [timing(random.uniform(0.99, 1.01), "same", mode == "shared")
                                                          for _ in range(per_process)]}

    record = aa_bias.run(args, judge_one=judge, budget=aa_bias.Budget(200.0, clock=clock), gpu="NVIDIA H200")
    # 70 s a round: two rounds (140 s), then the third round's judgements while the estimates still fit.
    assert not record["complete"] and "budget" in record["stopped"] and "not run" in record["stopped"]
    assert clock.now - 1000.0 <= 200.0, "no judgement started that would end past the budget"
    assert len(seen) >= 8 and {mode for _, mode in seen[:4]} == {"separate", "shared"}
    written = json.loads((tmp_path / aa_bias.JSON_NAME).read_text())
    assert written["runs"] == record["runs"] and len(written["runs"]) == len(seen)
    assert written["complete"] is False and written["gpu"] == "NVIDIA H200"
    groups = {(g["kernel"], g["mode"]): g for g in written["summary"]}
    assert set(groups) == {(k, m) for k in seconds for m in aa_bias.MODES}
    assert all(g["timings"] == 2 * g["judgements"] and g["called"] == 0 for g in groups.values())
    text = (tmp_path / aa_bias.MD_NAME).read_text()
    assert "Stopped early: budget" in text and "shared slots: 0 of" in text


def test_a_failing_judgement_is_recorded_and_no_gpu_ends_the_run(tmp_path):
    args = aa_bias.parse_args(["--out", str(tmp_path), "--kernels", "vector_add:small", "--repeats", "3"])
    calls = []

    def judge(kernel, copy, mode, *rest):
        calls.append(mode)
        if len(calls) == 1:
            raise RuntimeError("worker said no")
        from skillbase.errors import EnvironmentProblem

        raise EnvironmentProblem("no NVIDIA GPU found")

    record = aa_bias.run(args, judge_one=judge)
    assert len(calls) == 2 and [r["status"] for r in record["runs"]] == ["error", "error"]
    assert "RuntimeError: worker said no" in record["runs"][0]["reason"]
    assert record["stopped"].startswith("no GPU to time on") and not record["complete"]


def test_the_exit_status_says_whether_anything_was_measured(tmp_path, monkeypatch):
    argv = ["--kernels", "vector_add:small", "--repeats", "1", "--per-process", "2"]
    monkeypatch.setattr(aa_bias, "judge", lambda *a: {"status": "crashed", "reason": "signal 11", "timings": []})
    assert aa_bias.main(["--out", str(tmp_path / "none"), *argv]) == 1
    # A difference called on shared slots is a finding, not a failure of the tool: the figures decide.
    monkeypatch.setattr(aa_bias, "judge", lambda kernel, copy, mode, *a: {
        "status": "ok", "reason": "", "timings": [timing(1.02, "faster", mode == "shared")]})
    assert aa_bias.main(["--out", str(tmp_path / "some"), *argv]) == 0
    assert "shared slots: 1 of 1 A/A timings judged a difference" in (tmp_path / "some" / aa_bias.MD_NAME).read_text()


def test_the_report_from_given_figures():
    runs = [
        {"kernel": "vector_add:small", "mode": "separate", "round": 0, "status": "ok", "reason": "",
         "timings": [timing(1.016, "faster", False), timing(1.012, "faster", False), timing(1.001, "same", False)]},
        {"kernel": "vector_add:small", "mode": "shared", "round": 0, "status": "ok", "reason": "",
         "timings": [timing(1.002, "same", True), timing(0.998, "same", True), timing(1.000, "same", True)]},
        {"kernel": "vector_add:small", "mode": "separate", "round": 1, "status": "ok", "reason": "",
         "timings": [timing(0.985, "slower", False)]},
        {"kernel": "vector_add:small", "mode": "shared", "round": 1, "status": "timeout", "reason": "worker hung",
         "timings": []},
        # a worker that ignored the mode: counted apart, never as the shared mode's
        {"kernel": "ops/softmax:l", "mode": "shared", "round": 0, "status": "ok", "reason": "",
         "timings": [timing(1.03, "faster", False)]},
    ]
    summary = {(g["kernel"], g["mode"]): g for g in aa_bias.summarise(runs)}
    separate = summary[("vector_add:small", "separate")]
    assert (separate["judgements"], separate["timings"], separate["called"]) == (2, 4, 3)
    assert separate["verdicts"] == {"faster": 2, "slower": 1, "same": 1}
    assert separate["ratio_median"] == pytest.approx((1.012 + 1.001) / 2)
    assert (separate["ratio_min"], separate["ratio_max"]) == (0.985, 1.016)
    assert separate["bias_pct_mean"] == pytest.approx(100 * (0.016 + 0.012 + 0.001 + 0.015) / 4)
    assert separate["bias_pct_max"] == pytest.approx(1.6)
    assert separate["called_rate"] == pytest.approx(0.75)
    shared = summary[("vector_add:small", "shared")]
    assert (shared["judgements"], shared["failed"], shared["timings"], shared["called"]) == (2, 1, 3, 0)
    assert shared["timers"] == ["cupti"] and shared["batches"] == [4]
    ignored = summary[("ops/softmax:l", "shared")]
    assert (ignored["wrong_mode"], ignored["timings"], ignored["called_rate"], ignored["ratio_median"]) == \
        (1, 0, None, None)
    line = aa_bias.conclusion(list(summary.values()))
    assert line == ("separate slots: 3 of 4 A/A timings judged a difference (2 'faster'); "
                    "shared slots: 0 of 3 A/A timings judged a difference (0 'faster')")
    record = {"gpu": "NVIDIA H200", "started": "2026-12-04 10:00", "command": "python tools/measure/aa_bias.py",
              "runs": runs, "wall_s": 120.0, "budget_s": 330.0, "complete": True, "stopped": None,
              "summary": list(summary.values())}
    text = aa_bias.markdown(record)
    row = "| vector_add:small | separate | 2 (0) | 4 | 1.0065 | 0.9850..1.0160 | 1.10 % | 1.60 % | 2 / 1 / 1 | 75 % |"
    assert row in text
    assert "| ops/softmax:l | shared | 1 (0, 1 of another mode) | 0 | - |" in text
    assert "- vector_add:small (shared, round 2): timeout: worker hung" in text and text.rstrip().endswith(line)
