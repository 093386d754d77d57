"""`skillbase doctor`: one line per tool, the fix for each missing one, a non-zero exit when required ones miss."""

from __future__ import annotations

import json

import pytest

from skillbase.cli import main
from skillbase.harness import doctor


@pytest.fixture
def bare_machine(monkeypatch):
    """No nvidia-smi, no ncu, no compute-sanitizer, no CuPy; nvcc as found."""
    real_which = doctor.shutil.which
    monkeypatch.setattr(doctor.shutil, "which", lambda name: None if name in ("nvidia-smi", "ncu", "compute-sanitizer")
                        else real_which(name))
    monkeypatch.setattr("skillbase.harness.env.shutil.which", lambda name: None)
    monkeypatch.setenv("CUDA_HOME", "/nonexistent")
    real_import = doctor.importlib.import_module

    def fake_import(name, *args):
        if name == "cupy":
            raise ImportError("No module named 'cupy'")
        return real_import(name, *args)
    monkeypatch.setattr(doctor.importlib, "import_module", fake_import)


def test_missing_tools_each_get_a_fix(bare_machine):
    checks = {c.name: c for c in doctor.run_checks(probe_counters=True)}
    assert checks["gpu"].status == "missing" and "driver" in checks["gpu"].fix
    assert checks["cupy"].status == "missing" and "skillbase[gpu]" in checks["cupy"].fix
    assert checks["ncu counters"].status == "skipped"     # no GPU: no profile attempted
    assert not checks["compute-sanitizer"].required
    assert doctor.as_json(list(checks.values()))["ok"] is False


def test_doctor_exits_non_zero_and_prints_json(bare_machine, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["doctor", "--json"])
    assert exit_info.value.code == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and {c["name"] for c in report["checks"]} >= {"gpu", "driver", "compute capability",
                                                                                 "nvcc", "cupy", "ncu"}


def test_doctor_text_lines(bare_machine, capsys):
    with pytest.raises(SystemExit):
        main(["doctor", "--no-probe"])
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("gpu") and "missing" in out and "fix: " in out


def test_ncu_is_optional_unless_asked(bare_machine):
    optional = {c.name: c for c in doctor.run_checks(probe_counters=False)}
    required = {c.name: c for c in doctor.run_checks(probe_counters=False, require_profiler=True)}
    assert not optional["ncu"].failed and required["ncu"].failed


@pytest.mark.gpu
def test_doctor_on_a_gpu_machine_reads_counters():
    checks = {c.name: c for c in doctor.run_checks(probe_counters=True, require_profiler=True)}
    assert checks["gpu"].status == "ok" and checks["cupy"].status == "ok"
    assert checks["ncu counters"].status == "ok", checks["ncu counters"].detail
