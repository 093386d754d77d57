"""The per-GPU lock: a timed phase never shares its GPU with other skillbase work (issue 16), and a job's
wait for it is its own phase (`gpu_wait`).

Real processes (multiprocessing, spawn) and the real fcntl lock in a temporary cache folder: each
process writes when it enters and leaves its locked region. Exclusive sections of one GPU never
overlap anything else on it; shared sections overlap each other; two GPUs never wait for each other."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import random
import time

import pytest

from skillbase.harness import gpu_lock as lock_module
from skillbase.harness.gpu_lock import device_uuid, format_uuid, gpu_lock, holds_lock
from skillbase.harness.phases import Phases, judged_line


def _hold(cache: str, uuid: str, seconds: float, log: str, mode: str = "exclusive") -> None:
    """Hold the lock `seconds`: 'exclusive', 'shared', or 'shared-then-exclusive' (a worker: shared for
    the job, exclusive for its timed phase inside it; only the exclusive part is logged)."""
    os.environ["SKILLBASE_CACHE"] = cache
    with gpu_lock(uuid=uuid, shared=mode != "exclusive"):
        if mode == "shared-then-exclusive":
            time.sleep(0.1)
            with gpu_lock(uuid=uuid):
                assert holds_lock(uuid=uuid, exclusive=True)
                entered = time.monotonic()
                time.sleep(seconds)
                left = time.monotonic()
            assert holds_lock(uuid=uuid) and not holds_lock(uuid=uuid, exclusive=True)
            time.sleep(0.1)
        else:
            entered = time.monotonic()
            time.sleep(seconds)
            left = time.monotonic()
    with open(log, "a") as out:
        out.write(f"{uuid} {mode} {entered} {left}\n")


def _intervals(log) -> dict[str, list[tuple[float, float]]]:
    out: dict[str, list[tuple[float, float]]] = {}
    for line in log.read_text().splitlines():
        uuid, _, entered, left = line.split()
        out.setdefault(uuid, []).append((float(entered), float(left)))
    return out


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return max(a[0], b[0]) < min(a[1], b[1])


def _run(tmp_path, uuids: list[str], seconds: float, modes: list[str] | None = None):
    log = tmp_path / "log.txt"
    context = multiprocessing.get_context("spawn")
    modes = modes or ["exclusive"] * len(uuids)
    procs = [context.Process(target=_hold, args=(str(tmp_path / "cache"), u, seconds, str(log), m))
             for u, m in zip(uuids, modes, strict=True)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    return _intervals(log)


def test_processes_on_one_gpu_take_turns(tmp_path):
    uuid = "GPU-00000000-1111-2222-3333-444444444444"
    spans = sorted(_run(tmp_path, [uuid] * 3, 0.4)[uuid])
    assert len(spans) == 3
    for (_, left), (entered, _) in zip(spans, spans[1:], strict=False):
        assert entered >= left, f"two processes held the lock of one GPU at once: {spans}"


def test_processes_on_two_gpus_run_together(tmp_path):
    a, b = "GPU-aaaaaaaa-0000-0000-0000-000000000000", "GPU-bbbbbbbb-0000-0000-0000-000000000000"
    spans = _run(tmp_path, [a, b], 1.5)
    (a_in, a_out), (b_in, b_out) = spans[a][0], spans[b][0]
    assert max(a_in, b_in) < min(a_out, b_out), f"different GPUs waited for each other: {spans}"


def test_shared_holders_run_together(tmp_path):
    uuid = "GPU-5a5a5a5a-0000-0000-0000-000000000000"
    spans = _run(tmp_path, [uuid] * 3, 1.5, ["shared"] * 3)[uuid]
    assert all(_overlap(a, b) for a in spans for b in spans), f"verifications waited for each other: {spans}"


def _logged(log) -> list[tuple[str, float, float]]:
    return [(mode, float(entered), float(left))
            for _, mode, entered, left in (line.split() for line in log.read_text().splitlines())]


def test_a_timed_phase_inside_a_job_excludes_every_other_job_on_its_gpu(tmp_path):
    """Two workers (shared for the job, exclusive for timing) and one verification-only process: while
    either worker times, nothing else of skillbase holds the GPU."""
    uuid = "GPU-c0c0c0c0-0000-0000-0000-000000000000"
    _run(tmp_path, [uuid] * 3, 0.5, ["shared-then-exclusive", "shared-then-exclusive", "shared"])
    rows = _logged(tmp_path / "log.txt")
    timed = [(a, b) for mode, a, b in rows if mode == "shared-then-exclusive"]
    verifying = [(a, b) for mode, a, b in rows if mode == "shared"]
    assert len(timed) == 2 and len(verifying) == 1
    assert not _overlap(timed[0], timed[1]), rows
    assert not any(_overlap(t, verifying[0]) for t in timed), f"a verification ran during a timed phase: {rows}"


def test_lock_is_reentrant_in_one_process_and_released(tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path))
    uuid = "GPU-12345678-0000-0000-0000-000000000000"
    with gpu_lock(uuid=uuid) as path:
        assert holds_lock(uuid=uuid)
        with gpu_lock(uuid=uuid):          # a nested timed phase of the same process must not deadlock
            assert holds_lock(uuid=uuid)
        assert holds_lock(uuid=uuid)
        assert path.read_text().split()[0] == str(os.getpid())
    assert not holds_lock(uuid=uuid)


def test_waiting_is_said_once(tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path))
    monkeypatch.setattr(lock_module, "WAIT_NOTICE_S", 0.1)
    uuid = "GPU-99999999-0000-0000-0000-000000000000"
    context = multiprocessing.get_context("spawn")
    holder = context.Process(target=_hold, args=(str(tmp_path), uuid, 1.0, str(tmp_path / "log.txt")))
    holder.start()
    deadline = time.monotonic() + 30
    while not list(tmp_path.glob("gpu-locks/*.lock")) and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)
    said: list[str] = []
    with gpu_lock(uuid=uuid, on_wait=said.append):
        pass
    holder.join(30)
    assert len(said) == 1 and "waiting for the GPU lock" in said[0] and str(holder.pid) in said[0], said


def test_uuid_formats_like_nvidia_smi():
    raw = bytes(range(16))
    assert format_uuid(raw) == "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"
    assert format_uuid("GPU-abc") == "GPU-abc"


@pytest.mark.parametrize("visible, index, expected", [
    ("GPU-1f2e3d4c-0000-0000-0000-000000000000,3", 0, "GPU-1f2e3d4c-0000-0000-0000-000000000000"),
    ("5,3", 1, "index-3"),      # no nvidia-smi here: the physical index names the lock
])
def test_cuda_visible_devices_is_applied(monkeypatch, visible, index, expected):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    monkeypatch.setattr("skillbase.harness.env.gpus", lambda: [])
    assert device_uuid(index) == expected


def _enter_once(cache: str, uuid: str, log: str) -> None:
    os.environ["SKILLBASE_CACHE"] = cache
    with gpu_lock(uuid=uuid):
        with open(log, "a") as out:
            out.write("entered\n")


def test_a_worker_of_the_holder_goes_ahead_under_its_lock(tmp_path, monkeypatch):
    """An executor that reserves a GPU and runs a timing worker on it must not deadlock with it."""
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path))
    uuid = "GPU-77777777-0000-0000-0000-000000000000"
    log = tmp_path / "log.txt"
    context = multiprocessing.get_context("spawn")
    with gpu_lock(uuid=uuid) as path:
        for _ in range(2):                      # twice: the child must leave the parent's mark in place
            child = context.Process(target=_enter_once, args=(str(tmp_path), uuid, str(log)))
            child.start()
            child.join(30)
            alive = child.is_alive()
            if alive:
                child.kill()
            assert not alive and child.exitcode == 0, "the worker waited for the parent that waits for it"
        assert path.read_text().split()[0] == str(os.getpid())
    assert log.read_text().split() == ["entered", "entered"]
    assert path.read_text() == "", "a released lock names no holder"


def _share_repeatedly(cache: str, uuid: str, start_after: float, log: str) -> None:
    os.environ["SKILLBASE_CACHE"] = cache
    time.sleep(start_after)
    for _ in range(12):
        with gpu_lock(uuid=uuid, shared=True):
            entered = time.monotonic()
            time.sleep(0.3)
            left = time.monotonic()
        with open(log, "a") as out:
            out.write(f"{uuid} shared {entered} {left}\n")


def _time_once(cache: str, uuid: str, start_after: float, log: str) -> None:
    os.environ["SKILLBASE_CACHE"] = cache
    time.sleep(start_after)
    asked = time.monotonic()
    with gpu_lock(uuid=uuid):
        entered = time.monotonic()
        time.sleep(0.2)
        left = time.monotonic()
    with open(log, "a") as out:
        out.write(f"{uuid} exclusive {entered} {left} {asked}\n")


def test_a_stream_of_verifications_cannot_starve_a_timed_phase(tmp_path):
    """Three processes keep the GPU shared for ~4 s with overlapping holds; a timed phase asked for
    after 1 s gets the GPU once the holds in progress end, not after the whole stream."""
    uuid = "GPU-5e5e5e5e-0000-0000-0000-000000000000"
    log = tmp_path / "log.txt"
    context = multiprocessing.get_context("spawn")
    cache = str(tmp_path / "cache")
    procs = [context.Process(target=_share_repeatedly, args=(cache, uuid, 0.1 * i, str(log))) for i in range(3)]
    procs.append(context.Process(target=_time_once, args=(cache, uuid, 1.0, str(log))))
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    rows = [line.split() for line in log.read_text().splitlines()]
    (timed,) = [(float(r[2]), float(r[3]), float(r[4])) for r in rows if r[1] == "exclusive"]
    shared = [(float(r[2]), float(r[3])) for r in rows if r[1] == "shared"]
    entered, left, asked = timed
    assert entered - asked < 1.5, f"the timed phase waited {entered - asked:.1f} s for a stream of shared holds"
    assert max(b for _, b in shared) > left, "the shared stream went on after the timed phase"
    assert not any(_overlap((entered, left), s) for s in shared), "a shared hold overlapped the timed phase"


def _through_a_wrapper(cache: str, uuid: str, log: str) -> None:
    """A process between the holder and the worker, as ncu is when it profiles a worker."""
    child = multiprocessing.get_context("spawn").Process(target=_enter_once, args=(cache, uuid, log))
    child.start()
    child.join(30)
    if child.is_alive():
        child.kill()
        raise SystemExit(1)
    raise SystemExit(child.exitcode)


def test_a_worker_under_a_wrapper_goes_ahead_under_its_ancestors_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path))
    uuid = "GPU-88888888-0000-0000-0000-000000000000"
    log = tmp_path / "log.txt"
    with gpu_lock(uuid=uuid):
        wrapper = multiprocessing.get_context("spawn").Process(target=_through_a_wrapper,
                                                               args=(str(tmp_path), uuid, str(log)))
        wrapper.start()
        wrapper.join(60)
        assert wrapper.exitcode == 0, "the profiled worker waited for the process that waits for it"
    assert log.read_text().split() == ["entered"]


def _hold_then_signal(cache: str, uuid: str, seconds: float, log: str, ready, shared: bool) -> None:
    """Hold the lock `seconds`, telling `ready` once it is held; log when it was let go."""
    os.environ["SKILLBASE_CACHE"] = cache
    with gpu_lock(uuid=uuid, shared=shared):
        entered = time.monotonic()
        ready.set()
        time.sleep(seconds)
        left = time.monotonic()
    with open(log, "a") as out:
        out.write(f"{entered} {left}\n")


@pytest.mark.parametrize("held, asked_for", [("exclusive", "exclusive"), ("exclusive", "shared"),
                                             ("shared", "shared-then-exclusive")])
def test_a_job_that_waited_for_the_lock_records_the_wait_as_its_gpu_wait_phase(tmp_path, monkeypatch, held,
                                                                                asked_for):
    """Another process holds the GPU a random 0.2-0.5 s; this job, asking meanwhile inside its `verify`
    phase (exclusive, shared, or a worker's exclusive section converted inside its shared hold), counts
    the time blocked as `gpu_wait`, not as verify."""
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path))
    uuid = "GPU-3a3a3a3a-0000-0000-0000-000000000000"
    hold = random.uniform(0.2, 0.5)
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    holder = context.Process(target=_hold_then_signal,
                             args=(str(tmp_path), uuid, hold, str(tmp_path / "log"), ready, held == "shared"))
    holder.start()
    assert ready.wait(60), "the holder never took the lock"
    phases = Phases()
    with phases("verify"):
        asked = time.monotonic()
        with gpu_lock(uuid=uuid, shared=asked_for != "exclusive", phases=phases), contextlib.ExitStack() as inner:
            if asked_for == "shared-then-exclusive":
                inner.enter_context(gpu_lock(uuid=uuid, phases=phases))
            granted = time.monotonic()
            time.sleep(0.05)
    done = time.monotonic()
    holder.join(30)
    assert holder.exitcode == 0
    _, left = map(float, (tmp_path / "log").read_text().split())
    waited = phases.seconds["gpu_wait"]
    # Blocked from the ask until the holder let go (granted then at most a poll later), nothing after the grant.
    assert left - asked - 0.01 <= waited <= granted - asked, (waited, left - asked, granted - asked)
    assert granted - left < lock_module.POLL_S + 0.05, f"granted {granted - left:.3f} s after the release"
    assert waited == pytest.approx(hold, abs=0.1), f"waited {waited:.3f} s for a {hold:.3f} s hold"
    assert phases.seconds["verify"] == pytest.approx(done - asked - waited, abs=0.01)   # paused while waiting
    shown = phases.to_json()
    assert f"gpu_wait {shown['gpu_wait']:.1f}" in judged_line("run_1", "judged", done - asked, shown)


def test_a_job_that_did_not_wait_records_no_gpu_wait(tmp_path, monkeypatch):
    """Uncontended: the shared hold, the exclusive section converted inside it and the shared hold taken
    back after are all granted at once, so no `gpu_wait` phase appears (nothing to clutter a result)."""
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path))
    uuid = "GPU-4b4b4b4b-0000-0000-0000-000000000000"
    phases = Phases()
    with phases("load"):
        pass
    with gpu_lock(uuid=uuid, shared=True, phases=phases):
        with gpu_lock(uuid=uuid, phases=phases), phases("timing"):
            time.sleep(random.uniform(0.01, 0.05))
    assert set(phases.to_json()) == {"load", "timing"}
