"""The allocating-launcher probe against a device shared with other processes (CPU, a scripted device).

On the H200 (session 18) three honest LLM candidates and KernelBench first kernels were failed as
"launcher allocates device memory" while a PyTorch bench and a second worker shared the GPU: the
driver's free memory is the device's, so a neighbour's new CUDA context looked like the launcher's.
These tests drive `verify._probes` with a scripted session whose free memory a neighbour may change
at a chosen call, and check that only a launcher that keeps memory on every call fails."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from skillbase.harness import verify
from skillbase.harness.result import CheckResult

MIB = 2**20
REPO = Path(__file__).resolve().parents[2]
VECTOR_ADD = REPO / "examples" / "vector_add" / "vector_add.cu"


class _Pool:
    def __init__(self):
        self.bytes = 0

    def total_bytes(self) -> int:
        return self.bytes


class _Cp:
    def __init__(self, pool):
        self._pool = pool

    def get_default_memory_pool(self):
        return self._pool


class _Outcome:
    def release(self):
        pass


class _Device:
    index, uuid = 0, "GPU-test"

    def __init__(self, free: int):
        self.free = free

    def mem_free(self) -> int:
        return self.free


class ScriptedSession:
    """probe_call number k (1-based, every probe call counted) takes `per_call` bytes for the launcher
    and `neighbour[k]` bytes for another process; our own pool grows by `pool_growth` per call."""

    def __init__(self, per_call: int, neighbour: dict[int, int], pool_growth: int = 0,
                 allocation_calls: dict[int, tuple[int, str]] | None = None, candidate=None):
        # allocation_calls: with CUPTI windows, {probe call k: (allocation API calls seen, first name)};
        # None: no CUPTI, the observations carry no counts.
        self.allocation_calls = allocation_calls
        self.pool = _Pool()
        self.cp = _Cp(self.pool)
        self.device = _Device(free=80 * 2**30)
        self.per_call, self.neighbour, self.pool_growth = per_call, neighbour, pool_growth
        self.candidate = object() if candidate is None else candidate
        self.calls = 0
        self.released = False

    def call(self, *args, **kwargs):
        return _Outcome()

    def probe_call(self, launcher, case, spin_ms, timer):
        self.calls += 1
        self.device.free -= self.per_call + self.neighbour.get(self.calls, 0) + self.pool_growth
        self.pool.bytes += self.pool_growth
        obs = {"final_ok": True, "reason": "", "return_ms": 0.1, "spin_running": True, "written_early": 0}
        if self.allocation_calls is not None and timer is not None:
            count, name = self.allocation_calls.get(self.calls, (0, ""))
            obs.update(cupti=False, allocations=count, frees=count, allocation_name=name)
        return obs

    def progress(self, text):
        pass

    def release(self, case):
        self.released = True


def _run(session, timer=None) -> CheckResult:
    result = CheckResult()
    ok = verify._probes(session, case=object(), plan=verify.VerifyPlan(sizes=[]), result=result, timer=timer)
    assert ok == (result.status != "incorrect")
    assert session.released
    return result


def _probe(result: CheckResult):
    return next(p for p in result.probes if p.name == "allocating-launcher")


def test_a_neighbours_context_during_the_probes_does_not_fail_an_honest_launcher():
    # A second worker's CUDA context (about 500 MiB) appears during one of the first window's calls.
    at = random.randint(2, 4)
    result = _run(ScriptedSession(per_call=0, neighbour={at: random.randint(300, 700) * MIB}))
    probe = _probe(result)
    assert result.status != "incorrect", result.reason
    assert probe.ok and not probe.conclusive
    assert "another process" in probe.detail


def test_a_launcher_that_keeps_memory_on_every_call_fails_even_beside_a_neighbour():
    # Calls 1-4: the warm-up probe and the first window; 5-7 and 8-10: the confirming windows. A
    # neighbour's drop in any one window changes that window's rate; the two others still agree.
    per_call = random.randint(4, 64) * MIB
    for at in (3, 6, 9):
        result = _run(ScriptedSession(per_call=per_call, neighbour={at: random.randint(300, 700) * MIB}))
        assert result.status == "incorrect", (at, result.reason)
        assert "launcher allocates device memory" in result.reason
        assert not _probe(result).ok


def test_a_launcher_that_keeps_memory_on_every_call_fails_on_a_quiet_device():
    per_call = random.randint(4, 64) * MIB
    result = _run(ScriptedSession(per_call=per_call, neighbour={}))
    assert result.status == "incorrect"
    assert "launcher allocates device memory" in result.reason
    assert not _probe(result).ok


def test_our_own_pool_growth_is_not_the_launchers():
    result = _run(ScriptedSession(per_call=0, neighbour={}, pool_growth=random.randint(8, 64) * MIB))
    assert result.status != "incorrect", result.reason
    assert _probe(result).ok and _probe(result).conclusive


def test_without_cupti_the_probe_says_free_memory_decided():
    result = _run(ScriptedSession(per_call=0, neighbour={}))
    assert _probe(result).detail.startswith("free device memory (CUPTI unavailable)")


# With CUPTI: the probe calls' windows count the allocation API calls made inside the launcher, and
# free memory (the whole device's) is information only. Calls 1 and 2: the warm-up call is not a
# probe call; call 1 is the probe before the windows are read, 2-4 are the plan's three.
TIMER = object()


def test_an_allocation_call_fails_the_launcher_even_while_free_memory_rises():
    # leak_alloc.cu beside a neighbour that frees more than the launcher keeps (issue 16 on the H200).
    per_call = random.randint(4, 64) * MIB
    name = random.choice(["cuMemAlloc_v2", "cudaMalloc_v3020", "cuMemAllocAsync"])
    at = random.sample([2, 3, 4], random.randint(1, 3))
    session = ScriptedSession(per_call=per_call, neighbour={k: -4 * per_call for k in range(1, 11)},
                              allocation_calls={k: (1, name) for k in at})
    result = _run(session, timer=TIMER)
    assert result.status == "incorrect", result.reason
    assert result.reason == (f"launcher allocates device memory ({name} called inside the launcher on {len(at)} "
                             f"of 3 probe calls); a launcher may not allocate")
    assert not _probe(result).ok and _probe(result).detail.startswith("CUPTI API callbacks")
    assert session.calls == 4, "no free-memory windows are run when CUPTI counted"


def test_no_allocation_call_passes_while_a_neighbour_takes_gibs():
    session = ScriptedSession(per_call=0, neighbour={k: random.randint(1, 8) * 2**30 for k in range(1, 11)},
                              allocation_calls={1: (1, "cudaMalloc_v3020")})   # before the windows: not counted
    result = _run(session, timer=TIMER)
    probe = _probe(result)
    assert result.status != "incorrect", result.reason
    assert probe.ok and probe.conclusive
    assert probe.detail.startswith("CUPTI API callbacks: no allocation call inside the launcher on 3 probe calls")
    assert "free device memory changed by -" in probe.detail
    assert session.calls == 4


class _CachingAllocatorLauncher:
    """What the probe reads of a torch launcher: its memory comes from torch's caching allocator."""
    caching_allocator = True


FURTHER = verify.CONFIRM_ALLOCATION_CALLS


def test_a_torch_launchers_one_off_pool_growth_in_the_windows_passes_after_further_calls():
    # The H200, session 24: torch.compile of level1/14 (triu of a matmul) cudaMalloc'd on 1 of 3 probe calls.
    name = random.choice(["cuMemAlloc_v2", "cudaMalloc_v3020"])
    at = random.choice([2, 3, 4])
    session = ScriptedSession(per_call=0, neighbour={}, allocation_calls={at: (1, name)},
                              candidate=_CachingAllocatorLauncher())
    result = _run(session, timer=TIMER)
    probe = _probe(result)
    assert result.status != "incorrect", result.reason
    assert probe.ok and probe.conclusive
    assert probe.detail.startswith(f"CUPTI API callbacks: {name} called inside the launcher on 1 of 3 probe calls "
                                   f"and on none of {FURTHER} further calls")
    assert session.calls == 4 + FURTHER


def test_a_torch_launcher_that_allocates_again_on_the_further_calls_fails():
    name = "cudaMalloc_v3020"
    again = random.sample(range(5, 5 + FURTHER), random.randint(1, FURTHER))
    session = ScriptedSession(per_call=0, neighbour={}, allocation_calls={k: (1, name) for k in [3, *again]},
                              candidate=_CachingAllocatorLauncher())
    result = _run(session, timer=TIMER)
    assert result.status == "incorrect"
    assert result.reason == (f"launcher allocates device memory ({name} called inside the launcher on "
                             f"{1 + len(again)} of {3 + FURTHER} probe calls); a launcher may not allocate")
    assert not _probe(result).ok


def test_a_native_launcher_gets_no_further_calls_one_allocation_fails_it():
    at = random.choice([2, 3, 4])
    session = ScriptedSession(per_call=0, neighbour={}, allocation_calls={at: (1, "cuMemAlloc_v2")})
    result = _run(session, timer=TIMER)
    assert result.status == "incorrect" and "on 1 of 3 probe calls" in result.reason
    assert session.calls == 4


def test_a_torch_launcher_allocating_nowhere_gets_no_further_calls():
    session = ScriptedSession(per_call=0, neighbour={}, allocation_calls={1: (1, "cudaMalloc_v3020")},
                              candidate=_CachingAllocatorLauncher())
    result = _run(session, timer=TIMER)
    assert result.status != "incorrect" and session.calls == 4


def test_a_timer_whose_windows_did_not_count_falls_back_to_free_memory():
    # a timer, but the observations carry no counts (windows that did not add up)
    per_call = random.randint(4, 64) * MIB
    result = _run(ScriptedSession(per_call=per_call, neighbour={}), timer=TIMER)
    assert result.status == "incorrect" and "launcher allocates device memory" in result.reason
    assert "CUPTI windows incomplete" in _probe(result).detail


# -------------------------------------------------------------------------------------------- GPU
# The same question on the real device: honest kernels judged while other processes start CUDA
# contexts and take and give back device memory (as a second worker or a PyTorch bench does), and a
# launcher that keeps 64 MiB per call judged beside the same neighbours.

NEIGHBOUR = r"""
import random, sys, time
import cupy as cp
rng = random.Random(int(sys.argv[1]))
held = []
for _ in range(rng.randint(1, 4)):                  # a context, then a few uploads of random sizes
    held.append(cp.cuda.runtime.malloc(rng.randint(64, 2048) << 20))
    time.sleep(rng.uniform(0.0, 0.3))
time.sleep(rng.uniform(0.1, 1.0))
"""


class Neighbours:
    """Processes that come and go on GPU 0 for as long as the block runs, one after another, two at a
    time; each starts its context, takes random amounts of memory and exits."""

    def __init__(self, seed: int):
        self.seed, self.started, self._stop = seed, 0, None

    def __enter__(self):
        import os
        import subprocess
        import sys
        import threading

        self._stop = threading.Event()

        def churn(lane: int):
            rng = random.Random(self.seed * 2 + lane)
            while not self._stop.is_set():
                subprocess.run([sys.executable, "-c", NEIGHBOUR, str(rng.randrange(2**31))], check=True,
                               env={**os.environ, "CUDA_VISIBLE_DEVICES": "0"})
                self.started += 1

        self._threads = [threading.Thread(target=churn, args=(lane,), daemon=True) for lane in range(2)]
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        for t in self._threads:
            t.join(timeout=30)


def _judge(candidate):
    from skillbase.harness.runtime import Options, evaluate

    return evaluate(VECTOR_ADD, candidate=candidate, options=Options(static=False, time=False, timeout_s=300.0))


@pytest.mark.gpu
def test_honest_kernels_beside_neighbours_that_take_memory_pass():
    seed = random.randrange(2**31)
    with Neighbours(seed) as neighbours:
        verdicts = [_judge(VECTOR_ADD) for _ in range(6)]
    assert neighbours.started >= 6, f"seed {seed}: only {neighbours.started} neighbour processes ran"
    for result in verdicts:
        assert result.status == "ok", f"seed {seed}: {result.reason}"
        assert _probe(result).ok, f"seed {seed}: {_probe(result).detail}"
    print(f"seed {seed}: {neighbours.started} neighbour processes; allocating-launcher probe: "
          + "; ".join(_probe(r).detail for r in verdicts))


@pytest.mark.gpu
def test_a_leaking_launcher_beside_neighbours_still_fails():
    seed = random.randrange(2**31)
    leak = REPO / "tests" / "cheats" / "vector_add" / "leak_alloc.cu"
    with Neighbours(seed):
        verdicts = [_judge(leak) for _ in range(3)]
    for result in verdicts:
        assert result.status == "incorrect", f"seed {seed}: {result.status}: {result.reason}"
        assert "launcher allocates device memory" in result.reason, f"seed {seed}: {result.reason}"
