"""A/A timing bias (issue 16): kernels timed against byte-identical copies of themselves, on separate and
on shared buffer slots. Prints a table; writes aa_bias.json and aa_bias.md to --out after every run.

    source tools/device_setup.sh                                    # on the GPU machine: the checkout installed
    python tools/measure/aa_bias.py --out DIR                       # the default kernels, 330 s at most
    python tools/measure/aa_bias.py --out DIR --kernels vector_add:small,ops/softmax:l --repeats 8 --budget-s 500

On the H200 (session 16) the judge called an honest copy of vector_add 1.016x "faster" than itself at size
small (12 MB, L2-resident), with non-overlapping quartiles. Timing gives each kernel its own buffer slots,
so the two run on other physical pages, L2 set mapping, TLB state and alignment; `TimePlan.shared_slots`
times both on one set. Here each kernel is judged against its copy `--repeats` times in each mode (each
judgement a worker process of its own through `skillbase.harness.runtime.evaluate`, the size timed
`--per-process` times in it), modes alternating, kernels round-robin, so a cut by the budget leaves every
kernel and mode measured alike. Verification is off (an A/A needs none; the timed outputs are still
re-verified). The report, per kernel and mode: the distribution of the ratio (baseline median / copy's
median: above 1 the copy read faster) and how often the judge called a difference (faster or slower).

--kernels: comma-separated SOURCE:PRESET. SOURCE is a bundled example (`vector_add`: examples/vector_add/
vector_add.cu), a bench operator (`ops/softmax`: bench/ops/softmax/fp32.cu) or a path to a .cu with its
.task.yaml beside it. --budget-s bounds the wall time: no run starts that the runs so far say would not end
inside it, and what was measured is written. Exit 0 when something was measured (the figures decide the
experiment, not the exit code), 1 when nothing was, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]          # tools/measure/ -> the checkout
try:
    import skillbase  # noqa: F401 - the installed package when there is one (the GPU machine's /tmp/site)
except ImportError:
    sys.path.insert(0, str(REPO))

# L2-resident (batched from one flush) and DRAM sizes on the H200 (60 MB L2): the issue's vector_add small
# (12 MB), bench vector_add l (48 MB) and the example's default (201 MB), a launch-bound copy, softmax both ways.
DEFAULT_KERNELS = ("vector_add:small", "ops/vector_add:l", "vector_add:default", "ops/matrix_copy:s", "ops/softmax:s",
                   "ops/softmax:l")
MODES = ("separate", "shared")
FIRST_RUN_S = 60.0        # a kernel's first run before any was timed: two nvcc builds, the worker, the peaks
ESTIMATE_MARGIN = 1.25    # a run may take this much longer than the longest of its kernel's so far
JSON_NAME, MD_NAME = "aa_bias.json", "aa_bias.md"


class UsageError(Exception):
    """A bad argument: one line, exit 2."""


@dataclass(frozen=True)
class Kernel:
    name: str        # as given: vector_add:small
    source: Path     # the .cu (its .task.yaml beside it)
    preset: str


def resolve_kernel(text: str, repo: Path = REPO) -> Kernel:
    """SOURCE:PRESET as a Kernel; UsageError naming what is wrong (no such source, no such preset)."""
    source_text, sep, preset = text.strip().rpartition(":")
    if not sep or not source_text or not preset:
        raise UsageError(f"--kernels: {text!r} is not SOURCE:PRESET (e.g. vector_add:small, ops/softmax:l)")
    if source_text.endswith(".cu"):
        source = Path(source_text).expanduser()
        source = source if source.is_absolute() or source.exists() else repo / source
    elif source_text.startswith("ops/"):
        source = repo / "bench" / "ops" / source_text.removeprefix("ops/") / "fp32.cu"
    else:
        source = repo / "examples" / source_text / f"{source_text}.cu"
    spec_path = source.with_name(source.stem + ".task.yaml")
    if not source.is_file() or not spec_path.is_file():
        raise UsageError(f"--kernels: {text!r}: no {source} with its {spec_path.name} beside it")
    from skillbase.errors import InputError
    from skillbase.task import load_task

    try:
        load_task(source, check_launcher=False).sizes_for(preset)
    except InputError as error:
        raise UsageError(f"--kernels: {text!r}: {error}") from None
    return Kernel(text.strip(), source, preset)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help=f"folder for {JSON_NAME} and {MD_NAME}")
    parser.add_argument("--kernels", default=",".join(DEFAULT_KERNELS),
                        help="comma-separated SOURCE:PRESET (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=4, help="judgements per kernel and mode (default 4)")
    parser.add_argument("--per-process", type=int, default=3,
                        help="timings of the size in each judgement's worker (default 3)")
    parser.add_argument("--budget-s", type=float, default=330.0, help="wall-time bound in seconds (default 330)")
    parser.add_argument("--target-s", type=float, default=0.5,
                        help="timed seconds per kernel per timing (TimePlan.target_s, default 0.5 as judged)")
    args = parser.parse_args(argv)
    args.argv = argv
    for name in ("repeats", "per_process"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    for name in ("budget_s", "target_s"):
        if not getattr(args, name) > 0:
            parser.error(f"--{name.replace('_', '-')} must be above 0")
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
    """The wall time left, and whether a run of a kernel fits in it, judged from that kernel's runs so far
    (its longest, with a margin), or any kernel's longest before it ran, or FIRST_RUN_S before any ran."""

    total_s: float
    clock: Callable[[], float] = time.monotonic
    started: float = field(default=-1.0)
    durations: dict[str, list[float]] = field(default_factory=dict)

    def __post_init__(self):
        if self.started < 0:
            self.started = self.clock()

    def elapsed_s(self) -> float:
        return self.clock() - self.started

    def left_s(self) -> float:
        return self.total_s - self.elapsed_s()

    def estimate_s(self, kernel: str) -> float:
        mine = self.durations.get(kernel)
        if mine:
            return ESTIMATE_MARGIN * max(mine)
        every = [d for ds in self.durations.values() for d in ds]
        return max(FIRST_RUN_S, ESTIMATE_MARGIN * max(every)) if every else FIRST_RUN_S

    def allows(self, kernel: str) -> bool:
        return self.estimate_s(kernel) <= self.left_s()

    def record(self, kernel: str, seconds: float) -> None:
        self.durations.setdefault(kernel, []).append(seconds)


def schedule(kernels: list[Kernel], repeats: int) -> list[tuple[int, Kernel, str]]:
    """(round, kernel, mode) in the order they run: rounds of every kernel, each kernel both modes, the
    mode that goes first alternating by round and kernel (drift hits both alike)."""
    out = []
    for r in range(repeats):
        for k, kernel in enumerate(kernels):
            modes = MODES if (r + k) % 2 == 0 else MODES[::-1]
            out += [(r, kernel, mode) for mode in modes]
    return out


# -- one judgement -------------------------------------------------------------------------------------

def judge(kernel: Kernel, copy: Path, mode: str, per_process: int, target_s: float, timeout_s: float) -> dict:
    """One A/A judgement in its own worker: the row the record keeps (status, each timing's figures)."""
    from skillbase.harness.runtime import Options, evaluate

    options = Options(verify=False, presets=(kernel.preset,) * per_process, timeout_s=timeout_s,
                      time_plan={"target_s": target_s, "shared_slots": mode == "shared"})
    result = evaluate(kernel.source, candidate=copy, baseline=kernel.source, options=options)
    row = {"status": result.status, "reason": result.reason, "timings": []}
    for t in result.timings:
        base, cand = t.kernels.get("baseline"), t.kernels.get("candidate")
        if base is None or cand is None or base.stats is None or cand.stats is None:
            continue
        row["timings"].append({
            "speedup": t.speedup, "verdict": t.verdict, "spread": t.spread, "timer": t.timer,
            "shared_slots": t.shared_slots, "batch": cand.batch, "cold_l2": cand.cold_l2,
            "baseline_us": base.stats.median_us, "candidate_us": cand.stats.median_us,
            "baseline_iqr_us": base.stats.iqr_us, "candidate_iqr_us": cand.stats.iqr_us, "n": cand.stats.n})
    return row


# -- the report ----------------------------------------------------------------------------------------

def summarise(runs: list[dict]) -> list[dict]:
    """Per (kernel, mode), in the order first seen: how many judgements and timings, the ratio's
    distribution, the mean |ratio - 1| in %, and the judge's verdicts. A timing whose `shared_slots` is
    not its mode's (a worker older than the experiment) is counted apart, never as the mode's."""
    groups: dict[tuple[str, str], dict] = {}
    for run in runs:
        g = groups.setdefault((run["kernel"], run["mode"]), {
            "kernel": run["kernel"], "mode": run["mode"], "judgements": 0, "failed": 0, "wrong_mode": 0,
            "ratios": [], "verdicts": {"faster": 0, "slower": 0, "same": 0}, "timers": set(), "batches": set()})
        g["judgements"] += 1
        if run["status"] != "ok":
            g["failed"] += 1
        for t in run.get("timings", []):
            if bool(t.get("shared_slots")) != (run["mode"] == "shared"):
                g["wrong_mode"] += 1
                continue
            if t.get("speedup") is None:
                continue
            g["ratios"].append(t["speedup"])
            g["verdicts"][t["verdict"]] = g["verdicts"].get(t["verdict"], 0) + 1
            g["timers"].add(t.get("timer"))
            g["batches"].add(t.get("batch"))
    out = []
    for g in groups.values():
        ratios = g.pop("ratios")
        g["timers"], g["batches"] = sorted(x for x in g["timers"] if x), sorted(x for x in g["batches"] if x)
        g["timings"] = len(ratios)
        called = g["verdicts"]["faster"] + g["verdicts"]["slower"]
        g["called"] = called
        g["called_rate"] = called / len(ratios) if ratios else None
        if ratios:
            g.update(ratio_median=statistics.median(ratios), ratio_min=min(ratios), ratio_max=max(ratios),
                     bias_pct_mean=100 * statistics.fmean(abs(r - 1) for r in ratios),
                     bias_pct_max=100 * max(abs(r - 1) for r in ratios))
        else:
            g.update(ratio_median=None, ratio_min=None, ratio_max=None, bias_pct_mean=None, bias_pct_max=None)
        out.append(g)
    return out


def conclusion(summary: list[dict]) -> str:
    """One line: how often each mode's A/A was called a difference, over every kernel."""
    parts = []
    for mode in MODES:
        rows = [g for g in summary if g["mode"] == mode]
        timings, called = sum(g["timings"] for g in rows), sum(g["called"] for g in rows)
        faster = sum(g["verdicts"]["faster"] for g in rows)
        parts.append(f"{mode} slots: {called} of {timings} A/A timings judged a difference ({faster} 'faster')"
                     if timings else f"{mode} slots: nothing measured")
    return "; ".join(parts)


def _num(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def markdown(record: dict) -> str:
    summary = record["summary"]
    cut = "" if record["complete"] else f" Stopped early: {record['stopped']}."
    lines = [f"# A/A timing bias on {record['gpu'] or 'unknown GPU'}", "",
             f"{record['started']} UTC, `{record['command']}`: {len(record['runs'])} judgements in "
             f"{record['wall_s']:.0f} s of a {record['budget_s']:.0f} s budget.{cut}", "",
             "Ratio: baseline median / copy's median (above 1: the copy read faster). Called: the judge's verdict "
             "was not 'same'.", "",
             "| kernel | slots | judgements (failed) | timings | ratio median | ratio min..max | mean abs bias | "
             "max abs bias | faster / slower / same | called | clock | batch |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for g in summary:
        v = g["verdicts"]
        wrong = f", {g['wrong_mode']} of another mode" if g["wrong_mode"] else ""
        lines.append(
            f"| {g['kernel']} | {g['mode']} | {g['judgements']} ({g['failed']}{wrong}) | {g['timings']} | "
            f"{_num(g['ratio_median'], '.4f')} | {_num(g['ratio_min'], '.4f')}..{_num(g['ratio_max'], '.4f')} | "
            f"{_num(g['bias_pct_mean'], '.2f')} % | {_num(g['bias_pct_max'], '.2f')} % | "
            f"{v['faster']} / {v['slower']} / {v['same']} | "
            f"{_num(None if g['called_rate'] is None else 100 * g['called_rate'], '.0f')} % | "
            f"{', '.join(g['timers'])} | {', '.join(map(str, g['batches']))} |")
    failed = [r for r in record["runs"] if r["status"] != "ok"]
    if failed:
        lines += ["", "Judgements that did not end ok:"]
        lines += [f"- {r['kernel']} ({r['mode']}, round {r['round'] + 1}): {r['status']}: {r['reason'][:200]}"
                  for r in failed]
    lines += ["", conclusion(summary)]
    return "\n".join(lines) + "\n"


def write(record: dict, out: Path) -> None:
    """The record as JSON and Markdown, each replaced whole (a killed run keeps its last complete pair)."""
    from skillbase.files import write_text_atomically

    record["summary"] = summarise(record["runs"])
    out.mkdir(parents=True, exist_ok=True)
    for name, text in ((JSON_NAME, json.dumps(record, indent=1) + "\n"), (MD_NAME, markdown(record))):
        write_text_atomically(out / name, text)


# -- main --------------------------------------------------------------------------------------------

def run(args: argparse.Namespace, judge_one: Callable[..., dict] | None = None, budget: Budget | None = None,
        gpu: str | None = None) -> dict:
    """Every scheduled judgement that the budget allows (`judge_one`, default `judge`); the record, written
    after each one."""
    judge_one = judge_one or judge
    budget = budget or Budget(args.budget_s)
    record = {"tool": "aa_bias", "started": f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M}", "gpu": gpu,
              "command": "python tools/measure/aa_bias.py " + " ".join(args.argv), "budget_s": args.budget_s,
              "kernels": [k.name for k in args.kernel_list], "repeats": args.repeats,
              "per_process": args.per_process, "target_s": args.target_s, "wall_s": 0.0, "complete": False,
              "stopped": None, "runs": []}
    planned = schedule(args.kernel_list, args.repeats)
    with tempfile.TemporaryDirectory(prefix="skillbase-aa-") as tmp:
        copies = {}
        for kernel in args.kernel_list:
            folder = Path(tmp) / str(len(copies))
            folder.mkdir()
            copies[kernel.name] = folder / f"{kernel.source.stem}_copy.cu"
            shutil.copyfile(kernel.source, copies[kernel.name])
        for done, (r, kernel, mode) in enumerate(planned):
            if not budget.allows(kernel.name):
                record["stopped"] = (f"budget: {budget.left_s():.0f} s left, a run of {kernel.name} takes up to "
                                     f"{budget.estimate_s(kernel.name):.0f} s; {len(planned) - done} of "
                                     f"{len(planned)} judgements not run")
                break
            print(f"[{done + 1}/{len(planned)}] {kernel.name} on {mode} slots (round {r + 1}) ...", flush=True)
            began = budget.elapsed_s()
            try:
                row = judge_one(kernel, copies[kernel.name], mode, args.per_process, args.target_s,
                                max(1.0, budget.left_s()))
            except Exception as error:   # noqa: BLE001 - recorded and reported; no GPU ends the experiment
                row = {"status": "error", "reason": f"{type(error).__name__}: {error}", "timings": []}
            seconds = budget.elapsed_s() - began
            budget.record(kernel.name, seconds)
            record["runs"].append({"kernel": kernel.name, "mode": mode, "round": r, "wall_s": round(seconds, 2),
                                   **row})
            record["wall_s"] = round(budget.elapsed_s(), 2)
            print("    " + (", ".join(f"{t['verdict']} {t['speedup']:.4f}x" for t in row["timings"])
                            or f"{row['status']}: {row['reason'][:160]}"), flush=True)
            write(record, args.out)
            if row["status"] == "environment" or row["reason"].startswith("EnvironmentProblem"):
                record["stopped"] = f"no GPU to time on: {row['reason'][:200]}"
                break
        else:
            record["complete"] = True
    record["wall_s"] = round(budget.elapsed_s(), 2)
    write(record, args.out)
    return record


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from skillbase.harness.timing import TimePlan

    if "shared_slots" not in TimePlan.__dataclass_fields__:
        print("the installed skillbase has no TimePlan.shared_slots: install this checkout (tools/device_setup.sh)",
              file=sys.stderr)
        return 2
    from skillbase.harness.env import gpu_name

    record = run(args, gpu=gpu_name())
    print(markdown(record), end="")
    measured = sum(g["timings"] for g in record["summary"])
    return 0 if measured else 1


if __name__ == "__main__":
    sys.exit(main())
