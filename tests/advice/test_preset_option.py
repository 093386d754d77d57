"""`--preset` on `skillbase evidence` and `skillbase advise` (brief H48): the size preset of the kernel's
task that a source is profiled at, or that a saved report was taken at. A report's evidence then carries
the task's work model at that size (roofline bytes and FLOPs, what `dram_traffic_ratio` reads); an unknown
name is the one-line error `optimize --preset` gives (the spec's `sizes_for`), before anything is profiled."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_kit import run_main
from click.testing import CliRunner

from skillbase.errors import InputError
from skillbase.task.spec import load_task

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "naive_sgemm"
REPORT = EXAMPLE / "naive_sgemm.h200.ncu-rep.xz"     # profiled on the H200 at the spec's `default` preset
SOURCE = EXAMPLE / "naive_sgemm.cu"
SIZES = {"small": 256, "default": 2048, "large": 4096}   # naive_sgemm.task.yaml: M = N = K at each preset


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path_factory.mktemp("cache")))


def sgemm_work(n: int) -> tuple[float, float]:
    """(FLOPs, bytes) of one n x n x n SGEMM: a multiply and an add per term, each f32 operand moved once."""
    return 2.0 * n ** 3, 4.0 * 3 * n * n


def optimize_error(preset: str) -> str:
    """The message `optimize --preset` stops with (the harness sizes its profile and timing by the spec)."""
    with pytest.raises(InputError) as error:
        load_task(SOURCE).sizes_for(preset)
    return error.value.message


@pytest.mark.parametrize("command", [
    ["evidence", str(REPORT), "--source", str(SOURCE)],
    ["advise", "--report", str(REPORT), "--source", str(SOURCE)],
    ["advise", str(SOURCE)],          # refused before profiling: this holds on a machine without a GPU
])
def test_an_unknown_preset_is_the_one_line_error_optimize_gives(capsys, command):
    code, out, err = run_main(capsys, *command, "--preset", "larg")
    assert code == 2 and out == "", (code, out, err)
    lines = err.strip().splitlines()
    assert lines == [f"error: {optimize_error('larg')}", "hint: did you mean 'large'?"], err
    assert "presets: small, default, large" in lines[0]


@pytest.mark.parametrize("command, message", [
    (["evidence", str(REPORT)], "give the report and the kernel's source"),
    (["evidence", str(SOURCE)], "give the report and the kernel's source"),
    (["advise", "--report", str(REPORT)], "give its source"),
])
def test_a_preset_needs_a_profile_and_the_source_its_task_lies_beside(capsys, command, message):
    code, out, err = run_main(capsys, *command, "--preset", "large")
    assert code == 2 and err.startswith("error: ") and message in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 2


def test_a_preset_without_a_task_spec_says_so(tmp_path, capsys):
    bare = tmp_path / "naive_sgemm.cu"
    shutil.copyfile(SOURCE, bare)
    code, _, err = run_main(capsys, "evidence", str(REPORT), "--source", str(bare), "--preset", "default")
    assert code == 2 and "no task spec naive_sgemm.task.yaml beside it" in err, err


@pytest.mark.parametrize("preset", sorted(SIZES))
def test_evidence_of_a_report_carries_the_work_model_at_the_preset(preset):
    from skillbase.api import make_evidence

    evidence = make_evidence(REPORT, SOURCE, preset=preset)
    flops, nbytes = sgemm_work(SIZES[preset])
    assert (evidence.roofline["flops"], evidence.roofline["bytes"]) == (flops, nbytes)
    assert evidence.roofline["work_preset"] == preset
    assert evidence.task["allow"] == [] and evidence.task["dtypes"] == ["f32"]


def test_the_right_preset_matches_what_ncu_counted(capsys):
    """The report was taken at `default`: there the work model's FLOPs are the FP32 FLOPs ncu measured."""
    code, out, err = run_main(capsys, "evidence", str(REPORT), "--source", str(SOURCE), "--preset", "default")
    assert code == 0, err
    roofline = json.loads(out)["roofline"]
    assert roofline["flops"] == roofline["fp32_flops"] == sgemm_work(2048)[0]
    assert roofline["bytes"] == sgemm_work(2048)[1] and roofline["work_preset"] == "default"
    # without --preset the size is not known, so no work model is guessed (unchanged behaviour)
    code, out, _ = run_main(capsys, "evidence", str(REPORT), "--source", str(SOURCE))
    assert code == 0 and "bytes" not in json.loads(out)["roofline"]


def test_advise_report_preset_reaches_the_evidence_the_rules_read():
    from skillbase.advise import advise
    from skillbase.cli import cli

    advice = advise(report=REPORT, source=SOURCE, preset="large")
    assert advice.evidence.roofline["work_preset"] == "large"
    assert advice.evidence.roofline["bytes"] == sgemm_work(4096)[1]
    assert any("work model at large" in note for note in advice.notes), advice.notes

    def notes(*extra: str) -> list[str]:
        result = CliRunner().invoke(cli, ["advise", "--report", str(REPORT), "--source", str(SOURCE), "--json",
                                          *extra])
        assert result.exit_code == 0, result.output
        return [n for n in json.loads(result.output)["evidence_notes"] if "work model" in n]

    assert len(notes()) == 1 and "--preset P" in notes()[0]
    assert notes("--preset", "default") == []


@pytest.mark.gpu
def test_advise_a_source_profiles_it_at_the_preset(tmp_path):
    """On the GPU: `advise K.cu --preset small` profiles at `small` (not the spec's first scored, `default`)."""
    from skillbase.advise import advise

    for name in ("naive_sgemm.cu", "naive_sgemm.task.yaml"):
        shutil.copyfile(EXAMPLE / name, tmp_path / name)
    advice = advise(source=tmp_path / "naive_sgemm.cu", preset="small")
    assert advice.evidence.roofline["work_preset"] == "small"
    assert advice.evidence.roofline["flops"] == sgemm_work(256)[0]
    assert any("naive_sgemm.small.ncu-rep" in note for note in advice.notes), advice.notes
