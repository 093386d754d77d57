"""The ptxas facts of a source are built for the arch its task spec needs (`arch: sm_90a`), as the harness builds it.

A Hopper kernel that issues wgmma or setmaxnreg does not assemble for plain sm_90; its evidence used to lose its
registers, spills and shared memory, and kept a note naming nvcc's random temporary file instead (the evidence of
one source differed run to run). The population's hop.* examples are the real case.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from skillbase.errors import InputError
from skillbase.evidence import build_evidence, ptxas_for_source

REPO = Path(__file__).resolve().parents[2]
POPULATION = REPO / "results" / "nvidia-h200" / "population"
SKILL = "hop.fp8"   # before.cu issues wgmma.mma_async; its task spec says `arch: sm_90a`
TASK = REPO / "skills" / "hop" / SKILL / "examples" / "task.yaml"
REPORT = POPULATION / f"{SKILL}.before.ncu-rep.xz"


def _staged(folder: Path, with_spec: bool = True) -> Path:
    """before.cu with (or without) its task spec beside it, as `skills verify` profiles it."""
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "before.cu"
    shutil.copyfile(POPULATION / f"{SKILL}.before.cu", source)
    if with_spec:
        shutil.copyfile(TASK, folder / "before.task.yaml")
    return source


def _fresh_cache(monkeypatch, folder: Path) -> None:
    monkeypatch.setenv("SKILLBASE_CACHE", str(folder))   # nvcc really runs: no build is served from a cache


def test_the_population_member_needs_sm_90a():
    assert "arch: sm_90a" in TASK.read_text()
    assert "wgmma" in (POPULATION / f"{SKILL}.before.cu").read_text()


@pytest.mark.nvcc
def test_population_hopper_member_has_ptxas_facts_identical_across_builds(tmp_path, monkeypatch):
    documents = []
    for run in ("one", "two"):
        _fresh_cache(monkeypatch, tmp_path / run / "cache")
        evidence = build_evidence(report=REPORT, source=_staged(tmp_path / "work"))   # same path, fresh build
        record = evidence.ptxas and evidence.ptxas.get(evidence.focus_kernel)
        assert record is not None, evidence.notes
        assert record["registers"] > 0 and record["spill_store_bytes"] == 0, record
        assert not [n for n in evidence.notes if "nvcc" in n or "ptxas" in n], evidence.notes
        documents.append(evidence.to_json())
    assert documents[0] == documents[1]


@pytest.mark.nvcc
def test_an_explicit_sm_90_is_refined_to_the_spec_s_sm_90a(tmp_path, monkeypatch):
    _fresh_cache(monkeypatch, tmp_path / "cache")
    log, note = ptxas_for_source(_staged(tmp_path), "sm_90", task_arch="sm_90a")
    assert note is None
    assert "for 'sm_90a'" in log and "for 'sm_90'" not in log
    evidence = build_evidence(source=tmp_path / "before.cu", arch="sm_90")   # `skillbase evidence --arch sm_90`
    assert evidence.ptxas, evidence.notes


@pytest.mark.nvcc
def test_without_its_spec_the_failure_note_is_the_same_on_every_run(tmp_path, monkeypatch):
    notes = []
    for run in ("one", "two"):
        _fresh_cache(monkeypatch, tmp_path / run / "cache")
        evidence = build_evidence(report=REPORT, source=_staged(tmp_path / "work", with_spec=False))
        assert evidence.ptxas is None
        [note] = [n for n in evidence.notes if n.startswith("nvcc failed")]
        assert "not supported on .target 'sm_90'" in note and "tmpxft" not in note, note
        notes.append(note)
    assert notes[0] == notes[1]


def test_an_arch_of_another_chip_than_the_spec_s_is_one_clear_error(tmp_path):
    with pytest.raises(InputError, match="arch sm_80 was asked for but the task needs sm_90a"):
        build_evidence(source=_staged(tmp_path), arch="sm_80")


@pytest.mark.nvcc
def test_a_spec_that_does_not_load_is_said_and_ptxas_uses_the_default_arch(tmp_path, monkeypatch):
    _fresh_cache(monkeypatch, tmp_path / "cache")
    source = tmp_path / "k.cu"
    source.write_text("__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n")
    (tmp_path / "k.task.yaml").write_text("arch: sm90a\n")
    evidence = build_evidence(source=source)
    assert evidence.ptxas["k"]["registers"] > 0
    assert any(n.startswith("the task spec's arch was not read") for n in evidence.notes), evidence.notes


@pytest.mark.nvcc
def test_a_calibration_member_with_its_spec_beside_carries_ptxas(tmp_path, monkeypatch):
    from skillbase.calibrate.population import load_population
    from skillbase.engine import Engine

    _fresh_cache(monkeypatch, tmp_path / "cache")
    folder = tmp_path / "population"
    folder.mkdir()
    shutil.copyfile(REPORT, folder / REPORT.name)
    shutil.copyfile(POPULATION / f"{SKILL}.before.cu", folder / f"{SKILL}.before.cu")
    shutil.copyfile(TASK, folder / f"{SKILL}.before.task.yaml")     # K.before.task.yaml beside K.before.cu
    [member] = load_population([folder], Engine.load(), focus_only=True).members
    assert member.evidence.ptxas and member.evidence.ptxas[member.kernel]["registers"] > 0, member.evidence.notes
