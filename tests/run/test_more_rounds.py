"""`skillbase resume --more-rounds N` (issue 16): a run that spent its --rounds reopened and continued.

Real components: the naive-GEMM fixture's saved H200 report as each round's evidence (the evidence collector,
nvcc's ptxas), the engine and the corpus, the task's work model against the H200's datasheet peaks (the
run's standing), the loop, the session's wiring of a resumed run and a real SQLite store. This machine has
no GPU: the runs "on the H200" were made with a stand-in judge that times the baseline at a drawn share of
its roofline floor and finds every candidate slower (or, where said, faster), and a coder that answers each
prompt at once; reopened, they are continued by the session as `skillbase resume` continues them, with the
external applier (`--agent external`), which pauses at the next prompt.
"""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
from dataclasses import asdict
from pathlib import Path

import jsonschema
import pytest
from cli_kit import run_main
from click.testing import CliRunner
from loop_kit import REPORT, TILED, analysed_before_h74

import skillbase.run.reopen as reopen_module
from skillbase import __version__
from skillbase.agents.appliers import ExternalApplier
from skillbase.cli import cli
from skillbase.corpus.load import load_corpus
from skillbase.documents import schema_path
from skillbase.engine import Engine
from skillbase.errors import InputError, SkillbaseError
from skillbase.run.evidence import EvidenceCollector
from skillbase.run.explain import explain_run, render_text
from skillbase.run.loop import Loop, run_ended
from skillbase.run.pending import list_pending, run_folder
from skillbase.run.redecide import redecide
from skillbase.run.reopen import reopen
from skillbase.run.session import (
    make_decide,
    mechanical_applier,
    prompt_builder,
    resume_run,
    run_standing,
    start_run,
    task_digest,
)
from skillbase.run.store import RunStore
from skillbase.run.types import ApplyRequest, Ended, LoopState, Produced, RunStatus, Settings, Status, Verdict
from skillbase.task import load_task

pytestmark = pytest.mark.nvcc

H200 = "NVIDIA H200"
PRESET = "default"          # the fixture's scored size, with a work model: its floor is known on the H200


class TimedAt:
    """The judge in place of the harness: the baseline at `baseline_us`; a candidate slower, or with
    `faster`, 10 % faster than the current best each time (so every round accepts)."""

    def __init__(self, baseline_us: float, faster: bool = False):
        self.best_us, self.faster = baseline_us, faster

    def baseline(self, source: str) -> Verdict:
        return Verdict(Status.ACCEPTED, "verified; timed", runtime_us=self.best_us)

    def judge(self, source, flags, best_source, best_flags) -> Verdict:
        if self.faster:
            before, self.best_us = self.best_us, self.best_us * 0.9
            return Verdict(Status.ACCEPTED, "verified; faster", runtime_us=self.best_us, baseline_us=before,
                           speedup=before / self.best_us, spread=0.005)
        slower = self.best_us * 1.02
        return Verdict(Status.SLOWER, "verified; no faster than the best", runtime_us=slower,
                       baseline_us=self.best_us, speedup=self.best_us / slower, spread=0.005)


class AnswersAtOnce:
    """The coder: answers the prompts of rounds before `waits_at` at once; from that round on, the external
    applier writes the prompt and the run pauses (`waits_at` None: never)."""

    can_repair = False

    def __init__(self, external: ExternalApplier, waits_at: int | None = None):
        self.external, self.waits_at = external, waits_at

    def variants(self, skill: str, params: dict, state: LoopState) -> list[dict]:
        return [params]

    def produce(self, request: ApplyRequest, state: LoopState) -> Produced:
        if self.waits_at is not None and int(request.key.split("/")[0][1:]) >= self.waits_at:
            return self.external.produce(request, state)
        return Produced(source=f"{state.best_source}\n// {request.skill} {json.dumps(request.params)}\n")


def floor_us(task: Path) -> float:
    state = LoopState(best_source="", best_us=1.0, baseline_us=1.0)
    return run_standing(task, load_task(task), PRESET, H200)(state).floor_us


def h200_run(task: Path, store_path: Path, share: float, rounds: int = 2, stop_at_floor: float = 0.0,
             faster: bool = False, waits_at: int | None = None) -> str:
    """An external run of the fixture "on the H200" whose baseline runs at `share` of its floor, wired as the
    session wires one (the manifest keys `resume` reads), run until it ends (or pauses at round `waits_at`)."""
    settings = Settings(rounds=rounds, repairs=0, agent="external", stop_at_floor=stop_at_floor)
    spec = load_task(task)
    corpus = load_corpus()
    standing = run_standing(task, spec, PRESET, H200)
    decide = make_decide("external", Engine.load(), corpus, mechanical_applier(corpus, settings),
                         standing=standing, stop_at_floor=stop_at_floor)
    store = RunStore.open(store_path)
    run_id = store.create_run(str(task), task.stem, {})
    store.set_manifest(run_id, {"settings": asdict(settings), "gpu": H200, "gpu_run": True, "preset": PRESET,
                                "task_digest": task_digest(task), "task_path": str(task), "agent": "external"})
    external = ExternalApplier(prompt_builder(task, spec, corpus, standing), run_folder(store, run_id))
    loop = Loop(store, run_id, task, settings, TimedAt(floor_us(task) / share, faster),
                EvidenceCollector(task, profile=False, saved_report=REPORT), decide, AnswersAtOnce(external, waits_at))
    store.claim(run_id)
    loop.run()
    return store.get_run(run_id).name


def compile_only_run(task: Path, store_path: Path, rounds: int = 1) -> str:
    """An external compile-only run (`optimize --no-gpu`) whose every prompt was answered until it ended."""
    settings = Settings(rounds=rounds, repairs=0, agent="external")
    summary = start_run(task, settings, store_path=store_path, gpu=False, saved_report=REPORT, progress=lambda m: 0)
    while summary["status"] == "paused":
        summary = resume_run(summary["run"], store_path=store_path, candidate=TILED, progress=lambda m: 0)
    return summary["run"]


def snapshot(store: Path) -> tuple[list[str], dict[str, str]]:
    with sqlite3.connect(store / "runs.sqlite3") as db:
        rows = list(db.iterdump())
    return rows, {str(p.relative_to(store)): hashlib.sha256(p.read_bytes()).hexdigest()
                  for p in sorted(store.rglob("*")) if p.is_file() and not p.name.startswith("runs.sqlite3")}


def valid(document: dict, kind: str) -> dict:
    jsonschema.Draft202012Validator(json.loads(schema_path(kind).read_text())).validate(document)
    return document


def ended(store_path: Path, run: str) -> Ended:
    store = RunStore.open(store_path)
    return run_ended(store, store.get_run(run))[0]


# -- reopening continues the run as a larger --rounds would have -----------------------------------------

def test_a_reopened_run_pauses_at_the_prompt_a_larger_rounds_would_have_written(task, tmp_path):
    share = random.Random().uniform(0.1, 0.45)
    ended_run = h200_run(task, tmp_path / "ended", share, rounds=2)
    assert ended(tmp_path / "ended", ended_run) == Ended.ROUNDS
    # the reference: the same run with --rounds 3 from the start, its round 2 waiting for the coder
    longer = h200_run(task, tmp_path / "longer", share, rounds=3, waits_at=2)
    [expected] = list_pending(tmp_path / "longer")
    assert (expected.run, expected.key) == (longer, "r2/v0/a0")

    outcome = reopen(tmp_path / "ended", runs=[ended_run], more_rounds=2)
    [member] = outcome.members
    assert (member.action, member.status) == ("reopened", "paused"), member.reason
    assert member.reason.startswith(f"2 -> 4 rounds (ended after its 2 rounds at {100 * share:.0f} % of its "
                                    "roofline floor; asked for by name); then: waiting for a candidate for ")
    [waiting] = list_pending(tmp_path / "ended")
    assert outcome.pending == [waiting]
    assert (waiting.run, waiting.key, waiting.round, waiting.kind) == (ended_run, "r2/v0/a0", 2, "coder")
    assert waiting.skill == expected.skill
    assert waiting.prompt_path.read_text() == expected.prompt_path.read_text()   # the same prompt, byte for byte

    store = RunStore.open(tmp_path / "ended")
    run = store.get_run(ended_run)
    reference = RunStore.open(tmp_path / "longer")
    assert store.step_result(run.id, "r2/decision") == reference.step_result(1, "r2/decision")
    assert run.manifest["settings"]["rounds"] == 4 and run_ended(store, run)[0] == Ended.WAITING
    # round 2's evidence is round 1's document (nothing was accepted: the same kernel) with today's memory
    step = store.step_result(run.id, "r2/evidence")
    assert step["reused_from"] == 1
    reused, original = (json.loads(store.artifacts.get_text(store.step_result(run.id, f"r{i}/evidence")["document"]))
                        for i in (2, 1))
    skills = [store.step_result(run.id, f"r{i}/decision")["skill"] for i in (0, 1)]
    assert (original["history"]["tried"], reused["history"]["tried"]) == (skills[:1], skills)
    assert {k: v for k, v in reused.items() if k != "history"} == {k: v for k, v in original.items() if k != "history"}

    # the reopening is in the run's trace: when, by how many rounds, why
    [record] = store.rounds_added(run.id)
    assert (record["more"], record["from"], record["to"], record["round"], record["evidence_from"]) == (2, 2, 4, 2, 1)
    report = valid(explain_run(store, run.name), "explain")
    [shown] = report["reopened"]
    assert shown["why"] == f"ended after its 2 rounds at {100 * share:.0f} % of its roofline floor; asked for by name"
    text = render_text(report).splitlines()
    line = next(i for i, t in enumerate(text) if t.startswith("reopened "))
    assert text[line].endswith(": 2 more rounds (2 -> 4): " + shown["why"] + "; round 2 reuses round 1's evidence")
    assert text.index("round 1: rejected") < line < text.index("round 2: started")


def test_a_compile_only_run_reopened_from_the_command_line(task, tmp_path):
    store_path = tmp_path / "store"
    more = random.Random().randint(1, 3)
    name = compile_only_run(task, store_path, rounds=1)
    assert ended(store_path, name) == Ended.ROUNDS
    result = CliRunner().invoke(cli, ["resume", name, "--more-rounds", str(more), "--store", str(store_path),
                                      "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    document = valid(json.loads(result.stdout), "batch")
    [member] = document["members"]
    assert (member["run"], member["action"], member["status"]) == (name, "reopened", "paused")
    [waiting] = document["pending"]
    assert (waiting["run"], waiting["key"], waiting["round"]) == (name, "r1/v0/a0", 1)
    [listed] = list_pending(store_path)
    assert listed.skill == waiting["skill"] and listed.prompt_path is not None
    assert "its roofline floor unknown (no GPU: this run is compile-only)" in member["reason"]

    # the new rounds are run like any: answered, the run ends for its rounds again, at 1 + more
    summary = resume_run(name, store_path=store_path, candidate=TILED, progress=lambda m: 0)
    while summary["status"] == "paused":
        summary = resume_run(name, store_path=store_path, candidate=TILED, progress=lambda m: 0)
    assert (summary["status"], summary["stop_reason"]) == ("finished", f"ran {1 + more} rounds")
    assert ended(store_path, name) == Ended.ROUNDS and len(summary["rounds"]) == 1 + more

    text = CliRunner().invoke(cli, ["resume", name, "--more-rounds", "1", "--store", str(store_path)])
    assert text.exit_code == 0 and f"{name}: reopened -- {1 + more} -> {2 + more} rounds" in text.output
    assert f"{name} (naive_gemm): coder round {1 + more}" in text.output


# -- which runs: --all, --below-floor, --batch; other ends left alone -------------------------------------

def test_all_picks_the_runs_below_the_floor_share_and_leaves_the_rest_alone(task, tmp_path):
    rng = random.Random()
    store_path = tmp_path / "store"
    low, mid = rng.uniform(0.1, 0.45), rng.uniform(0.55, 0.74)
    far = h200_run(task, store_path, low)
    nearer = h200_run(task, store_path, mid)
    near_floor = h200_run(task, store_path, rng.uniform(0.8, 0.95), rounds=12, stop_at_floor=0.75)
    no_floor = compile_only_run(task, store_path)
    waiting = h200_run(task, store_path, low, rounds=3, waits_at=1)
    failed = h200_run(task, store_path, low)
    store = RunStore.open(store_path)
    store.update_run(store.get_run(failed).id, status=RunStatus.FAILED, stop_reason="stopped by an error")
    assert ended(store_path, near_floor) == Ended.NEAR_FLOOR
    seen = {name: store.last_event_id(store.get_run(name).id) for name in (nearer, near_floor, no_floor, failed,
                                                                               waiting)}
    outcome = reopen(store_path, all_runs=True, more_rounds=1, go_on=False)
    found = {m.run: (m.action, m.reason) for m in outcome.members}
    assert set(found) == {far, nearer, near_floor, no_floor, failed}        # the paused run is not ended
    assert found[far][0] == "reopened"
    assert found[nearer] == ("left-alone", f"{nearer}: at {100 * mid:.0f} % of its roofline floor, not below 50 % "
                                           "(--below-floor 0.5); left as it is")
    assert found[near_floor][0] == "left-alone" and found[near_floor][1].startswith(f"{near_floor} ended near-floor (")
    assert found[failed] == ("left-alone", f"{failed} ended error (stopped by an error); only a run that spent its "
                                           "--rounds gets more; left as it is")
    assert found[no_floor] == ("left-alone", f"{no_floor}: its roofline floor unknown (no GPU: this run is "
                                             "compile-only); --below-floor picks only runs with a floor (name it "
                                             "to reopen it); left as it is")
    # every write to a run adds an event: the runs left alone were not written
    assert {name: store.last_event_id(store.get_run(name).id) for name in seen} == seen
    reopened = store.get_run(far)
    assert (reopened.status, reopened.manifest["settings"]["rounds"]) == (RunStatus.INTERRUPTED, 3)
    assert reopened.stop_reason == (f"reopened for 1 more round (2 -> 3; round 2's evidence reused from round 1); "
                                    f"`skillbase resume {far}` goes on")

    # a higher share takes the nearer run too, from the command line, one batch at a time
    batch = store.create_batch({"settings": {"agent": "external"}, "dtype": "fp32", "members": []})
    store.add_batch_run(batch, store.get_run(nearer).id, "naive_gemm", "fp32")
    result = CliRunner().invoke(cli, ["resume", "--all", "--more-rounds", "2", "--below-floor", f"{mid + 0.01:.3f}",
                                      "--batch", f"batch_{batch}", "--store", str(store_path), "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    document = valid(json.loads(result.stdout), "batch")
    assert [(m["run"], m["action"], m["status"]) for m in document["members"]] == [(nearer, "reopened", "paused")]
    assert [(p["run"], p["key"]) for p in document["pending"]] == [(nearer, "r2/v0/a0")]
    assert store.get_run(nearer).manifest["settings"]["rounds"] == 4


def test_a_run_whose_last_round_accepted_waits_for_its_gpu_reopened(task, tmp_path):
    store_path = tmp_path / "store"
    name = h200_run(task, store_path, random.Random().uniform(0.1, 0.3), rounds=1, faster=True)
    store = RunStore.open(store_path)
    assert [r["outcome"] for r in store.rounds(store.get_run(name).id)] == ["accepted"]
    assert ended(store_path, name) == Ended.ROUNDS
    [member] = reopen(store_path, runs=[name], more_rounds=3).members
    assert (member.action, member.status) == ("reopened", "interrupted")
    assert member.reason.endswith(f"round 1's kernel is profiled on its GPU ({H200}), not here: `skillbase resume "
                                  f"{name}` (a batch's: `skillbase resume --all`) on a GPU machine goes on")
    run = store.get_run(name)
    assert run.manifest["settings"]["rounds"] == 4 and store.step_result(run.id, "r1/evidence") is None
    assert run.stop_reason.endswith("`skillbase resume run_1` goes on on a GPU machine")
    assert list_pending(store_path) == []
    assert render_text(explain_run(store, name)).splitlines()[-1].endswith("round 1 profiles its kernel anew")


RESTRICT = ("const float* A, const float* B", "const float* __restrict__ A, const float* __restrict__ B")


def test_a_reopened_round_reads_its_kernel_with_todays_static_analysis(task, tmp_path, monkeypatch):
    """run_69 of the LLM bench run (issue 16): its inputs all const __restrict__, its rounds recorded when the
    analyser counted the output as a read-only input too (before H74's fix), so its stored evidence made
    mem.readonly_path.not-restrict fire; reopened, its next round is decided on today's reading of its kernel."""
    task.write_text(task.read_text().replace(*RESTRICT))
    share = random.Random().uniform(0.1, 0.45)
    with monkeypatch.context() as patch:
        analysed_before_h74(patch)
        ended_run = h200_run(task, tmp_path / "ended", share, rounds=2)
    store = RunStore.open(tmp_path / "ended")
    run = store.get_run(ended_run)
    stored = json.loads(store.artifacts.get_text(store.step_result(run.id, "r1/evidence")["document"]))
    assert stored["static"]["kernels"]["sgemm_naive"]["global_access"]["pointer_inputs"] == 3
    # the reference: the same run under today's analyser with --rounds 3 from the start, its round 2 waiting
    h200_run(task, tmp_path / "longer", share, rounds=3, waits_at=2)
    [expected] = list_pending(tmp_path / "longer")
    assert expected.skill != "mem.readonly_path"

    [member] = reopen(tmp_path / "ended", runs=[ended_run], more_rounds=1).members
    assert (member.action, member.status) == ("reopened", "paused"), member.reason
    [waiting] = list_pending(tmp_path / "ended")
    assert (waiting.key, waiting.skill) == ("r2/v0/a0", expected.skill)
    assert waiting.prompt_path.read_text() == expected.prompt_path.read_text()
    decided = store.step_result(run.id, "r2/decision")
    assert "mem.readonly_path" not in [c["skill"] for c in decided["candidates"]]
    # round 2's evidence: round 1's measurements and ptxas, today's static features, and a note saying so
    reused = json.loads(store.artifacts.get_text(store.step_result(run.id, "r2/evidence")["document"]))
    assert reused["static"]["kernels"]["sgemm_naive"]["global_access"]["pointer_inputs"] == 2
    assert all(reused[k] == stored[k] for k in ("kernels", "ptxas", "roofline", "device", "timing"))
    change = "global_access.pointer_inputs 3 -> 2"
    assert reused["producer"]["static_refresh"]["changed"] == [change]
    assert sum(note.startswith("static features recomputed from the round's kernel") for note in reused["notes"]) == 1
    [record] = store.rounds_added(run.id)
    assert record["static_refresh"] == reused["producer"]["static_refresh"]
    text = render_text(valid(explain_run(store, run.name), "explain")).splitlines()
    round_2 = text.index("round 2: started")
    assert text[round_2 + 2] == f"  static features: recomputed by skillbase {__version__}: {change}"
    assert not any(line.startswith("  static features") for line in text[:round_2])
    # redecide reads the same evidence: the same decision
    [again] = redecide(tmp_path / "ended", runs=[ended_run], dry_run=True).runs
    assert (again.action, again.new_skill) == ("unchanged", expected.skill)


# -- a kill, and bad input ------------------------------------------------------------------------------

def test_a_reopening_killed_before_the_run_went_on_is_continued_by_resume(task, tmp_path, monkeypatch, capsys):
    store_path = tmp_path / "store"
    share = random.Random().uniform(0.1, 0.45)
    name = h200_run(task, store_path, share)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(reopen_module, "resume_run", killed)
        with pytest.raises(KeyboardInterrupt):
            reopen(store_path, runs=[name], more_rounds=1)
    store = RunStore.open(store_path)
    assert store.get_run(name).status == RunStatus.INTERRUPTED and list_pending(store_path) == []
    code, out, err = run_main(capsys, "resume", name, "--more-rounds", "1", "--store", str(store_path))
    assert (code, out) == (2, "") and err.startswith(f"error: {name} is interrupted, not ended: only a run that "
                                                      "ended gets more rounds; nothing was changed\n")

    summary = resume_run(name, store_path=store_path, progress=lambda m: 0)     # `skillbase resume run_N`
    assert summary["status"] == "paused" and summary["pending"]["key"] == "r2/v0/a0"
    h200_run(task, tmp_path / "longer", share, rounds=3, waits_at=2)     # what --rounds 3 would have asked
    assert summary["pending"]["skill"] == list_pending(tmp_path / "longer")[0].skill
    assert len(store.rounds_added(store.get_run(name).id)) == 1


def test_bad_input_is_one_line_and_changes_nothing(task, tmp_path, capsys):
    store_path = tmp_path / "store"
    name = h200_run(task, store_path, 0.3)
    paused = h200_run(task, store_path, 0.3, rounds=3, waits_at=1)
    RunStore.open(store_path).list_batches()     # a writer makes the batch tables on first use: made here
    before = snapshot(store_path)

    def refused(*args: str) -> str:
        code, out, err = run_main(capsys, "resume", *args, "--store", str(store_path))
        assert code == 2 and out == "" and "Traceback" not in err, (code, out, err)
        return err

    assert "no run run_99" in refused("run_99", "--more-rounds", "1")
    assert f"{paused} is paused, not ended" in refused(paused, "--more-rounds", "1")
    assert "--more-rounds" in refused(name, "--more-rounds", "0")
    assert "--below-floor goes with --more-rounds" in refused(name, "--below-floor", "0.5")
    assert "--below-floor and --batch go with --all" in refused(name, "--more-rounds", "1", "--below-floor", "0.5")
    assert "not --candidate" in refused(name, "--more-rounds", "1", "--candidate", str(task))
    assert "which runs?" in refused("--more-rounds", "1")
    assert "--below-floor" in refused("--all", "--more-rounds", "1", "--below-floor", "0")
    with pytest.raises(InputError, match="give a whole number of rounds from 1"):
        reopen(store_path, runs=[name], more_rounds=0)
    with pytest.raises(SkillbaseError, match="no batch batch_7"):
        reopen(store_path, all_runs=True, more_rounds=1, batch="batch_7")
    assert snapshot(store_path) == before


def test_a_timed_run_does_not_go_on_on_another_gpu_model(task, tmp_path, monkeypatch, capsys):
    """A run timed on the H200 and resumed on an H100 (the device tool lends either): its baseline and best
    are H200 times, so its next verdict, evidence and floor would be another GPU's and its speedup a ratio of
    the two. It is refused in one line naming both GPUs, and nothing in the store changes."""
    store_path = tmp_path / "store"
    paused = h200_run(task, store_path, random.Random().uniform(0.1, 0.4), rounds=3, waits_at=1)
    before = snapshot(store_path)
    other = random.choice(["NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA A100-SXM4-80GB"])
    monkeypatch.setattr("skillbase.harness.env.gpu_name", lambda: other)
    with pytest.raises(InputError, match=f"{paused} was timed on {H200}, this machine's GPU is {other}"):
        resume_run(paused, store_path=store_path, candidate=TILED, progress=lambda m: 0)
    code, out, err = run_main(capsys, "resume", paused, "--candidate", str(task), "--store", str(store_path))
    assert code == 2 and "Traceback" not in err and f"resume it on a machine with {H200}" in err, (code, out, err)
    assert snapshot(store_path) == before
    assert RunStore.open(store_path).get_run(paused).status == RunStatus.PAUSED


def test_resume_all_leaves_a_run_timed_on_another_gpu_model_waiting_before_building_anything(task, tmp_path,
                                                                                              monkeypatch):
    """`resume --all` on an H100 with answers for runs timed on the H200 (the trip that would have mixed them):
    each such run stays waiting with the reason, its candidate is not built or judged, and the batch goes on."""
    import skillbase.run.batch as batch_module

    store_path = tmp_path / "store"
    paused = h200_run(task, store_path, random.Random().uniform(0.1, 0.4), rounds=3, waits_at=1)
    [prompt] = list_pending(store_path)
    prompt.candidate_path.parent.mkdir(parents=True, exist_ok=True)
    prompt.candidate_path.write_text(TILED)
    store = RunStore.open(store_path)
    attempts = len(store.attempts(store.get_run(paused).id))
    monkeypatch.setattr("skillbase.harness.env.gpu_name", lambda: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(batch_module, "prebuild_candidates", lambda *a, **k: pytest.fail("built a refused candidate"))
    outcome = batch_module.resume_all(store_path)
    [member] = outcome.members
    assert (member.label, member.action) == (paused, "waiting")
    assert member.reason.startswith(f"{paused} was timed on {H200}, this machine's GPU is NVIDIA H100 80GB HBM3")
    assert member.reason.endswith(f"resume it on a machine with {H200}, or start a new run here")
    [still] = list_pending(store_path)
    assert still.key == prompt.key and still.waiting == member.reason
    assert len(store.attempts(store.get_run(paused).id)) == attempts
