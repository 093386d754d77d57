"""Buffer slots in timing (issue 16): each kernel on its own slots, or with `TimePlan.shared_slots` both on one set.

CPU: the real `time_size` drives a host stand-in of the device (buffers are host memory behind a device-like
`.data.ptr`, copies and memsets act at once, the clock is the simulated length of the launches between two
events) and a vector_add launcher that computes c = a + b in that memory and records, for every launch,
the buffers it was given and whether its output was poisoned. GPU (`gpu` mark): an A/A of vector_add at
size small through the real judge on shared slots judges no difference.
"""

from __future__ import annotations

import ctypes
import types
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from skillbase.harness.runtime import Options, time_plan
from skillbase.harness.timing import VALUE_SETS, TimePlan, time_size
from skillbase.harness.verify import POISON
from skillbase.task import load_task

REPO = Path(__file__).resolve().parents[2]
VECTOR_ADD = REPO / "examples" / "vector_add" / "vector_add.cu"
N = 1000


class DevArray(np.ndarray):
    """A host array that hands out its address as CuPy's arrays do (`.data.ptr`)."""

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.ctypes.data)


def view(pointer: int, n: int = N) -> np.ndarray:
    return np.ctypeslib.as_array((ctypes.c_float * n).from_address(pointer))


class Event:
    def __init__(self, device):
        self.device, self.at_us = device, 0.0

    def record(self, stream) -> None:
        self.at_us = self.device.clock_us


class TimingDevice:
    """What `_time_size` uses of harness.device.Device, on the host. Every buffer it hands out is kept in
    `allocated`, so a test can see that all of them were scrubbed at the end."""

    l2_bytes = 60 << 20
    peaks: dict[str, float] = {}      # no roofline floor: nothing here is quarantined

    def __init__(self):
        self.clock_us = 0.0
        self.null = types.SimpleNamespace(ptr=0)
        self.allocated: list[DevArray] = []
        runtime = types.SimpleNamespace(memcpyAsync=lambda dst, src, nbytes, kind, stream: ctypes.memmove(dst, src,
                                                                                                          nbytes))
        self.cp = types.SimpleNamespace(empty=self.empty, cuda=types.SimpleNamespace(runtime=runtime))

    def empty(self, n, dtype):
        array = np.empty(n, dtype=dtype).view(DevArray)
        self.allocated.append(array)
        return array

    def memset(self, array, byte: int) -> None:
        array.view(np.uint8)[...] = byte

    def event(self) -> Event:
        return Event(self)

    def elapsed_ms(self, start: Event, end: Event) -> float:
        return (end.at_us - start.at_us) / 1e3

    def flush_l2(self) -> None:
        pass

    def sync(self) -> None:
        pass

    def spin(self, ms: float) -> None:
        pass


class TimingSession:
    """What `_time_size` uses of harness.session.Session: the real vector_add spec, value sets drawn by it
    (seeds 0, 1, 2) with their expected outputs, and a comparison of an output against them."""

    def __init__(self, device: TimingDevice):
        self.spec = load_task(VECTOR_ADD, check_launcher=False)
        self.args = list(self.spec.args)
        self.device, self.cp = device, device.cp
        self.cases = []

    def progress(self, message: str) -> None:
        pass

    def assert_set_up(self, launcher, scalars) -> None:
        pass

    def value_sets(self, size, sizes, count, first_seed):
        self.cases = []
        for seed in range(count):
            host = self.spec.make_inputs(sizes, seed)
            pristine = {name: np.ascontiguousarray(array).reshape(-1).copy().view(DevArray)
                        for name, array in host.items()}
            self.cases.append(types.SimpleNamespace(
                seed=seed, resolved=self.spec.resolve(sizes), pristine=pristine,
                outputs=[a for a in self.args if a.pointer and a.written], expected={"c": host["a"] + host["b"]}))
        return list(self.cases)

    def seed_of(self, a: np.ndarray) -> int | None:
        """Which value set these `a` inputs are (None: none of them)."""
        return next((c.seed for c in self.cases if np.array_equal(c.pristine["a"], a)), None)

    def compare(self, a, output, case, poison):
        return types.SimpleNamespace(bad=int(np.count_nonzero(~np.isclose(output, case.expected[a.name]))))

    def release(self, case) -> None:
        case.pristine.clear()


@dataclass
class Launch:
    label: str
    pointers: tuple[int, int, int]     # a, b, c
    seed: int | None                   # the value set found in its inputs
    output_poisoned: bool              # every byte of c was POISON when it started


class VectorAdd:
    """c = a + b in the slot's memory, `us` microseconds on the simulated clock. `lazy`: writes nothing, so
    it passes only if its output already holds a right answer (the baseline's, on shared slots);
    `by_pointer`: a cache keyed on the output's address (computes once per address, then replays)."""

    def __init__(self, label: str, session: TimingSession, log: list[Launch], us: float = 10.0, cheat: str = ""):
        self.label, self.session, self.log, self.us, self.cheat = label, session, log, us, cheat
        self.cache: dict[int, np.ndarray] = {}

    def arguments(self, pointers: dict[str, int], scalars: dict) -> list:
        return [pointers["a"], pointers["b"], pointers["c"], scalars["n"]]

    def __call__(self, arguments: list) -> None:
        a, b, c = (view(p) for p in arguments[:3])
        self.log.append(Launch(self.label, tuple(arguments[:3]), self.session.seed_of(a),
                               bool((c.view(np.uint8) == POISON).all())))
        if self.cheat == "by_pointer" and arguments[2] in self.cache:
            c[:] = self.cache[arguments[2]]
        elif self.cheat != "lazy":
            c[:] = a + b
            self.cache[arguments[2]] = c.copy()
        self.session.device.clock_us += self.us


def timed(shared: bool, batch: int, cheat: str = ""):
    """(SizeTiming, the launches in order, the device) of one A/A timing of the stand-in vector_add."""
    device = TimingDevice()
    session = TimingSession(device)
    log: list[Launch] = []
    kernels = [("baseline", VectorAdd("baseline", session, log)),
               ("candidate", VectorAdd("candidate", session, log, cheat=cheat))]
    plan = TimePlan(min_samples=6, max_samples=6, warmup=2, batch=batch, timer="events", shared_slots=shared)
    return time_size(session, "tiny", {"n": N}, kernels, plan), log, device


def launches_of(log: list[Launch], label: str) -> list[Launch]:
    return [x for x in log if x.label == label]


BATCHES = pytest.mark.parametrize("batch", [1, 4])


@BATCHES
def test_shared_slots_give_both_kernels_the_same_buffers(batch):
    timing, log, _ = timed(shared=True, batch=batch)
    baseline = {x.pointers for x in launches_of(log, "baseline")}
    candidate = {x.pointers for x in launches_of(log, "candidate")}
    assert baseline == candidate, "on shared slots each kernel runs on the same buffers"
    assert timing.shared_slots and timing.verdict == "same"
    # The warm-up's single launches use the first of two slots; a batch of four then four new slots.
    assert len(baseline) == (1 + batch if batch > 1 else 1)


@BATCHES
def test_separate_slots_give_each_kernel_its_own_buffers(batch):
    timing, log, _ = timed(shared=False, batch=batch)
    baseline = {p for x in launches_of(log, "baseline") for p in x.pointers}
    candidate = {p for x in launches_of(log, "candidate") for p in x.pointers}
    assert baseline and candidate and not baseline & candidate, "off, no kernel touches the other's buffers"
    assert not timing.shared_slots and timing.verdict == "same"


@pytest.mark.parametrize("shared", [True, False])
@BATCHES
def test_every_launch_of_either_kernel_meets_a_poisoned_output_and_the_same_value_sets(shared, batch):
    timing, log, _ = timed(shared=shared, batch=batch)
    assert all(x.output_poisoned for x in log), [(i, x.label) for i, x in enumerate(log) if not x.output_poisoned]
    # Both kernels see the value sets in the same order, each one of them, rotating from sample to sample.
    baseline = [x.seed for x in launches_of(log, "baseline")]
    assert baseline == [x.seed for x in launches_of(log, "candidate")]
    assert None not in baseline and set(baseline) == set(range(VALUE_SETS))
    # Each kernel's two warm-up samples (single launches), then six rounds interleaved A B, B A, ... in either mode.
    samples = [x.label for x in log[:4]] + [x.label for x in log[4::batch]]
    rounds = [("baseline", "candidate") if i % 2 == 0 else ("candidate", "baseline") for i in range(6)]
    assert samples == ["baseline"] * 2 + ["candidate"] * 2 + [label for pair in rounds for label in pair]
    assert timing.kernels["baseline"].stats.n == timing.kernels["candidate"].stats.n == 6


@pytest.mark.parametrize("shared", [True, False])
@BATCHES
def test_a_candidate_that_writes_nothing_never_finds_the_baselines_answer(shared, batch):
    """On shared slots the baseline's output of the same inputs lies in the candidate's output buffer
    unless it is poisoned in between: the re-verification must find poison, not that answer."""
    timing, log, _ = timed(shared=shared, batch=batch, cheat="lazy")
    failures = timing.kernels["candidate"].reverify_failures
    assert failures and f"{N} of {N} elements of c wrong" in failures[0]
    assert not timing.kernels["baseline"].reverify_failures


@pytest.mark.parametrize("shared", [True, False])
@BATCHES
def test_a_candidate_caching_results_by_pointer_is_caught(shared, batch):
    timing, _, _ = timed(shared=shared, batch=batch, cheat="by_pointer")
    assert timing.kernels["candidate"].reverify_failures
    assert not timing.kernels["baseline"].reverify_failures


@pytest.mark.parametrize("shared", [True, False])
def test_every_slot_buffer_is_scrubbed_at_the_end(shared):
    _, _, device = timed(shared=shared, batch=4)
    # Two slots for the warm-up, then four for the batch: per kernel, or once for both when shared.
    assert len(device.allocated) == (2 + 4) * 3 * (1 if shared else 2)
    assert all((array.view(np.uint8) == POISON).all() for array in device.allocated)


def test_the_setting_turns_shared_slots_on_and_an_explicit_plan_wins(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)          # no configuration file of the checkout's applies
    monkeypatch.delenv("SKILLBASE_TIMING_SHARED_SLOTS", raising=False)
    assert time_plan(Options(time_plan={"target_s": 0.1})) == {"target_s": 0.1}
    assert TimePlan().shared_slots is False, "off by default until the H200's A/A says otherwise"
    monkeypatch.setenv("SKILLBASE_TIMING_SHARED_SLOTS", "1")
    assert time_plan(Options()) == {"shared_slots": True}
    assert TimePlan(**time_plan(Options())).shared_slots     # what the worker builds from the job
    assert time_plan(Options(time_plan={"shared_slots": False})) == {"shared_slots": False}
    monkeypatch.setenv("SKILLBASE_TIMING_SHARED_SLOTS", "0")
    assert time_plan(Options()) == {}
    monkeypatch.delenv("SKILLBASE_TIMING_SHARED_SLOTS")
    (tmp_path / "skillbase.toml").write_text("timing-shared-slots = true\n")
    assert time_plan(Options()) == {"shared_slots": True}


@pytest.mark.gpu
@pytest.mark.timeout(300)
def test_an_aa_of_vector_add_at_small_on_shared_slots_judges_nothing(tmp_path):
    """Issue 16 (session 16): on separate slots a byte-identical copy of vector_add was judged 1.016x
    "faster" than itself at size small (12 MB, L2-resident). On one shared set of slots, through the
    real judge (verification, the probes, the timing), the A/A must judge no difference."""
    from skillbase.harness.runtime import evaluate

    copy = tmp_path / "vector_add_copy.cu"
    copy.write_text(VECTOR_ADD.read_text())
    result = evaluate(VECTOR_ADD, candidate=copy, baseline=VECTOR_ADD,
                      options=Options(preset="small", time_plan={"shared_slots": True}))
    assert result.status == "ok", result.reason
    [timing] = result.timings
    assert timing.shared_slots
    assert timing.verdict == "same", (timing.verdict, timing.speedup, timing.spread, timing.timer, timing.timer_note)
