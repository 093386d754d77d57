"""What the machine has: the GPUs (nvidia-smi), the CUDA compiler, and this code's git revision.

Every query of nvidia-smi, `nvcc --version` and git in skillbase goes through here, so that a run's
manifest, the build, `doctor` and the bench all read the same facts the same way. Each returns None
(or an empty list) when the tool is absent or fails; callers that need a GPU call `require_gpu`.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from skillbase.errors import EnvironmentProblem

_GPU_FIELDS = ("name", "driver_version", "compute_cap", "memory.total", "uuid")


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    driver_version: str
    compute_cap: str       # "9.0"
    memory_total: str      # as nvidia-smi prints it, e.g. "143771 MiB"
    uuid: str = ""         # "GPU-<8-4-4-4-12 hex>": names the physical GPU (harness.gpu_lock)

    @property
    def arch(self) -> str:
        """The compute capability as nvcc's -arch value ('sm_90')."""
        return "sm_" + self.compute_cap.replace(".", "")


def _run(command: list[str], timeout: float) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None


def nvidia_smi_gpus() -> tuple[list[Gpu], str | None]:
    """(the GPUs nvidia-smi lists, why none when the list is empty)."""
    if shutil.which("nvidia-smi") is None:
        return [], "nvidia-smi not found"
    out = _run(["nvidia-smi", f"--query-gpu={','.join(_GPU_FIELDS)}", "--format=csv,noheader"], timeout=30)
    if out is None:
        return [], "nvidia-smi did not answer"
    lines = [line.strip() for line in out.stdout.splitlines() if line.strip()]
    if out.returncode != 0 or not lines:
        detail = next((line.strip() for line in (out.stdout + out.stderr).splitlines() if line.strip()), "")
        return [], detail or f"nvidia-smi exited {out.returncode}"
    gpus = []
    for index, line in enumerate(lines):
        parts = [p.strip() for p in line.split(",")] + ["?"] * len(_GPU_FIELDS)
        gpus.append(Gpu(index, parts[0], parts[1], parts[2], parts[3], parts[4]))
    return gpus, None


def gpus() -> list[Gpu]:
    """The GPUs nvidia-smi lists (empty without a driver or a GPU)."""
    return nvidia_smi_gpus()[0]


def first_gpu() -> Gpu | None:
    found = gpus()
    return found[0] if found else None


def gpu_name() -> str | None:
    """The first GPU's name, or None."""
    gpu = first_gpu()
    return gpu.name if gpu else None


def driver_version() -> str | None:
    gpu = first_gpu()
    return gpu.driver_version if gpu else None


@functools.cache
def gpu_arch() -> str | None:
    """The first GPU's compute capability as 'sm_XX', or None without a GPU."""
    gpu = first_gpu()
    if gpu is None or not gpu.compute_cap.replace(".", "").isdigit():
        return None
    return gpu.arch


def require_gpus(hint: str = "run this on a machine with an NVIDIA GPU") -> list[Gpu]:
    """The GPUs nvidia-smi lists, or a one-line EnvironmentProblem saying why there are none."""
    found, why = nvidia_smi_gpus()
    if not found:
        raise EnvironmentProblem(f"no NVIDIA GPU found ({why})", hint=hint)
    return found


def require_gpu_name(hint: str = "run this on a machine with an NVIDIA GPU") -> str:
    """The first GPU's name, or a one-line EnvironmentProblem saying why there is none."""
    return require_gpus(hint)[0].name


# -- the CUDA compiler -------------------------------------------------------------------------------

def cuda_tool(name: str) -> str | None:
    """A CUDA toolkit program (nvcc, ncu, compute-sanitizer) on PATH, else in $CUDA_HOME, $CUDA_PATH or
    /usr/local/cuda (a toolkit installed but not on PATH is common), else None."""
    found = shutil.which(name)
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / name).is_file():
            return str(Path(root) / "bin" / name)
    return None


def nvcc_path() -> str:
    """nvcc's path, or an EnvironmentProblem saying how to get one."""
    found = cuda_tool("nvcc")
    if found is None:
        raise EnvironmentProblem("nvcc not found (not on PATH, $CUDA_HOME or /usr/local/cuda)",
                                 hint="install the CUDA toolkit and put its bin/ on PATH, "
                                      "e.g. export PATH=/usr/local/cuda/bin:$PATH")
    return found


@functools.cache
def nvcc_version_text(nvcc: str) -> str:
    """`nvcc --version` output (cached per nvcc binary); the build keys its cache on it."""
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise EnvironmentProblem(f"cannot run {nvcc} --version ({error})",
                                 hint="check the CUDA toolkit installation") from None
    return out.stdout.strip()


def nvcc_version() -> str | None:
    """The last line of `nvcc --version` ("Build cuda_13.0.r13.0/compiler..."), or None without nvcc."""
    try:
        lines = nvcc_version_text(nvcc_path()).splitlines()
    except EnvironmentProblem:
        return None
    return lines[-1] if lines else None


# -- this code's revision ----------------------------------------------------------------------------

def source_checkout() -> Path | None:
    """The skillbase git checkout this package runs from, or None for an installed wheel (whose
    site-packages may sit inside some other repository: that one's revision is not ours)."""
    root = Path(__file__).resolve().parents[2]
    pyproject = root / "pyproject.toml"
    if not (root / ".git").exists() or not pyproject.is_file():
        return None
    try:
        named = 'name = "skillbase"' in pyproject.read_text()
    except OSError:
        return None
    return root if named else None


def git_revision() -> str | None:
    """The short git hash of the checkout this code runs from, or None (installed wheel, no git)."""
    root = source_checkout()
    if root is None:
        return None
    out = _run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], timeout=10)
    if out is None or out.returncode != 0:
        return None
    return out.stdout.strip() or None
