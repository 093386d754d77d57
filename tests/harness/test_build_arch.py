"""Tasks that need an arch-specific target (issue 23): `arch: sm_90a` builds with
`-gencode=arch=compute_90a,code=sm_90a` (nvcc 13's plain `-arch=sm_90a` also emits compute_90 PTX, which
cannot hold wgmma or setmaxnreg), compile-only works without a GPU, and a build meant to be loaded is
refused in one line, before nvcc runs, on a GPU that cannot run its target.

The GPU is asked through nvidia-smi (harness.env); the refusal tests put a stand-in `nvidia-smi` on PATH
that answers the real `--query-gpu=... --format=csv,noheader` query for a GPU of another compute capability."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from skillbase.errors import EnvironmentProblem, InputError
from skillbase.harness import env
from skillbase.harness.build import BuildError, build, runs_on, target_arch
from skillbase.task import load_task

REPO = Path(__file__).resolve().parents[2]
SM90A_TASK = REPO / "tests" / "fixtures" / "sm90a" / "scale.cu"
# A kernel only the arch-specific target assembles: a warpgroup-MMA fence and a register reallocation.
HOPPER_ONLY = """
extern "C" __global__ void __launch_bounds__(128) k(float* y) {
#if defined(__CUDA_ARCH__)
    asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");
    asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\\n" ::: "memory");
#endif
    y[threadIdx.x] = 1.0f;
}
extern "C" void run(float* y) { k<<<1, 128>>>(y); }
"""


@pytest.fixture
def hopper_only(tmp_path) -> Path:
    source = tmp_path / "hopper_only.cu"
    source.write_text(HOPPER_ONLY)
    return source


def fake_gpu(tmp_path: Path, monkeypatch, name: str, compute_cap: str) -> None:
    """Put an `nvidia-smi` on PATH that lists one GPU of `compute_cap`, in nvidia-smi's CSV format."""
    folder = tmp_path / "fake-bin"
    folder.mkdir()
    script = folder / "nvidia-smi"
    script.write_text(f"#!/bin/sh\necho '{name}, 550.54.15, {compute_cap}, 81920 MiB, "
                      "GPU-12345678-1234-1234-1234-123456789abc'\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    env.gpu_arch.cache_clear()   # the build asks once per process; this test's GPU is another one


@pytest.fixture(autouse=True)
def forget_the_fake_gpu():
    yield
    env.gpu_arch.cache_clear()


@pytest.mark.nvcc
def test_hopper_instructions_fail_for_sm90_and_build_for_sm90a(hopper_only, tmp_path):
    with pytest.raises(BuildError) as caught:
        build(hopper_only, arch="sm_90", compile_only=True, cache_dir=tmp_path / "cache")
    assert "not supported on .target 'sm_90'" in caught.value.log
    built = build(hopper_only, task_arch="sm_90a", compile_only=True, cache_dir=tmp_path / "cache")
    assert built.arch == "sm_90a" and built.object.is_file()
    assert "-gencode=arch=compute_90a,code=sm_90a" in built.command
    assert not any(flag.startswith("-arch") for flag in built.command), built.command
    assert built.ptxas["k"]["registers"] > 0, "ptxas -v parsed for the sm_90a build"


@pytest.mark.nvcc
def test_plain_arch_sm90a_is_not_enough_with_nvcc_13(hopper_only, tmp_path):
    """Why the build uses -gencode: `-arch=sm_90a` also assembles compute_90 PTX, which rejects wgmma."""
    import subprocess

    from skillbase.harness.env import nvcc_path

    out = subprocess.run([nvcc_path(), "-c", "-arch=sm_90a", "-o", str(tmp_path / "k.o"), str(hopper_only)],
                         capture_output=True, text=True)
    if out.returncode == 0:
        pytest.skip("this nvcc's -arch=sm_90a emits no compute_90 PTX (older than 13)")
    assert "not supported on .target 'sm_90'" in out.stderr


@pytest.mark.nvcc
def test_the_task_arch_reaches_the_build_of_the_fixture_task(tmp_path):
    spec = load_task(SM90A_TASK)
    assert spec.arch == "sm_90a"
    with pytest.raises(BuildError):
        build(SM90A_TASK, arch="sm_90", compile_only=True, cache_dir=tmp_path)
    assert build(SM90A_TASK, compile_only=True, cache_dir=tmp_path, task_arch=spec.arch).arch == "sm_90a"


@pytest.mark.nvcc
@pytest.mark.parametrize("gpu", [("NVIDIA A100-SXM4-80GB", "8.0"), ("NVIDIA B200", "10.0")])
def test_a_gpu_without_the_arch_is_refused_before_any_build(hopper_only, tmp_path, monkeypatch, gpu):
    fake_gpu(tmp_path, monkeypatch, *gpu)
    cache = tmp_path / "cache"
    with pytest.raises(EnvironmentProblem) as caught:
        build(hopper_only, task_arch="sm_90a", cache_dir=cache)
    assert caught.value.message == (f"sm_90a code needs a GPU of exactly compute capability 9.0; "
                                    f"this {gpu[0]} is {gpu[1]}")
    assert "\n" not in caught.value.message and "compile-only" in caught.value.hint
    assert not cache.exists() or not any(cache.iterdir()), "refused before nvcc ran"
    # Compile-only builds for the named arch whatever GPU is here: nothing is loaded.
    assert build(hopper_only, task_arch="sm_90a", compile_only=True, cache_dir=cache).arch == "sm_90a"


@pytest.mark.nvcc
def test_a_hopper_gpu_builds_the_loadable_library(hopper_only, tmp_path, monkeypatch):
    fake_gpu(tmp_path, monkeypatch, "NVIDIA H200", "9.0")
    built = build(hopper_only, task_arch="sm_90a", cache_dir=tmp_path / "cache")
    assert built.library.is_file() and "-gencode=arch=compute_90a,code=sm_90a" in built.command


@pytest.mark.nvcc
def test_check_refuses_the_sm90a_task_on_another_gpu_in_one_line_before_building(tmp_path, monkeypatch, capsys):
    """`skillbase check` on a GPU machine (an A100 here, CuPy assumed present): the static check passes,
    then the first build is refused before nvcc runs; exit 3 (environment), one line, no traceback."""
    from skillbase.cli import main

    fake_gpu(tmp_path, monkeypatch, "NVIDIA A100-SXM4-80GB", "8.0")
    monkeypatch.setattr("skillbase.harness.runtime.require_gpu", lambda: None)
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    with pytest.raises(SystemExit) as exit_info:
        main(["check", str(SM90A_TASK)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 3, err
    assert err.splitlines()[0] == ("error: sm_90a code needs a GPU of exactly compute capability 9.0; "
                                   "this NVIDIA A100-SXM4-80GB is 8.0")
    assert "Traceback" not in err
    builds = tmp_path / "cache" / "build"
    assert not builds.exists() or not any(builds.iterdir()), "nothing was built"


@pytest.mark.nvcc
def test_skills_verify_prebuilds_examples_for_their_task_arch(tmp_path, monkeypatch):
    """`skills verify` warms the build cache in parallel; an sm_90a example must be built as the harness
    will build it (with -gencode for sm_90a), or the warm-up is a failed sm_90 build."""
    from skillbase.corpus.verify import prebuild, work_dir

    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    example = tmp_path / "examples"
    example.mkdir()
    for name in ("before", "after"):
        (example / f"{name}.cu").write_text(SM90A_TASK.read_text())
    (example / "task.yaml").write_text(SM90A_TASK.with_name("scale.task.yaml").read_text())
    prebuild([("hop.test_only", example)], jobs=1)
    staged = work_dir("hop.test_only") / "after.cu"
    again = build(staged, task_arch="sm_90a")
    assert again.cached and "-gencode=arch=compute_90a,code=sm_90a" in again.command


@pytest.mark.nvcc
def test_the_compile_only_judge_builds_for_the_task_arch(monkeypatch, tmp_path):
    """A run without a GPU judges candidates by compiling them: for an sm_90a task, for sm_90a."""
    from skillbase.run.judges import CompileOnlyJudge
    from skillbase.run.types import Status

    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    source = SM90A_TASK.read_text()
    assert CompileOnlyJudge(SM90A_TASK, task_arch="sm_90a").baseline(source).status == Status.UNVERIFIED
    assert CompileOnlyJudge(SM90A_TASK).baseline(source).status == Status.BUILD_FAILED, "sm_90 cannot hold wgmma"


def test_an_explicit_arch_of_another_chip_conflicts_with_the_task():
    with pytest.raises(InputError) as caught:
        target_arch("sm_80", "sm_90a")
    assert caught.value.message == "arch sm_80 was asked for but the task needs sm_90a"
    assert "--arch sm_90a" in caught.value.hint


@pytest.mark.parametrize("asked, needed, chosen", [
    (None, "sm_90a", "sm_90a"), ("sm_90", "sm_90a", "sm_90a"), ("90a", "sm_90a", "sm_90a"),
    ("sm_90a", "sm_90", "sm_90a"), ("sm_80", None, "sm_80"), ("9.0", None, "sm_90"),
])
def test_the_task_arch_wins_and_an_explicit_one_may_refine_it(asked, needed, chosen):
    assert target_arch(asked, needed) == chosen


@pytest.mark.parametrize("arch, compute_cap, runs", [
    ("sm_90a", "9.0", True), ("sm_90a", "10.0", False), ("sm_90a", "8.9", False),
    ("sm_100f", "10.3", True), ("sm_100f", "10.0", True), ("sm_103f", "10.0", False), ("sm_100f", "12.0", False),
    ("sm_90", "9.0", True), ("sm_90", "10.0", True), ("sm_90", "8.0", False), ("sm_120a", "12.1", False),
])
def test_which_devices_run_which_targets(arch, compute_cap, runs):
    assert runs_on(arch, compute_cap) is runs


@pytest.mark.gpu
def test_the_sm90a_task_verifies_on_a_hopper_gpu():
    """On the H200 (CC 9.0) the whole harness runs the sm_90a task: built with -gencode, verified as usual."""
    from skillbase.harness.runtime import Options, evaluate

    result = evaluate(SM90A_TASK, candidate=SM90A_TASK, options=Options(time=False, timeout_s=300.0))
    assert result.status == "ok" and result.correct is True, result.reason
