"""The parent side: build, statically check, and run each candidate in its own worker process.

    from skillbase.harness.runtime import evaluate
    result = evaluate("examples/naive_sgemm/naive_sgemm.cu", candidate="tiled.cu",
                      baseline="examples/naive_sgemm/naive_sgemm.cu")   # -> CheckResult
    result.status, result.reason, result.timings[0].speedup

The worker (`python -m skillbase.harness.worker`) runs in a new session (its own process group)
with a timeout; on timeout the whole group is killed (ncu and its target included) and the
attempt is a `timeout` ("hang"). A worker that dies is diagnosed in one line from its exit
signal and the CUDA error text it left on stderr (illegal memory access, out of memory, launch
failure, ...). Verdicts always come from a plain process: profiler and sanitizer injection
variables are removed from the worker's environment, so a candidate that detects them behaves
the way it will when it is used.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillbase.config import timing_shared_slots
from skillbase.errors import EnvironmentProblem, InputError, SkillbaseError
from skillbase.harness.env import gpu_name
from skillbase.harness.phases import Phases, merge, record
from skillbase.harness.result import CheckResult
from skillbase.harness.worker import OUT_OF_MEMORY, PROGRESS_MARK, RESULT_MARK

DEFAULT_TIMEOUT_S = 600.0
# Variables through which profilers and sanitizers inject themselves; a plain run has none.
INJECTION_VARIABLES = ("CUDA_INJECTION64_PATH", "NV_COMPUTE_PROFILER_PERFWORKS_DIR", "NSYS_PROFILING_SESSION_ID",
                       "CUDA_INJECTION32_PATH")

# CUDA error text -> the one-line diagnosis a user can act on. Order matters: first match wins.
_CUDA_DIAGNOSES = (
    (r"illegal memory access|cudaErrorIllegalAddress|CUDA_ERROR_ILLEGAL_ADDRESS",
     "illegal memory access: a kernel read or wrote outside its buffers (check the bounds at the irregular size)"),
    (r"misaligned address|cudaErrorMisalignedAddress", "misaligned address: a vector load/store on a pointer "
                                                       "that is not aligned to its width"),
    (OUT_OF_MEMORY.pattern,
     "out of memory on the device (the task's sizes plus the harness's buffers do not fit?)"),
    (r"device-side assert|cudaErrorAssert", "a device-side assert fired in the kernel"),
    (r"illegal instruction|cudaErrorIllegalInstruction", "illegal instruction executed by the kernel"),
    (r"too many resources requested|cudaErrorLaunchOutOfResources",
     "launch out of resources: too many registers or threads per block for this launch"),
    (r"launch timed out|cudaErrorLaunchTimeout", "the kernel ran into the display watchdog (launch timed out)"),
    (r"hardware stack error|cudaErrorHardwareStackError", "hardware stack error (deep recursion or stack overflow)"),
    (r"invalid program counter|cudaErrorInvalidPc", "invalid program counter in the kernel"),
    (r"unspecified launch failure|cudaErrorLaunchFailure|CUDA_ERROR_LAUNCH_FAILED",
     "launch failed (unspecified launch failure): the kernel crashed"),
    (r"no kernel image|cudaErrorNoKernelImageForDevice",
     "no kernel image for this GPU: the library was built for another architecture"),
)

_SIGNALS = {
    signal.SIGSEGV: "segmentation fault in host code (the launcher touched bad host memory, e.g. dereferenced a "
                    "device pointer)",
    signal.SIGBUS: "bus error in host code",
    signal.SIGFPE: "floating-point exception in host code (integer division by zero in the launcher?)",
    signal.SIGABRT: "aborted (an assertion or std::terminate in host code)",
    signal.SIGILL: "illegal instruction in host code",
    signal.SIGKILL: "killed (SIGKILL): out of host memory, or killed from outside",
}


def diagnose_cuda(text: str) -> str | None:
    """The diagnosis for a CUDA error message, or None when the text names none we know."""
    for pattern, diagnosis in _CUDA_DIAGNOSES:
        if re.search(pattern, text, re.I):
            return diagnosis
    return None


@dataclass
class WorkerOutcome:
    payload: dict | None
    returncode: int | None
    timed_out: bool
    timeout_s: float
    stderr_tail: str = ""
    wall_s: float = 0.0
    progress: list[str] = field(default_factory=list)

    @property
    def result(self) -> dict | None:
        if self.payload and self.payload.get("ok"):
            return self.payload.get("result")
        return None

    @property
    def error(self) -> dict | None:
        return self.payload.get("error") if self.payload and not self.payload.get("ok") else None

    def diagnosis(self) -> tuple[str, str]:
        """(status, one-line reason) for a worker that produced no result."""
        return diagnose(self.returncode, self.stderr_tail, self.timed_out, self.timeout_s, self.error)


def diagnose(returncode: int | None, stderr_tail: str, timed_out: bool, timeout_s: float,
             error: dict | None = None) -> tuple[str, str]:
    """Turn how a worker ended into (status, reason): timeout, crashed, load-failed, environment, ..."""
    if timed_out:
        return "timeout", (f"hang: no result within {timeout_s:.0f} s, the worker was killed (an endless loop, "
                           "a deadlock between blocks, or far too much work?)")
    if error is not None:
        kind, message = error.get("kind"), error.get("message", "")
        if kind == "cuda":
            return "crashed", f"CUDA error: {diagnose_cuda(message) or _first_line(message)}"
        if kind == "environment":
            return "environment", message + (f" ({error['hint']})" if error.get("hint") else "")
        if kind == "load":
            return "load-failed", message
        if kind == "InputError":
            return "spec-error", message
        cuda = diagnose_cuda(message)
        if cuda:
            return "crashed", f"CUDA error: {cuda}"
        return "crashed", f"worker error: {_first_line(message)}"
    cuda = diagnose_cuda(stderr_tail)
    if returncode is not None and returncode < 0:
        try:
            sig = signal.Signals(-returncode)
            name, text = sig.name, _SIGNALS.get(sig, "killed by a signal")
        except ValueError:
            name, text = f"signal {-returncode}", "killed by a signal"
        return "crashed", f"{name}: {text}" + (f"; CUDA reported: {cuda}" if cuda else "")
    if cuda:
        return "crashed", f"CUDA error: {cuda}"
    last = _last_meaningful_line(stderr_tail)
    return "crashed", f"the worker exited with status {returncode} without a result" + (f": {last}" if last else "")


def _first_line(text: str) -> str:
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()[:300]
    return "no message"


def _last_meaningful_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line and not line.startswith(PROGRESS_MARK):
            return line[:300]
    return ""


def worker_env(extra: dict[str, str] | None = None, plain: bool = True) -> dict[str, str]:
    env = dict(os.environ)
    if plain:
        for name in INJECTION_VARIABLES:
            env.pop(name, None)
    # The worker imports skillbase from wherever this process found it.
    root = str(Path(__file__).resolve().parent.parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYTHONUNBUFFERED", "1")
    if extra:
        env.update(extra)
    return env


def run_worker(job: dict, timeout_s: float = DEFAULT_TIMEOUT_S, progress: Callable[[str], None] | None = None,
               wrapper: list[str] | None = None, env: dict[str, str] | None = None, plain: bool = True,
               workdir: str | Path | None = None) -> WorkerOutcome:
    """Run one job in a fresh worker process (optionally under `wrapper`, e.g. ncu); never raises for
    what the candidate does -- crashes and hangs come back as a WorkerOutcome to diagnose."""
    folder = Path(tempfile.mkdtemp(prefix="skillbase-job-"))
    job_path = folder / "job.json"
    job_path.write_text(json.dumps(job))
    command = list(wrapper or []) + [sys.executable, "-m", "skillbase.harness.worker", str(job_path)]
    started = time.monotonic()
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=worker_env(env, plain), cwd=workdir)
    except OSError as error:
        shutil.rmtree(folder, ignore_errors=True)
        raise EnvironmentProblem(f"cannot start the worker ({error})", hint="check the Python installation") from None
    tail: collections.deque[str] = collections.deque(maxlen=200)
    stdout_chunks: list[bytes] = []
    seen_progress: list[str] = []

    def read_stderr():
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line.startswith(PROGRESS_MARK):
                message = line[len(PROGRESS_MARK):]
                seen_progress.append(message)
                if progress is not None:
                    try:
                        progress(message)
                    except Exception:  # noqa: BLE001 - this thread must keep draining stderr, or the worker
                        pass           # blocks on a full pipe: a broken progress display only loses its line
            else:
                tail.append(line)

    def read_stdout():
        for raw in proc.stdout:
            stdout_chunks.append(raw)

    readers = [threading.Thread(target=read_stderr, daemon=True), threading.Thread(target=read_stdout, daemon=True)]
    for t in readers:
        t.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc)
    except BaseException:
        kill_group(proc)   # Ctrl-C: never leave a kernel spinning on the GPU
        raise
    finally:
        for t in readers:
            t.join(timeout=5)
        shutil.rmtree(folder, ignore_errors=True)
    payload = None
    for line in b"".join(stdout_chunks).decode("utf-8", "replace").splitlines():
        if line.startswith(RESULT_MARK):
            try:
                payload = json.loads(line[len(RESULT_MARK):])
            except json.JSONDecodeError:
                payload = None
        elif line.strip():
            tail.append(line)   # a wrapper such as ncu reports its errors (==ERROR==) on stdout
    return WorkerOutcome(payload, proc.returncode, timed_out, timeout_s, "\n".join(tail),
                         time.monotonic() - started, seen_progress)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the worker's whole process group (it may have children: ncu, compute-sanitizer)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


# ------------------------------------------------------------------------------------------------
# Preconditions
# ------------------------------------------------------------------------------------------------

def require_gpu() -> None:
    """One-line EnvironmentProblem unless a GPU answers (harness.env) and CuPy can be imported."""
    if gpu_name() is None:
        raise EnvironmentProblem("no NVIDIA GPU found (nvidia-smi lists none)",
                                 hint="run on a machine with an NVIDIA GPU and driver; `skillbase doctor` checks "
                                      "the setup")
    if importlib.util.find_spec("cupy") is None:
        from skillbase.harness.device import CUPY_HINT

        raise EnvironmentProblem("CuPy is not installed; the harness runs kernels through it", hint=CUPY_HINT)


# ------------------------------------------------------------------------------------------------
# The high-level API
# ------------------------------------------------------------------------------------------------

@dataclass
class Options:
    verify: bool = True
    time: bool = True
    static: bool = True
    preset: str | None = None          # time only this preset (default: every scored preset)
    presets: tuple[str, ...] = ()      # time these presets (overrides `preset`)
    timeout_s: float = DEFAULT_TIMEOUT_S
    extra_flags: tuple[str, ...] = ()
    arch: str | None = None
    verify_plan: dict[str, Any] = field(default_factory=dict)    # VerifyPlan overrides
    time_plan: dict[str, Any] = field(default_factory=dict)      # TimePlan overrides
    verify_sizes: list[tuple[str, dict]] | None = None           # override (tests)
    torch_compile: bool = False        # a PyTorch candidate (kernel: *.py) runs through torch.compile


def evaluate(task: str | Path, candidate: str | Path | None = None, baseline: str | Path | None = None,
             options: Options | None = None, progress: Callable[[str], None] | None = None,
             baseline_flags: tuple[str, ...] = (), baseline_task: str | Path | None = None) -> CheckResult:
    """Build, statically check, verify and time `candidate` (default: the task's own kernel).

    `task` is the original K.cu (with K.task.yaml beside it); its kernel is the reference unless
    the spec names another. `baseline`, when given, is timed interleaved with the candidate.
    Raises InputError for a bad spec and EnvironmentProblem without a GPU / CuPy / nvcc; every
    problem of the candidate itself comes back as the CheckResult's status and reason.

    Every library is built and called under the spec that describes it (its `link:` and `hooks:`):
    the candidate under the task's; the baseline under `baseline_task` (a .cu or .task.yaml, whose
    launcher and arguments must be the task's) when given, else the task's (it is then another
    version of the task's kernel); a `reference: {cuda: R.cu}` under `R.task.yaml` when one sits
    beside it, else plainly. The result's `phases_s` says where the time went (`compile` here, the
    worker's own phases, `worker` for its start); it is also recorded for the job collecting them.
    """
    host = Phases()      # what this side does around the worker (nvcc), added to the worker's phases
    result = _evaluate(task, candidate, baseline, options, progress, baseline_flags, baseline_task, host)
    result.phases_s = merge(host.to_json(), result.phases_s)
    record(result.phases_s)
    return result


def _evaluate(task, candidate, baseline, options: Options | None, progress, baseline_flags, baseline_task,
              host: Phases) -> CheckResult:
    from skillbase.task import load_task

    options = options or Options()
    say = progress or (lambda message: None)
    spec = load_task(task)
    task_kernel = spec.kernel_path.resolve()
    candidate_path = Path(candidate).resolve() if candidate is not None else task_kernel
    if not candidate_path.is_file():
        raise InputError(f"{candidate_path}: no such file")
    for preset in (*options.presets, *([options.preset] if options.preset is not None else [])):
        spec.sizes_for(preset)   # an unknown preset is an InputError, with did-you-mean

    base_spec = spec
    if baseline_task is not None:
        base_spec = load_task(baseline_task)
        same_signature(spec, base_spec)

    result = CheckResult()
    if options.static:
        from skillbase.harness.static_check import errors_only

        found = static_violations(spec, candidate_path)
        result.static_violations = [str(v) for v in found]
        blocking = errors_only(found)
        if blocking:
            v = blocking[0]
            # Name every other rule that fired too: the first line is not always the main offence.
            others: dict[str, list[int]] = {}
            for w in blocking[1:]:
                if w.rule != v.rule:
                    others.setdefault(w.rule, []).append(w.line)
            also = ""
            if others:
                also = "; also " + ", ".join(f"{rule} (line {', '.join(map(str, lines))})"
                                             for rule, lines in others.items())
            return result.fail("rejected-static", f"static check: line {v.line}: {v.rule}: {v.rationale}{also}")

    if candidate_path.suffix == ".py" and "torch" not in spec.allow:
        # Also with the static check off: a PyTorch implementation runs only where the task says so.
        return result.fail("rejected-static", f"{candidate_path.name} is a PyTorch implementation and the task "
                                              "does not allow torch")
    require_gpu()   # after the static check, which needs no GPU: a banned API is rejected anywhere
    if candidate_path.suffix == ".py":
        # A PyTorch implementation (the static check passed it only where the task allows torch): nothing to
        # build; the worker imports it (harness.torch_launcher).
        entry: dict[str, Any] = {"python": str(candidate_path), "source": str(candidate_path),
                                 "compile": options.torch_compile}
    else:
        say(f"building {candidate_path.name}")
        with host("compile"):
            built = _build(result=result, **_build_arguments(spec, candidate_path, options))
        if built is None:
            return result
        entry = {"library": str(built), "source": str(candidate_path), "hooks": dict(spec.hooks)}
    result.compiled = True
    # The spec's own path: a torch task's kernel (torch.py) does not name its spec the way K.cu does.
    job: dict[str, Any] = {"kind": "check", "task": str(spec.path.resolve()), "candidate": entry}
    with host("compile"):
        job["reference"] = _reference(spec, candidate_path, task_kernel, options, say)
    if baseline is not None and options.time:
        say(f"building the baseline {Path(baseline).name}")
        with host("compile"):
                base_lib = _build(Path(baseline).resolve(), baseline_flags, options.arch, CheckResult(),
                              link=base_spec.link, task_arch=base_spec.arch or spec.arch)
        if base_lib is None:
            raise InputError(f"{baseline}: the baseline does not build", hint="run `skillbase check` on it first")
        job["baseline"] = {"library": str(base_lib), "hooks": dict(base_spec.hooks)}
    sizes = options.verify_sizes or spec.verify_sizes()
    job["verify"] = dict(sizes=[[n, s] for n, s in sizes], **options.verify_plan) if options.verify else None
    if options.time:
        timed = list(options.presets) or ([options.preset] if options.preset else list(spec.scored))
        job["time"] = dict(sizes=[[n, spec.sizes_for(n)] for n in timed], **time_plan(options))
    outcome = run_worker(job, timeout_s=options.timeout_s, progress=say)
    return merge_outcome(result, outcome)


def time_plan(options: Options) -> dict[str, Any]:
    """The TimePlan overrides a job carries: the options', plus the settings' experiments they leave open."""
    plan = dict(options.time_plan)
    if timing_shared_slots():
        plan.setdefault("shared_slots", True)
    return plan


def static_violations(spec, candidate_path: Path) -> list:
    """The static check of a candidate under its task spec (what the spec allows, its hooks exempted)."""
    from skillbase.harness.static_check import check_source

    return check_source(candidate_path, allow=spec.allow, hooks=spec.hook_names)


def candidate_build(spec, candidate_path: Path, options: Options | None = None) -> dict[str, Any] | None:
    """The `build()` arguments with which `evaluate` builds CANDIDATE_PATH under SPEC (a loadable library with
    the task's link and arch, the GPU's when the task names none), or None where it builds nothing: a PyTorch
    file, or a source the static check stops first. What a prebuild asks, so it builds the judged artifact."""
    from skillbase.harness.static_check import errors_only

    options = options or Options()
    if candidate_path.suffix == ".py" or (options.static and errors_only(static_violations(spec, candidate_path))):
        return None
    return _build_arguments(spec, candidate_path, options)


def _build_arguments(spec, candidate_path: Path, options: Options) -> dict[str, Any]:
    return {"cu_path": candidate_path, "arch": options.arch, "extra_flags": tuple(options.extra_flags),
            "link": tuple(spec.link), "task_arch": spec.arch}


def merge_outcome(result: CheckResult, outcome: WorkerOutcome) -> CheckResult:
    """Fold a worker's outcome into the parent's CheckResult (build and static results kept)."""
    if outcome.result is not None:
        merged = CheckResult.from_dict(outcome.result)
        merged.compiled = True
        merged.static_violations = result.static_violations
        merged.log = outcome.stderr_tail[-4000:]
        # The worker process's start and imports: its wall time less the phases it measured itself.
        merged.phases_s["worker"] = round(max(0.0, outcome.wall_s - sum(merged.phases_s.values())), 3)
        return merged
    status, reason = outcome.diagnosis()
    if status == "environment":
        raise EnvironmentProblem(reason)
    result.log = outcome.stderr_tail[-4000:]
    return result.fail(status, reason)


def same_signature(spec, other) -> None:
    """`other` must call the same launcher with the same arguments (name, pointer or scalar, dtype)."""
    def signature(s):
        return s.launcher, [(a.name, a.pointer, a.dtype) for a in s.args]

    if signature(spec) != signature(other):
        raise InputError(f"{other.path}: its launcher and arguments differ from the task's ({spec.path.name}); "
                         "a baseline or reference must be called exactly like the task's kernel")


def _build(cu_path: Path, extra_flags, arch, result: CheckResult, link=(), task_arch: str | None = None) -> Path | None:
    from skillbase.harness.build import BuildError, build

    try:
        built = build(cu_path, arch=arch, extra_flags=tuple(extra_flags), link=tuple(link), task_arch=task_arch)
    except BuildError as error:
        result.log = error.log
        result.fail("build-failed", error.message)
        return None
    return built.library


def _reference(spec, candidate_path: Path, task_kernel: Path, options: Options, say) -> dict:
    ref = spec.reference or {}
    if "python" in ref:
        return {"kind": "python"}
    if "cuda" in ref:
        from skillbase.task import load_task
        from skillbase.task.spec import spec_path_for

        path = (spec.path.parent / ref["cuda"]).resolve()
        own = spec_path_for(path)[1]
        ref_spec = None
        if own.is_file():
            ref_spec = load_task(own)       # its link and hooks apply to it
            same_signature(spec, ref_spec)
        say(f"building the reference {path.name}")
        library = _build(path, (), options.arch, CheckResult(), link=ref_spec.link if ref_spec else (),
                         task_arch=(ref_spec.arch if ref_spec else None) or spec.arch)
        if library is None:
            raise InputError(f"{spec.path}: reference.cuda: {ref['cuda']} does not build")
        return {"kind": "cuda", "library": str(library), "hooks": dict(ref_spec.hooks) if ref_spec else {}}
    if candidate_path == task_kernel:
        return {"kind": "self"}
    say(f"building the reference {task_kernel.name}")
    library = _build(task_kernel, (), options.arch, CheckResult(), link=spec.link, task_arch=spec.arch)
    if library is None:
        raise InputError(f"{task_kernel}: the task's own kernel (the reference) does not build",
                         hint=f"fix it first: skillbase check {task_kernel}")
    return {"kind": "cuda", "library": str(library), "hooks": dict(spec.hooks)}


def selftest(timeout_s: float = 300.0, peaks: bool = True) -> dict:
    """Device facts and measured peaks from a worker (doctor, fidelity)."""
    outcome = run_worker({"kind": "selftest", "peaks": peaks}, timeout_s=timeout_s)
    if outcome.result is None:
        status, reason = outcome.diagnosis()
        raise EnvironmentProblem(f"GPU self-test failed: {reason}") if status == "environment" else \
            SkillbaseError(f"GPU self-test failed: {reason}")
    return outcome.result
