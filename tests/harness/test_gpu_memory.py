"""Device-memory admission (harness.gpu_memory): jobs sharing a GPU reserve what they will allocate and
wait while the others' reservations leave no room; the estimate is counted from what the harness allocates.

The ledger is tested with real processes (multiprocessing, spawn) on the real fcntl-guarded file in a
temporary cache folder; each child writes when it got its reservation and when it gave it back. The
estimate is checked against hand counts for three task specs of the repo, the arithmetic written out."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
from pathlib import Path

import pytest

from skillbase.harness import gpu_memory
from skillbase.harness.gpu_memory import HEADROOM_BYTES, capacity_bytes, judgement_bytes, reserve
from skillbase.harness.phases import MEMORY_WAIT, Phases
from skillbase.task import load_task

REPO = Path(__file__).resolve().parents[2]
VECTOR_ADD = REPO / "bench" / "ops" / "vector_add" / "fp32.task.yaml"
MiB, GiB = 1 << 20, 1 << 30


# -- the ledger, with real processes -------------------------------------------------------------------

def _hold(cache: str, uuid: str, nbytes: int, capacity: int, out: str, hold_s: float, barrier=None,
          release=None) -> None:
    """Reserve (writing OUT.waiting when told it waits), write `ENTERED` to OUT.in, hold `hold_s` (after
    meeting `barrier`, or after `release` is set, when given), then write `ENTERED LEFT MEMORY_WAIT` to OUT."""
    os.environ["SKILLBASE_CACHE"] = cache
    gpu_memory.WAIT_NOTICE_S = 0.0           # told at the first refusal
    phases = Phases()
    with reserve(nbytes, capacity, uuid=uuid, phases=phases, on_wait=lambda line: Path(out + ".waiting").touch()):
        entered = time.time()
        Path(out + ".in").write_text(f"{entered}\n")
        if barrier is not None:
            barrier.wait(30)         # both reservations held at once, or this raises
        if release is not None:
            assert release.wait(60)
        time.sleep(hold_s)
        left = time.time()
    Path(out).write_text(f"{entered} {left} {phases.seconds.get(MEMORY_WAIT, 0.0)}\n")


def _start(context, tmp_path, label: str, uuid: str, nbytes: int, capacity: int, hold_s: float, barrier=None,
           release=None):
    out = str(tmp_path / label)
    process = context.Process(target=_hold, args=(str(tmp_path / "cache"), uuid, nbytes, capacity, out, hold_s,
                                                  barrier, release), daemon=True)   # a failed test leaves no waiter
    process.start()
    return process, out


def _appears(path: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not Path(path).exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def _entered(out: str) -> float:
    _appears(out + ".in")
    return float(Path(out + ".in").read_text())


def _span(out: str) -> tuple[float, float, float]:
    entered, left, waited = Path(out).read_text().split()
    return float(entered), float(left), float(waited)


def _uuid() -> str:
    return f"GPU-{random.getrandbits(32):08x}-0000-0000-0000-000000000000"


def test_two_reservations_that_do_not_fit_together_take_turns(tmp_path):
    context, uuid = multiprocessing.get_context("spawn"), _uuid()
    capacity, release = random.randrange(100, 1000) * GiB, context.Event()
    first, first_out = _start(context, tmp_path, "first", uuid, capacity * 6 // 10, capacity, 0.1, release=release)
    _entered(first_out)                 # the first holds its reservation before the second asks
    second, second_out = _start(context, tmp_path, "second", uuid, capacity * 6 // 10, capacity, 0.1)
    _appears(second_out + ".waiting")   # the second was refused while the first holds its reservation
    release.set()
    for process in (first, second):
        process.join(60)
        assert process.exitcode == 0
    (_, first_left, first_wait), (second_in, _, second_wait) = _span(first_out), _span(second_out)
    assert second_in >= first_left, "the second job got its reservation while the first still held its own"
    assert first_wait == 0.0 and second_wait > 0.0, "the wait is the second job's memory_wait phase"
    assert not Path(first_out + ".waiting").exists()


def test_two_reservations_that_fit_run_together(tmp_path):
    context, uuid = multiprocessing.get_context("spawn"), _uuid()
    capacity = random.randrange(100, 1000) * GiB
    both = context.Barrier(2)
    processes = [_start(context, tmp_path, label, uuid, capacity * 4 // 10, capacity, 0.2, both)
                 for label in ("a", "b")]
    for process, _ in processes:
        process.join(60)
        assert process.exitcode == 0, "the two reservations were never held at once"
    (a_in, a_out, a_wait), (b_in, b_out, b_wait) = (_span(out) for _, out in processes)
    assert max(a_in, b_in) < min(a_out, b_out) and a_wait == b_wait == 0.0


def test_a_lone_reservation_larger_than_the_gpu_goes_ahead(tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path))
    phases, capacity = Phases(), random.randrange(1, 100) * GiB
    with reserve(capacity * 3, capacity, uuid=_uuid(), phases=phases) as held:
        assert held == capacity * 3
    assert MEMORY_WAIT not in phases.seconds


def test_a_killed_holder_does_not_block_the_next(tmp_path):
    context, uuid = multiprocessing.get_context("spawn"), _uuid()
    capacity = random.randrange(100, 1000) * GiB
    holder, holder_out = _start(context, tmp_path, "holder", uuid, capacity * 8 // 10, capacity, 3600.0)
    _entered(holder_out)
    os.kill(holder.pid, signal.SIGKILL)      # not reaped yet: a zombie holds no memory either
    asked = time.time()
    nxt, next_out = _start(context, tmp_path, "next", uuid, capacity * 8 // 10, capacity, 0.0)
    nxt.join(60)
    holder.join(60)
    assert nxt.exitcode == 0 and holder.exitcode == -signal.SIGKILL
    entered, _, _ = _span(next_out)
    assert entered - asked < 30, "the next job waited for a dead holder's reservation"
    assert (tmp_path / "cache" / "gpu-memory").is_dir()
    (ledger,) = (tmp_path / "cache" / "gpu-memory").iterdir()
    assert ledger.read_text() == "", "released and dead reservations are gone from the ledger"


def test_the_capacity_leaves_the_headroom():
    total = random.randrange(16, 200) * GiB
    assert capacity_bytes(total) == total - HEADROOM_BYTES
    assert capacity_bytes(HEADROOM_BYTES // 2) == 0


# -- the estimate, against hand counts -------------------------------------------------------------------

def _job(spec, verify: list[str] | None, timed: list[str] | None, baseline: bool = False) -> dict:
    """A check job as runtime.evaluate writes it (the sizes by preset name; 'irregular' is the spec's)."""
    def sizes(names):
        return [[n, spec.irregular if n == "irregular" else spec.sizes_for(n)] for n in names]

    job = {"kind": "check", "task": str(spec.path)}
    job["verify"] = {"sizes": sizes(verify)} if verify else None
    job["time"] = {"sizes": sizes(timed)} if timed else None
    if baseline:
        job["baseline"] = {"library": "base.so"}
    return job


def test_vector_add_verified_at_xl_without_timing():
    spec = load_task(VECTOR_ADD, check_launcher=False)
    got = judgement_bytes(spec, _job(spec, ["xl", "irregular"], None), l2_bytes=60 * MiB)
    # xl: n = 2**24 f32, each array 64 MiB: a, b in (128 MiB), c out (64 MiB), 192 MiB in all.
    kept = 2 * 64 * MiB                       # the two seeds' references at the first verified size
    verify = (128 * MiB                       # pristine a, b
              + 64 * MiB + 64 * MiB           # this case's reference c, the previous case's
              + 192 * MiB                     # the call's buffers a, b, c
              + 64 * MiB                      # the output copy of c
              + 64 * MiB                      # the input check's byte mask of one input
              + 64 * MiB + 64 * 2**24         # the comparison: plain reference, 64 B per element of a chunk
              + 2 * 2**24)                    # bad masks
    allowance = 2 * GiB                       # session.ROOM_FIXED_BYTES
    assert verify == 1696 * MiB
    assert got == kept + verify + allowance == 3872 * MiB


def test_vector_add_timed_at_m_against_a_baseline():
    spec = load_task(VECTOR_ADD, check_launcher=False)
    got = judgement_bytes(spec, _job(spec, ["m", "irregular"], ["m"], baseline=True), l2_bytes=60 * MiB)
    # m: n = 2**18 f32, each array 1 MiB: 2 MiB in, 1 MiB out, 3 MiB in all.
    kept = 3 * 1 * MiB                        # the three value sets' references of the timed size
    timing = (3 * 2 * MiB                     # the value sets' pristine inputs
              + 2 * min(1000 * 3 * MiB, 4 * GiB)  # two kernels' slots, up to one per launch of a 1000-batch
              + 1 * MiB + 64 * 2**18          # re-verification: plain reference, the chunk's temporaries
              + 2**18                         # its bad mask
              + 150 * MiB)                    # the L2 flush buffer: 2.5 x 60 MiB
    verify = 2 * MiB + 2 * MiB + 3 * MiB + 1 * MiB + 1 * MiB + (1 * MiB + 64 * 2**18) + 2 * 2**18
    peaks = 2 * GiB                           # Device.peaks: two 1 GiB copy buffers
    assert timing == 6173 * MiB + 256 * 1024 and max(timing, verify, peaks) == timing
    assert got == kept + timing + 2 * GiB


def test_a_kernelbench_task_with_its_torch_reference_on_the_device(tmp_path):
    pytest.importorskip("torch")
    from skillbase.kernelbench.importer import import_problems

    (problem,) = import_problems(REPO / "tests" / "fixtures" / "kernelbench" / "level1" / "2_ReLU.py",
                                 tmp_path).imported
    spec = load_task(problem.task_dir / "model.task.yaml", check_launcher=False)
    # At the size of the activation problems that ran an H200 out of memory: 6.4 GB in, 6.4 GB out.
    big = {"batch_size": 4096, "dim": 393216}
    n, array = 4096 * 393216, 4096 * 393216 * 4
    job = {"kind": "check", "task": str(spec.path), "verify": {"sizes": [["default", big]]},
           "time": {"sizes": [["default", big]]}}
    got = judgement_bytes(spec, job, l2_bytes=60 * MiB, device_references=True, torch_parties=1)
    kept = 3 * array                          # the value sets' references (the probes' seeds among them)
    verify = (array                           # pristine x
              + 2 * array                     # this case's reference, the previous case's
              + 2 * array + array             # the call's buffers x, out; the output copy
              + array                         # the input check's byte mask
              + array + 64 * 2**26            # the comparison, its chunk capped at 2**26 elements
              + 2 * n)                        # bad masks
    timing = (3 * array                       # the value sets' pristine x
              + max(2 * 2 * array, min(1000 * 2 * array, 4 * GiB))   # one kernel: two slots of x, out
              + array + 64 * 2**26 + n        # re-verification
              + 150 * MiB)
    allowance = 2 * GiB + 2 * array           # one torch implementation: one more set of the call's arrays
    assert verify > timing                    # nine arrays' worth against eight
    assert got == kept + verify + allowance
    # Two such judgements do not fit an H200 (143 GB): the second waits instead of running it out of memory.
    assert 2 * got > capacity_bytes(143 * 10**9) >= got


def test_references_kept_on_the_host_reserve_none_on_the_device():
    spec = load_task(VECTOR_ADD, check_launcher=False)
    job = _job(spec, ["xl"], None)
    on_device = judgement_bytes(spec, job, l2_bytes=60 * MiB)
    on_host = judgement_bytes(spec, job, l2_bytes=60 * MiB, device_references=False)
    assert on_device - on_host == 2 * 64 * MiB + 2 * 64 * MiB    # kept seeds; this and the previous case's


def test_the_worker_reserves_by_its_reference_and_its_torch_implementations():
    """worker._judgement_bytes reads from the session where the references live and who runs torch."""
    from types import SimpleNamespace

    from skillbase.harness.worker import _judgement_bytes

    spec = load_task(VECTOR_ADD, check_launcher=False)
    job, l2 = _job(spec, ["l", "irregular"], ["l"]), random.randrange(1, 100) * MiB

    def session(python_reference, device_reference):
        return SimpleNamespace(spec=spec, device=SimpleNamespace(l2_bytes=l2), launchers=[],
                               python_reference=python_reference, device_reference=device_reference)

    native = _judgement_bytes(job, session(None, False))
    assert native == judgement_bytes(spec, job, l2_bytes=l2)
    assert _judgement_bytes(job, session(print, False)) == judgement_bytes(spec, job, l2_bytes=l2,
                                                                           device_references=False)
    assert _judgement_bytes(job, session(print, True)) == judgement_bytes(spec, job, l2_bytes=l2,
                                                                          torch_parties=1)


# -- on the GPU ------------------------------------------------------------------------------------------

@pytest.mark.gpu
def test_a_judgement_peaks_within_its_reservation():
    from skillbase.harness.runtime import Options, evaluate

    result = evaluate(VECTOR_ADD.with_name("fp32.cu"), options=Options(timeout_s=600.0))
    assert result.status == "ok", f"{result.status}: {result.reason}\n{result.log[-2000:]}"
    memory = result.memory
    assert "estimate_error" not in memory, memory
    assert memory["reserved_bytes"] > 0 and "cupy_pool_peak_bytes" in memory, memory
    assert memory["cupy_pool_peak_bytes"] <= memory["reserved_bytes"], memory
