"""build_evidence (profile + source + ptxas, names aligned) and the `skillbase evidence` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from profile_kit import plain_report

from skillbase.commands.evidence import evidence as evidence_command
from skillbase.errors import InputError
from skillbase.evidence import build_evidence, load_ncu_report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PROFILES = FIXTURES / "profiles"
STATIC = FIXTURES / "static"
needs_profiles = pytest.mark.skipif(not (PROFILES / "divergent_reduction").is_dir(), reason="no profiler fixtures")


@needs_profiles
def test_profile_source_and_ptxas_log():
    d = PROFILES / "divergent_reduction"
    ev = build_evidence(report=d / "report.ncu-rep.xz", source=FIXTURES / "kernels" / "divergent_reduction.cu",
                        ptxas_text=(d / "ptxas.txt").read_text())
    assert ev.focus_kernel == "reduce_interleaved"
    assert ev.static["kernels"]["reduce_interleaved"]["shared"]["static_bytes"] == 2048
    assert ev.ptxas["reduce_interleaved"]["registers"] == 13
    assert ev.roofline["dram_bytes"] > 0
    json.loads(ev.to_json())


@needs_profiles
def test_existing_evidence_object_refocused():
    ev = load_ncu_report(plain_report("divergent_reduction"))
    out = build_evidence(evidence=ev, kernel="reduce_final",
                         ptxas_text=(PROFILES / "divergent_reduction" / "ptxas.txt").read_text())
    assert out.focus_kernel == "reduce_final" and out.ptxas["reduce_final"]["registers"] == 12


def test_static_only_with_template_ptxas_alias():
    ev = build_evidence(source=STATIC / "launcher.cu", ptxas_text=(STATIC / "ptxas" / "launcher.txt").read_text(),
                        kernel="rows")
    assert ev.kernels == [] and ev.focus_kernel == "rows_kernel" and "static" in ev.focus_reason
    assert ev.ptxas["rows_kernel"]["barriers"] == 1
    assert ev.producer["source_kind"] == "static"
    ev.to_json()
    default = build_evidence(source=STATIC / "launcher.cu", ptxas_text="")
    assert default.focus_kernel == "scale_t" and "launcher" in default.focus_reason
    with pytest.raises(InputError, match="kernels in the source"):
        build_evidence(source=STATIC / "launcher.cu", ptxas_text="", kernel="zzz")


def test_nvcc_absent_is_a_note_not_an_error(monkeypatch, tmp_path):
    # no nvcc anywhere: not on PATH, not under $CUDA_HOME, not in /usr/local/cuda
    monkeypatch.setattr("shutil.which", lambda name: None)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    monkeypatch.setattr(Path, "is_file", lambda self: False if self.name == "nvcc" else os.path.isfile(self))
    ev = build_evidence(source=STATIC / "coalesced.cu")
    assert ev.ptxas is None and any("nvcc not found" in n for n in ev.notes)


@pytest.mark.nvcc
def test_ptxas_compiled_when_nvcc_present(tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path))
    ev = build_evidence(source=STATIC / "atomics.cu", kernel="hist_shared")
    assert ev.ptxas["hist_shared"]["shared_bytes"] == 1024 and ev.ptxas["hist_shared"]["arch"] == "sm_90"


@pytest.mark.nvcc
def test_a_source_that_does_not_compile_is_a_note(tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "broken.cu"
    source.write_text("__global__ void k(float* x) { x[0] = y; }\n")
    ev = build_evidence(source=source)
    assert ev.ptxas is None and any(n.startswith("nvcc failed: broken.cu:1: error") for n in ev.notes), ev.notes


@pytest.mark.nvcc
def test_ptxas_is_the_harness_build_with_its_cache_and_headers(tmp_path, monkeypatch):
    from skillbase.evidence import parse_ptxas, ptxas_for_source
    from skillbase.harness.build import build

    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "tile.h").write_text("#define TILE 16\n")
    source = tmp_path / "k.cu"
    source.write_text('#include "tile.h"\n__global__ void k(float* x) {\n  __shared__ float s[TILE];\n'
                      "  s[threadIdx.x] = x[threadIdx.x];\n  __syncthreads();\n"
                      "  x[threadIdx.x] = s[TILE - 1 - threadIdx.x];\n}\n")
    first, note = ptxas_for_source(source)
    assert note is None and parse_ptxas(first)["k"]["shared_bytes"] == 64
    again = build(source, arch="sm_90", compile_only=True)
    assert again.cached and again.log == first          # one build, one cache
    (tmp_path / "tile.h").write_text("#define TILE 32\n")
    second, _ = ptxas_for_source(source)                # a changed header misses the cache
    assert parse_ptxas(second)["k"]["shared_bytes"] == 128


@needs_profiles
def test_cli_stdout_file_force_and_summary(tmp_path):
    runner = CliRunner()
    report = str(PROFILES / "streaming_copy" / "report.ncu-rep.xz")
    ptxas = str(PROFILES / "streaming_copy" / "ptxas.txt")
    result = runner.invoke(evidence_command, [report, "--ptxas", ptxas])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["focus_kernel"] == "copy_scalar"
    out = tmp_path / "ev.json"
    assert runner.invoke(evidence_command, [report, "-o", str(out)]).exit_code == 0
    assert json.loads(out.read_text())["device"]["sm_count"] == 132
    refused = runner.invoke(evidence_command, [report, "-o", str(out)])
    assert refused.exit_code != 0 and isinstance(refused.exception, InputError)
    assert "--force" in refused.exception.hint
    assert runner.invoke(evidence_command, [report, "-o", str(out), "--force"]).exit_code == 0
    summary = runner.invoke(evidence_command, [report, "--summary", "--ptxas", ptxas])
    assert "copy_scalar" in summary.output and "NVIDIA H200" in summary.output and "registers" in summary.output
    csv = runner.invoke(evidence_command, [str(PROFILES / "streaming_copy" / "raw.csv"),
                                           "--details", str(PROFILES / "streaming_copy" / "details.csv")])
    assert json.loads(csv.output)["kernels"][0]["ncu_rules"]


def test_cli_bare_source(tmp_path):
    result = CliRunner().invoke(evidence_command, [str(STATIC / "fp64_math.cu"), "--kernel", "poly",
                                                   "--ptxas", str(STATIC / "ptxas" / "wmma_kernel.txt")])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["focus_kernel"] == "poly_fp64" and doc["static"]["kernels"]["poly_fp64"]["fp64"]["double_decls"] == 2


def test_cli_bad_input_is_one_line_and_fast(tmp_path):
    bad = tmp_path / "x.ncu-rep"
    bad.write_bytes(b"garbage garbage")
    proc = subprocess.run([sys.executable, "-m", "skillbase", "evidence", str(bad)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("error: ") and "Traceback" not in proc.stderr and len(lines) <= 2
