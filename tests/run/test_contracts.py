"""The run's typed contracts: statuses are the strings the store holds, the appliers, judges and the
evidence source implement their Protocols, and the loop (never an applier) pauses a run.

The loop runs here with stand-ins for the judge, the evidence and the decision (no nvcc, no GPU),
and with the real `ExternalApplier`: what is checked is the hand-over between them.
"""

from __future__ import annotations

import json
import random
import sqlite3
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from skillbase.agents.appliers import ExternalApplier, LLMApplier, PromptBuilder
from skillbase.agents.client import ChatClient, load_config
from skillbase.errors import InputError
from skillbase.evidence import Evidence
from skillbase.harness.result import CheckResult
from skillbase.run.evidence import EvidenceCollector
from skillbase.run.explain import explain_run, render_text
from skillbase.run.judges import STATUS_OF_CHECK, CompileOnlyJudge, HarnessJudge, verdict_of
from skillbase.run.loop import Loop
from skillbase.run.mechanical import MechanicalApplier
from skillbase.run.store import RunStore
from skillbase.run.types import (
    REPAIRABLE,
    Applier,
    ApplyRequest,
    Candidate,
    EvidenceSource,
    Judge,
    LoopState,
    Outcome,
    Paused,
    Produced,
    RunStatus,
    Settings,
    Status,
    Verdict,
)


def test_statuses_are_the_strings_the_store_has_always_held(tmp_path):
    assert [s.value for s in Status] == ["accepted", "slower", "incorrect", "build-failed", "crashed",
                                         "rejected-static", "quarantined", "unverified", "no-code", "llm-error",
                                         "pending"]
    assert [o.value for o in Outcome] == ["accepted", "rejected", "no-candidate"]
    assert [r.value for r in RunStatus] == ["running", "paused", "finished", "failed", "interrupted"]
    assert REPAIRABLE == {"build-failed", "incorrect", "crashed", "no-code"}
    assert set(STATUS_OF_CHECK.values()) <= set(Status)
    # Written and read back as plain text, in rows and in JSON step results alike.
    store = RunStore.open(tmp_path / "store")
    run_id = store.create_run("k.cu", "k", {})
    with store.transaction() as tx:
        tx.start_round(run_id, 0, "k0")
        attempt = tx.add_attempt(run_id, 0, 0, "mem.coalesce", {}, "k0", None)
        tx.finish_attempt(attempt, Status.BUILD_FAILED, reason="k.cu:3: error")
        tx.finish_round(run_id, 0, Outcome.REJECTED)
        tx.finish_step(run_id, "r0/v0/a0/verdict", asdict(Verdict(Status.BUILD_FAILED, "k.cu:3: error")))
    store.update_run(run_id, status=RunStatus.PAUSED)
    raw = sqlite3.connect(store.db_path)
    assert raw.execute("SELECT status, typeof(status) FROM attempts").fetchone() == ("build-failed", "text")
    assert raw.execute("SELECT outcome FROM rounds").fetchone() == ("rejected",)
    assert raw.execute("SELECT status FROM runs").fetchone() == ("paused",)
    assert '"status": "build-failed"' in raw.execute("SELECT result_json FROM steps").fetchone()[0]
    assert f"{Status.NO_CODE}" == "no-code" and json.dumps(Status.LLM_ERROR) == '"llm-error"'


def _prompts() -> PromptBuilder:
    return PromptBuilder("launch", "k", lambda skill_id: None, lambda skill_id, source, candidate: "")


def test_the_appliers_judges_and_evidence_source_implement_their_protocols(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-protocol-test")
    task = tmp_path / "k.cu"
    task.write_text("// k\n")
    appliers = [MechanicalApplier(lambda skill_id: None),
                LLMApplier(ChatClient(load_config(model="m", base_url="http://127.0.0.1:9/v1")), _prompts()),
                ExternalApplier(_prompts(), tmp_path / "run_1")]
    assert all(isinstance(applier, Applier) for applier in appliers)
    assert [applier.can_repair for applier in appliers] == [False, True, True]
    assert all(isinstance(judge, Judge) for judge in (CompileOnlyJudge(task), HarnessJudge(task)))
    assert isinstance(EvidenceCollector(task, profile=False), EvidenceSource)
    assert not isinstance(object(), Applier)


# -- the loop with stand-ins ------------------------------------------------------------------------

class CompilesEverything:
    """A judge for machines without a GPU: everything that has code is `unverified`, except what
    `failing` names (a substring of the source)."""

    def __init__(self, failing: str | None = None):
        self.failing = failing
        self.judged: list[str] = []

    def baseline(self, source: str) -> Verdict:
        return Verdict(Status.UNVERIFIED, "compiled (no GPU: not timed)")

    def judge(self, source, flags, best_source, best_flags) -> Verdict:
        self.judged.append(source)
        if self.failing and self.failing in source:
            return Verdict(Status.BUILD_FAILED, "k.cu:2: error: expected ';'", details="k.cu:2: error: expected ';'")
        return Verdict(Status.UNVERIFIED, "compiled and passed the static check")


class NoProfile:
    """Evidence without a profile or a compile; `past` as the session's collector gives it."""

    def __init__(self, past=dict):
        self.past = past

    def evidence(self, source, flags, history) -> Evidence:
        evidence = Evidence()
        evidence.history = {**history, "past": self.past()}
        return evidence


def _decide(skills: list[str]):
    def decide(evidence, state: LoopState):
        return [Candidate(skill=s, score=0.9 - i / 10, time_saved_fraction=0.5, rules=(f"rule.{s}",),
                          because=f"{s} fits")
                for i, s in enumerate(skills)], "{}"
    return decide


def _external_loop(store, run_id, task, tmp_path, judge, rounds=1, repairs=0, progress=None) -> Loop:
    applier = ExternalApplier(_prompts(), tmp_path / "runs" / f"run_{run_id}")
    return Loop(store, run_id, task, Settings(rounds=rounds, repairs=repairs, agent="external"), judge, NoProfile(),
                _decide(["mem.coalesce", "mem.vectorize"]), applier, progress=progress or (lambda m: None))


@pytest.fixture
def kernel(tmp_path) -> Path:
    task = tmp_path / "k.cu"
    task.write_text('__global__ void k() {}\nextern "C" void launch() { k<<<1, 1>>>(); }\n')
    return task


def test_the_loop_pauses_the_run_when_the_applier_asks(tmp_path, kernel):
    store = RunStore.open(tmp_path / "store")
    run_id = store.create_run(str(kernel), "k", {})
    messages: list[str] = []
    _external_loop(store, run_id, kernel, tmp_path, CompilesEverything(), progress=messages.append).run()
    run = store.get_run(run_id)
    assert run.status == RunStatus.PAUSED and run.stop_reason == "waiting for a candidate for mem.coalesce"
    # Nothing was recorded for the paused try: resume produces it again, with the candidate.
    assert store.attempts(run_id) == [] and store.step_result(run_id, "r0/v0/a0/candidate") is None
    assert messages[-2].startswith(f"run_{run_id} is waiting for a candidate applying mem.coalesce; the prompt is in")
    assert messages[-1] == f"hint: write the new kernel to a file, then: skillbase resume run_{run_id} --candidate FILE"
    waiting = json.loads((tmp_path / "runs" / f"run_{run_id}" / "waiting.json").read_text())
    assert waiting["key"] == "r0/v0/a0" and "mem.coalesce" in Path(waiting["prompt"]).read_text()


def test_an_applier_that_pauses_writes_nothing_to_the_store(tmp_path):
    class Pauses:
        can_repair = False

        def variants(self, skill, params, state):
            return [params]

        def produce(self, request: ApplyRequest, state: LoopState) -> Produced:
            raise Paused(request.skill, tmp_path / "prompt.md")

    assert isinstance(Pauses(), Applier)
    kernel = tmp_path / "k.cu"
    kernel.write_text("// k\n")
    store = RunStore.open(tmp_path / "store")
    run_id = store.create_run(str(kernel), "k", {})
    Loop(store, run_id, kernel, Settings(rounds=3, agent="external"), CompilesEverything(), NoProfile(),
         _decide(["mem.coalesce"]), Pauses()).run()
    assert store.get_run(run_id).status == RunStatus.PAUSED
    assert [e["kind"] for e in store.events(run_id)][-1] == "run-updated"


def test_each_candidate_answers_the_try_that_paused_even_rounds_later(tmp_path, kernel):
    """Round 0 replays from the store on the second resume; the candidate is for round 1's try."""
    store = RunStore.open(tmp_path / "store")
    run_id = store.create_run(str(kernel), "k", {})
    judge = CompilesEverything()
    _external_loop(store, run_id, kernel, tmp_path, judge, rounds=2).run()
    first, second = kernel.read_text() + "// first\n", kernel.read_text() + "// second\n"
    _external_loop(store, run_id, kernel, tmp_path, judge, rounds=2).run(external_candidate=first)
    assert store.get_run(run_id).stop_reason == "waiting for a candidate for mem.vectorize"
    _external_loop(store, run_id, kernel, tmp_path, judge, rounds=2).run(external_candidate=second)
    assert store.get_run(run_id).status == RunStatus.FINISHED
    assert judge.judged == [first, second]
    assert [(a["round_idx"], a["skill"], a["status"]) for a in store.attempts(run_id)] == [
        (0, "mem.coalesce", "unverified"), (1, "mem.vectorize", "unverified")]


def test_the_judgings_phases_are_kept_with_its_attempt(tmp_path, kernel):
    """Where a judgement's time went (a wait for the GPU's lock among it) travels in its Verdict, and the
    loop keeps it with the attempt (what `bench optimize-report` leaves the wait out of judge min by)."""
    rng = random.Random()
    phases = {"compile": rng.uniform(1, 9), "gpu_wait": rng.uniform(1, 99), "verify": rng.uniform(1, 9)}
    for status in ("ok", "incorrect", "crashed"):
        assert verdict_of(CheckResult(status=status, reason="r", phases_s=dict(phases))).phases_s == phases

    class Waits(CompilesEverything):
        def judge(self, source, flags, best_source, best_flags) -> Verdict:
            return replace(super().judge(source, flags, best_source, best_flags), phases_s=phases)

    store = RunStore.open(tmp_path / "store")
    run_id = store.create_run(str(kernel), "k", {})
    _external_loop(store, run_id, kernel, tmp_path, Waits()).run()
    _external_loop(store, run_id, kernel, tmp_path, Waits()).run(external_candidate=kernel.read_text() + "// x\n")
    assert [store.attempt_phases(a) for a in store.attempts(run_id)] == [phases]


def test_a_failed_candidate_is_repaired_by_the_next_one_not_judged_again(tmp_path, kernel):
    store = RunStore.open(tmp_path / "store")
    run_id = store.create_run(str(kernel), "k", {})
    judge = CompilesEverything(failing="// broken")
    _external_loop(store, run_id, kernel, tmp_path, judge, repairs=2).run()
    _external_loop(store, run_id, kernel, tmp_path, judge, repairs=2).run(external_candidate="// broken\n")
    # The repair waits for a new kernel: the debugger's prompt shows the compiler error.
    assert judge.judged == ["// broken\n"] and store.get_run(run_id).status == RunStatus.PAUSED
    waiting = json.loads((tmp_path / "runs" / f"run_{run_id}" / "waiting.json").read_text())
    assert waiting["key"] == "r0/v0/a1" and "expected ';'" in Path(waiting["prompt"]).read_text()
    _external_loop(store, run_id, kernel, tmp_path, judge, repairs=2).run(external_candidate="// fixed\n")
    assert [a["status"] for a in store.attempts(run_id)] == ["build-failed", "unverified"]
    assert store.get_run(run_id).status == RunStatus.FINISHED


def test_explain_shows_what_past_runs_said_about_a_candidate(tmp_path, kernel):
    """The evidence's `history.past` (the store's other runs, per skill) is shown beside the candidate."""
    store = RunStore.open(tmp_path / "store")
    flags = MechanicalApplier(lambda skill_id: {"kind": "compile_flags", "flags": ["-O3"]})
    for _ in range(2):
        run_id = store.create_run(str(kernel), "k", {})
        past = NoProfile(lambda run_id=run_id: store.skill_outcome_stats(exclude_run=run_id))
        Loop(store, run_id, kernel, Settings(rounds=1, agent="none"), CompilesEverything(), past,
             _decide(["tune.flags", "mem.coalesce"]), flags).run()
    first, second = (explain_run(store, r.id) for r in reversed(store.list_runs()))
    assert first["rounds"][0]["decision"]["past"] == {}
    assert second["rounds"][0]["decision"]["past"] == {
        "tune.flags": {"tried": 1, "accepted": 0, "failed": 1, "mean_accepted_speedup": None}}
    assert "past runs" not in render_text(first)
    lines = render_text(second).splitlines()
    assert "    1. tune.flags  score 0.9  est. time saved 50%  past runs: accepted 0 of 1" in lines
    assert "    2. mem.coalesce  score 0.8  est. time saved 50%" in lines


def test_each_profiled_round_collects_the_runs_own_metrics_and_reads_the_spec_once(task, monkeypatch):
    # The session passes its engine's metric list (a user's --extra-rules may read more than the
    # built-in rules); profiling records what the task allows, so the collector does not read it again.
    from types import SimpleNamespace

    import skillbase.run.evidence as collector_module
    from skillbase.evidence import build_evidence

    calls, attached = [], []

    def fake_profile(path, **options):
        calls.append(options)
        return SimpleNamespace(evidence=build_evidence(source=path))

    monkeypatch.setattr(collector_module, "profile_evidence", fake_profile)
    monkeypatch.setattr(collector_module, "attach_task", lambda evidence, path: attached.append(path))
    collector = EvidenceCollector(task, profile=True, metrics=["sm__throughput.avg.pct_of_peak_sustained_elapsed"])
    collector.evidence(task.read_text(), (), {"tried": []})
    assert calls[0]["metrics"] == ["sm__throughput.avg.pct_of_peak_sustained_elapsed"] and not attached
    EvidenceCollector(task, profile=False).evidence(task.read_text(), (), {"tried": []})
    assert len(attached) == 1


def test_a_task_that_cannot_judge_any_kernel_stops_the_run_instead_of_blaming_the_kernel():
    """Spec sanity (an all-zero reference, KernelBench level2/9's at its own sizes) says nothing of the candidate:
    no verdict (a repair prompt would send the coder after a fault the kernel does not have), a one-line error."""
    reason = f"spec sanity at default: reference output out{random.randrange(99)} is all zeros: a kernel that " \
             "writes zeros would pass"
    with pytest.raises(InputError) as caught:
        verdict_of(CheckResult(status="spec-error", reason=reason))
    assert caught.value.message == f"the task cannot judge a kernel: {reason}" and "resume" in caught.value.hint
    assert "spec-error" not in STATUS_OF_CHECK
