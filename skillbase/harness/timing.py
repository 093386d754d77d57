"""Timing: what one launcher call costs on the device, and whether a difference is real.

The measurement (runs in the worker, `time_size`, under the GPU's lock: harness.gpu_lock):
- the clock is CUPTI's activity records (harness.cupti): each launcher call is a window, and its
  time is the first start to the last end of the kernels, memcpys and memsets it issued, on any
  stream; CUDA events on the launch stream (then a *device-wide* synchronisation) and a host
  wall-clock bracket are kept as cross-checks. When CUPTI cannot start (no libcupti, ncu or a
  sanitizer attached) or fails during a size, the events are the clock for the whole size, and
  `SizeTiming.timer` / `timer_note` say so: an A/B never mixes clocks;
- work outside the launch stream: with CUPTI, a record on another stream that started while the
  launch stream was held (device timestamps, which a neighbour cannot bend) in two samples or more;
  with events only, the wall clock far above the events;
- before every sample, outside the timed window: inputs copied into their slots, outputs and
  scratch buffers poisoned, persisting L2 lines demoted and the L2 flushed by reading 2.5x its size;
  a library's `hooks.setup` runs once per size before any of this (in `session.prepare`);
- the launch stream held by a short spin kernel while the sample's launches are queued, so the
  start event fires with every launch already waiting: the events time the kernels, not the
  host's launch latency (nvbench's blocking-kernel idea); the hold follows the queueing time the
  host was measured to take (CUPTI's callbacks slow every launch), not a fixed allowance alone;
- warm-up samples first (module load, clocks), then many samples; median, IQR, min, n;
- baseline and candidate interleaved in one process (A B, B A, ...), so drift hits both;
- small sizes timed as batches of launches, sized so one sample lasts >= ~100 us with events.
  With CUPTI a batch no longer amortises a timer's overhead (each call is timed from its own
  records, and the ~1 us the GPU idles between two launches is not counted), so only kernels under
  ~20 us are batched (several launches per L2 flush, the cache state of `is_cold`); longer ones
  run alone, each from a flushed L2, which is how ncu's gpu__time_duration sees them;
- several input value sets rotated through several buffer slots, so a given address holds
  different values over time (defeats caches keyed on pointer or call count), and the output of
  the last launch of every sample re-verified against the reference;
- each kernel on its own set of slots, or (the experiment `TimePlan.shared_slots`, issue 16) both on
  one set, so neither gets other pages, L2 set mapping, TLB state or alignment than the other;
- a result below the roofline floor (the task's bytes and flops against the copy bandwidth and
  FP32 FMA rate measured on this device) is quarantined as suspicious, never reported as a win;
- a speedup is accepted only when it exceeds the measured spread.

The decisions are pure functions below, tested on the CPU.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from skillbase.harness.result import KernelTiming, SizeTiming, Stats

BATCH_TARGET_US = 100.0      # one timed sample should last at least this long (events)
CUPTI_BATCH_TARGET_US = 20.0  # ... with CUPTI: longer kernels run alone, each from a flushed L2, as ncu times them
MAX_BATCH = 1000
QUARANTINE_MARGIN = 0.85     # below 85% of the floor (i.e. >118% of a measured peak) is not physics
MIN_GAIN = 0.01              # a "faster" verdict needs at least 1% besides clearing the spread
VALUE_SETS = 3               # distinct input value sets rotated through the slots
SLOT_MEMORY_CAP = 4 << 30    # bytes of slot buffers per kernel
HOLD_BASE_US = 30.0          # stream hold before a sample: covers the first launch's submission
HOLD_PER_LAUNCH_US = 12.0    # ... plus the host's cost of queueing each further launch (ctypes + driver)
HOLD_QUEUE_MARGIN = 1.5      # ... or this much more than the queueing the host was measured to take
TIMERS = ("auto", "cupti", "events")


def hold_us(batch: int, queue_us_per_launch: float = 0.0) -> float:
    """How long to hold the launch stream so a batch of `batch` launches is queued before it starts.

    `queue_us_per_launch` is what the host was measured to take to queue one launch of this kernel
    (events included) in earlier samples: with CUPTI each API call runs CUPTI's callbacks and each
    launch its activity bookkeeping, and a hold shorter than the queueing lets the start event fire
    while the host still queues, so the events (and the gaps between the kernels of one call) would
    time the host."""
    return HOLD_BASE_US + max(HOLD_PER_LAUNCH_US, HOLD_QUEUE_MARGIN * queue_us_per_launch) * max(1, batch)


def queue_estimate_us(per_launch_us: Sequence[float]) -> float:
    """The host's queueing time per launch from earlier samples: their median (one stalled sample
    does not lengthen every later hold), 0 before any."""
    return float(np.median(per_launch_us)) if len(per_launch_us) else 0.0


def stats(samples: Sequence[float]) -> Stats:
    """Median, quartiles (linear interpolation), IQR, min, max, mean, n of a sample list."""
    data = np.asarray(list(samples), dtype=np.float64)
    if data.size == 0:
        raise ValueError("no samples")
    q1, median, q3 = (float(x) for x in np.percentile(data, [25, 50, 75]))
    return Stats(median_us=median, q1_us=q1, q3_us=q3, iqr_us=q3 - q1, min_us=float(data.min()),
                 max_us=float(data.max()), mean_us=float(data.mean()), n=int(data.size))


def batch_size(single_launch_us: float, target_us: float = BATCH_TARGET_US, max_batch: int = MAX_BATCH) -> int:
    """Launches per sample so that a sample lasts >= target_us (1 for long kernels)."""
    if single_launch_us <= 0 or not math.isfinite(single_launch_us):
        return max_batch
    return int(min(max_batch, max(1, math.ceil(target_us / single_launch_us))))


def sample_count(sample_us: float, target_s: float, min_n: int, max_n: int) -> int:
    """Samples per kernel: enough to spend target_s timing it, within [min_n, max_n]."""
    if sample_us <= 0:
        return max_n
    return int(min(max_n, max(min_n, math.ceil(target_s * 1e6 / sample_us))))


def is_cold(batch: int, working_set_bytes: float, l2_bytes: int) -> bool:
    """Does every launch of a sample read from DRAM?

    True for single launches (the L2 is flushed before each sample) and for batches whose rotated
    inputs together exceed twice the L2, so they stream through it. A small batch that fits in L2
    legitimately runs faster than DRAM allows, so the DRAM floor does not apply to it.
    """
    return batch == 1 or batch * working_set_bytes >= 2 * l2_bytes


def roofline_floor_us(flops: float, nbytes: float, peaks: dict[str, float], use_flops: bool = True,
                      use_bytes: bool = True) -> float | None:
    """The fastest one call can physically run: max(flops / FP32 peak, bytes / copy bandwidth)."""
    terms = []
    if use_flops and flops and peaks.get("fp32_flops_per_s"):
        terms.append(flops / peaks["fp32_flops_per_s"])
    if use_bytes and nbytes and peaks.get("copy_bytes_per_s"):
        terms.append(nbytes / peaks["copy_bytes_per_s"])
    return max(terms) * 1e6 if terms else None


def flops_floor_applies(dtypes: Sequence[str]) -> bool:
    """FP32 FMA peak bounds f32/f64 work; f16/bf16 tasks may use tensor cores, far above it."""
    return not any(d in ("f16", "bf16") for d in dtypes)


def quarantine_reason(median_us: float, floor_us: float | None, margin: float = QUARANTINE_MARGIN) -> str | None:
    """Why a time is not believable (below the roofline floor), or None."""
    if floor_us is None or median_us <= 0:
        return None if median_us > 0 else "a median time of zero: nothing was timed"
    if median_us < margin * floor_us:
        return (f"suspicious: {median_us:.3g} us is faster than the roofline floor of {floor_us:.3g} us "
                f"({floor_us / median_us:.2f}x beyond the measured peaks); quarantined, not a win")
    return None


def wall_clock_reason(event_total_us: float, wall_total_us: float, slack_us: float = 500.0) -> str | None:
    """Wall clock far above the events: device work ran outside the timed launch stream."""
    if wall_total_us - event_total_us > max(event_total_us, slack_us):
        return (f"wall clock {wall_total_us:.0f} us vs {event_total_us:.0f} us of launch-stream events per sample: "
                "work runs outside the launch stream (side stream, thread or host work)")
    return None


def decide_speedup(baseline: Stats, candidate: Stats, min_gain: float = MIN_GAIN) -> tuple[str, float, float]:
    """('faster' | 'slower' | 'same', speedup, spread).

    Faster only when the candidate's upper quartile is below the baseline's lower quartile (the
    difference exceeds the measured spread) and the speedup is at least 1 + min_gain.
    """
    speedup = baseline.median_us / candidate.median_us if candidate.median_us > 0 else float("inf")
    spread = max(baseline.rel_spread, candidate.rel_spread)
    if candidate.q3_us < baseline.q1_us and speedup >= 1 + max(min_gain, spread):
        return "faster", speedup, spread
    if candidate.q1_us > baseline.q3_us and speedup < 1:
        return "slower", speedup, spread
    return "same", speedup, spread


def achieved_rates(median_us: float, flops: float, nbytes: float) -> tuple[float | None, float | None]:
    if median_us <= 0:
        return None, None
    seconds = median_us * 1e-6
    return (nbytes / seconds if nbytes else None), (flops / seconds if flops else None)


# ------------------------------------------------------------------------------------------------
# GPU procedure (runs inside the worker)
# ------------------------------------------------------------------------------------------------

@dataclass
class TimePlan:
    target_s: float = 0.5          # timed seconds per kernel per size
    min_samples: int = 20
    max_samples: int = 200
    warmup: int = 2
    batch_target_us: float = BATCH_TARGET_US
    cupti_batch_target_us: float = CUPTI_BATCH_TARGET_US
    batch: int | None = None       # force a batch size (tests, fidelity)
    timer: str = "auto"            # auto (CUPTI, else events) | cupti | events
    # Experiment (issue 16): baseline and candidate on ONE set of buffer slots instead of a set each. Two
    # sets differ in physical pages, L2 set mapping, TLB state and alignment within a page, which at an
    # L2-resident size judged a byte-identical copy of vector_add 1.016x "faster" on the H200. Off until
    # tools/measure/aa_bias.py shows on the H200 that sharing removes that bias.
    shared_slots: bool = False


class _Slots:
    """Q buffer slots for one kernel (or, shared, for all of them); each holds every pointer argument."""

    def __init__(self, session, case, count: int):
        from skillbase.task.dtypes import DTYPES

        cp = session.cp
        self.session = session
        self.buffers = []
        for _ in range(count):
            slot = {}
            for a in session.args:
                if a.pointer:
                    ra = case.resolved.arg(a.name)
                    slot[a.name] = cp.empty(ra.numel, dtype=DTYPES[a.dtype].storage)
            self.buffers.append(slot)

    def load(self, index: int, case) -> None:
        """Copy a value set's inputs into slot `index` and poison its outputs (no kernel of ours runs)."""
        from skillbase.harness.verify import POISON

        rt = self.session.cp.cuda.runtime
        null = self.session.device.null.ptr
        for name, array in self.buffers[index].items():
            if name in case.pristine:
                rt.memcpyAsync(array.data.ptr, case.pristine[name].data.ptr, array.nbytes, 3, null)
            else:
                self.session.device.memset(array, POISON)

    def pointers(self, index: int) -> dict[str, int]:
        return {name: array.data.ptr for name, array in self.buffers[index].items()}

    def scrub(self) -> None:
        from skillbase.harness.verify import POISON

        for slot in self.buffers:
            for array in slot.values():
                self.session.device.memset(array, POISON)
        self.session.device.sync()
        self.buffers.clear()


def slot_sets(session, case, labels: Sequence[str], count: int, shared: bool) -> dict[str, _Slots]:
    """Each kernel's buffer slots, `count` of them: a set per kernel, or (`shared`) one set that every
    kernel uses, allocated once (the kernels share the task's argument layout: session.args)."""
    if shared:
        one = _Slots(session, case, count)
        return dict.fromkeys(labels, one)
    return {label: _Slots(session, case, count) for label in labels}


def scrub_slots(slots: dict[str, _Slots]) -> None:
    """Poison and free every set of slots once (a shared set is every kernel's)."""
    for s in {id(s): s for s in slots.values()}.values():
        s.scrub()
    slots.clear()


def time_size(session, size: str, sizes: dict[str, int], kernels: list[tuple[str, Any]], plan: TimePlan) -> SizeTiming:
    """Time each (label, launcher) at one size, interleaved; fill a SizeTiming.

    One clock per size, for every kernel of it: CUPTI when it starts (plan.timer 'auto' or 'cupti'),
    else events. If CUPTI fails half-way the whole size is timed again with events, and the result
    says why: an A/B never compares times from two clocks."""
    timer, note = choose_timer(plan.timer)
    if timer is not None:
        from skillbase.harness.cupti import CuptiError

        try:
            return _time_size(session, size, sizes, kernels, plan, timer, note)
        except CuptiError as error:
            timer, note = None, f"CUPTI failed while timing ({error.message}); timed with events"
            session.progress(f"timing at {size}: {note}")
    return _time_size(session, size, sizes, kernels, plan, None, note)


def choose_timer(wanted: str):
    """(the started CUPTI timer or None, why not CUPTI). 'events' never tries CUPTI; 'cupti' insists."""
    from skillbase.errors import EnvironmentProblem
    from skillbase.harness.cupti import CuptiUnavailable, start_timer

    if wanted not in TIMERS:
        raise ValueError(f"timer {wanted!r}: one of {', '.join(TIMERS)}")
    if wanted == "events":
        return None, "events asked for (TimePlan.timer)"
    try:
        return start_timer(), ""
    except CuptiUnavailable as error:
        if wanted == "cupti":
            raise EnvironmentProblem(f"CUPTI cannot time this process: {error.message}",
                                     hint="run outside ncu/nsys/compute-sanitizer, with the CUDA toolkit's "
                                          "libcupti present, or time with events") from None
        return None, f"CUPTI unavailable ({error.message}); timed with events"


@dataclass
class TimedSample:
    """One timed sample: totals over its `batch` launches, in microseconds, and any unordered work."""

    event_us: float
    wall_us: float
    cupti_us: float | None = None
    unordered: list[str] = field(default_factory=list)


def cupti_sample_time(timer, calls: int) -> tuple[float, list[str]]:
    """The device time of a sample's `calls` launcher calls from CUPTI, and the work the launch stream
    did not order. Window 0 held the stream (our spin kernel); windows 1.. are the calls."""
    from skillbase.harness.cupti import KERNEL_KINDS, CuptiError, attribute, call_span_ns, unordered

    records, windows, dropped = timer.collect()
    if dropped:
        raise CuptiError(f"CUPTI dropped {dropped} activity records")
    if len(windows) != calls + 1:
        raise CuptiError(f"{len(windows)} CUPTI windows for {calls} calls and one hold")
    owned = attribute(records, windows)
    holds = [r for r in owned[0] if r.kind in KERNEL_KINDS]
    hold = holds[0] if len(holds) == 1 else None
    total_ns, late = 0, []
    for call in owned[1:]:
        if not call:
            # Every launcher issues device work; none attributed means the attribution failed here.
            raise CuptiError("no device work was attributed to a launcher call")
        if any(not r.complete for r in call):
            raise CuptiError("a CUPTI record without timestamps")
        total_ns += call_span_ns(call)
        late += unordered(call, hold)
    return total_ns / 1e3, late


class Sampler:
    """Timed samples of launchers on given buffer slots, one at a time: what `time_size` does for each sample
    (slots loaded and poisoned, the L2 flushed, the launch stream held, one CUPTI window per call, the events
    and the wall clock, the last output re-verified on request). An entry point of its own so that an
    experiment can time samples with and without CUPTI on one set of buffers in one process
    (tools/measure/cupti_overhead.py): `timer` (a started CuptiTimer, or None for events only) may change
    between samples. Per label: its own queueing estimate (the stream hold) and value-set rotation."""

    def __init__(self, session, size: str, resolved, value_sets: list, slots: dict[str, _Slots], timer=None):
        self.session, self.size, self.resolved, self.value_sets = session, size, resolved, value_sets
        self.slots = slots          # label -> its slots; the caller may replace them (then `slots_changed`)
        self.timer = timer
        self.start, self.end = session.device.event(), session.device.event()
        self._arguments: dict[tuple[str, int], list] = {}
        self.launches: dict[str, int] = defaultdict(int)
        self.samples_done: dict[str, int] = defaultdict(int)
        self.queued_per_launch: dict[str, list[float]] = defaultdict(list)
        self.failures: dict[str, list[str]] = defaultdict(list)

    def slots_changed(self) -> None:
        self._arguments.clear()

    def arguments(self, label, launcher, j):
        key = (label, j)
        if key not in self._arguments:
            self._arguments[key] = launcher.arguments(self.slots[label].pointers(j), self.resolved.scalars)
        return self._arguments[key]

    def value_set(self, label, j):
        # Slot j holds set (sample + j) mod 3: one address sees different values from sample to
        # sample whatever the batch size, so a cache keyed on the pointer returns stale results.
        return self.value_sets[(self.samples_done[label] + j) % VALUE_SETS]

    def sample(self, label, launcher, batch, reverify: bool = False) -> TimedSample:
        session, device, timer = self.session, self.session.device, self.timer
        start, end = self.start, self.end
        s = self.slots[label]
        q = len(s.buffers)
        # Every slot this sample uses gets its inputs reloaded and its outputs and scratch poisoned, whichever
        # kernel ran last: on shared slots a launch never finds the other kernel's outputs (or inputs it wrote).
        # A batch longer than the slots (SLOT_MEMORY_CAP) reuses them within the sample, so a later launch may
        # meet an output of its own kernel's from this sample, never the other kernel's.
        for j in range(min(batch, q)):
            s.load(j, self.value_set(label, j))
        device.flush_l2()
        device.sync()
        if timer is not None:
            timer.discard()     # the device is idle: what came before (copies, the flush) is forgotten
        hold = hold_us(batch, queue_estimate_us(self.queued_per_launch[label]))
        if timer is not None:
            timer.open()        # window 0: the hold, whose end is when the launch stream frees
        device.spin(hold / 1e3)     # the stream waits here while the launches below are queued
        if timer is not None:
            timer.close()
        t0 = time.perf_counter()
        start.record(device.null)
        for j in range(batch):
            if timer is not None:
                timer.open()    # one window per call: a call's time is its first start to its last end
            launcher(self.arguments(label, launcher, j % q))
            if timer is not None:
                timer.close()
        end.record(device.null)
        queued_us = (time.perf_counter() - t0) * 1e6
        if self.samples_done[label]:     # the first call of a kernel loads its module: not a queueing time
            self.queued_per_launch[label].append(queued_us / batch)
        device.sync()   # device-wide: everything the launcher started, on any stream, is done
        # The wall clock covers what is left of the hold too; take it off (never below the events).
        event_us = device.elapsed_ms(start, end) * 1e3
        out = TimedSample(event_us, max(event_us, (time.perf_counter() - t0) * 1e6 - hold))
        if timer is not None:
            out.cupti_us, out.unordered = cupti_sample_time(timer, batch)
        self.launches[label] += batch
        self.samples_done[label] += 1
        if not reverify:
            return out
        # Re-verify what the last launch of the last sample produced (its slot kept the same inputs).
        # Only then: the check uploads the host reference, which for outputs of hundreds of MB costs
        # far more than the kernel, and VERIFY.md asks for the last timed output.
        last = (batch - 1) % q
        vs = self.value_sets[(self.samples_done[label] - 1 + last) % VALUE_SETS]
        failures = self.failures[label]
        for a in vs.outputs:
            bad = session.compare(a, s.buffers[last][a.name], vs, poison=None).bad
            if bad and len(failures) < 3:
                failures.append(f"timed call {self.launches[label]} at {self.size}: {bad} of "
                                f"{s.buffers[last][a.name].size} elements of {a.name} wrong")
        return out


def _time_size(session, size, sizes, kernels, plan: TimePlan, timer, note: str) -> SizeTiming:
    device = session.device
    spec = session.spec
    resolved = spec.resolve(sizes)
    clock = "cupti" if timer is not None else "events"
    timing = SizeTiming(size=size, sizes=dict(sizes), flops=resolved.flops, bytes=resolved.bytes, timer=clock,
                        timer_note=note, shared_slots=plan.shared_slots)
    session.progress(f"timing at {size} with {clock}: preparing {VALUE_SETS} input sets")
    # prepare() runs the spec's hooks.setup for this size (before any timed window); the timed
    # launches below never set anything up.
    # Verification's cases at this size serve again (kept by the session: drawn and their references
    # computed once per job, uploaded afresh here); fresh seeds make up the rest.
    value_sets = session.value_sets(size, sizes, VALUE_SETS, 5000)
    for _, launcher in kernels:
        session.assert_set_up(launcher, resolved.scalars)
    working_set = max(1, resolved.data_bytes)

    labels = [label for label, _ in kernels]
    slots = slot_sets(session, value_sets[0], labels, 2, plan.shared_slots)
    sampler = Sampler(session, size, resolved, value_sets, slots, timer)
    sample = sampler.sample

    try:
        # Warm-up, single launches: module load, clocks, and a first estimate of the launch time.
        single = {}
        for label, launcher in kernels:
            for _ in range(plan.warmup):
                first = sample(label, launcher, 1)
            single[label] = first.cupti_us if first.cupti_us is not None else first.event_us
        target_us = plan.cupti_batch_target_us if timer is not None else plan.batch_target_us
        batch = plan.batch or batch_size(min(single.values()), target_us)
        if batch > 1:
            count = max(2, min(batch, SLOT_MEMORY_CAP // working_set))
            scrub_slots(slots)
            slots.update(slot_sets(session, value_sets[0], labels, count, plan.shared_slots))
            sampler.slots_changed()
        sample_us = batch * max(single.values())
        n = sample_count(sample_us, plan.target_s, plan.min_samples, plan.max_samples)
        session.progress(f"timing at {size}: {n} samples x {batch} launch(es) per kernel, interleaved ({clock})")

        taken: dict[str, list[TimedSample]] = {label: [] for label, _ in kernels}
        order = list(kernels)
        for i in range(n):
            for label, launcher in (order if i % 2 == 0 else list(reversed(order))):
                taken[label].append(sample(label, launcher, batch, reverify=(i == n - 1)))
    finally:
        scrub_slots(slots)
        for vs in value_sets:
            session.release(vs)

    dtypes = [a.dtype for a in spec.args if a.pointer]
    cold = is_cold(batch, working_set, device.l2_bytes)
    floor = roofline_floor_us(resolved.flops, resolved.bytes, device.peaks, use_flops=flops_floor_applies(dtypes),
                              use_bytes=cold)
    for label, _ in kernels:
        events = [x.event_us / batch for x in taken[label]]
        walls = [x.wall_us / batch for x in taken[label]]
        timed = [x.cupti_us / batch for x in taken[label]] if timer is not None else events
        kt = KernelTiming(label=label, stats=stats(timed), wall_stats=stats(walls), batch=batch, cold_l2=cold,
                          floor_us=floor, reverify_failures=sampler.failures[label],
                          event_stats=stats(events) if timer is not None else None)
        kt.achieved_bytes_per_s, kt.achieved_flops_per_s = achieved_rates(kt.stats.median_us, resolved.flops,
                                                                          resolved.bytes)
        if floor:
            kt.pct_of_floor = 100.0 * floor / kt.stats.median_us
        kt.suspicious = quarantine_reason(kt.stats.median_us, floor) or \
            outside_stream_reason(taken[label], timer is not None)
        timing.kernels[label] = kt
    if "baseline" in timing.kernels and "candidate" in timing.kernels:
        verdict, speedup, spread = decide_speedup(timing.kernels["baseline"].stats, timing.kernels["candidate"].stats)
        timing.verdict, timing.speedup, timing.spread = verdict, speedup, spread
    return timing


def outside_stream_reason(samples: list[TimedSample], cupti: bool) -> str | None:
    """Work outside the launch stream, from the records when CUPTI timed (device timestamps, which a
    neighbour on the GPU cannot fake), else from the wall clock against the events."""
    if cupti:
        late = [x.unordered for x in samples if x.unordered]
        # Device timestamps cannot be bent by a neighbour; two samples (not one) still make the case.
        if late and len(late) >= min(2, len(samples)):
            return (f"work runs outside the launch stream in {len(late)} of {len(samples)} samples "
                    f"(CUPTI records: {late[0][0]})")
        return None
    return wall_clock_reason(float(np.median([x.event_us for x in samples])),
                             float(np.median([x.wall_us for x in samples])))
