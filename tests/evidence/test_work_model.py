"""The task's work model in a profile's evidence: `roofline.flops` / `roofline.bytes` at the size it was profiled at.

The rules set the kernel's DRAM traffic against the bytes the task must move (`dram_traffic_ratio` =
`dram_bytes / roofline_bytes`): "moves 3x the bytes the task needs" is a cache or fusion problem, "at the
compulsory bytes" is one no traffic skill helps. The work model comes from the task spec beside the source,
evaluated at the preset the profile was taken at; where that size is not known (a saved report names none)
it stays unset with a note: a model at a guessed size would give a wrong ratio.

The profile is a real H200 one: mem.cache_hints' example, y[i] = x[i] * w[key[i]] over n = 128 Mi elements
with a 10 Mi-entry table, profiled by `skills verify` at its `default` preset; its spec's work model is
flops "n", bytes "12*n + 4*table".
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from skillbase.evidence import Evidence, build_evidence, load_any
from skillbase.evidence.build import attach_source, attach_task

REPO = Path(__file__).resolve().parents[2]
POPULATION = REPO / "results" / "nvidia-h200" / "population"
SKILL = "mem.cache_hints"
REPORT = POPULATION / f"{SKILL}.before.ncu-rep.xz"
TASK = REPO / "skills" / "mem" / SKILL / "examples" / "task.yaml"

# the spec's presets, by hand: default {n: 134217728, table: 10485760}, small {n: 65536, table: 10485760}
N_DEFAULT, N_SMALL, TABLE = 134_217_728, 65_536, 10_485_760


def _staged(folder: Path, work: str | None = None) -> Path:
    """before.cu with its task spec beside it (WORK replaces the spec's work line)."""
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "before.cu"
    shutil.copyfile(POPULATION / f"{SKILL}.before.cu", source)
    spec = TASK.read_text()
    if work is not None:
        line = next(x for x in spec.splitlines() if x.startswith("work:"))
        spec = spec.replace(line, work)
    (folder / "before.task.yaml").write_text(spec)
    return source


def test_the_spec_s_work_model_is_the_one_computed_by_hand():
    spec = TASK.read_text()
    assert 'work: {flops: "n", bytes: "12*n + 4*table"}' in spec
    assert f"default: {{n: {N_DEFAULT}, table: {TABLE}}}" in spec and f"small: {{n: {N_SMALL}, table: {TABLE}}}" in spec


@pytest.mark.parametrize(("preset", "n"), [("default", N_DEFAULT), ("small", N_SMALL)])
def test_a_profile_at_a_preset_gets_the_work_model_at_that_preset(tmp_path, preset, n):
    evidence = attach_task(load_any(REPORT), _staged(tmp_path), preset)
    assert evidence.roofline["bytes"] == 12 * n + 4 * TABLE     # x, key and y per element, the table once
    assert evidence.roofline["flops"] == n                     # one multiply per element
    assert evidence.roofline["work_preset"] == preset
    assert evidence.roofline["dram_bytes"] > 0                 # ncu's measured side is kept beside it
    assert not [note for note in evidence.notes if "work model" in note], evidence.notes


def test_the_rules_read_the_traffic_against_the_compulsory_bytes(tmp_path):
    from skillbase.engine import Engine

    engine = Engine.load()
    evidence = attach_task(load_any(REPORT), _staged(tmp_path), "default")
    view = engine.vocabulary.view(evidence, engine.thresholds)
    compulsory = 12 * N_DEFAULT + 4 * TABLE
    assert view["roofline_bytes"] == compulsory and view["roofline_flops"] == N_DEFAULT
    # the gathers miss the L2 and refetch the table: about 3x the bytes the task must move
    assert view["dram_traffic_ratio"] == pytest.approx(evidence.roofline["dram_bytes"] / compulsory)
    assert 2.5 < view["dram_traffic_ratio"] < 3.5


def test_without_the_profiled_size_the_work_model_is_unset_and_said(tmp_path):
    # `advise --report R --source K.cu`: a saved report names no preset
    evidence = attach_source(load_any(REPORT), _staged(tmp_path))
    assert evidence.task is not None                           # what the task allows is still read
    assert "bytes" not in evidence.roofline and "flops" not in evidence.roofline
    notes = [note for note in evidence.notes if "work model" in note]
    assert len(notes) == 1 and "size the report was profiled at is not known" in notes[0], evidence.notes

    from skillbase.engine import MISSING, Engine

    engine = Engine.load()
    view = engine.vocabulary.view(evidence, engine.thresholds)
    assert view["roofline_bytes"] is MISSING and view["dram_bytes"] is not MISSING


def test_a_preset_the_spec_lacks_is_said_not_guessed(tmp_path):
    evidence = attach_task(load_any(REPORT), _staged(tmp_path), "huge")
    assert "bytes" not in evidence.roofline
    assert [note for note in evidence.notes if "work model is not set" in note and "huge" in note], evidence.notes


def test_a_side_the_model_counts_as_zero_is_left_unset(tmp_path):
    # a KernelBench import derives no FLOPs: zero there means "not modelled", not "no arithmetic"
    source = _staged(tmp_path, work='work: {flops: "0", bytes: "12*n + 4*table"}')
    evidence = attach_task(load_any(REPORT), source, "default")
    assert evidence.roofline["bytes"] == 12 * N_DEFAULT + 4 * TABLE
    assert "flops" not in evidence.roofline


def test_a_source_without_a_profile_gets_no_work_model_and_no_note(tmp_path):
    evidence = attach_task(build_evidence(source=_staged(tmp_path), ptxas_text=""), tmp_path / "before.cu", "default")
    assert evidence.task is not None
    assert not evidence.roofline
    assert not [note for note in evidence.notes if "work model" in note], evidence.notes


def test_a_document_that_carries_the_work_model_keeps_it(tmp_path):
    source = _staged(tmp_path)
    written = attach_task(load_any(REPORT), source, "default").to_json()   # `skillbase profile`'s evidence JSON
    reread = attach_task(Evidence.from_json(written), source)              # read again with no size known
    assert reread.roofline["bytes"] == 12 * N_DEFAULT + 4 * TABLE and reread.roofline["work_preset"] == "default"
    assert not [note for note in reread.notes if "work model" in note], reread.notes
    assert json.loads(reread.to_json())["roofline"] == json.loads(written)["roofline"]


def test_a_launcher_of_several_launches_says_the_ratio_compares_a_part(tmp_path):
    # atom.smem_privatization's launcher: a clearing kernel and the histogram, one launch each
    skill = "atom.smem_privatization"
    source = tmp_path / "before.cu"
    shutil.copyfile(POPULATION / f"{skill}.before.cu", source)
    shutil.copyfile(REPO / "skills" / "atom" / skill / "examples" / "task.yaml", tmp_path / "before.task.yaml")
    evidence = attach_task(load_any(POPULATION / f"{skill}.before.ncu-rep.xz"), source, "default")
    assert sum(k.launches for k in evidence.kernels) == 2
    assert evidence.roofline["bytes"] > 0
    assert [note for note in evidence.notes if "one launcher call of 2 kernel launches" in note], evidence.notes


def test_a_profiled_kernel_gets_the_work_model_at_the_preset_it_was_profiled_at(tmp_path):
    # what `skillbase profile`, `advise K.cu`, each profiled `optimize` round and `skills verify` build
    from skillbase.profiling import evidence_from_profile

    source = _staged(tmp_path)
    profile = SimpleNamespace(report=REPORT, build=SimpleNamespace(log="", arch="sm_90"), preset="small")
    evidence = evidence_from_profile(profile, source)
    assert evidence.roofline["bytes"] == 12 * N_SMALL + 4 * TABLE and evidence.roofline["flops"] == N_SMALL
    assert evidence.roofline["work_preset"] == "small"


def test_kept_profiles_get_the_work_model_of_their_preset(tmp_path):
    """A kept profile names no size: by default it is the task's first scored preset, where `skills verify`
    profiles without --preset; a preset given is used as given."""
    from skillbase.corpus.verify import kept_profile_evidence
    from skillbase.task.spec import load_task

    source = POPULATION / f"{SKILL}.before.cu"
    (tmp_path / "small").mkdir()
    small = kept_profile_evidence(REPORT, source, TASK, tmp_path / "small", preset="small")
    assert small.roofline["bytes"] == 12 * N_SMALL + 4 * TABLE and small.roofline["work_preset"] == "small"
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "before.cu").write_text(source.read_text())
    (tmp_path / "spec" / "before.task.yaml").write_text(TASK.read_text())
    first = load_task(tmp_path / "spec" / "before.cu", check_launcher=False).scored[0]
    (tmp_path / "implied").mkdir()
    implied = kept_profile_evidence(REPORT, source, TASK, tmp_path / "implied")
    assert implied.roofline["work_preset"] == first
    assert implied.roofline["bytes"] == 12 * {"default": N_DEFAULT, "small": N_SMALL}[first] + 4 * TABLE
