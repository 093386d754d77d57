"""`skillbase check` / `profile` on bad input or a machine without a GPU: one line, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillbase.cli import main

REPO = Path(__file__).resolve().parents[2]
VECTOR_ADD = REPO / "examples" / "vector_add" / "vector_add.cu"


def run(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out = capsys.readouterr()
    return exit_info.value.code, out.out, out.err


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr("skillbase.harness.runtime.gpu_name", lambda: None)


def test_check_without_a_gpu_says_so_in_one_line(capsys, no_gpu):
    code, _, err = run(["check", str(VECTOR_ADD)], capsys)
    assert code == 3
    assert err.splitlines()[0] == "error: no NVIDIA GPU found (nvidia-smi lists none)"
    assert "Traceback" not in err and "doctor" in err


def test_check_missing_file(capsys, tmp_path):
    code, _, err = run(["check", str(tmp_path / "nope.cu")], capsys)
    assert code == 2 and "no such file" in err and "Traceback" not in err


def test_check_missing_spec(capsys, tmp_path):
    kernel = tmp_path / "k.cu"
    kernel.write_text('extern "C" void k(float* x) {}\n')
    code, _, err = run(["check", str(kernel)], capsys)
    assert code == 2 and "no task spec k.task.yaml" in err and "skillbase init" in err


def test_check_unknown_preset_comes_before_the_gpu(capsys, no_gpu):
    code, _, err = run(["check", str(VECTOR_ADD), "--preset", "defualt"], capsys)
    assert code == 2 and "no size preset 'defualt'" in err and "default" in err


def test_check_without_cupy(capsys, monkeypatch):
    monkeypatch.setattr("skillbase.harness.runtime.gpu_name", lambda: "NVIDIA H200")
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None if name == "cupy" else object())
    code, _, err = run(["check", str(VECTOR_ADD)], capsys)
    assert code == 3 and "CuPy is not installed" in err and "skillbase[gpu]" in err


def test_profile_without_ncu(capsys, monkeypatch):
    monkeypatch.setattr("skillbase.harness.runtime.require_gpu", lambda: None)   # a GPU machine without ncu
    monkeypatch.setattr("shutil.which", lambda name: None)
    monkeypatch.setenv("CUDA_HOME", "/nonexistent")
    monkeypatch.setattr("skillbase.harness.profile.Path.is_file", lambda self: self.suffix == ".cu" or
                        self.name.endswith(".task.yaml"))
    code, _, err = run(["profile", str(VECTOR_ADD)], capsys)
    assert code == 3 and "ncu" in err and "Traceback" not in err


def test_profile_problems_from_ncu_output():
    from skillbase.errors import EnvironmentProblem, InputError
    from skillbase.harness.profile import ncu_problem

    problem = ncu_problem("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
                          "Performance Counters")
    assert isinstance(problem, EnvironmentProblem) and "NVreg_RestrictProfilingToAdminUsers=0" in problem.hint
    assert isinstance(ncu_problem("==WARNING== No kernels were profiled."), InputError)
    assert ncu_problem("==PROF== Disconnected from process 1") is None


def test_ncu_command_lines():
    from skillbase.harness.profile import DEFAULT_SECTIONS, ncu_command

    base = ["ncu", "--clock-control", "none"]
    minimal = ncu_command("ncu", Path("/tmp/k.default"),
                          metrics=["dram__bytes.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed"])
    assert minimal[:3] == base and "--metrics" in minimal
    listed = minimal[minimal.index("--metrics") + 1].split(",")
    assert "gpu__time_duration.sum" in listed and "dram__bytes.sum" in listed
    full = ncu_command("ncu", Path("/tmp/k"), full=True)
    assert full[-2:] == ["--set", "full"] and "--metrics" not in full
    default = ncu_command("ncu", Path("/tmp/k"))
    assert [default[i + 1] for i, x in enumerate(default) if x == "--section"] == list(DEFAULT_SECTIONS)


@pytest.mark.parametrize("command", ["check", "profile", "doctor"])
def test_help(command):
    from click.testing import CliRunner

    from skillbase.cli import cli

    result = CliRunner().invoke(cli, [command, "--help"])
    assert result.exit_code == 0 and "Usage" in result.output


def test_render_shows_rates_and_the_roofline(capsys):
    from rich.console import Console

    from skillbase.commands.check import render
    from skillbase.harness.result import CheckResult, KernelTiming, Probe, SizeCheck, SizeTiming
    from skillbase.harness.timing import stats

    result = CheckResult(compiled=True, correct=True, peaks={"copy_bytes_per_s": 4.3e12, "fp32_flops_per_s": 6e13},
                         device={"name": "NVIDIA H200"})
    result.checks.append(SizeCheck("default", {"n": 16777216}, 0, max_abs_err=0.0, rel_l2_err=0.0))
    result.probes.append(Probe("launch-stream-order", True, "3 of 3 probes conclusive"))
    t = SizeTiming("default", {"n": 16777216}, 16777216.0, 201326592.0)
    k = KernelTiming("candidate", stats([55.0, 56.0, 57.0]), stats([70.0] * 3), batch=2, floor_us=46.8,
                     pct_of_floor=85.0, achieved_bytes_per_s=3.6e12, achieved_flops_per_s=3e11)
    t.kernels["candidate"] = k
    result.timings.append(t)
    console = Console(record=True, width=200)
    render(result, console)
    text = console.export_text()
    assert "ok: compiled, verified and timed" in text and "3,600.0" in text and "85%" in text and "4.30 TB/s" in text


def test_optimize_without_a_gpu_leaves_no_run_behind(capsys, no_gpu, tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLBASE_STORE", str(tmp_path / "store"))
    code, _, err = run(["optimize", str(VECTOR_ADD), "--agent", "none"], capsys)
    assert code == 3 and err.startswith("error: no NVIDIA GPU found") and "--no-gpu" in err
    from skillbase.run.store import RunStore

    assert RunStore.open(tmp_path / "store").list_runs() == []
