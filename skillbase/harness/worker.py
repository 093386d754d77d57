"""The worker process: runs one job on the GPU with untrusted kernel code loaded into it.

    python -m skillbase.harness.worker JOB.json      (or the job as JSON on stdin)

One candidate per process (runtime.py starts it in its own process group with a timeout), so a
hang, an illegal address or a corrupted context costs one attempt, never the caller. The result is
one line `skillbase-result: {json}` on the *original* stdout; file descriptor 1 is pointed at
stderr before any kernel code loads, so whatever a candidate prints cannot forge or break the
result. Progress lines (`skillbase-progress: …`) go to stderr for the parent to show.

Job kinds:
    check     verify the candidate against the reference, then (optionally) time it, interleaved
              with a baseline; result: CheckResult.to_dict()
    run       call the candidate once at one size with fresh inputs (what ncu profiles)
    selftest  device facts, measured peaks and a helper-kernel sanity check (doctor, fidelity)
"""

from __future__ import annotations

import json
import os
import re
import sys
import traceback

RESULT_MARK = "skillbase-result: "
PROGRESS_MARK = "skillbase-progress: "


def _progress(message: str) -> None:
    sys.stderr.write(f"{PROGRESS_MARK}{message}\n")
    sys.stderr.flush()


def run_job(job: dict) -> dict:
    kind = job.get("kind")
    if kind == "check":
        return _check(job)
    if kind == "run":
        return _run_once(job)
    if kind == "selftest":
        return _selftest(job)
    from skillbase.errors import InputError

    raise InputError(f"unknown worker job kind {kind!r} (check | run | selftest)")


def _check(job: dict) -> dict:
    from skillbase.harness.gpu_lock import gpu_lock
    from skillbase.harness.gpu_memory import capacity_bytes, reserve
    from skillbase.harness.phases import Phases
    from skillbase.harness.result import CheckResult
    from skillbase.harness.session import Session

    result = CheckResult(compiled=True)
    phases = Phases()
    with phases("load"):        # the task, the libraries (and torch, for a python reference or candidate)
        session = Session(job, _progress, phases)
    result.device = session.device.info()
    try:
        need = _judgement_bytes(job, session)
    except Exception as error:   # the estimate only spaces jobs out: its own fault must not cost a verdict
        need, result.memory["estimate_error"] = 0, f"{type(error).__name__}: {error}"[:300]
    result.memory["reserved_bytes"] = need
    total = int(session.cp.cuda.runtime.memGetInfo()[1])
    # Room in the GPU's memory first (beside the other skillbase jobs' reservations), then the lock: shared
    # for the whole job (other candidates verify beside it), exclusive around the probes and the timed
    # phase (nothing of another skillbase process runs on this GPU then). Never the other way round: a job
    # waiting for memory under the shared lock would block the exclusive phase whose end frees it.
    with reserve(need, capacity_bytes(total), uuid=session.device.uuid, device_index=session.device.index,
                 phases=phases, on_wait=_progress), \
            gpu_lock(session.device.index, uuid=session.device.uuid, shared=True, on_wait=_progress, phases=phases):
        try:
            out = _check_session(job, session, result)
        except BaseException:
            session.close(teardown=False)   # after a CUDA error a hooks.teardown could hang: skip it
            raise
        session.close(teardown=True)        # the spec's hooks.teardown, once per library that was set up
    return out


def _judgement_bytes(job: dict, session) -> int:
    """The device bytes this check job reserves (gpu_memory.judgement_bytes, with what the session knows)."""
    from skillbase.harness.gpu_memory import judgement_bytes
    from skillbase.harness.torch_launcher import TorchLauncher

    torch_parties = sum(isinstance(launcher, TorchLauncher) for launcher in session.launchers)
    return judgement_bytes(session.spec, job, l2_bytes=session.device.l2_bytes,
                           device_references=session.python_reference is None or session.device_reference,
                           torch_parties=torch_parties + int(session.device_reference))


def _check_session(job: dict, session, result) -> dict:
    from skillbase.harness.gpu_lock import gpu_lock
    from skillbase.harness.timing import TimePlan, time_size
    from skillbase.harness.verify import VerifyPlan, audit_device_state, verify_candidate

    verify = job.get("verify")
    if verify is not None:
        plan = VerifyPlan(sizes=[(name, dict(sizes)) for name, sizes in verify["sizes"]],
                          **{k: v for k, v in verify.items() if k != "sizes"})
        with session.phases("verify"):
            verified = verify_candidate(session, plan, result)
        if not verified:
            return _finish(result, session)
        result.correct = True
    timing = job.get("time")
    if timing is not None:
        plan = TimePlan(**{k: v for k, v in timing.items() if k != "sizes"})
        kernels = ([("baseline", session.baseline)] if session.baseline is not None else []) + \
            [("candidate", session.candidate)]
        # No other skillbase process runs on this GPU meanwhile: a neighbour's kernels would stretch
        # the peaks (and so the floors) and every sample.
        with gpu_lock(session.device.index, uuid=session.device.uuid, on_wait=_progress, phases=session.phases), \
                session.phases("timing"):
            _progress("the device's copy bandwidth and FP32 peak (measured once a day per GPU, then cached)")
            result.peaks = dict(session.device.peaks)
            for name, sizes in timing["sizes"]:
                t = time_size(session, name, dict(sizes), kernels, plan)
                result.timings.append(t)
                cand = t.kernels["candidate"]
                if cand.reverify_failures:
                    result.fail("incorrect", f"re-verification after timing failed: {cand.reverify_failures[0]} "
                                             "(results cached across calls, or work skipped when timed?)")
                    break
                if cand.suspicious:
                    result.fail("quarantined", f"at {name}: {cand.suspicious}")
        if result.status == "ok":
            audit_device_state(session, result)
    return _finish(result, session)


def _finish(result, session) -> dict:
    from skillbase.harness.gpu_memory import pool_peak_bytes

    result.calls = session.candidate.calls
    result.memory.update(pool_peak_bytes())     # beside the reservation: the estimate checked against the peak
    result.phases_s = session.phases.to_json()
    if result.status != "ok" and result.correct is None:
        result.correct = False if result.status in ("incorrect",) else None
    return result.to_dict()


def _run_once(job: dict) -> dict:
    """Fresh inputs, poisoned outputs, one call, a sync. Only the candidate's kernels run
    (uploads and memsets are not kernels), so a profiler sees exactly them."""
    import numpy as np

    from skillbase.harness.device import Device
    from skillbase.harness.gpu_lock import gpu_lock
    from skillbase.harness.native import NativeLauncher
    from skillbase.harness.phases import Phases
    from skillbase.harness.verify import POISON
    from skillbase.task import load_task
    from skillbase.task.dtypes import DTYPES

    phases = Phases()
    with phases("load"):
        device = Device(int(job.get("device", 0)))
        spec = load_task(job["task"], check_launcher=False)
    sizes = dict(job["run"]["sizes"])
    resolved = spec.resolve(sizes)
    with phases("inputs"):
        host = spec.make_inputs(sizes, int(job["run"].get("seed", 0)))
    cp = device.cp
    buffers = {}
    for a in spec.args:
        if a.pointer:
            if a.name in host:
                buffers[a.name] = cp.asarray(np.ascontiguousarray(host[a.name]).reshape(-1))
            else:
                buffers[a.name] = cp.empty(resolved.arg(a.name).numel, dtype=DTYPES[a.dtype].storage)
                device.memset(buffers[a.name], POISON)
    launcher = NativeLauncher(job["candidate"]["library"], spec.launcher, spec.args, "candidate",
                              hooks=job["candidate"].get("hooks"))
    launcher.setup(resolved.scalars)       # the spec's hooks.setup, before the profiled calls
    device.sync()
    # A profiler measures these calls (and replays them): alone on the GPU, like a timed phase.
    with gpu_lock(device.index, uuid=device.uuid, on_wait=_progress, phases=phases), phases("run"):
        for _ in range(int(job["run"].get("calls", 1))):
            launcher(launcher.arguments({k: v.data.ptr for k, v in buffers.items()}, resolved.scalars))
        device.sync()
    launcher.teardown()
    device.sync()
    launcher.close()
    return {"calls": launcher.calls, "sizes": sizes, "device": device.info(), "phases_s": phases.to_json()}


def _selftest(job: dict) -> dict:
    from skillbase.harness.device import Device

    device = Device(int(job.get("device", 0)))
    out = {"device": device.info(), "limits": device.limits()}
    device.spin(5.0)
    device.sync()
    out["spin_ms"] = device.spun_ms()   # nvcc/NVRTC may delete spin loops: check this one really spun
    device.fill_shared_nan()
    device.sync()
    if job.get("peaks", True):
        from skillbase.harness.gpu_lock import gpu_lock

        with gpu_lock(device.index, uuid=device.uuid, on_wait=_progress):   # measured: alone on the GPU
            out["peaks"] = dict(device.peaks)
    return out


def _is_cuda_error(error: BaseException) -> bool:
    """CuPy's CUDA runtime/driver errors, recognised by class name (their module moved between releases)."""
    return any(cls.__name__ in ("CUDARuntimeError", "CUDADriverError") for cls in type(error).__mro__)


# CUDA's out-of-memory error, in the words of the runtime, the driver and CuPy's pool (runtime.py's diagnosis of a
# crash reads it too).
OUT_OF_MEMORY = re.compile(r"out of memory|cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY", re.I)
# Below this share of the device free, a launch that ran out of memory met a full device, not its own demand.
_FULL_DEVICE = 0.10


def _is_harness_out_of_memory(error: BaseException) -> bool:
    """An allocation of the harness's own that the device could not serve: CuPy's or PyTorch's OutOfMemoryError,
    or a CUDA runtime/driver out-of-memory error raised outside a candidate's launch."""
    names = {cls.__name__ for cls in type(error).__mro__}
    return "OutOfMemoryError" in names or (_is_cuda_error(error) and bool(OUT_OF_MEMORY.search(str(error))))


def _device_memory() -> tuple[int, int, int] | None:
    """(free, total, held by this process's CuPy pool) in bytes, or None when the device cannot say."""
    try:
        import cupy

        free, total = cupy.cuda.runtime.memGetInfo()
        return free, total, cupy.get_default_memory_pool().total_bytes()
    except Exception:   # noqa: BLE001 - the figures are a courtesy; the outcome stands without them
        return None


def _launch_met_a_full_device(memory: tuple[int, int, int] | None) -> bool:
    """Whether a candidate's launch that ran out of memory (`memory`: the device's figures then) met a nearly full
    device: its other users (or the harness) took the room, so the launch says nothing of the candidate. With room
    to spare the demand was the kernel's own (local memory for huge per-thread arrays): a crash."""
    return memory is not None and memory[0] < _FULL_DEVICE * memory[1]


def _out_of_memory_payload(error: BaseException, memory: tuple[int, int, int] | None) -> tuple[dict, int]:
    """The worker's `environment` answer to an out-of-memory error, in one line: what failed, and who holds the
    device's memory (this process's pool, everyone else)."""
    text = getattr(error, "message", None) or str(error)
    what = text.splitlines()[0] if text else type(error).__name__
    where = ""
    if memory is not None:
        free, total, held = memory
        where = (f"; the device had {free / 2**30:.1f} GiB free of {total / 2**30:.1f} GiB, this judgement held "
                 f"{held / 2**30:.1f} GiB and other processes {max(0, total - free - held) / 2**30:.1f} GiB")
    return {"ok": False, "error": {
        "kind": "environment", "message": f"the device ran out of memory, the candidate was not judged ({what}){where}",
        "hint": "judge it again when the GPU has room (`skillbase resume`); fewer --workers-per-gpu or fewer jobs "
                "beside it for tasks this large"}}, 3


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    # Keep the real stdout for the result; everything else written to fd 1 lands on stderr.
    result_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    code = 0
    try:
        text = open(argv[0]).read() if argv else sys.stdin.read()
        job = json.loads(text)
        payload = {"ok": True, "result": run_job(job)}
    except BaseException as error:  # noqa: BLE001 - everything becomes one JSON line
        payload, code = _error_payload(error)
    os.write(result_fd, (RESULT_MARK + json.dumps(payload, default=_json_default) + "\n").encode())
    sys.stderr.flush()
    # Skip interpreter teardown: after a sticky CUDA error, destructors that touch the context can hang.
    os._exit(code)


def _error_payload(error: BaseException) -> tuple[dict, int]:
    from skillbase.errors import EnvironmentProblem, SkillbaseError

    if isinstance(error, SkillbaseError):
        kind = "environment" if isinstance(error, EnvironmentProblem) else type(error).__name__
        if any(cls.__name__ == "LoadError" for cls in type(error).__mro__):
            kind = "load"      # LoadError and HookError (a setup hook that failed)
        if type(error).__name__ == "LaunchError":
            kind = "cuda"
            memory = _device_memory() if OUT_OF_MEMORY.search(error.message) else None
            if _launch_met_a_full_device(memory):
                return _out_of_memory_payload(error, memory)
        return {"ok": False, "error": {"kind": kind, "message": error.message, "hint": error.hint}}, 0
    if _is_harness_out_of_memory(error):
        # The harness's own allocation (inputs, references, comparisons) found the device full: a fact about the
        # GPU and its other users, not a verdict on the candidate (whose launches raise LaunchError above).
        return _out_of_memory_payload(error, _device_memory())
    if _is_cuda_error(error):
        return {"ok": False, "error": {"kind": "cuda", "message": str(error)}}, 3
    if isinstance(error, json.JSONDecodeError):
        return {"ok": False, "error": {"kind": "job", "message": f"the job is not JSON: {error}"}}, 2
    traceback.print_exc()
    return {"ok": False, "error": {"kind": "internal", "message": f"{type(error).__name__}: {error}"}}, 4


def _json_default(value):
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


if __name__ == "__main__":
    main()
