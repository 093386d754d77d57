"""Where a job's time goes and a time limit that holds (skillbase.harness.phases, jobs.TimeBudget): phases
are exclusive and carried from the harness into every job result and a batch's progress line; a job does
not start when the time left is shorter than the longest of its kind so far (or the default estimate)."""

from __future__ import annotations

import random
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from skillbase.harness import jobs
from skillbase.harness.jobs import (
    DEFAULT_ESTIMATE_S,
    NOT_STARTED,
    OWN_HISTORY_MARGIN,
    Job,
    LocalExecutor,
    TimeBudget,
    not_started,
)
from skillbase.harness.phases import Phases, collecting, judged_line, merge, record


class FakeClock:
    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_phases_are_exclusive_so_they_never_add_up_to_more_than_the_wall_time():
    clock = FakeClock(0.0)
    phases = Phases(clock)
    a, b, c = (round(random.uniform(0.5, 50), 3) for _ in range(3))
    with phases("timing"):
        clock.now += a
        with phases("inputs"):      # inputs drawn while timing: counted once, as inputs
            clock.now += b
        clock.now += c
    assert phases.to_json() == {"timing": pytest.approx(a + c), "inputs": pytest.approx(b)}
    assert sum(phases.seconds.values()) == pytest.approx(clock.now)


def test_what_the_harness_records_during_a_job_comes_back_in_its_result():
    part = {"inputs": round(random.uniform(1, 9), 3), "compile": 2.5}
    with collecting() as found:
        record(part)
        record({"inputs": 1.0})
    record({"lost": 1.0})             # nothing collecting: dropped
    assert found == merge(part, {"inputs": 1.0}) and found["inputs"] == pytest.approx(part["inputs"] + 1)
    results = LocalExecutor([]).run([Job("echo", "skillbase.harness.phases:record", part)], lambda r: None)
    assert results[0].error is None and results[0].phases_s == part and results[0].wall_s >= 0
    assert results[0].to_json()["phases_s"] == part


def test_carving_moves_a_childs_phase_out_of_the_one_that_contained_it():
    clock = FakeClock(0.0)
    phases = Phases(clock)
    whole, part = round(random.uniform(5, 50), 3), round(random.uniform(0.1, 4), 3)
    with phases("profile"):
        clock.now += whole
    phases.carve("gpu_wait", part, out_of="profile")
    assert phases.seconds == {"profile": pytest.approx(whole - part), "gpu_wait": pytest.approx(part)}
    phases.carve("gpu_wait", 10 * whole, out_of="profile")     # never more than the phase had
    assert phases.seconds == {"profile": pytest.approx(0.0), "gpu_wait": pytest.approx(whole)}
    phases.carve("other", 1.0, out_of="absent")
    assert set(phases.seconds) == {"profile", "gpu_wait"}


def test_a_profiled_workers_wait_for_the_gpu_lock_is_not_counted_as_profiling(monkeypatch, tmp_path):
    """ncu's worker waits for the GPU's lock inside the host's `profile` phase: its `gpu_wait` comes out of it."""
    from skillbase.harness import profile
    from skillbase.harness.runtime import WorkerOutcome

    ran, waited = random.uniform(0.15, 0.3), round(random.uniform(0.02, 0.1), 3)
    reports = []
    monkeypatch.setattr(profile, "ncu_path", lambda: "ncu")
    monkeypatch.setattr(profile, "require_gpu", lambda: None)
    monkeypatch.setattr(profile, "build", lambda *a, **k: SimpleNamespace(key="0" * 40, library=tmp_path / "k.so"))

    def ncu_command(ncu, base, metrics, full):
        reports.append(base.with_name(base.name + ".ncu-rep"))
        return [ncu]

    def run_worker(job, **kwargs):      # the ncu process: it ran `ran` s, its worker waited `waited` s of them
        time.sleep(ran)
        reports[0].write_text("report")
        return WorkerOutcome({"ok": True, "result": {"phases_s": {"gpu_wait": waited, "run": 0.01}}}, 0, False, 60.0)

    monkeypatch.setattr(profile, "ncu_command", ncu_command)
    monkeypatch.setattr(profile, "run_worker", run_worker)
    with collecting() as found:
        profile.profile_kernel(Path(__file__).parents[2] / "examples" / "vector_add" / "vector_add.cu",
                               out=tmp_path / "profiles")
    assert found["gpu_wait"] == pytest.approx(waited, abs=1e-3)
    assert found["profile"] == pytest.approx(ran - waited, abs=0.02)


def test_the_progress_line_says_where_a_judgement_went():
    line = judged_line("run_4", "judged", 112.34, {"inputs": 80.12, "reference": 20.4, "load": 0.01, "verify": 7.0})
    assert line == "run_4: judged in 112.3 s (inputs 80.1, reference 20.4, verify 7.0)"
    assert judged_line("run_5", "deferred", None, {}) == "run_5: deferred"


def test_a_job_is_not_started_when_the_time_left_is_shorter_than_the_longest_of_its_kind(monkeypatch):
    clock = FakeClock()
    takes = [random.uniform(10, 40), random.uniform(50, 90), random.uniform(1, 5)]

    def fake_run(job):             # a judgement that takes its payload's seconds of the fake clock
        clock.now += job.payload["takes"]
        return job.payload["takes"]

    monkeypatch.setattr(jobs, "run_job", fake_run)
    limit = sum(takes[:2]) + takes[1] - 1        # after two judgements, less time left than the longest took
    todo = [Job("advance-run", "fake:judge", {"takes": t}, label=f"run_{i}") for i, t in enumerate(takes)]
    results = LocalExecutor([], deadline=clock.now + limit, clock=clock).run(todo, lambda r: None)
    assert [r.value for r in results[:2]] == takes[:2]
    refused = results[2].error
    assert not_started(refused) and results[2].wall_s is None
    assert refused.startswith(f"not started: time limit: ~{takes[1] - 1:.0f} s left, a judgement took up to "
                              f"{takes[1]:.0f} s"), refused


def test_before_any_job_the_default_estimate_decides_and_after_the_deadline_nothing_starts():
    clock = FakeClock()
    estimate = DEFAULT_ESTIMATE_S["advance-run"]
    judgement = Job("advance-run", "fake:judge")
    assert TimeBudget(clock.now + estimate + 1, clock).refusal(judgement) is None
    short = TimeBudget(clock.now + estimate - 1, clock).refusal(judgement)
    assert not_started(short) and "is expected to take" in short
    assert TimeBudget(clock.now - 1, clock).refusal(judgement) == NOT_STARTED
    assert TimeBudget(clock.now + 1, clock).refusal(Job("echo", "json:dumps")) is None   # no estimate for it
    assert TimeBudget(None, clock).refusal(judgement) is None


def test_a_job_whose_own_history_is_longer_than_its_kinds_waits_for_that_much_time():
    """A run whose earlier judgements took minutes is not started on the strength of this command's short ones."""
    clock = FakeClock()
    own = random.uniform(200, 400)
    slow = Job("advance-run", "fake:judge", label="run_7", estimate_s=own)
    budget = TimeBudget(clock.now + own - 1, clock)
    refused = budget.refusal(slow)
    assert not_started(refused) and f"run_7's earlier work took up to {own:.0f} s" in refused, refused
    assert budget.refusal(Job("advance-run", "fake:judge", label="run_8")) is None     # no history: its kind's 60 s
    assert TimeBudget(clock.now + own + 1, clock).refusal(slow) is None
    # Shorter than its kind: its own history with a margin for neighbours, up to the kind's figure (60 s here).
    kind = DEFAULT_ESTIMATE_S["advance-run"]
    quick = random.uniform(5, 0.9 * kind / OWN_HISTORY_MARGIN)
    short = Job("advance-run", "fake:judge", label="run_9", estimate_s=quick)
    allowing = quick * OWN_HISTORY_MARGIN
    assert TimeBudget(clock.now + allowing + 1, clock).refusal(short) is None
    refused = TimeBudget(clock.now + allowing - 1, clock).refusal(short)
    assert not_started(refused) and f"run_9's earlier work took up to {quick:.0f} s, so allowing {allowing:.0f} s" \
        in refused, refused
    near = Job("advance-run", "fake:judge", label="run_10", estimate_s=0.9 * kind)   # x1.5 would pass the kind's
    assert "is expected to take 60 s" in TimeBudget(clock.now + kind - 1, clock).refusal(near)
    assert TimeBudget(clock.now + kind + 1, clock).refusal(near) is None
    assert Job.from_json(slow.to_json()) == slow                                        # the estimate travels (Ray)


def test_a_job_killed_by_the_ray_per_job_timeout_counts_with_the_time_it_ran(monkeypatch):
    """`--executor ray --job-timeout`: the killed job's result says how long it ran (at least its timeout),
    so the budget holds the next job of its kind to that; a job that finished keeps its own wall_s."""
    ray = pytest.importorskip("ray")
    from skillbase.harness import ray_executor

    monkeypatch.setattr(ray.util, "get_node_ip_address", lambda: "127.0.0.1")   # no cluster: run_on_node alone
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[1] / "harness"))   # ray_kit's jobs
    timeout = round(random.uniform(1.0, 2.0), 2)
    hang = Job("advance-run", "ray_kit:hold_gpu_payload", {"seconds": 60}, label="run_1")
    quick = Job("advance-run", "ray_kit:hold_gpu_payload", {"seconds": 0}, label="run_2")
    executor = object.__new__(ray_executor.RayExecutor)      # its `_result`: a task's dict -> the JobResult
    executor.ray = SimpleNamespace(get=lambda data: data, exceptions=ray.exceptions)
    killed = executor._result([hang], 0, ray_executor.run_on_node(hang.to_json(), None, timeout))
    finished = executor._result([quick], 0, ray_executor.run_on_node(quick.to_json(), None, timeout))
    assert killed.error == f"the job did not finish within {timeout:g} s" and killed.wall_s >= timeout
    assert finished.error is None and finished.value["start"] <= finished.value["end"]
    assert 0 <= finished.wall_s < timeout          # what the job's own process measured, as before

    clock = FakeClock()
    budget = TimeBudget(clock.now + killed.wall_s - 0.5, clock, defaults={})   # no default estimate to hide it
    budget.ran(finished)
    assert budget.refusal(hang) is None            # the quick one alone: time enough
    budget.ran(killed)
    refused = budget.refusal(hang)
    assert not_started(refused) and f"took up to {killed.wall_s:.0f} s" in refused, refused
