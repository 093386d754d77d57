"""`skillbase kernelbench baselines`: torch.compile times added afterwards to the members of a KernelBench batch
started with --no-compile, and eager where its timing failed, through the batch's job machinery, and
`kernelbench report` scoring against them. On the CPU a double stands in for the harness's PyTorch timing
(`scoring.time_pytorch`: a GPU job); the members are made "judged" in the store as a GPU trip leaves them
(first kernel timed, eager recorded).

    python -m pytest -q -p no:cacheprovider tests/kernelbench/test_baselines.py
"""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from skillbase.cli import cli
from skillbase.documents import DOCUMENTS, schema_path
from skillbase.harness.jobs import LocalExecutor
from skillbase.kernelbench import scoring
from skillbase.kernelbench.importer import import_problems
from skillbase.kernelbench.task_files import ADAPTER_VERSION
from skillbase.run.batch import PYTORCH_STEP, add_missing_baselines
from skillbase.run.kernelbench_report import kernelbench_report
from skillbase.run.store import RunStore
from skillbase.run.types import RunStatus

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"
PROBLEMS = ("1_Matmul", "2_ReLU", "2_Gemm_Scale_ReLU")


def run_cli(*argv) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "skillbase", *map(str, argv)], capture_output=True, text=True)


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("kb") / "tasks"
    import_problems(FIXTURES, out, problems=PROBLEMS)
    return out


class Timer:
    """`time_pytorch`'s double: fresh random times for what it is asked (eager, compile), a failure of compile
    for the tasks named in `failing`; it records what it was asked and advances `now` by `cost` per call."""

    def __init__(self, failing: set[str] = frozenset(), cost: float = 0.0) -> None:
        self.failing, self.cost, self.now = failing, cost, 0.0
        self.calls: list[tuple[str, bool, bool]] = []
        self.given: dict[str, dict] = {}

    def __call__(self, folder: Path, compile: bool = True, eager: bool = True) -> dict:
        self.calls.append((Path(folder).name, compile, eager))
        self.now += self.cost
        name = Path(folder).name
        times = {"eager": random.uniform(5.0, 500.0)} if eager else {}
        if compile:
            times.update({"compile": None, "compile_reason": f"error: inductor failed {random.random()}"}
                         if name in self.failing else {"compile": random.uniform(5.0, 500.0)})
            times["compile_adapter"] = scoring.adapter_of(folder)    # as time_pytorch records it
        self.given[name] = times
        return times


@pytest.fixture()
def judged(imported, tmp_path) -> tuple[Path, dict[str, dict]]:
    """A --defer-baselines --no-compile batch of the three tasks, each member as a GPU trip leaves it: its first
    kernel timed (baseline, best) and its PyTorch eager time recorded, with no compile entry."""
    tasks = Path(shutil.copytree(imported, tmp_path / "tasks"))
    store = tmp_path / "store"
    CliRunner().invoke(cli, ["kernelbench", "optimize", str(tasks), "--agent", "external", "--defer-baselines",
                             "--no-compile", "--store", str(store), "--json"], catch_exceptions=False)
    recorded = {}
    runs = RunStore.open(store)
    for member in runs.batch_members():
        run = runs.get_run(member.run_id)
        baseline = random.uniform(5.0, 500.0)
        best = baseline / random.uniform(1.0, 3.0)
        step = {"eager": random.uniform(5.0, 500.0), "other": [random.random()]}
        runs.set_manifest(run.id, {**run.manifest, "task_digest": "d"})
        runs.update_run(run.id, status=RunStatus.FINISHED, baseline_us=baseline, best_us=best)
        with runs.transaction() as tx:
            tx.finish_step(run.id, PYTORCH_STEP, step)
        recorded[member.operator] = {"run": run.id, "best": best, "step": step}
    runs.close()
    return store, recorded


def steps(store: Path) -> dict[str, dict]:
    runs = RunStore.open(store)
    try:
        return {m.operator: runs.step_result(m.run_id, PYTORCH_STEP) for m in runs.batch_members()}
    finally:
        runs.close()


def test_compile_is_merged_into_each_step_keeping_eager_and_the_rest_and_a_second_run_does_nothing(judged,
                                                                                                   monkeypatch):
    store, recorded = judged
    timer = Timer(failing={"level1_1_Matmul"})
    monkeypatch.setattr(scoring, "time_pytorch", timer)
    outcome = add_missing_baselines(store, executor=LocalExecutor([]))
    assert sorted(timer.calls) == sorted((name, True, False) for name in recorded)   # eager never timed again
    assert {m.action for m in outcome.members} == {"timed"}
    for name, step in steps(store).items():
        assert step == {**recorded[name]["step"], **timer.given[name]}
    matmul = steps(store)["level1_1_Matmul"]
    assert matmul["compile"] is None and matmul["compile_reason"].startswith("error: inductor failed")
    jsonschema.Draft202012Validator(json.loads(schema_path("batch").read_text())).validate(outcome.to_json())
    assert outcome.to_json()["schema_version"] == DOCUMENTS["batch"]

    before = steps(store)
    again = Timer()
    monkeypatch.setattr(scoring, "time_pytorch", again)
    outcome = add_missing_baselines(store, executor=LocalExecutor([]))
    assert again.calls == [] and steps(store) == before
    assert [(m.action, m.reason.split(": ", 1)[1]) for m in outcome.members] == \
        [("left-alone", "PyTorch eager and torch.compile already timed")] * 3


def test_a_failed_eager_time_is_taken_again_with_what_else_is_missing_and_a_recorded_one_never(judged,
                                                                                                 monkeypatch):
    store, recorded = judged
    failed, timed_both = sorted(recorded)[:2]
    reason = f"crashed: CUDA error: out of memory on the device {random.random()}"
    runs = RunStore.open(store)
    with runs.transaction() as tx:   # one member's eager failed (no compile either), another's failed after compile
        tx.finish_step(recorded[failed]["run"], PYTORCH_STEP, {"eager": None, "eager_reason": reason})
        tx.finish_step(recorded[timed_both]["run"], PYTORCH_STEP,
                       {"eager": None, "eager_reason": reason, "compile": 12.5, "compile_adapter": ADAPTER_VERSION})
    runs.close()
    timer = Timer()
    monkeypatch.setattr(scoring, "time_pytorch", timer)
    outcome = add_missing_baselines(store, executor=LocalExecutor([]))
    asked = {name: (compile, eager) for name, compile, eager in timer.calls}
    third = (set(recorded) - {failed, timed_both}).pop()
    assert asked == {failed: (True, True), timed_both: (False, True), third: (True, False)}
    after = steps(store)
    assert after[failed] == timer.given[failed] and "eager_reason" not in after[failed]    # the reason is replaced
    assert after[timed_both] == {"compile": 12.5, "compile_adapter": ADAPTER_VERSION, **timer.given[timed_both]}
    assert after[third] == {**recorded[third]["step"], **timer.given[third]}               # its eager kept as it was
    reasons = {m.label: m.reason for m in outcome.members}
    run = f"run_{recorded[failed]['run']}"
    assert reasons[run] == f"eager {timer.given[failed]['eager']:.1f} µs; torch.compile " \
                           f"{timer.given[failed]['compile']:.1f} µs"
    report = {p.task: p for p in kernelbench_report(store).problems}
    assert report[failed].eager_us == timer.given[failed]["eager"]
    assert report[failed].speedup_vs_eager == timer.given[failed]["eager"] / recorded[failed]["best"]


def test_a_time_limit_defers_the_rest_and_a_later_run_finishes_them(judged, monkeypatch):
    store, recorded = judged
    timer = Timer(cost=100.0)
    monkeypatch.setattr(scoring, "time_pytorch", timer)
    # 150 s: the first timing starts (60 s expected), takes 100, and the 50 s left are shorter than it took
    outcome = add_missing_baselines(store, executor=LocalExecutor([], deadline=150.0, clock=lambda: timer.now))
    assert [m.action for m in outcome.members] == ["timed", "deferred", "deferred"]
    assert all(m.reason.startswith("not started: time limit") for m in outcome.members[1:])
    assert sum("compile" in s for s in steps(store).values()) == 1
    first = timer.calls[0][0]

    later = Timer()
    monkeypatch.setattr(scoring, "time_pytorch", later)
    outcome = add_missing_baselines(store, executor=LocalExecutor([]))
    assert sorted(c[0] for c in later.calls) == sorted(set(recorded) - {first})
    assert sorted(m.action for m in outcome.members) == ["left-alone", "timed", "timed"]
    given = {**timer.given, **later.given}
    assert steps(store) == {name: {**recorded[name]["step"], **given[name]} for name in recorded}


def test_a_failed_torch_compile_is_timed_again_only_with_retry_failed(judged, monkeypatch):
    store, recorded = judged
    failed = random.choice(sorted(recorded))
    reason = f"incorrect: launcher allocates device memory (cudaMalloc_v3020 ... {random.random()})"
    runs = RunStore.open(store)
    with runs.transaction() as tx:
        for name in recorded:
            step = {**recorded[name]["step"], "compile": random.uniform(5.0, 500.0), "compile_adapter": ADAPTER_VERSION}
            if name == failed:
                step.update(compile=None, compile_reason=reason)
            tx.finish_step(recorded[name]["run"], PYTORCH_STEP, step)
    runs.close()
    before = steps(store)
    timer = Timer()
    monkeypatch.setattr(scoring, "time_pytorch", timer)
    add_missing_baselines(store, executor=LocalExecutor([]))
    assert timer.calls == [] and steps(store) == before                  # by default a failure stands
    outcome = add_missing_baselines(store, executor=LocalExecutor([]), retry_failed=True)
    assert timer.calls == [(failed, True, False)]                          # only the failed one, compile only
    after = steps(store)
    assert after[failed] == {**recorded[failed]["step"], **timer.given[failed]}
    assert "compile_reason" not in after[failed]
    assert {n: s for n, s in after.items() if n != failed} == {n: s for n, s in before.items() if n != failed}
    assert sorted(m.action for m in outcome.members) == ["left-alone", "left-alone", "timed"]
    result = run_cli("kernelbench", "baselines", "--help")
    assert "--retry-failed" in result.stdout


def test_a_member_whose_judgements_took_long_is_deferred_by_its_own_estimate_per_timing_owed(judged, monkeypatch):
    """Session 24: matmul members timed in ~60 s each, then a 6 GB activation member started near the limit and ran
    past it. Each timing owed is held to the member's own longest judgement: two owed count twice."""
    from skillbase.run import batch

    store, recorded = judged
    slow, double, quick = sorted(recorded)
    longest = random.uniform(80.0, 120.0)            # one owed timing fits the 150 s left, two do not
    runs = RunStore.open(store)
    with runs.transaction() as tx:                   # `double` owes eager too (its eager failed)
        tx.finish_step(recorded[double]["run"], PYTORCH_STEP, {"eager": None, "eager_reason": "crashed: oom"})
    runs.close()
    judging = {recorded[slow]["run"]: 400.0, recorded[double]["run"]: longest, recorded[quick]["run"]: None}
    monkeypatch.setattr(batch, "longest_judging_s", lambda _store, run_id: judging[run_id])
    timer = Timer()
    monkeypatch.setattr(scoring, "time_pytorch", timer)
    outcome = add_missing_baselines(store, executor=LocalExecutor([], deadline=150.0, clock=lambda: timer.now))
    by_run = {m.label: m for m in outcome.members}
    assert sorted(c[0] for c in timer.calls) == [quick]
    for name, took in ((slow, 400.0), (double, 2 * longest)):
        member = by_run[f"run_{recorded[name]['run']}"]
        assert member.action == "deferred", member
        assert member.reason.endswith(f"earlier work took up to {took:.0f} s (run again to continue)"), member.reason


def test_a_compile_time_through_adapter_1_is_taken_again_once_the_task_is_refreshed(judged, monkeypatch):
    """Session 25: under adapter 1 torch.compile ran eager. Such a time is owed again; a member whose task folder is
    still at adapter 1 is left alone with the refresh command (it would time eager once more)."""
    store, recorded = judged
    stale, old_folder, current = random.sample(sorted(recorded), 3)
    runs = RunStore.open(store)
    folders = {m.operator: Path(runs.get_run(m.run_id).task_path).parent for m in runs.batch_members()}
    with runs.transaction() as tx:
        for name in recorded:
            step = {**recorded[name]["step"], "compile": random.uniform(5.0, 500.0)}   # no compile_adapter: 1
            if name == current:
                step["compile_adapter"] = ADAPTER_VERSION
            tx.finish_step(recorded[name]["run"], PYTORCH_STEP, step)
    runs.close()
    facts = json.loads((folders[old_folder] / "problem.json").read_text())
    (folders[old_folder] / "problem.json").write_text(json.dumps({**facts, "adapter": 1}))
    before = steps(store)
    timer = Timer()
    monkeypatch.setattr(scoring, "time_pytorch", timer)
    outcome = add_missing_baselines(store, executor=LocalExecutor([]))
    assert timer.calls == [(stale, True, False)]                       # compile only, eager kept
    after = steps(store)
    assert after[stale] == {**before[stale], **timer.given[stale]}
    assert after[stale]["compile_adapter"] == ADAPTER_VERSION
    assert after[old_folder] == before[old_folder] and after[current] == before[current]
    reasons = {m.label: m.reason for m in outcome.members}
    assert "--refresh" in reasons[f"run_{recorded[old_folder]['run']}"]
    assert reasons[f"run_{recorded[current]['run']}"].endswith("PyTorch eager and torch.compile already timed")
    report = {p.task: p for p in kernelbench_report(store).problems}
    assert report[stale].compile_us == timer.given[stale]["compile"]
    assert report[old_folder].compile_us is None and "fell back to eager" in report[old_folder].compile_reason


def test_a_member_that_ended_without_a_kernel_is_left_alone(judged, monkeypatch):
    """Session 25: level2/9 (stopped by hand, its reference all zeros) owed an eager time that nothing would ever
    be compared with, and took a timing job on every call."""
    store, recorded = judged
    ended = random.choice(sorted(recorded))
    why = f"stopped by hand: its PyTorch reference is all zeros {random.random()}"
    runs = RunStore.open(store)
    run = runs.get_run(recorded[ended]["run"])
    runs.set_manifest(run.id, {k: v for k, v in run.manifest.items() if k != "task_digest"})
    runs.update_run(run.id, status=random.choice([RunStatus.FINISHED, RunStatus.FAILED]), stop_reason=why)
    with runs.transaction() as tx:
        tx.finish_step(run.id, PYTORCH_STEP, {"eager": None, "eager_reason": "crashed: x"})
    runs.close()
    timer = Timer()
    monkeypatch.setattr(scoring, "time_pytorch", timer)
    outcome = add_missing_baselines(store, executor=LocalExecutor([]))
    assert ended not in [c[0] for c in timer.calls] and len(timer.calls) == len(recorded) - 1
    member = next(m for m in outcome.members if m.label == f"run_{recorded[ended]['run']}")
    assert member.action == "left-alone" and member.reason.endswith(f"ended without a kernel to compare ({why})")


def test_the_quickest_members_are_timed_first_and_a_short_one_is_not_held_back_by_a_long_one(judged, monkeypatch):
    """Session 24: a 240 s activation timed first left no time for the 30 s GEMMs behind it. The jobs run quickest
    first (a member without history last), and a member's own short history, with its margin, decides whether it
    still fits after a long one ran."""
    from skillbase.harness.jobs import OWN_HISTORY_MARGIN, Job, JobResult, TimeBudget
    from skillbase.run import batch

    store, recorded = judged
    slow, quick, unknown = random.sample(sorted(recorded), 3)
    short = random.uniform(5.0, 20.0)
    judging = {recorded[slow]["run"]: random.uniform(100.0, 200.0), recorded[quick]["run"]: short,
               recorded[unknown]["run"]: None}
    monkeypatch.setattr(batch, "longest_judging_s", lambda _store, run_id: judging[run_id])
    timer = Timer()
    monkeypatch.setattr(scoring, "time_pytorch", timer)
    add_missing_baselines(store, executor=LocalExecutor([]))
    assert [c[0] for c in timer.calls] == [quick, slow, unknown]

    # After a long timing of its kind, a member whose own judgements were short still starts when they fit.
    budget = TimeBudget(deadline=1000.0, clock=lambda: 1000.0 - short * OWN_HISTORY_MARGIN - 1)
    budget.ran(JobResult(0, Job("pytorch-baselines", "x:y"), None, wall_s=300.0))
    assert budget.refusal(Job("pytorch-baselines", "x:y", estimate_s=short)) is None
    assert budget.refusal(Job("pytorch-baselines", "x:y")) is not None     # no history: the 300 s rules


def test_the_report_scores_against_the_merged_compile_times(judged, monkeypatch):
    store, recorded = judged
    timer = Timer(failing={"level1_2_ReLU"})
    monkeypatch.setattr(scoring, "time_pytorch", timer)
    before = kernelbench_report(store)
    assert all(p.compile_us is None for p in before.problems)
    assert {p.compile_reason for p in before.problems} == {"not timed yet (skillbase kernelbench baselines times it)"}
    add_missing_baselines(store, executor=LocalExecutor([]))
    report = kernelbench_report(store)
    for problem in report.problems:
        compile_us = timer.given[problem.task]["compile"]
        assert problem.compile_us == compile_us and problem.eager_us == recorded[problem.task]["step"]["eager"]
        assert problem.speedup_vs_compile == (compile_us / recorded[problem.task]["best"] if compile_us else None)
        # a failed torch.compile timing gives its reason beside the empty column, in the JSON and the text
        assert problem.compile_reason == (None if compile_us else timer.given[problem.task]["compile_reason"])
    failed = next(p for p in report.problems if p.task == "level1_2_ReLU")
    assert f"no torch.compile time: {failed.compile_reason}" in next(x for x in report.lines()
                                                                    if x.startswith(failed.problem))
    for level in report.levels():
        ratios = [timer.given[p.task]["compile"] / recorded[p.task]["best"] for p in report.problems
                  if p.level == level["level"] and timer.given[p.task]["compile"] is not None]
        expected = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None
        assert (level["geomean_speedup_vs_compile"] is None) == (expected is None)
        assert level["geomean_vs_compile_over"] == len(ratios)
        if expected is not None:
            assert math.isclose(level["geomean_speedup_vs_compile"], expected, rel_tol=1e-12)
    line = next(x for x in report.lines() if x.startswith("level1/1_Matmul.py"))
    assert f"compile {timer.given['level1_1_Matmul']['compile']:.1f} µs" in line


def test_problems_pick_members_and_bad_input_is_one_line_and_non_zero(judged, tmp_path, monkeypatch):
    store, recorded = judged
    timer = Timer()
    monkeypatch.setattr(scoring, "time_pytorch", timer)
    outcome = add_missing_baselines(store, problems=["level1/2"], executor=LocalExecutor([]))
    assert [c[0] for c in timer.calls] == ["level1_2_ReLU"] and [m.action for m in outcome.members] == ["timed"]

    done = run_cli("kernelbench", "baselines", "--store", store, "--problems", "level3/9")
    assert done.returncode == 2 and done.stderr.splitlines()[0] == "error: level3/9: not a problem of batch_1"
    done = run_cli("kernelbench", "baselines", "batch_7", "--store", store)
    assert done.returncode == 2 and done.stderr.splitlines()[0] == f"error: no batch batch_7 in the store at {store}"
    empty = tmp_path / "empty"
    done = run_cli("kernelbench", "baselines", "--store", empty)
    assert done.returncode == 2 and done.stderr.splitlines()[0] == f"error: no run store at {empty}"
    assert not empty.exists()   # nothing is created
    RunStore.open(empty).close()
    done = run_cli("kernelbench", "baselines", "--store", empty)
    assert done.returncode == 2 and done.stderr.splitlines()[0] == f"error: no KernelBench batch in {empty}"
    assert "Traceback" not in done.stderr
    assert sum("compile" in s for s in steps(store).values()) == 1


def test_the_compile_only_timing_runs_the_harness_once_through_torch_compile(tmp_path, monkeypatch):
    """`time_pytorch(eager=False)`: only the torch.compile evaluation, its time or its reason."""
    from skillbase.harness import runtime

    asked = []
    us = random.uniform(5.0, 500.0)

    class Done:
        status, reason = "ok", ""

        def summary(self):
            return type("Summary", (), {"candidate_us": us})()

    monkeypatch.setattr(runtime, "evaluate", lambda task, candidate, options: asked.append(options) or Done())
    (tmp_path / "problem.json").write_text(json.dumps({"adapter": ADAPTER_VERSION}))
    # The adapter the compile time came through is recorded with it (scoring.compile_time).
    assert scoring.time_pytorch(tmp_path, compile=True, eager=False) == {"compile": us,
                                                                         "compile_adapter": ADAPTER_VERSION}
    assert [o.torch_compile for o in asked] == [True]
    asked.clear()
    assert set(scoring.time_pytorch(tmp_path)) == {"eager", "compile", "compile_adapter"}
    assert [o.torch_compile for o in asked] == [False, True]
