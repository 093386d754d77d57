"""`skillbase redecide` (issue 16): a paused run's waiting round decided again with the rules of today.

Real components throughout, on the CPU: runs of the naive-GEMM fixture paused by the external applier
(its saved H200 report is the evidence, nvcc builds, nothing is timed), a real SQLite store, the
built-in rules plus a user rule folder (--extra-rules, recorded in the run) whose one rule puts a skill
first. Editing that rule between the pause and `redecide` is a rule set changed while the run waits.
A run that ended no-candidate (compile-only, unprofiled: the coder's free choice is no candidate there)
is re-asked the same way, and reopened at that round when the edited rule proposes a skill.
"""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from loop_kit import BROKEN, REPORT, TILED, analysed_before_h74

import skillbase.run.evidence as run_evidence
import skillbase.run.redecide as redecide_module
from skillbase import __version__
from skillbase.cli import cli
from skillbase.documents import schema_path
from skillbase.engine import Engine
from skillbase.engine.evaluate import RULES_PATH_ENV
from skillbase.errors import EnvironmentProblem, InputError, SkillbaseError
from skillbase.run.batch import resume_all
from skillbase.run.explain import explain_run, render_text
from skillbase.run.loop import run_ended
from skillbase.run.pack import pack_store, unpack_store
from skillbase.run.pending import list_pending
from skillbase.run.redecide import redecide
from skillbase.run.session import resume_run, start_run
from skillbase.run.store import RunStore
from skillbase.run.types import Ended, Settings

pytestmark = pytest.mark.nvcc

RULE = """id: usr.redecide.first
kind: propose
summary: "A user's rule that puts one skill first on any kernel it sees."
when:
  all:
  - "{when}"
proposes:
- skill: {skill}
  score: 1.0
  speedup: "0.9"
because: "{because}"
"""
PROFILED = ("mem_pct >= 0", "Memory throughput is {mem_pct:.0f}%.")          # any profiled kernel
LOADS = ("src_global_loads >= 1", "The kernel has {src_global_loads:.0f} global loads.")   # profiled or not
CASES = """cases:
- name: naive-gemm
  expect: fire
  reason: "Any profiled kernel (it loads from global memory too)."
  fixture: naive_gemm
- name: nothing-known
  expect: quiet
  reason: "No profile and no source features: the rule's fact is missing."
  values: {}
"""


@pytest.fixture
def rules(tmp_path, monkeypatch):
    """A user rule folder; `rules(skill)` makes its rule propose `skill` first on a profiled kernel (`rules(skill,
    LOADS)`: on any kernel with a global load, a compile-only run's unprofiled one too)."""
    monkeypatch.setenv(RULES_PATH_ENV, "")
    folder = tmp_path / "my_rules"
    (folder / "propose").mkdir(parents=True)
    (folder / "propose" / "usr.redecide.first.cases.yaml").write_text(CASES)

    def first(skill: str, fires: tuple[str, str] = PROFILED) -> Path:
        when, because = fires
        (folder / "propose" / "usr.redecide.first.yaml").write_text(RULE.format(skill=skill, when=when,
                                                                                because=because))
        return folder
    return first


def paused(task: Path, store: Path, rules_folder: Path, rounds: int = 2, repairs: int = 0, engine: bool = True,
           profiled: bool = True) -> dict:
    """A run paused at its first prompt (`profiled`: the evidence is the fixture's saved H200 report; else the
    run is compile-only, unprofiled, and its coder's free choice is never a candidate)."""
    settings = Settings(rounds=rounds, repairs=repairs, agent="external", extra_rules=(str(rules_folder),),
                        engine=engine)
    summary = start_run(task, settings, store_path=store, gpu=False, saved_report=REPORT if profiled else None,
                        progress=lambda m: None)
    assert summary["status"] == "paused"
    return summary["pending"]


def snapshot(store: Path) -> tuple[list[str], dict[str, str]]:
    """The database's rows and every other file of the store (candidates too), by digest."""
    with sqlite3.connect(store / "runs.sqlite3") as db:
        rows = list(db.iterdump())
    files = {str(p.relative_to(store)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(store.rglob("*"))
             if p.is_file() and not p.name.startswith("runs.sqlite3")}
    return rows, files


def valid(document: dict, kind: str = "redecide") -> dict:
    jsonschema.Draft202012Validator(json.loads(schema_path(kind).read_text())).validate(document)
    return document


def test_a_changed_rule_redecides_the_round_keeps_the_old_decision_and_moves_the_stale_candidate(
        task, tmp_path, rules):
    store_path = tmp_path / "store"
    first = paused(task, store_path, rules("mem.vectorize"))
    assert (first["skill"], first["key"]) == ("mem.vectorize", "r0/v0/a0")
    old_prompt = Path(first["prompt"]).read_text()
    stale = Path(first["candidate"])
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text("// the coder's answer to the mem.vectorize prompt\n" + TILED)
    Path(first["meta"]).write_text(json.dumps({"model": "a coder", "wall_s": 3.0}))
    rules("mem.coalesce")                     # the rule fixed while the run waits

    before = snapshot(store_path)
    dry = redecide(store_path, runs=[first["run"]], dry_run=True)
    assert snapshot(store_path) == before    # nothing written, not even the database
    [entry] = dry.runs
    assert (entry.action, entry.old_skill, entry.new_skill, entry.round) == ("would-change", "mem.vectorize",
                                                                             "mem.coalesce", 0)
    assert entry.reason == "mem.coalesce: Memory throughput is 99%."
    assert "mem.vectorize -> mem.coalesce (dry run: nothing written)" in "\n".join(dry.lines())

    done = valid(json.loads(CliRunner().invoke(cli, ["redecide", first["run"], "--store", str(store_path), "--json"],
                                               catch_exceptions=False).stdout))
    assert done["counts"] == {"changed": 1}
    [changed] = done["runs"]
    store = RunStore.open(store_path)
    run = store.get_run(first["run"])

    # The old decision is kept, marked superseded by the new one, with the rules that decided.
    old_row, new_row = store.decisions(run.id, 0)
    assert (old_row["chosen_skill"], new_row["chosen_skill"]) == ("mem.vectorize", "mem.coalesce")
    mark = store.superseded_decisions(run.id)[old_row["id"]]
    today = Engine.load(extra_rules=(str(tmp_path / "my_rules"),))
    assert mark["by"] == new_row["id"] and mark["rules"]["rules_digest"] == today.rules_digest
    assert mark["rules"]["rules_digest"] != run.manifest["rules_digest"]     # the run started with other rules
    assert store.step_result(run.id, "r0/decision")["skill"] == "mem.coalesce"
    assert (run.status, run.stop_reason) == ("paused", "waiting for a candidate for mem.coalesce")

    # The new prompt is where `pending` lists it; the old one is kept beside it.
    [waiting] = list_pending(store_path)
    assert (waiting.skill, waiting.key, str(waiting.prompt_path)) == ("mem.coalesce", "r0/v0/a0", first["prompt"])
    new_prompt = waiting.prompt_path.read_text()
    assert "## The skill: mem.coalesce" in new_prompt and "## The skill: mem.vectorize" in old_prompt
    assert Path(changed["superseded_prompt"]).read_text() == old_prompt
    # ... and it is byte for byte the prompt a run started under today's rules writes.
    fresh = paused(task, store_path, tmp_path / "my_rules")
    assert Path(fresh["prompt"]).read_text() == new_prompt

    # The candidate written for the old prompt was moved aside with a note, never deleted.
    assert not stale.exists() and not Path(first["meta"]).exists()
    aside = Path(changed["candidate_moved"])
    assert aside.parent == stale.parent / "superseded"
    assert aside.read_text().startswith("// the coder's answer to the mem.vectorize prompt")
    assert json.loads(aside.with_suffix(".meta.json").read_text())["model"] == "a coder"
    note = aside.with_suffix(".note.txt").read_text()
    assert "mem.vectorize" in note and "mem.coalesce" in note
    assert waiting.waiting == f"re-decided: mem.vectorize -> mem.coalesce; the candidate written for mem.vectorize " \
                              f"was moved to {aside}"

    # explain shows the superseded decision beside the new one.
    report = explain_run(store, run.name)
    valid(report, "explain")
    text = render_text(report)
    assert "decision: mem.coalesce" in text
    line = next(line for line in text.splitlines() if line.strip().startswith("superseded:"))
    assert "mem.vectorize" in line and today.rules_digest[:19] in line

    # Once more: the same rules decide the same, and nothing is written.
    again = snapshot(store_path)
    assert [e.action for e in redecide(store_path, runs=[run.name]).runs] == ["unchanged"]
    assert snapshot(store_path) == again

    # resume --all judges a candidate answering the NEW prompt (compile-only here: unverified).
    stale.write_text(TILED)
    Path(first["meta"]).write_text(json.dumps({"model": "a coder", "run": run.name, "key": "r0/v0/a0"}))
    resumed = resume_all(store_path, jobs=0)
    assert [(m.run, m.action) for m in resumed.members if m.run == run.name] == [(run.name, "judged")]
    [attempt] = store.attempts(run.id, 0)
    assert (attempt["skill"], attempt["status"]) == ("mem.coalesce", "unverified")
    [call] = store.llm_calls(run.id)
    assert store.artifacts.get_text(call["prompt"]) == new_prompt
    # The finished round counts once, for the skill it tried (the superseded row is not an outcome).
    assert set(store.skill_outcome_stats()) == {"mem.coalesce"}

    # Round 1 was decided with round 0's skill tabu on the unchanged kernel: replayed the same, unchanged.
    [next_round] = [p for p in list_pending(store_path) if p.run == run.name]
    assert next_round.key == "r1/v0/a0" and next_round.skill != "mem.coalesce"
    assert [e.action for e in redecide(store_path, runs=[run.name]).runs] == ["unchanged"]


def test_what_cannot_be_redecided_is_left_alone_with_its_reason(task, tmp_path, rules):
    store_path = tmp_path / "store"
    folder = rules("mem.vectorize")
    finished = paused(task, store_path, folder, rounds=1)["run"]
    resume_run(finished, store_path=store_path, candidate=TILED, progress=lambda m: None)
    repairing = paused(task, store_path, folder, repairs=1)["run"]
    resume_run(repairing, store_path=store_path, candidate=BROKEN, progress=lambda m: None)   # a debugger waits now
    engine_off = paused(task, store_path, folder, engine=False)["run"]
    running = paused(task, store_path, folder)["run"]
    RunStore.open(store_path).claim(int(running.removeprefix("run_")))   # this live process drives it
    rules("mem.coalesce")

    before = snapshot(store_path)
    outcome = redecide(store_path, runs=[finished, repairing, engine_off, running])
    assert snapshot(store_path) == before
    reasons = {e.run: (e.action, e.reason) for e in outcome.runs}
    assert reasons == {
        finished: ("refused", f"{finished} is finished, ended rounds (ran 1 rounds); only a paused run's waiting "
                              "round or a run that ended no-candidate is re-decided"),
        repairing: ("refused", f"{repairing}'s round 0 already judged an attempt"),
        engine_off: ("refused", f"{engine_off} runs with the engine off (--no-engine): its coder chooses each "
                                "optimization, there is no decision to re-make"),
        running: ("refused", f"{running} is running; only a paused run's waiting round or a run that ended "
                             "no-candidate is re-decided")}
    assert f"{finished}: left alone: {finished} is finished" in "\n".join(outcome.lines())
    # --all takes the paused ones: the repair and the engine-off run, each still with its reason
    assert {e.run: e.action for e in redecide(store_path, dry_run=True).runs} == {repairing: "refused",
                                                                                  engine_off: "refused"}


def test_bad_requests_are_one_line_errors(task, tmp_path, rules):
    store_path = tmp_path / "store"
    paused(task, store_path, rules("mem.vectorize"))

    def refused(*args: str) -> str:
        result = CliRunner().invoke(cli, ["redecide", *args, "--store", str(store_path)])
        assert isinstance(result.exception, SkillbaseError), result.output
        return result.exception.message

    assert refused() == "which runs? pass RUN (one or more), or --all for every paused run, not both"
    assert refused("run_1", "--all").startswith("which runs?")
    assert refused("run_1", "--batch", "batch_1") == "--batch goes with --all"
    assert refused("run_9") == f"no run run_9 in the store at {store_path}"
    assert refused("--all", "--batch", "batch_4").startswith("no batch batch_4")
    with pytest.raises(InputError, match="no run store at"):
        redecide(tmp_path / "nowhere", dry_run=True)


def killed_after_the_commit(store_path: Path, run: str, monkeypatch) -> None:
    """`redecide run` whose process dies right after the store's commit, before any file moved (the file
    moves after a commit are asked with current=None; those an earlier call left are let through)."""
    real = redecide_module._finish_files

    def finish(store, row, waiting, current):
        if current is None:
            raise KeyboardInterrupt
        return real(store, row, waiting, current)

    with monkeypatch.context() as patch:
        patch.setattr(redecide_module, "_finish_files", finish)
        with pytest.raises(KeyboardInterrupt):
            redecide(store_path, runs=[run])


def test_an_interrupted_redecide_is_finished_by_the_next_one(task, tmp_path, rules, monkeypatch):
    store_path = tmp_path / "store"
    first = paused(task, store_path, rules("mem.vectorize"))
    stale = Path(first["candidate"])
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text("// for mem.vectorize\n" + TILED)
    rules("mem.coalesce")
    killed_after_the_commit(store_path, first["run"], monkeypatch)
    store = RunStore.open(store_path)
    assert store.step_result(1, "r0/decision")["skill"] == "mem.coalesce"       # committed
    assert stale.exists() and "mem.vectorize" in Path(first["prompt"]).read_text().split("## The skill")[1][:40]

    [entry] = redecide(store_path, runs=[first["run"]]).runs
    assert entry.action == "unchanged"                                           # the decision was made already
    [waiting] = list_pending(store_path)
    assert waiting.skill == "mem.coalesce" and "## The skill: mem.coalesce" in waiting.prompt_path.read_text()
    assert not stale.exists() and len(list((stale.parent / "superseded").glob("*.cu"))) == 1
    assert not list(waiting.prompt_path.parent.glob("*.redecided"))


def test_an_interrupted_redecide_is_finished_before_the_round_is_decided_again(task, tmp_path, rules, monkeypatch):
    store_path = tmp_path / "store"
    first = paused(task, store_path, rules("mem.vectorize"))
    stale = Path(first["candidate"])
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text("// for mem.vectorize\n" + TILED)
    rules("mem.coalesce")
    killed_after_the_commit(store_path, first["run"], monkeypatch)
    rules("mem.smem_tiling")                  # and the rule changes once more before the next call

    [entry] = redecide(store_path, runs=[first["run"]]).runs
    assert (entry.action, entry.old_skill, entry.new_skill) == ("changed", "mem.coalesce", "mem.smem_tiling")
    store = RunStore.open(store_path)
    assert [d["chosen_skill"] for d in store.decisions(1)] == ["mem.vectorize", "mem.coalesce", "mem.smem_tiling"]
    assert len(store.superseded_decisions(1)) == 2
    folder = Path(first["prompt"]).parent
    shown = {p.name: p.read_text().split("## The skill: ")[1].split(" ")[0] for p in folder.glob("*.prompt.md")}
    assert shown == {"r0-v0-a0.prompt.md": "mem.smem_tiling", "r0-v0-a0.superseded-d1.prompt.md": "mem.vectorize",
                     "r0-v0-a0.superseded-d2.prompt.md": "mem.coalesce"}
    [moved] = (stale.parent / "superseded").glob("*.cu")      # moved once, by the finished first call
    assert moved.name == "run_1.r0-v0-a0.d1.cu" and entry.candidate_moved is None
    text = render_text(explain_run(store, "run_1"))
    assert [line.split("(")[0].strip() for line in text.splitlines() if "superseded:" in line] == \
        ["superseded: mem.vectorize", "superseded: mem.coalesce"]


def test_a_run_written_meanwhile_by_another_process_is_refused_and_nothing_is_written(task, tmp_path, rules,
                                                                                     monkeypatch):
    store_path = tmp_path / "store"
    first = paused(task, store_path, rules("mem.vectorize"))
    rules("mem.coalesce")
    real = redecide_module.decision_of

    def meanwhile(*args):
        other = RunStore.open(store_path)      # a second connection: another skillbase process
        other.note_waiting(1, "r0/v0/a0", "missing: no run_1.cu")
        other.close()
        return real(*args)

    monkeypatch.setattr(redecide_module, "decision_of", meanwhile)
    [entry] = redecide(store_path, runs=[first["run"]]).runs
    assert (entry.action, entry.reason) == ("refused", "run_1 changed while it was re-decided (another skillbase "
                                                       "process?); nothing was written")
    store = RunStore.open(store_path)
    assert [d["chosen_skill"] for d in store.decisions(1)] == ["mem.vectorize"]
    assert list_pending(store_path)[0].skill == "mem.vectorize"
    assert not list(Path(first["prompt"]).parent.glob("*.redecided"))


def test_a_redecided_store_travels_and_explains_where_it_lands(task, tmp_path, rules):
    store_path = tmp_path / "store"
    first = paused(task, store_path, rules("mem.vectorize"))
    rules("mem.coalesce")
    assert [e.action for e in redecide(store_path, runs=[first["run"]]).runs] == ["changed"]
    pack_store(tmp_path / "trip.tar.gz", store_path)
    there = tmp_path / "elsewhere" / "store"
    unpack_store(tmp_path / "trip.tar.gz", there)
    [waiting] = list_pending(there)
    assert waiting.prompt_path.parent == there / "runs" / first["run"] and waiting.skill == "mem.coalesce"
    [old] = explain_run(RunStore.open(there, read_only=True), first["run"])["rounds"][0]["decision"]["superseded"]
    assert old["skill"] == "mem.vectorize" and Path(old["prompt"]).parent == there / "runs" / first["run"]
    assert "## The skill: mem.vectorize" in Path(old["prompt"]).read_text()


def killed_before_the_commit(store_path: Path, run: str) -> subprocess.CompletedProcess:
    """`redecide run` in its own process, killed as it opens the store's transaction: the new prompt is
    staged, nothing is committed, and nothing of the process is left to clean up after it."""
    script = ("import os, sys\n"
              "from skillbase.run.redecide import redecide\n"
              "from skillbase.run.store import RunStore\n"
              "RunStore.transaction = lambda self: os._exit(137)\n"
              "redecide(sys.argv[1], runs=[sys.argv[2]])\n")
    died = subprocess.run([sys.executable, "-c", script, str(store_path), run], capture_output=True, text=True)
    assert died.returncode == 137, died.stderr
    return died


def test_a_prompt_staged_by_a_redecide_killed_before_its_commit_is_never_installed(task, tmp_path, rules):
    store_path = tmp_path / "store"
    first = paused(task, store_path, rules("mem.vectorize"))
    rules("mem.coalesce")
    assert [e.action for e in redecide(store_path, runs=[first["run"]]).runs] == ["changed"]
    answer = Path(first["candidate"])              # the coder answers the mem.coalesce prompt
    answer.parent.mkdir(parents=True, exist_ok=True)
    answer.write_text("// for mem.coalesce\n" + TILED)
    prompt = Path(first["prompt"])
    asked = prompt.read_text()
    rules("mem.smem_tiling")
    killed_before_the_commit(store_path, first["run"])
    [abandoned] = prompt.parent.glob("*.redecided")   # the killed call's staged prompt, left behind
    assert "## The skill: mem.smem_tiling" in abandoned.read_text()
    rules("mem.coalesce")                          # the rule put back: the round's decision stands

    [entry] = redecide(store_path, runs=[first["run"]]).runs
    assert (entry.action, entry.new_skill, entry.candidate_moved) == ("unchanged", "mem.coalesce", None)
    [waiting] = list_pending(store_path)
    assert (waiting.skill, waiting.prompt_path) == ("mem.coalesce", prompt)
    assert prompt.read_text() == asked            # the store's decision and the prompt agree
    assert answer.read_text().startswith("// for mem.coalesce")   # the valid answer stays to be judged
    assert not (answer.parent / "superseded").exists()
    assert not abandoned.exists()                  # the abandoned prompt is deleted, not kept to mislead later
    assert [e.action for e in redecide(store_path, runs=[first["run"]]).runs] == ["unchanged"]
    assert prompt.read_text() == asked and answer.exists()


def test_a_staged_prompt_under_a_mark_without_its_digest_is_installed_only_while_the_moves_are_unfinished(
        task, tmp_path, rules):
    """A store re-decided before marks recorded the staged prompt's digest: a staged prompt is the
    mark's only while `waiting.json` still names the superseded skill."""
    store_path = tmp_path / "store"
    first = paused(task, store_path, rules("mem.vectorize"))
    rules("mem.coalesce")
    assert [e.action for e in redecide(store_path, runs=[first["run"]]).runs] == ["changed"]
    with sqlite3.connect(store_path / "runs.sqlite3") as db:   # the mark as such a store holds it
        [(event, payload)] = db.execute("SELECT id, payload_json FROM events WHERE kind='decision-superseded'")
        record = json.loads(payload)
        assert record.pop("prompt_sha256")
        db.execute("UPDATE events SET payload_json=? WHERE id=?", (json.dumps(record), event))
    prompt = Path(first["prompt"])
    asked = prompt.read_text()
    rules("mem.smem_tiling")
    killed_before_the_commit(store_path, first["run"])
    rules("mem.coalesce")
    assert [e.action for e in redecide(store_path, runs=[first["run"]]).runs] == ["unchanged"]
    assert prompt.read_text() == asked and not list(prompt.parent.glob("*.redecided"))


def test_a_file_error_after_the_commit_is_one_line_and_the_next_redecide_finishes_the_moves(task, tmp_path, rules):
    store_path = tmp_path / "store"
    first = paused(task, store_path, rules("mem.vectorize"))
    stale = Path(first["candidate"])
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text("// for mem.vectorize\n" + TILED)
    blocking = stale.parent / "superseded"
    blocking.write_text("a file where the folder for moved candidates goes\n")
    rules("mem.coalesce")

    result = CliRunner().invoke(cli, ["redecide", first["run"], "--store", str(store_path)])
    assert result.exit_code != 0 and isinstance(result.exception, EnvironmentProblem), result.output
    assert "Traceback" not in result.output and "\n" not in result.exception.message
    assert str(blocking) in result.exception.message
    assert f"`skillbase redecide {first['run']}`" in result.exception.hint
    store = RunStore.open(store_path)
    assert store.step_result(1, "r0/decision")["skill"] == "mem.coalesce"   # committed before the moves
    assert stale.exists()

    blocking.unlink()                              # the user clears the way and runs it again
    [entry] = redecide(store_path, runs=[first["run"]]).runs
    assert entry.action == "unchanged"
    [waiting] = list_pending(store_path)
    assert waiting.skill == "mem.coalesce" and "## The skill: mem.coalesce" in waiting.prompt_path.read_text()
    [moved] = blocking.glob("*.cu")
    assert moved.read_text().startswith("// for mem.vectorize") and not stale.exists()


def test_a_prompt_that_cannot_be_staged_is_one_line_and_nothing_is_redecided(task, tmp_path, rules):
    store_path = tmp_path / "store"
    first = paused(task, store_path, rules("mem.vectorize"))
    prompt = Path(first["prompt"])
    blocking = prompt.with_name(prompt.name + ".redecided")
    blocking.mkdir()                               # a folder where the new prompt is staged
    rules("mem.coalesce")
    with pytest.raises(EnvironmentProblem) as refused:
        redecide(store_path, runs=[first["run"]])
    assert str(blocking) in refused.value.message and "nothing was re-decided" in refused.value.message
    store = RunStore.open(store_path)
    assert [d["chosen_skill"] for d in store.decisions(1)] == ["mem.vectorize"]
    assert list_pending(store_path)[0].skill == "mem.vectorize"


# -- a run that ended no-candidate ------------------------------------------------------------------

def ended_no_candidate(task: Path, store_path: Path, folder: Path) -> str:
    """A compile-only run as the LLM bench run's run_2 ended: its round-0 skill tried and not accepted, and
    round 1's rules proposing nothing outside the tabu list (unprofiled, the coder's free choice is no
    candidate): it finished `no-candidate` after round 1, with rounds to spare."""
    first = paused(task, store_path, folder, rounds=3, profiled=False)
    summary = resume_run(first["run"], store_path=store_path, candidate=TILED, progress=lambda m: None)
    store = RunStore.open(store_path)
    run = store.get_run(first["run"])
    assert (summary["status"], run_ended(store, run)[0]) == ("finished", Ended.NO_CANDIDATE)
    assert [r["outcome"] for r in store.rounds(run.id)] == ["rejected", "no-candidate"]
    return run.name


def test_a_run_that_ended_no_candidate_is_reopened_when_todays_rules_propose_a_skill(task, tmp_path, rules):
    store_path = tmp_path / "store"
    name = ended_no_candidate(task, store_path, rules("mem.vectorize", LOADS))
    answered = store_path / "candidates" / f"{name}.cu"      # round 0's answer, judged, still where it was put
    answered.parent.mkdir(parents=True, exist_ok=True)
    answered.write_text(TILED)

    # The rules of the day still propose nothing new: nothing is written.
    before = snapshot(store_path)
    [same] = redecide(store_path, runs=[name]).runs
    assert (same.action, same.round, same.new_skill) == ("unchanged", 1, None)
    assert same.lines() == [f"{name} round 1: unchanged (no candidate)"]
    assert snapshot(store_path) == before

    skill = random.Random().choice(("mem.coalesce", "mem.smem_tiling"))
    rules(skill, LOADS)                            # a rule changed since: it proposes a skill not yet tried
    today = Engine.load(extra_rules=(str(tmp_path / "my_rules"),))
    [dry] = redecide(store_path, runs=[name], dry_run=True).runs
    assert (dry.action, dry.old_skill, dry.new_skill, dry.round) == ("would-change", None, skill, 1)
    assert f"{name} round 1: none -> {skill} (dry run: nothing written)" in dry.lines()
    assert any(line.startswith("  would reopen: the run had ended here") for line in dry.lines())
    assert [(e.run, e.action) for e in redecide(store_path, dry_run=True).runs] == [(name, "would-change")]   # --all
    assert snapshot(store_path) == before

    done = valid(json.loads(CliRunner().invoke(cli, ["redecide", name, "--store", str(store_path), "--json"],
                                               catch_exceptions=False).stdout))
    assert done["counts"] == {"changed": 1}
    [changed] = done["runs"]
    assert changed["reopened"].startswith("the run had ended here: no candidate left")
    store = RunStore.open(store_path)
    run = store.get_run(name)
    # Reopened at round 1 with its --rounds as they were: paused at the round's new prompt, the round unfinished.
    assert (run.status, run.stop_reason, run.finished_at) == ("paused", f"waiting for a candidate for {skill}",
                                                              None)
    assert Settings.from_stored(run.manifest["settings"]).rounds == 3
    assert [(r["status"], r["outcome"]) for r in store.rounds(run.id)] == [("finished", "rejected"),
                                                                           ("started", None)]
    assert store.step_result(run.id, "r1/outcome") is None
    assert store.step_result(run.id, "r1/decision")["skill"] == skill
    old_row, new_row = store.decisions(run.id, 1)
    assert (old_row["chosen_skill"], new_row["chosen_skill"]) == (None, skill)
    assert store.superseded_decisions(run.id)[old_row["id"]]["by"] == new_row["id"]
    reopened = store.rounds_reopened(run.id)[1]
    assert reopened["why"] == (f"redecided: no candidate under rules {run.manifest['rules_digest']} -> {skill} "
                               f"under rules {today.rules_digest}")
    assert run.manifest["rules_digest"] != today.rules_digest
    [waiting] = list_pending(store_path)
    assert (waiting.run, waiting.key, waiting.skill) == (name, "r1/v0/a0", skill)
    assert str(waiting.prompt_path) == changed["prompt"] and f"## The skill: {skill}" in \
        waiting.prompt_path.read_text()
    assert not list(waiting.prompt_path.parent.glob("*.redecided"))
    assert answered.read_text() == TILED          # nothing moved: it answered round 0 and was judged then

    text = render_text(valid(explain_run(store, name), "explain"))
    assert f"decision: {skill}" in text
    assert any(line.strip().startswith("superseded: none") and today.rules_digest[:19] in line
               for line in text.splitlines())
    line = next(line for line in text.splitlines() if line.startswith("  reopened "))
    assert reopened["why"] in line and "the run had ended here (no candidate left" in line

    # The round is a real one now: the old answer is refused as judged already, a new one is judged.
    assert [(m.run, m.action) for m in resume_all(store_path, jobs=0).members] == [(name, "waiting")]
    answered.write_text(TILED.replace("#define TILE 16", "#define TILE 32"))
    assert [(m.run, m.action) for m in resume_all(store_path, jobs=0).members] == [(name, "judged")]
    [attempt] = store.attempts(run.id, 1)
    assert (attempt["skill"], attempt["status"]) == (skill, "unverified")
    # ... and round 2, with both skills tabu on the unchanged kernel, ends the run no-candidate again
    run = store.get_run(name)
    assert run_ended(store, run)[0] == Ended.NO_CANDIDATE and [r["idx"] for r in store.rounds(run.id)] == [0, 1, 2]
    assert [(e.action, e.round) for e in redecide(store_path, runs=[name]).runs] == [("unchanged", 2)]


def test_a_run_of_another_agent_that_ended_no_candidate_is_reopened_for_resume(task, tmp_path, rules):
    store_path = tmp_path / "store"
    settings = Settings(rounds=2, agent="none", extra_rules=(str(rules("mem.vectorize", LOADS)),))
    summary = start_run(task, settings, store_path=store_path, gpu=False, progress=lambda m: None)
    assert summary["stop_reason"].startswith("no candidate left")   # mechanical: mem.vectorize cannot be applied
    rules("cmp.fast_math", LOADS)                                   # a compile flag: it can
    [entry] = redecide(store_path, runs=[summary["run"]]).runs
    assert (entry.action, entry.round, entry.new_skill, entry.prompt) == ("changed", 0, "cmp.fast_math", None)
    assert entry.reopened.endswith(f"interrupted: `skillbase resume {summary['run']}` goes on, its --rounds unchanged")
    store = RunStore.open(store_path)
    run = store.get_run(summary["run"])
    assert run.status == "interrupted" and list_pending(store_path) == []
    resumed = resume_run(run.name, store_path=store_path, progress=lambda m: None)
    [attempt] = store.attempts(run.id, 0)
    assert attempt["skill"] == "cmp.fast_math" and resumed["status"] == "finished"


def test_a_run_reopened_by_a_redecide_killed_after_its_commit_is_finished_by_the_next(task, tmp_path, rules,
                                                                                     monkeypatch):
    store_path = tmp_path / "store"
    name = ended_no_candidate(task, store_path, rules("mem.vectorize", LOADS))
    rules("mem.coalesce", LOADS)
    killed_after_the_commit(store_path, name, monkeypatch)
    store = RunStore.open(store_path)
    assert store.get_run(name).status == "paused"                  # committed; the prompt still staged
    [entry] = redecide(store_path, runs=[name]).runs
    assert (entry.action, entry.new_skill) == ("unchanged", "mem.coalesce")
    [waiting] = list_pending(store_path)
    assert (waiting.key, waiting.skill) == ("r1/v0/a0", "mem.coalesce")
    assert "## The skill: mem.coalesce" in waiting.prompt_path.read_text()
    assert not list(waiting.prompt_path.parent.glob("*.redecided"))


def test_a_reopening_that_loses_the_race_writes_nothing(task, tmp_path, rules, monkeypatch):
    store_path = tmp_path / "store"
    name = ended_no_candidate(task, store_path, rules("mem.vectorize", LOADS))
    rules("mem.coalesce", LOADS)
    folder = RunStore.open(store_path).location / "runs" / name
    waiting_before = (folder / "waiting.json").read_bytes()
    real = redecide_module.decision_of

    def meanwhile(*args):
        other = RunStore.open(store_path)      # another skillbase process writes the run meanwhile
        other.update_run(1, stop_reason="touched")
        other.close()
        return real(*args)

    monkeypatch.setattr(redecide_module, "decision_of", meanwhile)
    [entry] = redecide(store_path, runs=[name]).runs
    assert entry.action == "refused" and "changed while it was re-decided" in entry.reason
    store = RunStore.open(store_path)
    assert store.get_run(name).status == "finished" and [d["chosen_skill"] for d in store.decisions(1, 1)] == [None]
    assert (folder / "waiting.json").read_bytes() == waiting_before and not list(folder.glob("*.redecided"))


# -- a round decided on today's static features of its kernel (issue 16, H81) ---------------------------

STALE_INPUTS = ("src_pointer_inputs >= 3", "The kernel has {src_pointer_inputs} read-only pointer inputs.")


def stored_inputs(store: RunStore, run: str, key: str = "r0/evidence") -> int:
    step = store.step_result(store.get_run(run).id, key)
    evidence = json.loads(store.artifacts.get_text(step["document"]))
    return evidence["static"]["kernels"]["sgemm_naive"]["global_access"]["pointer_inputs"]


def test_a_round_stored_with_a_stale_static_feature_is_redecided_on_todays(task, tmp_path, rules, monkeypatch):
    store_path = tmp_path / "store"
    folder = rules("mem.vectorize", STALE_INPUTS)     # fires on the stale count, not on today's (2)
    counted = random.Random().randint(3, 9)
    with monkeypatch.context() as patch:
        analysed_before_h74(patch, counted)
        first = paused(task, store_path, folder)
    assert first["skill"] == "mem.vectorize"
    store = RunStore.open(store_path)
    assert stored_inputs(store, first["run"]) == counted
    # the reference: the same run started under today's analyser
    fresh = paused(task, tmp_path / "fresh", folder)
    assert fresh["skill"] != "mem.vectorize"

    before = snapshot(store_path)
    [dry] = redecide(store_path, runs=[first["run"]], dry_run=True).runs
    assert snapshot(store_path) == before    # nothing written
    assert (dry.action, dry.old_skill, dry.new_skill) == ("would-change", "mem.vectorize", fresh["skill"])
    assert dry.static == f"recomputed by skillbase {__version__}: global_access.pointer_inputs {counted} -> 2"
    assert f"  static features: {dry.static}" in redecide(store_path, dry_run=True).lines()

    [done] = valid(redecide(store_path, runs=[first["run"]]).to_json())["runs"]
    assert (done["action"], done["new_skill"], done["static"]) == ("changed", fresh["skill"], dry.static)
    [waiting] = list_pending(store_path)
    assert waiting.prompt_path.read_text() == Path(fresh["prompt"]).read_text()   # byte for byte
    # the document decided on is the round's evidence now: the round's measurements, today's features, a note
    run = store.get_run(first["run"])
    assert stored_inputs(store, run.name) == 2
    old_row, new_row = store.evidence_rows(run.id, 0)
    old, new = (json.loads(store.artifacts.get_text(row["document"])) for row in (old_row, new_row))
    assert store.step_result(run.id, "r0/evidence")["document"] == new_row["document"]
    assert new["kernels"] == old["kernels"] and new["ptxas"] == old["ptxas"] and new["roofline"] == old["roofline"]
    refresh = new["producer"]["static_refresh"]
    assert (refresh["by"], refresh["changed"]) == (f"skillbase {__version__}",
                                                   [f"global_access.pointer_inputs {counted} -> 2"])
    assert [n for n in new["notes"] if n.startswith("static features")] == [
        f"static features recomputed from the round's kernel by skillbase {__version__} (git {refresh['git']}), "
        f"not those {old['producer']['tool']} recorded: global_access.pointer_inputs {counted} -> 2; the ncu "
        "metrics, timing and ptxas are the round's own"]
    [mark] = store.superseded_decisions(run.id).values()
    assert mark["static"] == refresh
    text = render_text(valid(explain_run(store, run.name), "explain"))
    assert f"  static features: {dry.static}" in text.splitlines()

    # once more: today's features are the stored ones, the same decision, nothing written
    again = snapshot(store_path)
    [entry] = redecide(store_path, runs=[run.name]).runs
    assert (entry.action, entry.static) == ("unchanged", dry.static)
    assert snapshot(store_path) == again


def test_an_analyser_that_cannot_read_the_kernel_leaves_the_stored_features_and_the_batch_goes_on(
        task, tmp_path, rules, monkeypatch):
    store_path = tmp_path / "store"
    folder = rules("mem.vectorize", STALE_INPUTS)
    with monkeypatch.context() as patch:
        analysed_before_h74(patch, 3)
        runs = [paused(task, store_path, folder)["run"] for _ in range(2)]
    real, calls = run_evidence.static_features, []

    def fails_once(*args, **kwargs):    # today's analyser fails on the first run's kernel only
        calls.append(args)
        if len(calls) == 1:
            raise InputError("k.cu:3: cannot parse the CUDA source near here (no __global__ kernel found)")
        return real(*args, **kwargs)
    monkeypatch.setattr(run_evidence, "static_features", fails_once)

    before = snapshot(store_path)
    outcome = redecide(store_path, dry_run=True)
    assert snapshot(store_path) == before
    first, second = outcome.runs
    assert (first.run, first.action, first.new_skill) == (runs[0], "unchanged", "mem.vectorize")   # stored: 3
    assert first.static == ("the round's own (today's analyser cannot read its kernel: k.cu:3: cannot parse the "
                            "CUDA source near here (no __global__ kernel found))")
    assert (second.run, second.action, second.old_skill) == (runs[1], "would-change", "mem.vectorize")
    assert second.static == f"recomputed by skillbase {__version__}: global_access.pointer_inputs 3 -> 2"
