"""The results of `bench optimize` batches, read from the run store (`skillbase bench optimize-report`).

Per run (operator, dtype, size): the verified speedup over the naive baseline (the run's best kernel
changes only on an accepted, i.e. verified and faster, candidate), against the vendor library where
the bench measured one (both as speedups over the same baseline, so session drift cancels), % of the
roofline floor, the speedup at the floor (`floor_speedup`) and the share of the possible gain the run reached
(`gain_share`, `gain_share()`), the accepted skills, rounds, repairs, rejected attempts by status, the coder's
tokens, the minutes spent judging less the judge's waits for its GPU's lock (`gpu_wait`: a neighbour's
turn, not this run's work; `batch.judging_s`), and why the run ended (`loop.run_ended`: its rounds spent, stopped
near the floor, no candidate left, a budget spent; or still waiting, failed, interrupted) with the reason
it recorded. Each summary (a group of runs) gives the geometric mean speedup,
the mean gain share over the runs that have one (and how many),
fast_1 and fast_1.5 (share of runs verified faster than 1x / 1.5x: fast_1 is the success rate),
the share of judged attempts that verified, the share at or above the vendor, and the runs per way
of ending. The summaries, in the JSON:
- `overall`: every run of the report, all dtypes and both engine settings pooled;
- `by_category`: category -> its runs, all dtypes pooled (what it held before BF16 batches existed);
- `by_dtype`: dtype -> its runs (the FP32 entry is the goal's figure: FP32 over the naive baselines);
- `by_dtype_category`: dtype -> category -> its runs;
- `engine`: engine on vs off over the (operator, dtype) pairs both measured, None unless both exist;
- `by_headroom`: bin of `HEADROOM` (the runs' speedup at the floor) -> engine_on / engine_off (the settings
  the report holds) -> its runs, all dtypes pooled: whether a speedup is small because the baseline was
  already near its floor.
The "Per category" table shows `by_category` and `overall` when the report holds one dtype; with more,
one row per category and dtype, one `overall <dtype>` row per dtype and `overall` last, so no row
pools dtypes except the last. The published figures (FP32) stand beside our FP32 engine-on runs only.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from skillbase import config, ui
from skillbase.bench.results import SizeResult, floor_us, geomean, gpu_slug, load_stored
from skillbase.bench.suite import DTYPES, discover
from skillbase.documents import versioned
from skillbase.run.batch import KERNELBENCH, judged_attempts, judging_s
from skillbase.run.loop import run_ended
from skillbase.run.store import RunStore, batch_name
from skillbase.run.types import Ended, Outcome, Status
from skillbase.task import load_task

# Published figures of the systems skillbase starts from: another GPU (RTX 4090) and other
# benchmarks, shown beside ours for orientation only (issue 16 quotes them).
PUBLISHED = (
    ("CUDAMaster", "MSKernelBench dot", "dot_product", 46.8, None),
    ("CUDAMaster", "MSKernelBench SpMV (cuSPARSE 2.23x)", "spmv_csr", 2.96, 2.23),
    ("CUDAMaster", "MSKernelBench conv2d (cuDNN 0.97x)", "conv_2d", 1.83, 0.97),
    ("KernelSkill", "KernelBench L1 over eager", None, 5.44, None),
    ("KernelSkill", "KernelBench L2 over eager", None, 2.82, None),
    ("KernelSkill", "KernelBench L3 over eager", None, 1.92, None),
)

# The "By headroom" bins, defined here only: (label, from, below) over a run's speedup at the floor.
HEADROOM = (("< 2x", 0.0, 2.0), ("2-4x", 2.0, 4.0), (">= 4x", 4.0, math.inf))


def gain_share(speedup: float | None, floor_speedup: float | None) -> float | None:
    """The share of the possible gain a run reached: log(speedup) / log(floor_speedup), the part of the way
    from the baseline to the roofline floor measured in factors (2x of a possible 4x is half the way);
    1.0 at the floor, 0 with no gain, negative when slower than the baseline. None without a speedup or a
    floor, or with nothing to gain (floor_speedup <= 1: the baseline is at its floor already).
    Capped at 1: the harness quarantines only times below 85 % of its own measured floor and this floor is
    the bench's (datasheet peaks), so a verified result may sit a little past it; that is the floor's error,
    not more than all of the gain, and must not lift a group's mean."""
    if speedup is None or floor_speedup is None or floor_speedup <= 1.0:
        return None
    return min(1.0, math.log(speedup) / math.log(floor_speedup))


def headroom(floor_speedup: float | None) -> str | None:
    """The `HEADROOM` bin of a run's speedup at the floor; None without a floor."""
    if floor_speedup is None:
        return None
    return next(label for label, low, below in HEADROOM if low <= floor_speedup < below)


@dataclass
class RunResult:
    operator: str
    category: str
    dtype: str
    size: str                              # the batch's preset, or "scored" (each task's scored presets)
    batch: str
    engine: bool
    run: str
    status: str
    baseline_us: float | None
    best_us: float | None
    speedup: float | None                  # verified; 1.0 when nothing was accepted; None: not timed or judged
    vendor_speedup: float | None           # the vendor library's speedup over the same baseline (bench run)
    vs_vendor: float | None                # speedup / vendor_speedup
    roofline_pct: float | None
    floor_speedup: float | None            # baseline / roofline floor: the most any kernel could reach here
    gain_share: float | None               # gain_share(speedup, floor_speedup)
    accepted_skills: list[str]
    rounds: int
    repairs: int
    rejected: dict[str, int]
    verified_attempts: int
    judged_attempts: int
    prompt_tokens: int
    reply_tokens: int
    judge_minutes: float
    ended: dict[str, str | None]           # {"category": an Ended, "reason": the stop reason the store recorded}

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class BatchReport:
    batches: list[dict[str, Any]]
    runs: list[RunResult] = field(default_factory=list)

    def summary(self, runs: Sequence[RunResult]) -> dict[str, Any]:
        timed = [r.speedup for r in runs if r.speedup is not None]
        covered = [r for r in runs if r.vs_vendor is not None]
        judged = sum(r.judged_attempts for r in runs)
        # The headroom: over the timed runs that have a floor, where their speedups could go at the floor.
        bounded = [r for r in runs if r.speedup is not None and r.floor_speedup is not None]
        shares = [r.gain_share for r in runs if r.gain_share is not None]
        return {"runs": len(runs), "timed": len(timed), "geomean_speedup": geomean(timed),
                "with_floor": len(bounded), "geomean_speedup_with_floor": geomean([r.speedup for r in bounded]),
                "geomean_floor_speedup": geomean([r.floor_speedup for r in bounded]),
                "with_gain_share": len(shares), "mean_gain_share": sum(shares) / len(shares) if shares else None,
                "fast_1": _share(sum(s > 1.0 for s in timed), len(timed)),
                "fast_1_5": _share(sum(s > 1.5 for s in timed), len(timed)),
                "verified_attempt_rate": _share(sum(r.verified_attempts for r in runs), judged),
                "vendor_covered": len(covered),
                "at_or_above_vendor": _share(sum(r.vs_vendor >= 1.0 for r in covered), len(covered)),
                # the vendor library's own speedup over the same naive baselines, beside ours on its operators: what
                # a geomean over the naive baselines can mean where the vendor is the practical ceiling
                "geomean_vendor_speedup": geomean([r.vendor_speedup for r in covered]),
                "geomean_speedup_vendor_covered": geomean([r.speedup for r in covered]),
                "prompt_tokens": sum(r.prompt_tokens for r in runs), "reply_tokens": sum(r.reply_tokens for r in runs),
                "judge_minutes": round(sum(r.judge_minutes for r in runs), 2),
                "ended": _ended_counts(runs)}

    def by_category(self, runs: Sequence[RunResult]) -> dict[str, dict[str, Any]]:
        return {c: self.summary([r for r in runs if r.category == c]) for c in sorted({r.category for r in runs})}

    def dtypes(self) -> list[str]:
        """The report's dtypes, the suite's order (fp32 first), any other after them."""
        found = {r.dtype for r in self.runs}
        return [d for d in DTYPES if d in found] + sorted(found - set(DTYPES))

    def by_dtype(self) -> dict[str, dict[str, Any]]:
        return {d: self.summary([r for r in self.runs if r.dtype == d]) for d in self.dtypes()}

    def by_dtype_category(self) -> dict[str, dict[str, dict[str, Any]]]:
        return {d: self.by_category([r for r in self.runs if r.dtype == d]) for d in self.dtypes()}

    def category_groups(self) -> dict[str, dict[str, Any]]:
        """The "Per category" table's rows: by category then overall, split by dtype when there are several."""
        if len(self.dtypes()) <= 1:
            return self.by_category(self.runs) | {"overall": self.summary(self.runs)}
        per_dtype = self.by_dtype_category()
        rows = {f"{c} {d}": per_dtype[d][c] for c in sorted({r.category for r in self.runs})
                for d in self.dtypes() if c in per_dtype[d]}
        return rows | {f"overall {d}": s for d, s in self.by_dtype().items()} | {"overall": self.summary(self.runs)}

    def published_runs(self) -> dict[str, RunResult]:
        """operator -> our run set beside the published figures: FP32 (theirs are FP32) and engine on; of several
        such runs of an operator (several batches), the best verified speedup, an untimed run last."""
        best: dict[str, RunResult] = {}
        for r in self.runs:
            if r.engine and r.dtype == "fp32" and (r.operator not in best or _rank(r) > _rank(best[r.operator])):
                best[r.operator] = r
        return best

    def engine_comparison(self) -> dict[str, Any] | None:
        """Engine on vs off over the operators (and dtypes) both measured; None unless both exist."""
        on = {(r.operator, r.dtype): r for r in self.runs if r.engine}
        off = {(r.operator, r.dtype): r for r in self.runs if not r.engine}
        common = sorted(set(on) & set(off))
        if not common:
            return None
        return {"operators": len(common), "engine_on": self.summary([on[k] for k in common]),
                "engine_off": self.summary([off[k] for k in common]),
                "per_operator": [{"operator": k[0], "dtype": k[1], "engine_on": on[k].speedup,
                                  "engine_off": off[k].speedup} for k in common]}

    def by_headroom(self) -> dict[str, dict[str, dict[str, Any]]]:
        """HEADROOM bin -> engine_on / engine_off (each setting the report holds) -> the summary of its runs
        with a floor in that bin, all dtypes pooled; every bin, an empty one too (fixed rows)."""
        settings = [(key, on) for key, on in (("engine_on", True), ("engine_off", False))
                    if any(r.engine == on for r in self.runs)]
        return {label: {key: self.summary([r for r in self.runs if r.engine == on
                                           and headroom(r.floor_speedup) == label]) for key, on in settings}
                for label, _, _ in HEADROOM}

    def to_json(self) -> dict[str, Any]:
        return versioned("bench-optimize-report", {
            "batches": self.batches, "runs": [r.to_json() for r in self.runs], "overall": self.summary(self.runs),
            "by_category": self.by_category(self.runs), "by_dtype": self.by_dtype(),
            "by_dtype_category": self.by_dtype_category(), "engine": self.engine_comparison(),
            "by_headroom": self.by_headroom()})

    def title(self) -> str:
        return "bench optimize: " + ", ".join(
            f"{b['batch']} ({'engine on' if b['engine'] else 'engine off'}, {b['dtype']}, {b['agent']})"
            for b in self.batches)

    def sections(self) -> list[tuple[str, list[str], list[list[str]]]]:
        """(heading, header, rows) of each table: what the Markdown and the HTML page both render."""
        runs = ("Per run", ["operator", "dtype", "size", "engine", "speedup", "vendor", "vs vendor", "% roofline",
                            "at the floor", "share of possible gain", "accepted skills", "rounds", "repairs",
                            "rejected", "tokens (in/out)", "judge min", "ended"],
                [[r.operator, r.dtype, r.size, "on" if r.engine else "off", _x(r.speedup), _x(r.vendor_speedup),
                  _x(r.vs_vendor), _percent(r.roofline_pct), _x(r.floor_speedup), _share_pct(r.gain_share),
                  ", ".join(r.accepted_skills) or "—", str(r.rounds),
                  str(r.repairs), ", ".join(f"{k} {v}" for k, v in sorted(r.rejected.items())) or "—",
                  f"{r.prompt_tokens}/{r.reply_tokens}", f"{r.judge_minutes:.1f}", r.ended["category"]]
                 for r in self.runs])
        out = [runs, ("Per category", *_summary_table(self.category_groups()))]
        comparison = self.engine_comparison()
        if comparison:
            out.append((f"Engine on vs off ({comparison['operators']} operators measured both ways)",
                        *_summary_table({"engine on": comparison["engine_on"],
                                         "engine off": comparison["engine_off"]})))
        out.append(self._headroom_table())
        ours = self.published_runs()
        out.append(("Beside published figures (another GPU, RTX 4090, and other benchmarks)",
                    ["system", "task", "published", "vendor there", "ours (this suite, FP32, engine on)"],
                    [[system, task, _x(value), _x(vendor), _x(ours[op].speedup) if op in ours else "—"]
                     for system, task, op, value, vendor in PUBLISHED]))
        return out

    def _headroom_table(self) -> tuple[str, list[str], list[list[str]]]:
        """The runs by their speedup at the floor, a row per bin (and engine setting, where the report has both)."""
        rows = []
        for label, settings in self.by_headroom().items():
            for key, s in settings.items():
                name = f"{label} {key.replace('_', ' ')}" if len(settings) > 1 else label
                rows.append([name, str(s["runs"]), _x(s["geomean_speedup"]),
                             f"{_share_pct(s['mean_gain_share'])} ({s['with_gain_share']})"])
        return ("By headroom (the runs with a floor, by their speedup at the floor; dtypes pooled)",
                ["at the floor", "runs", "geomean", "share of possible gain (runs)"], rows)

    def to_markdown(self) -> str:
        lines = [f"# {self.title()}"]
        for heading, header, rows in self.sections():
            lines += ["", f"## {heading}", "", *ui.markdown_table(header, rows)]
        return "\n".join(lines) + "\n"

    def to_html(self) -> str:
        import html

        # the page also gives each run's recorded stop reason, too long for the Markdown's per-run table
        reasons = ("Why each run ended", ["run", "operator", "dtype", "engine", "ended", "reason recorded"],
                   [[r.run, r.operator, r.dtype, "on" if r.engine else "off", r.ended["category"],
                     r.ended["reason"] or "—"] for r in self.runs])
        body = "".join(f"<h2>{html.escape(heading)}</h2>{ui.html_table(header, rows)}"
                       for heading, header, rows in [*self.sections(), reasons])
        return ui.html_page(self.title(), body)


def _summary_table(groups: dict[str, dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    header = ["group", "runs (judged)", "geomean", "with a floor: geomean / at the floor",
              "share of possible gain (runs)", "fast_1", "fast_1.5",
              "verified attempts", "≥ vendor", "vendor / ours on its operators", "tokens", "judge min", "ended"]
    return header, [[name, f"{s['runs']} ({s['timed']})", _x(s["geomean_speedup"]),
                     f"{_x(s['geomean_speedup_with_floor'])} / {_x(s['geomean_floor_speedup'])} ({s['with_floor']})",
                     f"{_share_pct(s['mean_gain_share'])} ({s['with_gain_share']})",
                     _share_pct(s["fast_1"]),
                     _share_pct(s["fast_1_5"]), _share_pct(s["verified_attempt_rate"]),
                     f"{_share_pct(s['at_or_above_vendor'])} of {s['vendor_covered']}",
                     f"{_x(s['geomean_vendor_speedup'])} / {_x(s['geomean_speedup_vendor_covered'])}",
                     str(s["prompt_tokens"] + s["reply_tokens"]), f"{s['judge_minutes']:.1f}",
                     ", ".join(f"{k} {v}" for k, v in s["ended"].items()) or "—"]
                    for name, s in groups.items()]


def batch_report(store_path=None, batches: Sequence[str | int] = (), results_root=None) -> BatchReport:
    """The report of `batches` (default: every batch of the store); vendor figures from the bench
    results under `results_root` (default: the configured results folder)."""
    store = RunStore.open(store_path, read_only=True)   # a report writes nothing
    try:
        # a KernelBench batch has its own report (`kernelbench report`: speedups over PyTorch, by level)
        rows = [store.get_batch(b) for b in batches] if batches else \
            [b for b in store.list_batches() if b.settings.get("kind") != KERNELBENCH]
        categories = {op.name: op.category for op in discover()}
        vendor = _vendor_speedups(results_root)
        report = BatchReport(batches=[])
        for row in rows:
            settings = row.settings.get("settings", {})
            engine = settings.get("engine", True)
            size = row.settings.get("preset") or "scored"
            members = store.batch_members(row.id)
            report.batches.append({"batch": batch_name(row.id), "engine": engine, "agent": settings.get("agent"),
                                   "dtype": row.settings.get("dtype"), "size": size, "runs": len(members)})
            for member in members:
                report.runs.append(_run_result(store, member, batch_name(row.id), engine, size,
                                               categories.get(member.operator, "other"), vendor))
        return report
    finally:
        store.close()


def _run_result(store: RunStore, member, batch: str, engine: bool, size: str, category: str,
                vendor: dict) -> RunResult:
    run = store.get_run(member.run_id)
    attempts = store.attempts(run.id)
    judged = judged_attempts(attempts)
    verified = [a for a in judged if a["status"] in (Status.ACCEPTED, Status.SLOWER)]
    rounds = store.rounds(run.id)
    decisions = {d["round_idx"]: d["chosen_skill"] for d in store.decisions(run.id)}
    accepted = [decisions.get(r["idx"]) or "?" for r in rounds if r["outcome"] == Outcome.ACCEPTED]
    calls = store.llm_calls(run.id)
    # A run whose first candidate was never judged has no result yet: it stays out of every geomean.
    speedup = run.speedup if run.best_us and judged else None
    vendor_speedup = vendor.get((member.operator, member.dtype, size))
    floors = _roofline(run, member, size, speedup)
    ended, reason = run_ended(store, run)
    return RunResult(
        operator=member.operator, category=category, dtype=member.dtype, size=size, batch=batch, engine=engine,
        run=run.name, status=store.shown_status(run), baseline_us=run.baseline_us, best_us=run.best_us,
        speedup=speedup, vendor_speedup=vendor_speedup,
        vs_vendor=speedup / vendor_speedup if speedup and vendor_speedup else None,
        roofline_pct=floors[0], floor_speedup=floors[1], gain_share=gain_share(speedup, floors[1]),
        accepted_skills=accepted, rounds=sum(r["status"] == "finished" for r in rounds),
        repairs=sum(a["attempt_idx"] > 0 for a in attempts),
        rejected=dict(Counter(a["status"] for a in attempts if a["status"] not in (Status.ACCEPTED, Status.PENDING))),
        verified_attempts=len(verified), judged_attempts=len(judged),
        prompt_tokens=sum(c["prompt_tokens"] or 0 for c in calls),
        reply_tokens=sum(c["completion_tokens"] or 0 for c in calls),
        judge_minutes=round(sum(judging_s(store, a) for a in judged) / 60, 3),
        ended={"category": str(ended), "reason": reason})


def _roofline(run, member, size: str, speedup: float | None) -> tuple[float | None, float | None]:
    """(% of the roofline floor the best kernel reaches, the speedup over the baseline at that floor) at the batch's
    size; (None, None) without one size, a floor, or a timed result."""
    if speedup is None or size == "scored" or not run.best_us or not run.baseline_us:
        return None, None
    spec = load_task(run.task_path, check_launcher=False)
    flops, nbytes = spec.work(size)
    result = SizeResult(member.operator, member.dtype, "optimized", size, "verified", float(flops), float(nbytes),
                        runtime_us=run.best_us, baseline_us=run.baseline_us)
    floor = floor_us(result, gpu_slug(run.manifest.get("gpu") or ""))
    if not floor:
        return None, None
    return 100.0 * floor / run.best_us, run.baseline_us / floor


def _vendor_speedups(results_root) -> dict[tuple[str, str, str], float]:
    """(operator, dtype, preset) -> the vendor implementation's verified speedup over the baseline
    (empty without bench results: the vendor columns then say not measured)."""
    root = config.bench_results_root(results_root)
    if not any(root.glob("*/bench/results.json")):
        return {}
    found = {}
    for _meta, results in load_stored(root).values():
        for r in results:
            if r.impl.startswith("vendor_") and r.speedup is not None:
                found[(r.op, r.dtype, r.preset)] = r.speedup
    return found


def _rank(run: RunResult) -> float:
    """A run's verified speedup, an untimed run below every timed one."""
    return run.speedup if run.speedup is not None else -math.inf


def _ended_counts(runs: Sequence[RunResult]) -> dict[str, int]:
    """The runs per way of ending, in Ended's order (the same order on every report)."""
    counts = Counter(r.ended["category"] for r in runs)
    return {str(e): counts[e] for e in Ended if counts[e]}


def _share(count: int, total: int) -> float | None:
    return count / total if total else None


def _x(value: float | None) -> str:
    return f"{value:.2f}x" if value is not None else "—"


def _percent(value: float | None) -> str:
    return f"{value:.0f} %" if value is not None else "—"


def _share_pct(value: float | None) -> str:
    return f"{100 * value:.0f} %" if value is not None else "—"
