"""Profile a kernel with Nsight Compute in its own process.

    profile = profile_kernel("sgemm.cu", preset="default", metrics=[...])
    profile.report   # sgemm.default.ncu-rep;  profile.build: the library profiled (ptxas log, arch)

ncu runs the worker (`python -m skillbase.harness.worker`, job kind `run`), which calls the
launcher once at the preset with fresh inputs; uploads and poisoning use memcpy/memset, not
kernels, so the report holds only the candidate's kernels. `--clock-control none` keeps the clocks
the plain timed run sees (ncu would otherwise lock them to base). Metrics: the list the caller
passes (`skillbase.profiling` passes the rule engine's), else a fixed section set; `--set full` on
request. The harness knows neither the engine nor evidence: `skillbase.profiling` turns a profile
into evidence. The profile is evidence, never a verdict: correctness and timing always come from
plain processes (a candidate can detect a profiler).
"""

from __future__ import annotations

import functools
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from skillbase.config import cache_root
from skillbase.errors import EnvironmentProblem, InputError, SkillbaseError
from skillbase.harness.build import BuildError, BuildResult, build
from skillbase.harness.ncu_metrics import catalogue, split_metrics
from skillbase.harness.phases import GPU_WAIT, Phases, record
from skillbase.harness.runtime import require_gpu, run_worker
from skillbase.task import load_task

DEFAULT_SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "WarpStateStats", "SchedulerStats",
                    "MemoryWorkloadAnalysis", "MemoryWorkloadAnalysis_Tables", "ComputeWorkloadAnalysis",
                    "InstructionStats", "SourceCounters")
# Always collected with a metric list: the launch configuration and duration every evidence needs.
BASE_SECTIONS = ("LaunchStats", "Occupancy")
BASE_METRICS = ("gpu__time_duration.sum",)

PERMISSION_HINT = ("run as root, or let all users read counters: add 'options nvidia "
                   "NVreg_RestrictProfilingToAdminUsers=0' to /etc/modprobe.d and reload the driver "
                   "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)")


def ncu_path() -> str:
    """ncu's path, or a one-line EnvironmentProblem when it is absent."""
    from skillbase.harness.env import cuda_tool

    found = cuda_tool("ncu")
    if found is None:
        raise EnvironmentProblem("Nsight Compute (ncu) not found on PATH, $CUDA_HOME or /usr/local/cuda",
                                 hint="install Nsight Compute (part of the CUDA toolkit) and put it on PATH")
    return found


@dataclass(frozen=True)
class Profile:
    """One ncu profile of a kernel: the report, and the build that was profiled."""

    report: Path           # the .ncu-rep
    build: BuildResult     # its nvcc log holds the ptxas -v report of exactly this library
    preset: str


def ncu_command(ncu: str, out_base: Path, metrics: list[str] | None = None, full: bool = False) -> list[str]:
    """The ncu command line (the worker command is appended by run_worker)."""
    command = [ncu, "--clock-control", "none", "--target-processes", "all", "--force-overwrite",
               "--export", str(out_base)]
    if full:
        return command + ["--set", "full"]
    if metrics:
        # ncu refuses a whole run over one name it cannot collect by name: those come from sections.
        direct, sections = split_metrics(list(metrics), catalogue(ncu))
        for section in dict.fromkeys((*BASE_SECTIONS, *sections)):
            command += ["--section", section]
        return command + ["--metrics", ",".join(sorted(set(direct) | set(BASE_METRICS)))]
    for section in DEFAULT_SECTIONS:
        command += ["--section", section]
    return command


def ncu_problem(text: str) -> SkillbaseError | None:
    """An environment or input problem ncu reported in its output, as one-line error."""
    if "ERR_NVGPUCTRPERM" in text:
        return EnvironmentProblem("ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM)",
                                  hint=PERMISSION_HINT)
    if re.search(r"No kernels were profiled", text):
        return InputError("ncu profiled no kernel: the launcher launched nothing at this size",
                          hint="check the launcher with `skillbase check` first")
    match = re.search(r"==ERROR==\s*(.+)", text)
    if match and "Failed to profile" not in match.group(1):
        return EnvironmentProblem(f"ncu failed: {match.group(1).strip()}", hint="`skillbase doctor` checks ncu")
    return None


def profile_kernel(cu_path, preset: str | None = None, metrics: list[str] | None = None, full: bool = False,
                   out: str | Path | None = None, extra_flags=(), timeout_s: float = 600.0,
                   progress: Callable[[str], None] | None = None) -> Profile:
    """Profile `cu_path`'s launcher once at `preset` (default: the first scored) with `metrics` (else
    the default sections, or `--set full`)."""
    say = progress or (lambda message: None)
    cu_path = Path(cu_path)
    # The environment first: without ncu or a GPU nothing can be profiled, whatever the spec says.
    ncu = ncu_path()
    require_gpu()
    spec = load_task(cu_path)
    preset = preset or spec.scored[0]
    sizes = spec.sizes_for(preset)
    say(f"building {cu_path.name}")
    phases = Phases()
    try:
        with phases("compile"):
            built = build(cu_path, extra_flags=tuple(extra_flags), link=spec.link, task_arch=spec.arch)
    except BuildError as error:
        raise InputError(f"cannot profile {cu_path.name}: it does not build: {error.message}") from None
    folder = Path(out) if out is not None else _default_folder(cu_path, built.key)
    folder.mkdir(parents=True, exist_ok=True)
    base = folder / f"{cu_path.stem}.{preset}"
    report = base.with_name(base.name + ".ncu-rep")
    if report.exists():
        report.unlink()
    what = "--set full" if full else (f"{len(metrics)} metrics the rules read" if metrics else "the default sections")
    say(f"profiling {cu_path.name} at {preset} with ncu ({what})")
    job = {"kind": "run", "task": str(spec.kernel_path.resolve()),
           "candidate": {"library": str(built.library), "hooks": dict(spec.hooks)},
           "run": {"sizes": sizes, "seed": 0}}
    with phases("profile"):      # the whole ncu process: its replays dominate the worker's own phases
        outcome = run_worker(job, timeout_s=timeout_s, wrapper=ncu_command(ncu, base, metrics, full), plain=False)
    # Except the profiled worker's wait for the GPU's lock (a neighbour timing): waiting, not profiling.
    phases.carve(GPU_WAIT, ((outcome.result or {}).get("phases_s") or {}).get(GPU_WAIT, 0.0), out_of="profile")
    record(phases.to_json())
    problem = ncu_problem(outcome.stderr_tail)
    if problem is not None:
        raise problem
    if outcome.result is None:
        status, reason = outcome.diagnosis()
        if status == "environment":
            raise EnvironmentProblem(reason)
        raise InputError(f"the profiled run of {cu_path.name} failed: {reason}",
                         hint=f"`skillbase check {cu_path}` shows the failure without the profiler")
    if not report.is_file():
        raise EnvironmentProblem(f"ncu wrote no report ({_last(outcome.stderr_tail)})",
                                 hint="`skillbase doctor` checks ncu and counter permissions")
    return Profile(report=report, build=built, preset=preset)


@functools.cache
def ncu_version() -> str | None:
    """`ncu --version`'s version number (e.g. 2025.3.1.0), or None."""
    try:
        out = subprocess.run([ncu_path(), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired, SkillbaseError):
        return None
    match = re.search(r"Version\s+(\S+)", out.stdout)
    return match.group(1) if match else None


def _default_folder(cu_path: Path, key: str) -> Path:
    root = cache_root()
    return root / "profiles" / f"{cu_path.stem}-{key[:12]}"


def _last(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip()[:200] if lines else "no output"
