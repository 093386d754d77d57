"""`skillbase doctor`: is this machine ready to build, run, time and profile kernels?

Each check is one line: ok / missing / warn, what was found, and the fix when something is missing.
Required for running kernels: a GPU (nvidia-smi), nvcc and CuPy. ncu, readable counters and
compute-sanitizer are needed only by `profile` and sanitizer runs; they are reported but optional
unless `require_profiler` is set. When a GPU is present the counters are tested for real by
profiling a tiny kernel, because ncu's presence says nothing about ERR_NVGPUCTRPERM.
"""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from skillbase.errors import EnvironmentProblem, SkillbaseError
from skillbase.harness import env
from skillbase.harness.device import CUPY_HINT
from skillbase.harness.profile import ncu_path, profile_kernel


@dataclass
class Check:
    name: str
    status: str          # ok | missing | warn | skipped
    detail: str
    fix: str = ""
    required: bool = True

    @property
    def failed(self) -> bool:
        return self.required and self.status == "missing"


def _run(command: list[str], timeout: float = 30.0) -> tuple[int, str]:
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        return 127, "not found"
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout:.0f} s"
    except OSError as error:
        return 126, str(error)
    return out.returncode, (out.stdout or "") + (out.stderr or "")


def check_gpu() -> tuple[Check, Check, Check]:
    """GPU, driver and compute capability from nvidia-smi."""
    gpus, why = env.nvidia_smi_gpus()
    if not gpus:
        if shutil.which("nvidia-smi") is None:
            fix = "install the NVIDIA driver (it provides nvidia-smi), or run on a GPU machine"
        else:
            fix = "check the driver: `nvidia-smi` must list the GPU"
        return (Check("gpu", "missing", why or "nvidia-smi lists no GPU", fix),
                Check("driver", "missing", "unknown", fix), Check("compute capability", "missing", "unknown", fix))
    first = gpus[0]
    more = f" (+{len(gpus) - 1} more)" if len(gpus) > 1 else ""
    cc = first.compute_cap
    return (Check("gpu", "ok", f"{first.name}{more}, {first.memory_total}".rstrip(", ")),
            Check("driver", "ok", first.driver_version),
            Check("compute capability", "ok", f"{cc} (sm_{cc.replace('.', '')})"))


def check_nvcc() -> Check:
    try:
        nvcc = env.nvcc_path()
    except EnvironmentProblem as error:
        return Check("nvcc", "missing", error.message, error.hint or "install the CUDA toolkit")
    code, text = _run([nvcc, "--version"])
    match = re.search(r"release ([\d.]+)", text)
    return Check("nvcc", "ok" if code == 0 else "missing", f"{match.group(1) if match else _first(text)} ({nvcc})",
                 "" if code == 0 else "reinstall the CUDA toolkit")


def check_ncu(required: bool) -> Check:
    try:
        ncu = ncu_path()
    except EnvironmentProblem as error:
        return Check("ncu", "missing", error.message, error.hint or "", required=required)
    code, text = _run([ncu, "--version"])
    match = re.search(r"Version ([\d.]+)", text)
    return Check("ncu", "ok" if code == 0 else "missing", f"{match.group(1) if match else _first(text)} ({ncu})",
                 "" if code == 0 else "reinstall Nsight Compute", required=required)


def check_sanitizer() -> Check:
    tool = env.cuda_tool("compute-sanitizer")
    if tool is None:
        return Check("compute-sanitizer", "missing", "not found",
                     "it ships with the CUDA toolkit; put its bin/ on PATH", required=False)
    code, text = _run([tool, "--version"])
    match = re.search(r"Version ([\w.]+)", text)
    return Check("compute-sanitizer", "ok" if code == 0 else "missing", match.group(1) if match else _first(text),
                 required=False)


def check_cupy() -> Check:
    try:
        cupy = importlib.import_module("cupy")
    except ImportError as error:
        return Check("cupy", "missing", f"not importable ({error})", CUPY_HINT)
    return Check("cupy", "ok", getattr(cupy, "__version__", "?"))


def check_counters(gpu_ok: bool, ncu_ok: bool, nvcc_ok: bool, required: bool) -> Check:
    """Profile a one-line kernel: the only reliable test that counters are readable."""
    if not (gpu_ok and ncu_ok and nvcc_ok):
        return Check("ncu counters", "skipped", "needs a GPU, ncu and nvcc", required=False)
    with tempfile.TemporaryDirectory(prefix="skillbase-doctor-") as tmp:
        folder = Path(tmp)
        (folder / "probe.cu").write_text(_PROBE_CU)
        (folder / "probe.task.yaml").write_text(_PROBE_SPEC)
        try:
            profile_kernel(folder / "probe.cu", preset="tiny", metrics=["gpu__time_duration.sum"], out=folder,
                           timeout_s=180)
        except SkillbaseError as error:
            return Check("ncu counters", "missing", error.message, error.hint or "", required=required)
    return Check("ncu counters", "ok", "a test kernel was profiled", required=required)


_PROBE_CU = """#include <cuda_runtime.h>
__global__ void probe_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
extern "C" void probe(const float* x, float* y, int n) { probe_kernel<<<(n + 255) / 256, 256>>>(x, y, n); }
"""

_PROBE_SPEC = """launcher: probe
args:
  - {name: x, dtype: f32, shape: [n], role: in, init: {dist: uniform, low: -1, high: 1}}
  - {name: y, dtype: f32, shape: [n], role: out}
  - {name: n, dtype: i32, value: n}
sizes:
  presets: {tiny: {n: 4096}}
  scored: [tiny]
  irregular: {n: 1000}
work: {flops: n, bytes: 8*n}
"""


def run_checks(probe_counters: bool = True, require_profiler: bool = False) -> list[Check]:
    gpu, driver, cc = check_gpu()
    nvcc = check_nvcc()
    cupy = check_cupy()
    ncu = check_ncu(required=require_profiler)
    checks = [gpu, driver, cc, nvcc, cupy, ncu]
    if probe_counters:
        checks.append(check_counters(gpu.status == "ok" and cupy.status == "ok", ncu.status == "ok",
                                     nvcc.status == "ok", required=require_profiler))
    checks.append(check_sanitizer())
    return checks


def as_json(checks: list[Check]) -> dict:
    from skillbase.documents import versioned

    return versioned("doctor", {"ok": not any(c.failed for c in checks), "checks": [asdict(c) for c in checks]})


def _first(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""
