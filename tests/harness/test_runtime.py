"""The parent side of the worker protocol: diagnoses, process-group kills, plain environments, jobs."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from skillbase.harness.runtime import diagnose, diagnose_cuda, run_worker, worker_env


@pytest.mark.parametrize("text, expected", [
    ("cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorIllegalAddress: an illegal memory access was "
     "encountered", "illegal memory access"),
    ("CUDARuntimeError: cudaErrorMemoryAllocation: out of memory", "out of memory"),
    ("cudaErrorLaunchFailure: unspecified launch failure", "launch failed"),
    ("cudaErrorMisalignedAddress: misaligned address", "misaligned address"),
    ("device-side assert triggered", "assert"),
    ("cudaErrorNoKernelImageForDevice: no kernel image is available", "another architecture"),
])
def test_cuda_errors_become_one_line_diagnoses(text, expected):
    assert expected in diagnose_cuda(text)


def test_unknown_text_is_not_a_cuda_diagnosis():
    assert diagnose_cuda("ModuleNotFoundError: numpy") is None


def test_timeout_is_a_hang():
    status, reason = diagnose(None, "", True, 30.0)
    assert status == "timeout" and "hang" in reason and "30 s" in reason


def test_signals_are_named_with_the_cuda_error_if_any():
    status, reason = diagnose(-signal.SIGSEGV, "", False, 30.0)
    assert status == "crashed" and reason.startswith("SIGSEGV") and "host code" in reason
    status, reason = diagnose(-signal.SIGABRT, "... an illegal memory access was encountered ...", False, 30.0)
    assert "SIGABRT" in reason and "illegal memory access" in reason


def test_error_payloads():
    assert diagnose(3, "", False, 1, {"kind": "cuda", "message": "cudaErrorIllegalAddress: x"})[0] == "crashed"
    status, reason = diagnose(0, "", False, 1, {"kind": "environment", "message": "no CuPy", "hint": "pip install"})
    assert status == "environment" and "pip install" in reason
    assert diagnose(0, "", False, 1, {"kind": "load", "message": "no launcher"}) == ("load-failed", "no launcher")
    assert diagnose(0, "", False, 1, {"kind": "InputError", "message": "bad spec"})[0] == "spec-error"


def test_exit_without_result_quotes_the_last_stderr_line():
    status, reason = diagnose(1, "skillbase-progress: verifying\nRuntimeError: boom", False, 1)
    assert status == "crashed" and reason.endswith("RuntimeError: boom")


def test_worker_environment_is_plain():
    os.environ["CUDA_INJECTION64_PATH"] = "/tmp/libinjection.so"
    try:
        env = worker_env()
    finally:
        del os.environ["CUDA_INJECTION64_PATH"]
    assert "CUDA_INJECTION64_PATH" not in env
    assert env["PYTHONPATH"].split(os.pathsep)[0].endswith("main") or "skillbase" in os.listdir(
        env["PYTHONPATH"].split(os.pathsep)[0])


def test_a_real_worker_reports_an_unknown_job_in_one_line():
    outcome = run_worker({"kind": "bogus"}, timeout_s=60)
    assert not outcome.timed_out and outcome.result is None
    status, reason = outcome.diagnosis()
    assert status == "spec-error" and "unknown worker job kind 'bogus'" in reason


def test_worker_keeps_the_result_channel_clean(tmp_path):
    """Anything written to fd 1 inside the worker (a candidate's printf) must not reach the result channel."""
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"kind": "bogus"}))
    code = (f"import os, sys, runpy; sys.argv=['w', {str(job)!r}];"
            "import skillbase.harness.worker as w;"
            "orig = w.run_job\n"
            "def noisy(job):\n"
            "    os.write(1, b'garbage from a kernel printf\\n'); return orig(job)\n"
            "w.run_job = noisy; w.main()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=worker_env(), timeout=60)
    assert out.stdout.startswith("skillbase-result: ") and "garbage" not in out.stdout
    assert "garbage from a kernel printf" in out.stderr


def test_timeout_kills_the_whole_process_group(tmp_path):
    marker = tmp_path / "child.pid"
    # The wrapper starts a grandchild that would outlive a plain kill of the direct child.
    wrapper = ["bash", "-c", f"sleep 300 & echo $! > {marker}; wait", "wrapper"]
    started = time.monotonic()
    outcome = run_worker({"kind": "selftest"}, timeout_s=2, wrapper=wrapper)
    assert outcome.timed_out and time.monotonic() - started < 60
    assert outcome.diagnosis()[0] == "timeout"
    pid = int(marker.read_text())
    time.sleep(0.2)
    alive = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout.strip()
    assert alive in ("", "Z"), f"grandchild {pid} survived the group kill ({alive})"


def test_no_cupy_is_an_environment_problem_not_a_traceback():
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed here")
    except ImportError:
        pass
    outcome = run_worker({"kind": "selftest"}, timeout_s=120)
    status, reason = outcome.diagnosis()
    assert status == "environment" and "CuPy" in reason and "skillbase[gpu]" in reason


def test_a_candidate_copy_carries_the_files_its_spec_names(tmp_path, monkeypatch):
    """A candidate is built in the cache beside a copy of the spec; a python reference, a CUDA
    reference (with its spec) and input hooks must travel too, or the copy cannot be profiled."""
    from skillbase.harness.scratch import scratch_copy, spec_files

    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    task = tmp_path / "k.cu"
    task.write_text("// k\n")
    (tmp_path / "k.task.yaml").write_text(
        "launcher: k\nargs:\n  - {name: x, dtype: f32, shape: [n], role: in, init: {hook: 'gen.py:make'}}\n"
        "reference: {cuda: ref.cu}\n")
    for name in ("gen.py", "ref.cu", "ref.task.yaml"):
        (tmp_path / name).write_text(f"# {name}\n")
    assert spec_files(tmp_path / "k.task.yaml") == ["ref.cu", "ref.task.yaml", "gen.py"]
    copy = scratch_copy(task, "// candidate\n")
    assert sorted(p.name for p in copy.parent.iterdir()) == ["gen.py", "k.cu", "k.task.yaml", "ref.cu", "ref.task.yaml"]
    assert copy.read_text() == "// candidate\n" and task.read_text() == "// k\n"


def _error_class(name: str, module: str, base: type = Exception) -> type:
    """An exception class named and placed as CuPy's or PyTorch's own (the worker recognises them by name)."""
    return type(name, (base,), {"__module__": module})


def test_the_harness_running_out_of_device_memory_is_the_machines_problem_not_a_verdict(monkeypatch):
    from skillbase.harness import worker
    from skillbase.harness.native import LaunchError

    gib = 2**30
    free, total, held = random.randint(0, 5) * gib, 140 * gib, random.randint(20, 100) * gib
    monkeypatch.setattr(worker, "_device_memory", lambda: (free, total, held))
    requested = random.randrange(10**9, 10**11)
    for error in (_error_class("OutOfMemoryError", "cupy.cuda.memory")(f"Out of memory allocating {requested:,} bytes"),
                  _error_class("OutOfMemoryError", "torch")("CUDA out of memory. Tried to allocate 12.00 GiB"),
                  _error_class("CUDARuntimeError", "cupy_backends.cuda.api.runtime")(
                      "cudaErrorMemoryAllocation: out of memory")):
        payload, _ = worker._error_payload(error)
        status, reason = diagnose(0, "", False, 1, payload["error"])
        assert status == "environment", (type(error).__name__, reason)
        assert reason.startswith("the device ran out of memory, the candidate was not judged")
        assert f"{free / gib:.1f} GiB free of 140.0 GiB" in reason and f"held {held / gib:.1f} GiB" in reason
        assert f"other processes {(total - free - held) / gib:.1f} GiB" in reason and "skillbase resume" in reason
    # Any other CUDA error stays a crash of the candidate's.
    payload, _ = worker._error_payload(_error_class("CUDARuntimeError", "cupy")("cudaErrorIllegalAddress: x"))
    assert diagnose(0, "", False, 1, payload["error"])[0] == "crashed"

    # A candidate's launch that ran out of memory: the machine's problem only on a nearly full device.
    launch = LaunchError("candidate: launch(...) failed: cudaErrorMemoryAllocation: out of memory")
    payload, _ = worker._error_payload(launch)
    assert diagnose(0, "", False, 1, payload["error"])[0] == "environment"
    monkeypatch.setattr(worker, "_device_memory", lambda: (100 * gib, total, held))   # room to spare: its own demand
    payload, _ = worker._error_payload(launch)
    assert diagnose(0, "", False, 1, payload["error"]) == ("crashed", f"CUDA error: {diagnose_cuda(launch.message)}")
    payload, _ = worker._error_payload(LaunchError("candidate: cudaErrorIllegalAddress"))
    assert diagnose(0, "", False, 1, payload["error"])[0] == "crashed"


@pytest.mark.nvcc
def test_a_candidate_copy_carries_its_local_headers_and_builds_in_the_cache(tmp_path, monkeypatch):
    """A kernel that includes a header beside it and one above its folder builds in the user's folder; its
    candidates are built from a copy in the cache, which must carry both headers, laid out alike."""
    from skillbase.harness.build import build
    from skillbase.harness.scratch import copy_headers, scratch_copy

    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    project = tmp_path / "project"
    (project / "kernels" / "detail").mkdir(parents=True)
    (project / "util").mkdir()
    scale = random.randint(2, 9)
    (project / "util" / "math.cuh").write_text(f"#pragma once\n#define SCALE {scale}.0f\n")
    (project / "kernels" / "detail" / "index.cuh").write_text(
        '#pragma once\n#include "../../util/math.cuh"\n'
        '__device__ int at() { return blockIdx.x * blockDim.x + threadIdx.x; }\n')
    body = ('#include "detail/index.cuh"\n'
            '__global__ void k(float* y, int n) { int i = at(); if (i < n) y[i] *= SCALE; }\n'
            'extern "C" void launch(float* y, int n) { k<<<(n + 255) / 256, 256>>>(y, n); }\n')
    task = project / "kernels" / "scale.cu"
    task.write_text(body)
    (project / "kernels" / "scale.task.yaml").write_text("launcher: launch\n")
    assert build(task, arch="sm_90", compile_only=True).ptxas   # as the user builds it (raises BuildError otherwise)

    copy = scratch_copy(task, body.replace("y[i] *= SCALE", "y[i] = y[i] * SCALE"))
    cache = tmp_path / "cache" / "candidates"
    assert copy.relative_to(cache).parts[1:] == ("kernels", "scale.cu")   # one folder down: ../../util resolves
    folder = cache / copy.relative_to(cache).parts[0]
    assert (folder / "util" / "math.cuh").read_text().endswith(f"SCALE {scale}.0f\n")
    assert (folder / "kernels" / "detail" / "index.cuh").exists() and (copy.parent / "scale.task.yaml").exists()
    assert "k" in str(build(copy, arch="sm_90", compile_only=True).ptxas)
    # A header edited is another copy (and so another build), never a stale one.
    (project / "util" / "math.cuh").write_text("#pragma once\n#define SCALE 1.5f\n")
    again = scratch_copy(task, copy.read_text())
    assert again != copy and (again.parents[1] / "util" / "math.cuh").read_text().endswith("1.5f\n")
    # best.cu in a run's folder: the headers inside the task's folder come with it, the one above is named.
    best = tmp_path / "run_1"
    best.mkdir()
    above = copy_headers(body, task, best)
    assert (best / "detail" / "index.cuh").exists() and above == [(project / "util" / "math.cuh").resolve()]


def test_a_kernel_without_local_headers_is_copied_flat(tmp_path, monkeypatch):
    from skillbase.harness.scratch import scratch_copy

    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    task = tmp_path / "k.cu"
    (tmp_path / "fixed.cuh").write_text("#pragma once\n")
    task.write_text('#include "cuda_runtime.h"\n#include <cstdio>\n')
    # nvcc's own header is not local; one named by its absolute path is read in place, wherever the copy is
    copy = scratch_copy(task, f'#include "cuda_runtime.h"\n#include "{tmp_path / "fixed.cuh"}"\n// candidate\n')
    assert copy.parent.parent == tmp_path / "cache" / "candidates" and sorted(os.listdir(copy.parent)) == ["k.cu"]
