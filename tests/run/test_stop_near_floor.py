"""A run stops when the engine has nothing left and the kernel is near its roofline floor (issue 16, --stop-at-floor).

With a coder and a profile, the coder's free choice is the last candidate, taken once every engine proposal
is tried; near the floor (the run's standing, the one its prompts show, puts the best at --stop-at-floor of
the floor or more) it is not offered: the round ends with no candidate and the run finishes saying why.
Below the threshold, with the floor unknown, with the engine off, or with the threshold at 0, the free
choice stays.

Real components: the engine ranks the naive-GEMM fixture's saved H200 report each round (the evidence
collector, nvcc's ptxas), the corpus, the task's work model against the H200's datasheet peaks (the
standing), the loop and a real SQLite store. This machine has no GPU, so the judge is a stand-in that times
the baseline at a chosen share of the floor and finds every candidate slower (nothing is accepted, so the
engine's proposals are tried one by one), and the coder answers each prompt at once.
"""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
from dataclasses import asdict
from pathlib import Path

import pytest
from click.testing import CliRunner
from loop_kit import REPORT, TILED

import skillbase.run.redecide as redecide_module
from skillbase.agents.appliers import ExternalApplier
from skillbase.agents.coder import FREE_CHOICE
from skillbase.cli import cli
from skillbase.corpus.load import load_corpus
from skillbase.engine import Engine
from skillbase.errors import InputError
from skillbase.run import session
from skillbase.run.batch_report import batch_report
from skillbase.run.evidence import EvidenceCollector
from skillbase.run.explain import explain_run, render_text
from skillbase.run.loop import Loop
from skillbase.run.pending import list_pending, run_folder
from skillbase.run.redecide import redecide
from skillbase.run.session import (
    make_decide,
    mechanical_applier,
    near_floor,
    prompt_builder,
    resume_run,
    run_standing,
    start_run,
)
from skillbase.run.store import RunStore
from skillbase.run.types import ApplyRequest, LoopState, Produced, RunStatus, Settings, Status, Verdict
from skillbase.task import load_task

pytestmark = pytest.mark.nvcc

H200 = "NVIDIA H200"
PRESET = "default"          # the fixture's scored size: M = N = K = 2048, bound by the FP32 peak
ROUNDS = 12                 # more than the engine proposes for the fixture: a run that stops, stops early


class TimedAt:
    """The judge in place of the harness (no GPU here): the baseline at `baseline_us`, every candidate slower."""

    def __init__(self, baseline_us: float):
        self.baseline_us = baseline_us

    def baseline(self, source: str) -> Verdict:
        return Verdict(Status.ACCEPTED, "verified; timed", runtime_us=self.baseline_us)

    def judge(self, source, flags, best_source, best_flags) -> Verdict:
        slower = self.baseline_us * 1.02
        return Verdict(Status.SLOWER, "verified; no faster than the best", runtime_us=slower,
                       baseline_us=self.baseline_us, speedup=self.baseline_us / slower, spread=0.005)


class AnswersAtOnce:
    """The coder: answers every prompt with the current kernel and a comment naming the skill."""

    can_repair = False

    def variants(self, skill: str, params: dict, state: LoopState) -> list[dict]:
        return [params]

    def produce(self, request: ApplyRequest, state: LoopState) -> Produced:
        return Produced(source=f"{state.best_source}\n// {request.skill} {json.dumps(request.params)}\n")


class WaitsForTheFreeChoice(AnswersAtOnce):
    """The coder answers the engine's skills at once; the free choice's prompt waits (`--agent external`)."""

    def __init__(self, task: Path, folder: Path):
        spec = load_task(task)
        prompts = prompt_builder(task, spec, load_corpus(), run_standing(task, spec, PRESET, H200))
        self.external = ExternalApplier(prompts, folder)

    def produce(self, request: ApplyRequest, state: LoopState) -> Produced:
        if request.skill == FREE_CHOICE:
            return self.external.produce(request, state)
        return super().produce(request, state)


def floor_of(task: Path, gpu: str | None = H200) -> float | None:
    return run_standing(task, load_task(task), PRESET, gpu)(LoopState(best_source="", best_us=1.0,
                                                                        baseline_us=1.0)).floor_us


def run_loop(task: Path, store_path: Path, share: float, settings: Settings, gpu: str | None = H200,
             applier=None) -> int:
    """A run of the fixture whose baseline runs at `share` of its floor, wired as the session wires it."""
    engine, corpus = Engine.load(), load_corpus()
    spec = load_task(task)
    decide = make_decide(settings.agent, engine, corpus, mechanical_applier(corpus, settings),
                         engine_on=settings.engine, standing=run_standing(task, spec, PRESET, gpu),
                         stop_at_floor=settings.stop_at_floor)
    store = RunStore.open(store_path)
    run_id = store.create_run(str(task), task.stem, {})
    # the manifest keys `resume` and `redecide` read, as a GPU run records them
    store.set_manifest(run_id, {"settings": asdict(settings), "gpu": gpu, "gpu_run": True, "preset": PRESET})
    Loop(store, run_id, task, settings, TimedAt(floor_of(task) / share),
         EvidenceCollector(task, profile=False, saved_report=REPORT), decide,
         (applier or (lambda folder: AnswersAtOnce()))(run_folder(store, run_id))).run()
    return run_id


def tried(store_path: Path, run_id: int) -> list[str]:
    return [a["skill"] for a in RunStore.open(store_path).attempts(run_id)]


def stop_text(share: float, threshold: float) -> str:
    return (f"the engine has no proposal left and the kernel runs at {100 * share:.0f} % of its roofline floor "
            f"(at most {1 / share:.2f}x left; --stop-at-floor {threshold:g}): stopped")


def ended_in_report(store_path: Path, run_id: int) -> dict:
    """How `bench optimize-report` says the run ended, the run put in a batch of its own."""
    store = RunStore.open(store_path)
    batch = store.create_batch({"settings": {"agent": "external"}, "dtype": "fp32", "members": []})
    store.add_batch_run(batch, run_id, "naive_gemm", "fp32")
    [run] = batch_report(store_path, [batch], results_root=store_path / "no-results").runs
    return run.ended


def coder_settings(**changes) -> Settings:
    return Settings(**{"rounds": ROUNDS, "repairs": 0, "agent": "external", **changes})


# -- the loop -----------------------------------------------------------------------------------------

def test_near_the_floor_with_nothing_left_the_run_stops_without_the_free_choice(task, tmp_path):
    rng = random.Random()
    share = rng.uniform(0.76, 0.97)
    store_path = tmp_path / "store"
    run_id = run_loop(task, store_path, share, coder_settings())
    store = RunStore.open(store_path)
    run = store.get_run(run_id)
    skills = tried(store_path, run_id)

    assert skills and FREE_CHOICE not in skills, skills                  # the engine's proposals, each once
    assert len(skills) == len(set(skills)) and len(skills) < ROUNDS
    assert (run.status, run.stop_reason) == (RunStatus.FINISHED, stop_text(share, 0.75)), f"share {share}"
    last = len(skills)
    [decision] = store.decisions(run_id, last)
    assert decision["chosen_skill"] is None and decision["reason"] == run.stop_reason
    held_back = json.loads(decision["candidates_json"])[-1]
    assert (held_back["skill"], held_back["applicable"]) == (FREE_CHOICE, False)
    assert store.step_result(run_id, f"r{last}/outcome") == {"status": "no-candidate"}

    text = render_text(explain_run(store, run.name))
    assert f"status: finished — {run.stop_reason}" in text
    assert f"round {last}: no-candidate" in text and f"decision: none — {run.stop_reason}" in text
    assert ended_in_report(store_path, run_id) == {"category": "near-floor", "reason": run.stop_reason}


def test_below_the_threshold_the_free_choice_follows_the_same_proposals(task, tmp_path):
    share = random.Random().uniform(0.76, 0.97)
    near = run_loop(task, tmp_path / "near", share, coder_settings())
    far = run_loop(task, tmp_path / "far", share, coder_settings(stop_at_floor=min(1.0, share + 0.02)))
    engine_proposals = tried(tmp_path / "near", near)
    far_tried = tried(tmp_path / "far", far)
    # the same rounds, then the coder's own choice where the near run stopped: every round of the budget spent
    assert far_tried[:len(engine_proposals)] == engine_proposals
    assert far_tried[len(engine_proposals)] == FREE_CHOICE and len(far_tried) == ROUNDS
    assert RunStore.open(tmp_path / "far").get_run(far).stop_reason == f"ran {ROUNDS} rounds"
    assert ended_in_report(tmp_path / "far", far) == {"category": "rounds", "reason": f"ran {ROUNDS} rounds"}


@pytest.mark.parametrize("case", ["unknown floor", "engine off", "threshold 0"])
def test_the_free_choice_stays_where_the_stop_does_not_apply(task, tmp_path, case):
    share = random.Random().uniform(0.9, 1.0)           # past any threshold, where one applies
    settings = coder_settings(engine=case != "engine off", stop_at_floor=0.0 if case == "threshold 0" else 0.75)
    gpu = None if case == "unknown floor" else H200
    if case == "unknown floor":
        assert floor_of(task, gpu=None) is None
    run_id = run_loop(task, tmp_path / "store", share, settings, gpu=gpu)
    skills = tried(tmp_path / "store", run_id)
    assert len(skills) == ROUNDS and FREE_CHOICE in skills, skills
    if case == "engine off":
        assert set(skills) == {FREE_CHOICE}
    assert RunStore.open(tmp_path / "store").get_run(run_id).stop_reason == f"ran {ROUNDS} rounds"


# -- the setting ------------------------------------------------------------------------------------

def test_the_setting_is_recorded_and_resume_decides_with_it(task, tmp_path, monkeypatch):
    store_path = tmp_path / "store"
    threshold = round(random.Random().uniform(0.05, 0.95), 2)
    result = CliRunner().invoke(cli, ["optimize", str(task), "--agent", "external", "--no-gpu", "--rounds", "2",
                                      "--report", str(REPORT), "--stop-at-floor", str(threshold), "--store",
                                      str(store_path), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    run = RunStore.open(store_path).get_run(json.loads(result.stdout)["run"])
    assert run.manifest["settings"]["stop_at_floor"] == threshold

    seen = []
    real = session.make_decide

    def recording(*args, **kwargs):
        seen.append(kwargs["stop_at_floor"])
        return real(*args, **kwargs)

    monkeypatch.setattr(session, "make_decide", recording)
    resume_run(run.name, store_path=store_path, candidate=TILED, progress=lambda m: None)
    assert seen == [threshold]

    # a run recorded before the setting existed resumes with the default
    assert Settings.from_stored({"rounds": 3, "agent": "external"}).stop_at_floor == 0.75


def test_a_share_outside_0_to_1_is_a_one_line_error(task, tmp_path):
    result = CliRunner().invoke(cli, ["optimize", str(task), "--agent", "external", "--no-gpu",
                                      "--stop-at-floor", "75", "--store", str(tmp_path / "store")])
    assert result.exit_code == 2 and "--stop-at-floor" in result.output and "Traceback" not in result.output
    with pytest.raises(InputError, match="is not a share of the roofline floor"):
        start_run(task, Settings(agent="external", stop_at_floor=-0.1), store_path=tmp_path / "store", gpu=False)
    assert not (tmp_path / "store" / "runs").exists() or not list((tmp_path / "store" / "runs").iterdir())


# -- redecide ---------------------------------------------------------------------------------------

def paused_at_the_free_choice(task: Path, store_path: Path, share: float) -> dict:
    """A run as the LLM bench run's were: recorded before --stop-at-floor existed (its manifest has no such
    key, and its rounds offered the free choice at any distance from the floor), waiting for the coder's free
    choice once the engine's proposals were tried, with the coder's answer already written."""
    run_id = run_loop(task, store_path, share, coder_settings(stop_at_floor=0.0),
                      applier=lambda folder: WaitsForTheFreeChoice(task, folder))
    store = RunStore.open(store_path)
    manifest = store.get_run(run_id).manifest
    del manifest["settings"]["stop_at_floor"]
    store.set_manifest(run_id, manifest)
    session.summarise(store, run_id)             # what start_run hands back (it writes the store's batch tables)
    [waiting] = [p for p in list_pending(store_path) if p.run_id == run_id]
    assert waiting.skill == FREE_CHOICE
    waiting.candidate_path.parent.mkdir(parents=True, exist_ok=True)
    waiting.candidate_path.write_text("// the coder's own choice\n" + TILED)
    waiting.meta_path.write_text(json.dumps({"model": "a coder", "wall_s": 4.0}))
    return waiting.to_json()


def snapshot(store: Path) -> tuple[list[str], dict[str, str]]:
    with sqlite3.connect(store / "runs.sqlite3") as db:
        rows = list(db.iterdump())
    return rows, {str(p.relative_to(store)): hashlib.sha256(p.read_bytes()).hexdigest()
                  for p in sorted(store.rglob("*")) if p.is_file() and not p.name.startswith("runs.sqlite3")}


def test_redecide_ends_a_round_near_the_floor_as_the_loop_would(task, tmp_path):
    share = random.Random().uniform(0.76, 0.97)
    store_path = tmp_path / "store"
    first = paused_at_the_free_choice(task, store_path, share)
    old_prompt = Path(first["prompt"]).read_text()
    expected = stop_text(share, 0.75)            # the default: the manifest names no threshold

    before = snapshot(store_path)
    [dry] = redecide(store_path, runs=[first["run"]], dry_run=True).runs
    assert snapshot(store_path) == before
    assert (dry.action, dry.old_skill, dry.new_skill, dry.reason, dry.prompt) == (
        "would-change", FREE_CHOICE, None, expected, None)

    result = CliRunner().invoke(cli, ["redecide", first["run"], "--store", str(store_path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert f"{first['run']} round {first['round']}: {FREE_CHOICE} " in result.output and "-> none" in result.output
    assert f"why: {expected}" in result.output and "the run finished; nothing waits" in result.output

    store = RunStore.open(store_path)
    run = store.get_run(first["run"])
    idx = first["round"]
    # The run ended as the loop ends it: the round's outcome, the run finished with the stop as its reason.
    assert (run.status, run.stop_reason) == (RunStatus.FINISHED, expected)
    assert store.step_result(run.id, f"r{idx}/outcome") == {"status": "no-candidate"}
    assert [r["outcome"] for r in store.rounds(run.id) if r["idx"] == idx] == ["no-candidate"]
    assert store.step_result(run.id, f"r{idx}/decision")["stop"] == expected
    # The old decision is kept, superseded; nothing waits; the coder's answer was moved aside, never judged.
    old_row, new_row = store.decisions(run.id, idx)
    assert (old_row["chosen_skill"], new_row["chosen_skill"]) == (FREE_CHOICE, None)
    assert store.superseded_decisions(run.id)[old_row["id"]]["by"] == new_row["id"]
    assert [p for p in list_pending(store_path) if p.run == run.name] == []
    assert not (run_folder(store, run.id) / "waiting.json").exists()
    assert not Path(first["prompt"]).exists()
    [kept] = run_folder(store, run.id).glob(f"r{idx}-v0-a0.superseded-d*.prompt.md")
    assert kept.read_text() == old_prompt
    assert not Path(first["candidate"]).exists() and not Path(first["meta"]).exists()
    [aside] = (Path(first["candidate"]).parent / "superseded").glob("*.cu")
    assert aside.read_text().startswith("// the coder's own choice")
    assert "ends the run" in aside.with_suffix(".note.txt").read_text()
    assert all(a["skill"] != FREE_CHOICE for a in store.attempts(run.id))
    text = render_text(explain_run(store, run.name))
    assert f"decision: none — {expected}" in text and f"superseded: {FREE_CHOICE}" in text
    assert ended_in_report(store_path, run.id) == {"category": "near-floor", "reason": expected}

    [again] = redecide(store_path, runs=[run.name]).runs     # near its floor: not a no-candidate end
    assert (again.action, again.reason) == ("refused", f"{run.name} is finished, ended near-floor ({expected}); only "
                                                       "a paused run's waiting round or a run that ended "
                                                       "no-candidate is re-decided")


def test_redecide_keeps_the_free_choice_below_the_threshold_the_run_recorded(task, tmp_path):
    store_path = tmp_path / "store"
    share = random.Random().uniform(0.76, 0.97)
    first = paused_at_the_free_choice(task, store_path, share)
    store = RunStore.open(store_path)
    run = store.get_run(first["run"])
    manifest = run.manifest
    manifest["settings"]["stop_at_floor"] = min(1.0, share + 0.02)
    store.set_manifest(run.id, manifest)
    before = snapshot(store_path)
    [entry] = redecide(store_path, runs=[run.name]).runs
    assert (entry.action, entry.new_skill) == ("unchanged", FREE_CHOICE)
    assert snapshot(store_path) == before


def test_a_redecide_killed_after_ending_the_round_is_finished_by_the_next(task, tmp_path, monkeypatch):
    share = random.Random().uniform(0.76, 0.97)
    store_path = tmp_path / "store"
    first = paused_at_the_free_choice(task, store_path, share)
    real = redecide_module._finish_files

    def killed(store, row, waiting, current):
        if current is None:
            raise KeyboardInterrupt
        return real(store, row, waiting, current)

    with monkeypatch.context() as patch:
        patch.setattr(redecide_module, "_finish_files", killed)
        with pytest.raises(KeyboardInterrupt):
            redecide(store_path, runs=[first["run"]])
    store = RunStore.open(store_path)
    assert store.get_run(first["run"]).status == RunStatus.PAUSED          # committed, not yet finished
    assert Path(first["candidate"]).exists()

    [entry] = redecide(store_path, runs=[first["run"]]).runs
    assert entry.action == "unchanged"                                     # the decision was made already
    run = store.get_run(first["run"])
    assert (run.status, run.stop_reason) == (RunStatus.FINISHED, stop_text(share, 0.75))
    assert not Path(first["candidate"]).exists() and not Path(first["prompt"]).exists()
    assert list_pending(store_path) == []


def test_the_stop_holds_at_or_above_the_threshold_and_says_where_the_kernel_stands(task):
    floor = floor_of(task)

    def near(share: float, threshold: float) -> str | None:
        state = LoopState(best_source="", best_us=floor / share, baseline_us=floor / share * 3)
        return near_floor(run_standing(task, load_task(task), PRESET, H200)(state), threshold)

    assert near(0.7501, 0.75) == ("the kernel runs at 75 % of its roofline floor (at most 1.33x left; "
                                  "--stop-at-floor 0.75)")
    assert near(0.7499, 0.75) is None
    assert near(0.99, 0.0) is None                                   # 0: never
    assert near(1.4, 1.0) == "the kernel runs at 140 % of its roofline floor (at or past it; --stop-at-floor 1)"


# -- the free choice's prompt -------------------------------------------------------------------------

def _waiting_prompt(store_path: Path, run_id: int) -> tuple[str, str]:
    [waiting] = [p for p in list_pending(store_path) if p.run_id == run_id]
    document = json.loads((waiting.prompt_path.parent / "waiting.json").read_text())
    return waiting.prompt_path.read_text(), document["template"]


def test_an_engine_on_free_choice_shows_the_profiles_evidence_and_engine_off_does_not(task, tmp_path):
    """Engine on, every proposal tried on the kernel: the coder still sees what the profile says (each proposal's
    rule reason and focus rows, in the engine's order). The ablation's prompt stays the kernel and the task alone."""
    share = random.Random().uniform(0.05, 0.7)        # below the stop: the free choice is offered
    on = run_loop(task, tmp_path / "on", share, coder_settings(),
                  applier=lambda folder: WaitsForTheFreeChoice(task, folder))
    off = run_loop(task, tmp_path / "off", share, coder_settings(engine=False),
                   applier=lambda folder: WaitsForTheFreeChoice(task, folder))
    on_prompt, on_template = _waiting_prompt(tmp_path / "on", on)
    off_prompt, off_template = _waiting_prompt(tmp_path / "off", off)
    assert (on_template, off_template) == ("coder_open.v1", "coder_free.v3")

    store = RunStore.open(tmp_path / "on")
    proposals = tried(tmp_path / "on", on)            # the engine's proposals, each tried once on the kernel
    [decision] = store.decisions(on, len(proposals))
    ranked = [c for c in json.loads(decision["candidates_json"]) if c["skill"] != FREE_CHOICE and c["applicable"]]
    assert sorted(c["skill"] for c in ranked) == sorted(proposals)
    shown = on_prompt.split("## What the profile shows\n", 1)[1].split("\n## ", 1)[0]
    positions = [shown.index(f"`{c['skill']}`") for c in ranked]
    assert positions == sorted(positions), "in the engine's order"
    for c in ranked:
        assert c["because"].splitlines()[0] in shown
        for row in c["focus"]:
            assert f"- {row['name']} = " in shown
    assert "## What the profile shows" not in off_prompt and "`" + ranked[0]["skill"] + "`" not in off_prompt
    # the rest is the free prompt's: the same rules and standing (same times: nothing was accepted), the same kernel
    assert _before("## What the profile shows", on_prompt) == _before("## The optimization", off_prompt)
    assert on_prompt.split("## The current best kernel", 1)[1] == off_prompt.split("## The current best kernel", 1)[1]


def _before(heading: str, text: str) -> str:
    assert heading in text, text
    return text.split(heading, 1)[0]


def test_evidence_rows_show_three_significant_digits_and_a_quantity_once_with_its_thresholds():
    from skillbase.agents.appliers import render_evidence
    from skillbase.run.types import Candidate, EvidenceRow

    share = random.Random().uniform(0.2, 0.5)
    rows = (EvidenceRow("global_atomic_share", share, 0.2), EvidenceRow("src_shuffles", 0, None),
            EvidenceRow("global_atomic_share", share, 0.2), EvidenceRow("global_atomic_share", share, 0.3))
    text = render_evidence(Candidate("atom.warp_aggregated", 0.5, 0.3, ("r",), "atomics", focus=rows))
    shown = f"{share:.3f}".rstrip("0")
    assert text.splitlines() == ["atomics", f"- global_atomic_share = {shown} (thresholds 0.2, 0.3)",
                                 "- src_shuffles = 0"]
    # a leaf without a threshold adds nothing to the same quantity read with one
    big = render_evidence(Candidate("x", 0.5, None, (), "", focus=(EvidenceRow("roofline_bytes", 33816576.0, 0.0),
                                                                     EvidenceRow("roofline_bytes", 33816576.0, None))))
    assert big == "- roofline_bytes = 33816576 (threshold 0)"
    # two observations of one name that differ are two rows (nothing merged that the profile did not say once)
    two = render_evidence(Candidate("x", 0.5, None, (), "", focus=(EvidenceRow("waves", 1.5, 1.0),
                                                                     EvidenceRow("waves", 7.0, 20.0))))
    assert two.splitlines() == ["- waves = 1.5 (threshold 1)", "- waves = 7 (threshold 20)"]


def test_a_proposal_with_the_evidence_of_an_earlier_one_refers_to_it():
    from skillbase.agents.appliers import render_diagnosis
    from skillbase.run.types import Candidate, EvidenceRow

    loads = random.Random().uniform(2.0, 3.0)
    focus = (EvidenceRow("global_ld_per_ffma", loads, 2.0),)
    proposals = (Candidate("cmp.thread_coarsening", 0.5, 0.5, ("r",), "threads reload operands", focus=focus),
                 Candidate("cmp.register_tiling", 0.5, 0.5, ("r",), "threads reload operands", focus=focus),
                 Candidate("occ.achieved_gap", 0.2, 0.17, ("r",), "warps finish apart", focus=()))
    text = render_diagnosis(proposals, lambda skill: None)
    assert text.count("threads reload operands") == 1 and text.count("global_ld_per_ffma") == 1
    assert "2. `cmp.register_tiling`; the rule's estimate: 50% of the time at stake\n" \
           "   The same evidence as `cmp.thread_coarsening` above." in text
    assert "3. `occ.achieved_gap`; the rule's estimate: 17% of the time at stake\n   warps finish apart" in text
