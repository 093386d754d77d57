"""`skillbase calibrate` on the committed population (what `skills verify --keep-profiles` kept: K.before.ncu-rep.xz
with K.before.cu, no task spec) gives each member the evidence `skills verify` ranked on: a kept `<skill>.before`
profile is read with that skill's example task spec (`kept_profile_evidence`, as the advice eval's in-sample row),
so an sm_90a member (hop.warp_specialization_setmaxnreg: `arch: sm_90a`, wgmma.mma_async and setmaxnreg) gets
ptxas facts built for sm_90a instead of an sm_90 nvcc failure. nvcc really runs, compile-only, into a fresh cache."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from skillbase.calibrate.population import load_population
from skillbase.corpus.verify import kept_profile_evidence
from skillbase.engine import Engine

REPO = Path(__file__).resolve().parents[2]
POPULATION = REPO / "results" / "nvidia-h200" / "population"
SKILL = "hop.warp_specialization_setmaxnreg"
TASK = REPO / "skills" / "hop" / SKILL / "examples" / "task.yaml"

pytestmark = pytest.mark.nvcc


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))


def kept(folder: Path, label: str) -> Path:
    """The member's report and source as the committed population keeps them, under `label` (no spec beside)."""
    folder.mkdir()
    shutil.copyfile(POPULATION / f"{SKILL}.before.ncu-rep.xz", folder / f"{label}.ncu-rep.xz")
    shutil.copyfile(POPULATION / f"{SKILL}.before.cu", folder / f"{label}.cu")
    return folder


def test_the_member_needs_sm_90a():
    assert "arch: sm_90a" in TASK.read_text()
    source = (POPULATION / f"{SKILL}.before.cu").read_text()
    assert "wgmma.mma_async" in source and "setmaxnreg" in source
    assert not list(POPULATION.glob("*.task.yaml")), "the population keeps no task specs: calibrate finds them"


def test_a_kept_sm90a_member_is_read_with_its_skill_example_task(tmp_path):
    [member] = load_population([kept(tmp_path / "population", f"{SKILL}.before")], Engine.load(),
                               focus_only=True).members
    evidence = member.evidence
    record = evidence.ptxas and evidence.ptxas.get(member.kernel)
    assert record and record["registers"] > 0, evidence.notes
    assert not [n for n in evidence.notes if "nvcc" in n], evidence.notes
    assert evidence.task is not None   # the task's allowances too, as skills verify ranked it
    # exactly what the advice eval's in-sample row reads for this example
    work = tmp_path / "work"
    work.mkdir()
    eval_view = kept_profile_evidence(POPULATION / f"{SKILL}.before.ncu-rep.xz", POPULATION / f"{SKILL}.before.cu",
                                      TASK, work)
    assert (evidence.ptxas, evidence.task) == (eval_view.ptxas, eval_view.task)
    assert evidence.static["kernels"] == eval_view.static["kernels"]   # its file: each one's own staged copy


def test_a_member_of_no_skill_keeps_the_default_arch_and_says_why(tmp_path):
    """The same files under a name that is no skill's: no task spec is known, ptxas is built for sm_90 and fails."""
    [member] = load_population([kept(tmp_path / "population", "mystery.before")], Engine.load(),
                               focus_only=True).members
    assert member.evidence.ptxas is None and member.evidence.task is None
    [note] = [n for n in member.evidence.notes if n.startswith("nvcc failed")]
    assert "sm_90'" in note, note
