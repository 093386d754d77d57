"""Does turning CUPTI on change a kernel's time? (issue 16, timer fidelity) Writes cupti_overhead.json and
cupti_overhead.md to --out after every kernel and prints the Markdown.

    source tools/device_setup.sh                                      # on the GPU machine: the checkout installed
    python tools/measure/cupti_overhead.py --out DIR                  # the default kernels, 240 s at most
    python tools/measure/cupti_overhead.py --out DIR --kernels vector_add:default --cycles 6 --no-ncu

On the H200 (session 16) CUPTI read vector_add at its default size (201 MB, ~60 us, one launch a sample) at
60.9-61.4 us, while CUDA events in ANOTHER worker, where CUPTI never started, read 59.0-59.8 us (+2.7-3.3 %);
the events of the CUPTI samples agreed with CUPTI. Either the kernel runs longer while CUPTI traces it
(CONCURRENT_KERNEL + MEMCPY + MEMSET), or the two processes differ in something else (buffer placement, clock
state, order). Here ONE worker process per kernel times the kernel on ONE set of buffer slots (the harness's
own `timing.Sampler`: slot loads, L2 flush, stream hold, CUPTI windows) in blocks of samples:

    before  events only, CUPTI never started in this process
    on      CUPTI started (`CuptiTimer.start`): the events and CUPTI's own figure of the same samples
    off     events only, after `CuptiTimer.stop`

in the order before, before, then (on, off) x --cycles, so drift shows from block to block. The verdict
compares the events' median of the `on` blocks with that of the `before`/`off` blocks, against the spread of
the block medians within each side. ncu's gpu__time_duration of the same kernel (its own process, as
tools/measure/fidelity.py takes it) is a third reference unless --no-ncu.

Restarting CUPTI: `skb_cupti_stop` disables the activity kinds, flushes and unsubscribes; it does not call
cuptiFinalize (which must run from an API exit callback), so in `off` blocks CUPTI stays loaded, without a
subscriber or activity. `skb_cupti_start` subscribes and enables again. If CUPTI does not start again, or its
records fail after a restart, the record says so and the kernel falls back to process pairs (--pairs): two
workers with the same allocation sequence and the batch of the first run, one starting CUPTI before its
blocks and one never, alternating which runs first.

--kernels: comma-separated SOURCE:PRESET as in aa_bias.py (`vector_add:default`, `ops/softmax:l`, a .cu path),
plus `copy:s24` / `copy:s26`: fidelity.py's float4 copy of 2^24 (~33 us on the H200) or 2^26 floats. --budget-s
bounds the wall time: each kernel's worker stops starting blocks at its share, ncu runs only where its
estimate fits, and what was measured is written. Exit 0 when something was measured (the figures decide),
1 when nothing was, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import atexit
import datetime
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]                                # tools/measure/ -> the checkout
try:
    import skillbase  # noqa: F401 - the installed package when there is one (the GPU machine's /tmp/site)
except ImportError:
    sys.path.insert(0, str(REPO))

DEFAULT_KERNELS = ("vector_add:default", "vector_add:small", "copy:s24")
MODES = ("before", "on", "off")
OFF_MODES = ("before", "off")       # events with no CUPTI subscriber in the process
JSON_NAME, MD_NAME = "cupti_overhead.json", "cupti_overhead.md"
MIN_WORKER_S = 25.0     # a worker's start (CuPy, the task, three input sets, the CUPTI helper) plus its blocks
NCU_S = 30.0            # one ncu run: its start, the build (cached), the inputs, 5 profiled calls
GRACE_S = 10.0          # past its deadline a worker finishes its block (well under a second) and tears down
MIN_EFFECT_PCT = 0.5    # an effect below this is "no change": the question is the 3 % (the test allows 1 %)
MIN_BLOCKS = 5          # before, before, on, off, on: what a verdict needs, run past the deadline (each block takes
                        # well under a second on these kernels; the parent's timeout still bounds the worker)


class UsageError(Exception):
    """A bad argument: one line, exit 2."""


def _sibling(name: str):
    """tools/measure/<name>.py as a module (aa_bias's kernel names, fidelity's copy task and ncu reading)."""
    loaded = sys.modules.get(f"measure_{name}")
    if loaded is None:
        spec = importlib.util.spec_from_file_location(f"measure_{name}", HERE / f"{name}.py")
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = loaded      # dataclasses look their module up while the file executes
        spec.loader.exec_module(loaded)
    return loaded


@dataclass(frozen=True)
class Kernel:
    name: str        # as given: vector_add:default
    source: Path     # the .cu (its .task.yaml beside it)
    preset: str


_copy_folder: Path | None = None


def copy_task() -> Path:
    """fidelity.py's copy kernel and spec, written once per process into a folder removed at exit."""
    global _copy_folder
    if _copy_folder is None:
        fidelity = _sibling("fidelity")
        _copy_folder = Path(tempfile.mkdtemp(prefix="skillbase-cupti-overhead-"))
        atexit.register(shutil.rmtree, _copy_folder, True)
        (_copy_folder / "copy.cu").write_text(fidelity.COPY_CU)
        (_copy_folder / "copy.task.yaml").write_text(fidelity.COPY_SPEC)
    return _copy_folder / "copy.cu"


def resolve_kernel(text: str) -> Kernel:
    """SOURCE:PRESET as a Kernel (`copy:PRESET` is fidelity.py's copy); UsageError naming what is wrong."""
    aa_bias = _sibling("aa_bias")
    source_text, sep, preset = text.strip().rpartition(":")
    try:
        if source_text == "copy" and sep and preset:
            from skillbase.errors import InputError
            from skillbase.task import load_task

            task = copy_task()
            try:
                load_task(task, check_launcher=False).sizes_for(preset)
            except InputError as error:
                raise UsageError(f"--kernels: {text!r}: {error}") from None
            return Kernel(text.strip(), task, preset)
        found = aa_bias.resolve_kernel(text)
    except aa_bias.UsageError as error:
        raise UsageError(str(error)) from None
    return Kernel(found.name, found.source, found.preset)


def block_plan(cycles: int, before: int = 2) -> list[str]:
    """The modes of one worker's blocks, in order: `before` blocks, then (on, off) `cycles` times."""
    return ["before"] * before + ["on", "off"] * cycles


def pair_order(pair: int) -> tuple[str, str]:
    """Which worker of fallback pair `pair` runs first: the CUPTI-free one ('before') or CUPTI's ('on'),
    alternating, so drift over the pairs hits both alike."""
    return ("before", "on") if pair % 2 == 0 else ("on", "before")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help=f"folder for {JSON_NAME} and {MD_NAME}")
    parser.add_argument("--kernels", default=",".join(DEFAULT_KERNELS),
                        help="comma-separated SOURCE:PRESET (default: %(default)s)")
    parser.add_argument("--cycles", type=int, default=4, help="(on, off) block pairs after the 'before' blocks "
                                                               "(default 4)")
    parser.add_argument("--samples", type=int, default=60, help="timed samples per block (default 60)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed samples at the start of each block "
                                                             "(default 3)")
    parser.add_argument("--batch", type=int, default=None,
                        help="launches per sample (default: as the harness batches with CUPTI, from single "
                             "launches timed with events before CUPTI starts)")
    parser.add_argument("--pairs", type=int, default=2, help="process pairs per kernel if CUPTI cannot restart "
                                                             "(default 2)")
    parser.add_argument("--budget-s", type=float, default=240.0, help="wall-time bound in seconds (default 240)")
    parser.add_argument("--no-ncu", dest="ncu", action="store_false", help="skip ncu's gpu__time_duration")
    args = parser.parse_args(argv)
    args.argv = argv
    for name in ("cycles", "samples", "pairs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.warmup < 0:
        parser.error("--warmup must be 0 or more")
    if args.batch is not None and args.batch < 1:
        parser.error("--batch must be at least 1")
    if not args.budget_s > 0:
        parser.error("--budget-s must be above 0")
    try:
        args.kernel_list = [resolve_kernel(k) for k in args.kernels.split(",") if k.strip()]
    except UsageError as error:
        parser.error(str(error))
    if not args.kernel_list:
        parser.error("--kernels: none given")
    return args


# -- the budget ----------------------------------------------------------------------------------------

@dataclass
class Budget:
    """The wall time left, shared among the kernels still to measure: each gets an equal share of what is
    left, its worker that share less ncu's estimate (when ncu runs), and nothing when the share cannot hold
    a worker's start and some blocks."""

    total_s: float
    clock: Callable[[], float] = time.monotonic
    started: float = field(default=-1.0)

    def __post_init__(self):
        if self.started < 0:
            self.started = self.clock()

    def elapsed_s(self) -> float:
        return self.clock() - self.started

    def left_s(self) -> float:
        return self.total_s - self.elapsed_s()

    def worker_s(self, kernels_left: int, ncu: bool) -> float | None:
        """Seconds for the next kernel's worker(s), or None when they do not fit. ncu's time is set aside
        only where the worker still fits beside it: the experiment comes first, ncu is the third reference."""
        share = self.left_s() / max(1, kernels_left)
        if ncu and share - NCU_S >= MIN_WORKER_S:
            return share - NCU_S
        return share if share >= MIN_WORKER_S else None

    def ncu_fits(self, kernels_after: int) -> bool:
        """Whether ncu may run now and still leave every later kernel a worker."""
        return self.left_s() - NCU_S >= MIN_WORKER_S * kernels_after


# -- the verdict ---------------------------------------------------------------------------------------

def verdict(blocks: list[dict]) -> dict:
    """Does turning CUPTI on change the events' figure? From the blocks' event medians (per launch): the
    effect is the median of the `on` blocks' medians less that of the CUPTI-free blocks' (`before`, `off`),
    the spread the larger range of block medians within either side. 'changes' when the two sides do not
    overlap, the effect exceeds the spread and is at least MIN_EFFECT_PCT; 'no change' under
    MIN_EFFECT_PCT; else 'unclear'. Also: whether stopping CUPTI restores the figure (`off` against
    `before`), and CUPTI's own figure against the CUPTI-free events."""
    on = [b["events"]["median_us"] for b in blocks if b["mode"] == "on" and b.get("events")]
    off_like = [b["events"]["median_us"] for b in blocks if b["mode"] in OFF_MODES and b.get("events")]
    before = [b["events"]["median_us"] for b in blocks if b["mode"] == "before" and b.get("events")]
    after = [b["events"]["median_us"] for b in blocks if b["mode"] == "off" and b.get("events")]
    cupti = [b["cupti"]["median_us"] for b in blocks if b["mode"] == "on" and b.get("cupti")]
    out: dict = {"on_blocks": len(on), "off_blocks": len(off_like)}
    if len(on) < 2 or len(off_like) < 2:
        return {**out, "verdict": "undecided", "effect_us": None, "effect_pct": None, "spread_us": None,
                "line": f"undecided: {len(on)} block(s) with CUPTI on and {len(off_like)} without; two of each "
                        "are needed to see the block-to-block spread"}
    base = statistics.median(off_like)
    effect = statistics.median(on) - base
    spread = max(max(on) - min(on), max(off_like) - min(off_like))
    pct = 100 * effect / base
    separated = min(on) > max(off_like) or max(on) < min(off_like)
    if abs(pct) < MIN_EFFECT_PCT:
        said = "no change"
    elif separated and abs(effect) > spread:
        said = "changes"
    else:
        said = "unclear"
    out.update(verdict=said, effect_us=effect, effect_pct=pct, spread_us=spread, separated=separated,
               events_off_us=base, events_on_us=statistics.median(on))
    if before and after:
        out["off_vs_before_us"] = statistics.median(after) - statistics.median(before)
        out["off_vs_before_pct"] = 100 * out["off_vs_before_us"] / statistics.median(before)
    if cupti:
        out["cupti_us"] = statistics.median(cupti)
        out["cupti_vs_off_pct"] = 100 * (out["cupti_us"] - base) / base
    what = {"changes": "turning CUPTI on changes the events' figure",
            "no change": "turning CUPTI on does not change the events' figure",
            "unclear": "an effect within the block-to-block spread"}[said]
    out["line"] = (f"{said}: {what}: {effect:+.2f} us ({pct:+.2f} %) on against off, block-to-block spread "
                   f"{spread:.2f} us, sides {'apart' if separated else 'overlapping'}")
    return out


# -- the worker (runs in its own process: `--worker JOB.json`) ------------------------------------------

def _stats_row(values: list[float]) -> dict | None:
    from skillbase.harness.timing import stats

    if not values:
        return None
    s = stats(values)
    return {"median_us": s.median_us, "q1_us": s.q1_us, "q3_us": s.q3_us, "iqr_us": s.iqr_us, "min_us": s.min_us,
            "n": s.n}


def measure(job: dict, progress: Callable[[str], None]) -> dict:
    """One kernel's blocks in this process on one set of slots; a dict that says what ran and what stopped it.

    Fallback mode (`job['fixed']`): the blocks are all 'before' or all 'on' (CUPTI started before the first
    block and kept), with the batch given."""
    from skillbase.harness.cupti import CuptiTimer, CuptiUnavailable, build_timer
    from skillbase.harness.gpu_lock import gpu_lock
    from skillbase.harness.session import Session
    from skillbase.harness.timing import (
        CUPTI_BATCH_TARGET_US,
        SLOT_MEMORY_CAP,
        VALUE_SETS,
        Sampler,
        batch_size,
        scrub_slots,
        slot_sets,
    )

    began = time.monotonic()
    out: dict = {"blocks": [], "batch": None, "stopped": None, "restart_failed": None, "cupti_unavailable": None}
    library = None
    try:
        library = build_timer()        # nvcc, once per machine: before anything is timed
    except CuptiUnavailable as error:
        out["cupti_unavailable"] = error.message
    session = Session(job, progress)
    out["device"] = session.device.info()
    size, sizes = job["size"], dict(job["sizes"])
    resolved = session.spec.resolve(sizes)
    try:
        with gpu_lock(session.device.index, uuid=session.device.uuid, on_wait=progress):
            value_sets = session.value_sets(size, sizes, VALUE_SETS, 5000)
            session.assert_set_up(session.candidate, resolved.scalars)
            slots = slot_sets(session, value_sets[0], MODES, 2, shared=True)   # ONE set for every mode
            sampler = Sampler(session, size, resolved, value_sets, slots)
            try:
                batch = job.get("batch")
                if batch is None:
                    # As the harness sizes a CUPTI sample, from single launches timed before CUPTI ever starts.
                    singles = [sampler.sample("before", session.candidate, 1).event_us for _ in range(3)]
                    batch = batch_size(min(singles), CUPTI_BATCH_TARGET_US)
                if batch > 1:
                    count = max(2, min(batch, SLOT_MEMORY_CAP // max(1, resolved.data_bytes)))
                    scrub_slots(slots)
                    slots.update(slot_sets(session, value_sets[0], MODES, count, shared=True))
                    sampler.slots_changed()
                out["batch"] = batch
                make_timer = (lambda: CuptiTimer(library)) if library is not None else None
                _blocks(job, sampler, session.candidate, batch, make_timer, out, began, progress,
                        save=lambda: _save(job, {"status": "partial", **out}))
            finally:
                scrub_slots(slots)
                for vs in value_sets:
                    session.release(vs)
    except BaseException:
        session.close(teardown=False)   # after a CUDA error a hooks.teardown could hang: skip it (as the worker)
        raise
    session.close()
    return out


def _save(job: dict, result: dict) -> None:
    """The worker's result so far, replaced whole: a worker killed at its timeout still hands back its blocks."""
    from skillbase.files import write_text_atomically

    if job.get("result_path"):
        write_text_atomically(job["result_path"], json.dumps(result))


def _blocks(job: dict, sampler, launcher, batch: int, make_timer, out: dict, began: float, progress,
            save: Callable[[], None] = lambda: None) -> None:
    """The job's blocks, in order, into out['blocks'] (saved after each); stops at the deadline (after the
    first MIN_BLOCKS) or where CUPTI fails, saying so. `make_timer`: a new (unstarted) CuptiTimer, or None
    without one (the helper did not build)."""
    from skillbase.harness.cupti import CuptiError, CuptiUnavailable

    deadline = began + float(job["deadline_s"])
    timer, restarted = None, False
    plan, per_block = job["blocks"], job["warmup"] + job["samples"]
    try:
        for index, mode in enumerate(plan):
            if index >= MIN_BLOCKS and time.monotonic() > deadline:
                out["stopped"] = f"deadline: {len(plan) - index} of {len(plan)} blocks not run"
                return
            if mode == "on" and (timer is None or not timer.started):
                if make_timer is None:
                    out["stopped"] = f"CUPTI unavailable: {out['cupti_unavailable']}"
                    return
                restarted = timer is not None
                try:
                    timer = timer or make_timer()
                    timer.start()
                except CuptiUnavailable as error:
                    out["restart_failed" if restarted else "cupti_unavailable"] = out["stopped"] = \
                        f"CuptiTimer.start: {error.message}"
                    return
            sampler.timer = timer if mode == "on" else None
            progress(f"block {index + 1}/{len(plan)}: {mode}, {job['samples']} x {batch}")
            taken = []
            stop_failed = None
            try:
                for k in range(per_block):
                    s = sampler.sample(mode, launcher, batch, reverify=k == per_block - 1)
                    if k >= job["warmup"]:
                        taken.append(s)
            except CuptiError as error:
                out["restart_failed" if restarted else "cupti_unavailable"] = out["stopped"] = \
                    f"CUPTI records in block {index + 1}: {error.message}"
                return
            finally:
                sampler.timer = None
                if mode == "on" and not job.get("fixed"):
                    try:
                        timer.stop()
                    except CuptiError as error:    # CUPTI kept its subscriber: no later block can start it
                        stop_failed = f"CUPTI stop after block {index + 1}: {error.message}"
            events = [x.event_us / batch for x in taken]
            cupti = [x.cupti_us / batch for x in taken if x.cupti_us is not None]
            out["blocks"].append({
                "index": index, "mode": mode, "batch": batch, "at_s": round(time.monotonic() - began, 2),
                "events": _stats_row(events), "cupti": _stats_row(cupti),
                "events_us": [round(v, 4) for v in events], "cupti_us": [round(v, 4) for v in cupti],
                "reverify_failures": list(sampler.failures[mode])})
            save()
            if stop_failed:
                out["restart_failed"] = out["stopped"] = stop_failed
                save()
                return
    finally:
        if timer is not None:
            timer.stop()        # a no-op when stopped


def worker_main(job_path: Path) -> int:
    job = json.loads(job_path.read_text())

    def progress(message: str) -> None:
        print(f"    {message}", file=sys.stderr, flush=True)

    try:
        result = {"status": "ok", **measure(job, progress)}
    except Exception as error:   # noqa: BLE001 - one line for the parent's record
        # The blocks measured before the error stay in the record.
        result = {**_read(job), "status": "error", "reason": f"{type(error).__name__}: {error}"}
    _save(job, result)
    sys.stderr.flush()
    os._exit(0)   # as the harness's worker: no interpreter teardown touching the CUDA context


# -- the parent ---------------------------------------------------------------------------------------

def run_worker(job: dict, timeout_s: float) -> dict:
    """`job` in a worker process of its own (`--worker`); its result, or a row saying why there is none."""
    from skillbase.harness.runtime import kill_group, worker_env

    with tempfile.TemporaryDirectory(prefix="skillbase-cupti-overhead-job-") as tmp:
        job = {**job, "result_path": str(Path(tmp) / "result.json")}
        job_path = Path(tmp) / "job.json"
        job_path.write_text(json.dumps(job))
        proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", str(job_path)],
                                stdin=subprocess.DEVNULL, start_new_session=True, env=worker_env())
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            return {**_read(job), "status": "timeout", "reason": f"worker killed after {timeout_s:.0f} s"}
        except BaseException:
            kill_group(proc)      # Ctrl-C: never leave a kernel running on the GPU
            raise
        found = _read(job)
        if found.get("status") in (None, "partial"):
            return {**found, "status": "crashed", "reason": f"worker exited {proc.returncode} without a result"}
        return found


def _read(job: dict) -> dict:
    """What the worker saved (its blocks so far), or no blocks."""
    try:
        return json.loads(Path(job["result_path"]).read_text())
    except (OSError, ValueError):
        return {"blocks": []}


def worker_job(kernel: Kernel, library: Path, hooks: dict, args: argparse.Namespace, blocks: list[str],
               deadline_s: float, batch: int | None = None, fixed: bool = False) -> dict:
    from skillbase.task import load_task

    spec = load_task(kernel.source, check_launcher=False)
    sizes = spec.sizes_for(kernel.preset)
    return {"kind": "check", "task": str(spec.path.resolve()), "candidate": {"library": str(library), "hooks": hooks},
            "time": {"sizes": [[kernel.preset, sizes]]}, "size": kernel.preset, "sizes": sizes, "blocks": blocks,
            "samples": args.samples, "warmup": args.warmup, "batch": batch if batch is not None else args.batch,
            "fixed": fixed, "deadline_s": deadline_s}


def build_kernel(kernel: Kernel) -> tuple[Path, dict]:
    from skillbase.harness.build import build
    from skillbase.task import load_task

    spec = load_task(kernel.source)
    return build(kernel.source, link=spec.link, task_arch=spec.arch).library, dict(spec.hooks)


def ncu_us(kernel: Kernel) -> float:
    return _sibling("fidelity").ncu_time_us(kernel.source, kernel.preset)


def measure_kernel(kernel: Kernel, args: argparse.Namespace, seconds: float, restart_known_broken: bool,
                   run_one: Callable[[dict, float], dict] = run_worker,
                   build_one: Callable[[Kernel], tuple[Path, dict]] = build_kernel) -> dict:
    """One kernel's row: in one process (blocks before/on/off), or in process pairs where CUPTI does not
    restart; `seconds` for all its workers."""
    row: dict = {"kernel": kernel.name, "method": "one process", "runs": [], "note": None}
    began = time.monotonic()
    library, hooks = build_one(kernel)
    ends = began + seconds
    seconds = ends - time.monotonic()       # nvcc's time is the kernel's too
    batch = args.batch
    if not restart_known_broken:
        job = worker_job(kernel, library, hooks, args, block_plan(args.cycles), seconds - GRACE_S)
        result = run_one(job, seconds)
        row["runs"].append({"mode": "one process", **result})
        batch = result.get("batch") or batch
        if not result.get("restart_failed"):
            return row
        row["note"] = f"CUPTI does not restart within a process ({result['restart_failed']}): process pairs"
    else:
        row["note"] = "CUPTI did not restart within a process for an earlier kernel: process pairs"
    row["method"] = "process pairs"
    for pair in range(args.pairs):
        for mode in pair_order(pair):
            left = ends - time.monotonic()
            workers_left = 2 * args.pairs - sum(1 for r in row["runs"] if r["mode"] != "one process")
            share = left / max(1, workers_left)
            if share < MIN_WORKER_S / 2:
                row["note"] += f"; budget: pair {pair + 1} of {args.pairs} not (fully) run"
                return row
            blocks = [mode] * max(2, args.cycles)
            job = worker_job(kernel, library, hooks, args, blocks, share - GRACE_S, batch=batch, fixed=True)
            result = run_one(job, share)
            row["runs"].append({"mode": f"pair {pair + 1} {mode}", **result})
            batch = batch or result.get("batch")
    return row


def kernel_blocks(row: dict) -> list[dict]:
    """Every block of a kernel's row, in the order run (the process-pair runs' blocks all together)."""
    return [b for run in row["runs"] for b in run.get("blocks", [])]


def summarise(row: dict) -> dict:
    out = verdict(kernel_blocks(row))
    if row.get("ncu_us"):
        out["ncu_us"] = row["ncu_us"]
        for key in ("events_off_us", "events_on_us", "cupti_us"):
            if out.get(key):
                out[key.replace("_us", "_vs_ncu_pct")] = 100 * (out[key] - row["ncu_us"]) / row["ncu_us"]
    return out


def _num(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def markdown(record: dict) -> str:
    cut = "" if record["complete"] else f" Stopped early: {record['stopped']}."
    lines = [f"# Does CUPTI change the kernel's time? ({record['gpu'] or 'unknown GPU'})", "",
             f"{record['started']} UTC, `{record['command']}`: {record['wall_s']:.0f} s of a "
             f"{record['budget_s']:.0f} s budget.{cut}", "",
             "Per launch, microseconds. Modes: `before` events, CUPTI never started in the process; `on` CUPTI "
             "started (events and CUPTI's figure of the same samples); `off` events after CUPTI stopped "
             "(unsubscribed, no cuptiFinalize). One set of buffers per kernel.", ""]
    for row in record["kernels"]:
        s = row.get("summary") or {}
        lines += [f"## {row['kernel']} ({row['method']})", ""]
        if row.get("note"):
            lines += [row["note"], ""]
        lines += ["| run | block | mode | n x batch | at s | events median | events IQR | CUPTI median | CUPTI IQR |",
                  "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
        for run in row["runs"]:
            for b in run.get("blocks", []):
                e, c = b.get("events") or {}, b.get("cupti") or {}
                lines.append(f"| {run['mode']} | {b['index'] + 1} | {b['mode']} | {e.get('n', 0)} x {b['batch']} | "
                             f"{b['at_s']:.1f} | {_num(e.get('median_us'), '.3f')} | {_num(e.get('iqr_us'), '.3f')} | "
                             f"{_num(c.get('median_us'), '.3f')} | {_num(c.get('iqr_us'), '.3f')} |")
            for key in ("stopped", "reason"):
                if run.get(key):
                    lines.append(f"| {run['mode']} | | {key}: {run[key][:160]} | | | | | | |")
        lines.append("")
        if row.get("ncu_us") is not None or row.get("ncu_error"):
            lines.append(f"ncu gpu__time_duration: {_num(row.get('ncu_us'), '.3f')} us"
                         + (f" ({row['ncu_error'][:160]})" if row.get("ncu_error") else ""))
        if s:
            lines.append(f"Verdict: {s['line']}.")
            extra = []
            if s.get("off_vs_before_pct") is not None:
                extra.append(f"off vs before {s['off_vs_before_us']:+.2f} us ({s['off_vs_before_pct']:+.2f} %)")
            if s.get("cupti_vs_off_pct") is not None:
                extra.append(f"CUPTI {s['cupti_us']:.3f} us, {s['cupti_vs_off_pct']:+.2f} % vs the CUPTI-free events")
            for key, label in (("events_off_vs_ncu_pct", "CUPTI-free events"), ("events_on_vs_ncu_pct", "events, on"),
                               ("cupti_vs_ncu_pct", "CUPTI")):
                if s.get(key) is not None:
                    extra.append(f"{label} vs ncu {s[key]:+.2f} %")
            if extra:
                lines.append("; ".join(extra) + ".")
        lines.append("")
    return "\n".join(lines)


def write(record: dict, out: Path) -> None:
    """The record as JSON and Markdown, each replaced whole (a killed run keeps its last complete pair)."""
    from skillbase.files import write_text_atomically

    for row in record["kernels"]:
        row["summary"] = summarise(row)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in ((JSON_NAME, json.dumps(record, indent=1) + "\n"), (MD_NAME, markdown(record))):
        write_text_atomically(out / name, text)


def run(args: argparse.Namespace, budget: Budget | None = None, gpu: str | None = None,
        measure_one: Callable[..., dict] = measure_kernel, ncu_one: Callable[[Kernel], float] = ncu_us) -> dict:
    """Every kernel the budget allows, each measured then (budget allowing) profiled; written after each."""
    budget = budget or Budget(args.budget_s)
    record = {"tool": "cupti_overhead", "started": f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M}",
              "gpu": gpu, "command": "python tools/measure/cupti_overhead.py " + " ".join(args.argv),
              "budget_s": args.budget_s, "cycles": args.cycles, "samples": args.samples, "warmup": args.warmup,
              "wall_s": 0.0, "complete": False, "stopped": None, "kernels": []}
    restart_broken = False
    for done, kernel in enumerate(args.kernel_list):
        seconds = budget.worker_s(len(args.kernel_list) - done, args.ncu)
        if seconds is None:
            record["stopped"] = (f"budget: {budget.left_s():.0f} s left, {len(args.kernel_list) - done} kernel(s) "
                                 f"not measured (from {kernel.name})")
            break
        print(f"[{done + 1}/{len(args.kernel_list)}] {kernel.name}: {seconds:.0f} s ...", flush=True)
        try:
            row = measure_one(kernel, args, seconds, restart_broken)
        except Exception as error:   # noqa: BLE001 - recorded; the next kernel may still measure
            row = {"kernel": kernel.name, "method": "-", "runs": [], "note": f"{type(error).__name__}: {error}"}
        restart_broken = restart_broken or row["method"] == "process pairs"
        record["kernels"].append(row)
        record["wall_s"] = round(budget.elapsed_s(), 2)
        # Written before ncu: a run killed while ncu runs (its own worker, which the budget does not bound)
        # keeps this kernel's blocks.
        write(record, args.out)
        if args.ncu and row["runs"]:
            if budget.ncu_fits(len(args.kernel_list) - done - 1):
                try:
                    row["ncu_us"] = ncu_one(kernel)
                except (Exception, SystemExit) as error:   # noqa: BLE001 - fidelity's reader exits on failure
                    row["ncu_error"] = f"{type(error).__name__}: {error}"
            else:
                row["ncu_error"] = f"not run: {budget.left_s():.0f} s left, ncu takes about {NCU_S:.0f} s"
            record["wall_s"] = round(budget.elapsed_s(), 2)
            write(record, args.out)
    else:
        record["complete"] = True
    record["wall_s"] = round(budget.elapsed_s(), 2)
    write(record, args.out)
    return record


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--worker"] and len(argv) == 2:
        return worker_main(Path(argv[1]))
    args = parse_args(argv)
    from skillbase.harness import timing

    if not hasattr(timing, "Sampler"):
        print("the installed skillbase has no timing.Sampler: install this checkout (tools/device_setup.sh)",
              file=sys.stderr)
        return 2
    from skillbase.harness.env import gpu_name

    record = run(args, gpu=gpu_name())
    print(markdown(record), end="")
    measured = sum(len(kernel_blocks(row)) for row in record["kernels"])
    return 0 if measured else 1


if __name__ == "__main__":
    sys.exit(main())
