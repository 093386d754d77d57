"""How often the engine names the expert's next step: hit@1/3/5 on the dev set and the skill examples.

    python tools/measure/advice/eval.py                      # the table (tune, test, in-sample, ncu baseline)
    python tools/measure/advice/eval.py --details tune       # per step: label, its rank, the top 3
    python tools/measure/advice/eval.py --out results/nvidia-h200/advice-eval.md

Rows:
- `tune` / `test`: the dev set's halves (tools/measure/advice/devset.yaml; split by progression, drawn
  once before any rule was changed). Each step is version k's H200 profile with its own source; a
  hit@k counts when the technique of version k+1 (the author's words, our id) is among the engine's
  first k distinct skills. `+history` gives the engine what the author did before (as a run's memory).
- `in-sample`: each skill example's before.cu profile (results/nvidia-h200/population/), ranked with the
  example's task spec beside before.cu (skills/<cat>/<id>/examples/task.yaml), as `skills verify` and
  tests/advice/test_population.py rank it: what the task allows is evidence, and its `arch:` is the target
  of before.cu's ptxas facts (the hop.* kernels need sm_90a). The rules were written with these in view, so
  this is not a measure of generalisation.
- `ncu`: Nsight Compute's own guided analysis on the same profiles: its OPT rule results ordered by
  their estimated speedup, each mapped to the skills its advice names (NCU_SKILLS below, from
  ncu's rule texts); a rule counts for every skill it names, which favours ncu.
Details of the test half are hidden unless `--details test` is asked for: tune on tune only.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import devset  # noqa: E402

KS = (1, 3, 5)
POPULATION = devset.REPO / "results" / "nvidia-h200" / "population"

# ncu rule (and, for CPIStall / LaunchConfiguration / HighPipeUtilization / FPInstructions, words of
# the finding's title) -> the skills its advice names (reference: shared/reference/ncu-rules-and-advisors.md §1.3-1.4).
NCU_SKILLS: dict[str, tuple[str, ...]] = {
    "UncoalescedGlobalAccess": ("mem.coalesce",),
    "MemoryCacheAccessPattern": ("mem.coalesce", "mem.aos_to_soa"),
    "UncoalescedSharedAccess": ("smem.pad", "smem.swizzle"),
    "SharedMemoryConflicts": ("smem.pad", "smem.swizzle"),
    "LocalMemoryUsage": ("mem.eliminate_local",),
    "TheoreticalOccupancy": ("occ.launch_bounds_regs", "occ.smem_budget", "launch.block_size"),
    "AchievedOccupancy": ("occ.achieved_gap",),
    "IssueSlotUtilization": ("occ.achieved_gap",),
    "ThreadDivergence": ("cf.reduce_divergence",),
    "SOLFPRoofline": ("cmp.fp64_to_fp32",),
    "WorkloadImbalance": ("alg.persistent_kernel",),
    "CPIStall:long scoreboard": ("mem.coalesce", "mem.smem_tiling", "mem.cp_async_pipeline", "mem.register_prefetch",
                                 "mem.eliminate_local"),
    "CPIStall:lg throttle": ("mem.vectorize", "mem.eliminate_local"),
    "CPIStall:mio throttle": ("smem.wider_access", "smem.pad", "cmp.register_tiling"),
    "CPIStall:short scoreboard": ("smem.pad", "smem.swizzle", "smem.register_cache"),
    "CPIStall:barrier": ("sync.reduce_barriers", "red.warp_shuffle"),
    "CPIStall:membar": ("sync.reduce_membar",),
    "CPIStall:wait": ("cmp.unroll", "cmp.ilp_multi_acc"),
    "CPIStall:math pipe throttle": ("cmp.tensor_core_mma", "cmp.fp64_to_fp32"),
    "CPIStall:tex throttle": ("mem.readonly_path",),
    "CPIStall:not selected": ("occ.decrease_coarsen",),
    "CPIStall:no instruction": ("cmp.reduce_unroll",),
    "CPIStall:branch resolving": ("cf.reduce_divergence", "cf.branch_elimination"),
    "CPIStall:drain": ("mem.coalesce",),
    "CPIStall:imc miss": ("mem.constant_broadcast",),
    "LaunchConfiguration:small grid": ("launch.fill_gpu",),
    "LaunchConfiguration:tail": ("launch.tail_effect", "alg.persistent_kernel"),
    "LaunchConfiguration:block": ("launch.block_size",),
    "HighPipeUtilization:low utilization": ("launch.fill_gpu", "occ.achieved_gap"),
    "HighPipeUtilization:high": ("cmp.tensor_core_mma", "cmp.strength_reduction"),
    "FPInstructions:fp64": ("cmp.fp64_to_fp32",),
    "FPInstructions": ("cmp.fma_contract",),
}


def ncu_ranking(evidence) -> list[tuple[str, ...]]:
    """ncu's OPT findings, largest estimated speedup first, as the skills each one names."""
    record = evidence.focus()
    rules = [r for r in (record.ncu_rules if record else []) if r.get("type") == "OPT"]
    rules.sort(key=lambda r: -(r.get("speedup_pct") or 0.0))
    ranked = []
    for rule in rules:
        title = (rule.get("title") or "").lower()
        name = rule["rule"]
        keys = [k for k in NCU_SKILLS if k.startswith(name + ":") and k.split(":", 1)[1] in title]
        skills = NCU_SKILLS[keys[0]] if keys else NCU_SKILLS.get(name, ())
        if skills:
            ranked.append(skills)
    return ranked


def rank_of(label: str, ranked: list[tuple[str, ...]]) -> int | None:
    for position, skills in enumerate(ranked, 1):
        if label in skills:
            return position
    return None


def engine_ranking(engine, evidence, history: dict | None = None) -> list[tuple[str, ...]]:
    if history is not None:
        evidence.history = history
    seen, ranked = set(), []
    for candidate in engine.evaluate(evidence).candidates:
        if candidate.skill not in seen:
            seen.add(candidate.skill)
            ranked.append((candidate.skill,))
    return ranked


def _history(labels: tuple[str, ...]) -> dict:
    return {"tried": list(labels), "won": list(labels), "failed": [], "tabu": []}


def hits(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks)
    return {f"hit@{k}": (sum(1 for r in ranks if r is not None and r <= k) / n if n else 0.0) for k in KS} | {"n": n}


def population_items():
    import yaml

    expect = yaml.safe_load((POPULATION / "expect.yaml").read_text())
    for report in sorted(POPULATION.glob("*.before.ncu-rep.xz")):   # kept xz-compressed: every reader takes them
        skill = report.name[: -len(".before.ncu-rep.xz")]
        label = expect.get(skill, skill) if isinstance(expect, dict) else skill
        yield skill, (label if isinstance(label, str) else label[0]), report, report.with_name(f"{skill}.before.cu")


def example_task(skill: str) -> Path:
    """The task spec of a skill's example, which `skills verify` profiled before.cu with."""
    return devset.REPO / "skills" / skill.split(".")[0] / skill / "examples" / "task.yaml"


def evaluate(show_details: set[str], halves: list[str] | tuple[str, ...] = ("tune", "test"),
             rules_dir: Path | None = None) -> dict:
    from skillbase.corpus.verify import kept_profile_evidence
    from skillbase.engine import Engine
    from skillbase.evidence.model import Evidence

    engine = Engine.load(rules_dirs=[rules_dir] if rules_dir else None)
    rows, details, pending = {}, [], {}
    for half in halves:
        ranks, ranks_h, ranks_ncu = [], [], []
        for step in devset.steps(half):
            if not step.fixture.is_file():
                # A step added to the set before its H200 profile came back: counted nowhere, said once.
                pending.setdefault(half, []).append(step.key)
                continue
            evidence = Evidence.from_json(devset.read_fixture(step))
            mine = engine_ranking(engine, evidence)
            with_history = engine_ranking(engine, Evidence.from_json(devset.read_fixture(step)),
                                          _history(step.previous_labels))
            theirs = ncu_ranking(evidence)
            r, rh, rn = rank_of(step.label, mine), rank_of(step.label, with_history), rank_of(step.label, theirs)
            ranks.append(r)
            ranks_h.append(rh)
            ranks_ncu.append(rn)
            if half in show_details:
                details.append({"half": half, "step": step.key, "label": step.label, "rank": r, "rank_history": rh,
                                "rank_ncu": rn, "top3": [s[0] for s in mine[:3]]})
        rows[half] = hits(ranks)
        rows[f"{half} +history"] = hits(ranks_h)
        rows[f"{half} ncu"] = hits(ranks_ncu)
    ranks, ranks_ncu, untasked = [], [], []
    for skill, label, report, source in population_items():
        task = example_task(skill)
        if not task.is_file():
            untasked.append(skill)
        with tempfile.TemporaryDirectory() as work:
            evidence = kept_profile_evidence(report, source, task, Path(work))
        r = rank_of(label, engine_ranking(engine, evidence))
        ranks.append(r)
        ranks_ncu.append(rank_of(label, ncu_ranking(evidence)))
        if "in-sample" in show_details:
            details.append({"half": "in-sample", "step": skill, "label": label, "rank": r})
    rows["in-sample"] = hits(ranks)
    rows["in-sample ncu"] = hits(ranks_ncu)
    return {"rows": rows, "details": details, "pending": pending, "in_sample_without_task": untasked}


def _git() -> str:
    out = subprocess.run(["git", "-C", str(devset.REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True)
    dirty = subprocess.run(["git", "-C", str(devset.REPO), "status", "--porcelain", "rules", "engine"],
                           capture_output=True, text=True).stdout.strip()
    return out.stdout.strip() + (" (+ uncommitted rule/engine changes)" if dirty else "")


def render(result: dict) -> str:
    lines = [f"Advice evaluation, {datetime.date.today().isoformat()}, commit {_git()}, "
             "`python tools/measure/advice/eval.py`", "",
             "| set | steps | hit@1 | hit@3 | hit@5 |", "|---|---|---|---|---|"]
    for name, row in result["rows"].items():
        lines.append(f"| {name} | {row['n']} | " + " | ".join(f"{row[f'hit@{k}']:.0%}" for k in KS) + " |")
    for half, keys in result.get("pending", {}).items():
        lines += ["", f"{len(keys)} {half} steps have no evidence fixture yet and are not counted (profile them, then "
                  f"build_fixtures.py): {', '.join(keys)}"]
    if result.get("in_sample_without_task"):
        lines += ["", f"{len(result['in_sample_without_task'])} in-sample examples have no task.yaml and are ranked "
                  f"without a spec: {', '.join(result['in_sample_without_task'])}"]
    if result["details"]:
        lines += ["", "| set | step | label | rank | rank +history | rank ncu | top 3 |",
                  "|---|---|---|---|---|---|---|"]
        for d in result["details"]:
            top3 = ", ".join(d.get("top3", []))
            lines.append(f"| {d['half']} | {d['step']} | {d['label']} | {d['rank'] or '–'} "
                         f"| {d.get('rank_history') or '–'} | {d.get('rank_ncu') or '–'} | {top3} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--details", action="append", default=[], choices=["tune", "test", "in-sample"],
                        help="per-step rows for this set (repeatable)")
    parser.add_argument("--halves", default="tune,test", help="which dev-set halves to evaluate (comma-separated; "
                        "while tuning rules, `--halves tune`: the test half is for reporting only)")
    parser.add_argument("--rules-dir", type=Path, help="evaluate this rule folder instead of the built-in rules "
                        "(e.g. `git archive` of an earlier commit's rules/, for a before/after)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--out", type=Path, help="also write the Markdown table here")
    args = parser.parse_args(argv)
    result = evaluate(set(args.details), [h for h in args.halves.split(",") if h], args.rules_dir)
    text = render(result)
    print(json.dumps(result, indent=1) if args.json else text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
