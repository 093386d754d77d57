"""Replay a run from the store alone: what was decided in each round, on what evidence, and why.

`explain_run()` builds a plain data structure (also the `--json` output); `render_text()` turns it
into the human report. Nothing here profiles, builds or runs anything. A decision's `past` is what
the store's other runs said about each skill when the round's evidence was collected
(`evidence.history["past"]`); it is shown beside a candidate only when there is something to show. A
decision's `static` says when the static source features it read were not those the round recorded
(`redecide` and `resume --more-rounds` recompute them from the round's kernel: `with_todays_static`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from skillbase.documents import versioned
from skillbase.errors import InputError
from skillbase.run.evidence import static_refresh_line
from skillbase.run.pending import run_folder
from skillbase.run.store import RunRow, RunStore, column_json, column_number
from skillbase.run.types import Status

# The attempts `--fails-only` lists.
FAILED = frozenset({Status.BUILD_FAILED, Status.INCORRECT, Status.CRASHED, Status.REJECTED_STATIC,
                    Status.QUARANTINED, Status.SLOWER, Status.NO_CODE})


def explain_run(store: RunStore, ref: str | int, round_idx: int | None = None, fails_only: bool = False) -> dict:
    run = store.get_run(ref)
    rounds = []
    calls = {c["attempt_id"]: c for c in store.llm_calls(run.id)}
    superseded = store.superseded_decisions(run.id)
    reopened = store.rounds_reopened(run.id)
    for row in store.rounds(run.id):
        if round_idx is not None and row["idx"] != round_idx:
            continue
        decisions = store.decisions(run.id, row["idx"])
        attempts = store.attempts(run.id, row["idx"])
        decision = decisions[-1] if decisions else None
        trace = _load_json(store, decision["trace"]) if decision else None
        evidence = store.evidence_rows(run.id, row["idx"])
        document = _load_json(store, evidence[-1]["document"]) if evidence else None   # the one decided on
        producer = document.get("producer") if isinstance(document, dict) else None
        entry = {
            "round": row["idx"],
            "status": row["status"],
            "outcome": row["outcome"],
            "started_from": row["kernel"],
            "decision": None if decision is None else {
                "skill": decision["chosen_skill"],
                "params": column_json(decision["params_json"], store.db_path, f"round {row['idx']}'s parameters",
                                      dict),
                "reason": decision["reason"],
                "candidates": column_json(decision["candidates_json"], store.db_path,
                                          f"round {row['idx']}'s candidates", list, dict),
                "rules_not_fired": _not_fired(trace) if fails_only else None,
                "thresholds": trace.get("thresholds") if isinstance(trace, dict) else None,
                "facts": trace.get("facts") if isinstance(trace, dict) else None,
                "past": _past(document),
                "static": static_refresh_line(producer) if isinstance(producer, dict) else None,
                "superseded": [_superseded(d, superseded[d["id"]], run_folder(store, run.id))
                               for d in decisions if d["id"] in superseded],
            },
            "round_reopened": None if row["idx"] not in reopened else {
                "at": _when(reopened[row["idx"]].get("at")), "why": reopened[row["idx"]].get("why"),
                "ended": reopened[row["idx"]].get("ended")},
            "attempts": [
                {"attempt": a["attempt_idx"], "skill": a["skill"],
                 "params": column_json(a["params_json"], store.db_path, f"attempt {a['id']}'s parameters", dict),
                 "status": a["status"], "reason": a["reason"],
                 **{key: column_number(a[key], store.db_path, f"attempt {a['id']}'s {key}")
                    for key in ("runtime_us", "baseline_us", "speedup", "spread")},
                 "kernel": a["kernel"],
                 "llm": None if a["id"] not in calls else {
                     "role": calls[a["id"]]["role"], "model": calls[a["id"]]["model"],
                     "prompt_version": calls[a["id"]]["prompt_version"],
                     "prompt_tokens": calls[a["id"]]["prompt_tokens"],
                     "completion_tokens": calls[a["id"]]["completion_tokens"],
                     "error": calls[a["id"]]["error"]}}
                for a in attempts
                if not fails_only or a["status"] in FAILED
            ],
        }
        if fails_only and not entry["attempts"] and row["outcome"] == "accepted":
            continue
        rounds.append(entry)
    return versioned("explain", {
        "run": run.name,
        "task": run.task_name,
        "task_path": run.task_path,
        "status": run.status,
        "stop_reason": run.stop_reason,
        "created": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.created_at)),
        "baseline_us": run.baseline_us,
        "best_us": run.best_us,
        "speedup": run.speedup,
        "best_kernel": run.best_kernel,
        "manifest": run.manifest,
        "rounds": rounds,
        "reopened": [{"at": _when(r.get("at")), "more": r.get("more"), "from": r.get("from"), "to": r.get("to"),
                      "round": r.get("round"), "why": r.get("why"), "pct_of_floor": r.get("pct_of_floor"),
                      "evidence_from": r.get("evidence_from")} for r in store.rounds_added(run.id)],
    })


def runs_document(store: RunStore, rows: list[RunRow]) -> dict[str, Any]:
    """`runs --json`: the listed runs with their shown status (a dead process's run is `interrupted`)."""
    return versioned("runs", {"store": str(store.location), "runs": [
        {"run": r.name, "task": r.task_name, "task_path": r.task_path, "status": store.shown_status(r),
         "stop_reason": r.stop_reason, "baseline_us": r.baseline_us, "best_us": r.best_us, "speedup": r.speedup,
         "created": r.created_at} for r in rows]})


def _load_json(store: RunStore, digest: str | None) -> Any:
    if not digest:
        return None
    try:
        return json.loads(store.artifacts.get_text(digest))
    except (InputError, ValueError):  # a missing, corrupt or non-JSON artifact still lets the rest be explained
        return None


def _superseded(decision, mark: dict, folder: Path) -> dict:
    """An earlier decision of the round that `redecide` replaced: what it chose, when, the rules that
    replaced it, and its prompt, kept in the run's `folder` (of this store: it may have been unpacked elsewhere)."""
    kept = mark.get("superseded_prompt")
    return {"skill": decision["chosen_skill"], "reason": decision["reason"],
            "decided": _when(decision["created_at"]), "superseded": _when(mark.get("at")),
            "rules": mark.get("rules") or {}, "prompt": str(folder / Path(kept).name) if kept else None}


def _when(ts: float | None) -> str | None:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if isinstance(ts, (int, float)) else None


def _past(document: Any) -> dict:
    """{skill: {tried, accepted, failed, mean_accepted_speedup}} from the round's evidence `document` ({} in
    stores written before it was recorded)."""
    history = document.get("history") if isinstance(document, dict) else None
    return (history or {}).get("past") or {}


def _past_note(stats: dict | None) -> str:
    if not stats:
        return ""
    mean = stats.get("mean_accepted_speedup")
    return (f"  past runs: accepted {stats['accepted']} of {stats['tried']}"
            + (f" (mean {mean:.2f}x)" if isinstance(mean, (int, float)) else ""))


def _not_fired(trace: Any) -> list[dict]:
    """Proposal rules that did not fire, with the leaves that were false or missing."""
    decisions = trace.get("decisions") if isinstance(trace, dict) else None
    if not decisions:
        return []
    out = []
    for decision in decisions:
        if decision.get("kind") != "propose" or decision.get("fired"):
            continue
        failed = [{"expression": leaf.get("expression"), "result": leaf.get("result"),
                   "observed": leaf.get("observed"), "source": leaf.get("source")}
                  for leaf in decision.get("leaves", []) if leaf.get("result") in (False, "false", "missing")]
        out.append({"rule": decision.get("rule"),
                    "skills": [p.get("skill") for p in decision.get("proposals") or []],
                    "failed": failed})
    return out


def _us(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f} µs"


def render_text(report: dict) -> str:
    lines = [f"{report['run']}  {report['task']}  ({report['task_path']})",
             f"status: {report['status']}" + (f" — {report['stop_reason']}" if report["stop_reason"] else ""),
             f"baseline {_us(report['baseline_us'])}  best {_us(report['best_us'])}"
             + (f"  speedup {report['speedup']:.2f}x" if report["speedup"] else "")]
    manifest = report["manifest"] or {}
    keys = ("skillbase_version", "git", "agent", "model", "endpoint", "gpu", "driver", "nvcc", "seed",
            "rules_digest", "corpus_digest", "vocabulary_digest")
    shown = [f"{k}={manifest[k]}" for k in keys if manifest.get(k) is not None]
    if shown:
        lines.append("manifest: " + "  ".join(shown))
    reopened = list(report.get("reopened") or [])
    for entry in report["rounds"]:
        lines.append("")
        while reopened and entry["round"] >= reopened[0]["round"]:   # before the first round it added
            lines += [_reopened_line(reopened.pop(0)), ""]
        lines.append(f"round {entry['round']}: {entry['outcome'] or entry['status']}")
        decision = entry["decision"]
        if decision:
            lines.append(f"  decision: {decision['skill'] or 'none'} — {decision['reason']}")
            if decision.get("static"):
                lines.append(f"  static features: {decision['static']}")
            for old in decision.get("superseded") or []:
                rules = old["rules"]
                lines.append(f"  superseded: {old['skill'] or 'none'} (decided {old['decided']}), re-decided "
                             f"{old['superseded']} by skillbase {rules.get('skillbase_version')} "
                             f"(git {rules.get('git')}), rules {str(rules.get('rules_digest'))[:19]}, "
                             f"corpus {str(rules.get('corpus_digest'))[:12]}")
            again = entry.get("round_reopened")
            if again:   # the superseded decision above had ended the run here
                lines.append(f"  reopened {again['at']}: {again['why']}; the run had ended here"
                             + (f" ({again['ended']})" if again.get("ended") else ""))
            facts = decision.get("facts") or {}
            if facts:
                lines.append("  facts: " + ", ".join(f"{k}={v}" for k, v in sorted(facts.items())))
            thresholds = decision.get("thresholds") or {}
            if thresholds:
                lines.append(f"  thresholds: {thresholds.get('path')} ({thresholds.get('digest', '')[:19]})")
            for rank, cand in enumerate(decision["candidates"][:5], 1):
                speed = cand.get("time_saved_fraction", cand.get("speedup"))   # the older runs' key
                lines.append(f"    {rank}. {cand.get('skill')}  score {cand.get('score')}"
                             + (f"  est. time saved {speed * 100:.0f}%" if isinstance(speed, (int, float)) else "")
                             + ("" if cand.get("applicable", True) else "  (not applicable in this mode)")
                             + _past_note((decision.get("past") or {}).get(cand.get("skill"))))
            for rule in decision.get("rules_not_fired") or []:
                why = "; ".join(f"{leaf['expression']} -> {leaf['result']}" for leaf in rule["failed"][:3])
                lines.append(f"    not fired: {rule['rule']} ({', '.join(filter(None, rule['skills']))}): {why}")
        for attempt in entry["attempts"]:
            params = f" {json.dumps(attempt['params'])}" if attempt["params"] else ""
            timing = ""
            if attempt["runtime_us"] is not None:
                timing = f"  {_us(attempt['runtime_us'])}"
                if attempt["speedup"]:
                    timing += f" ({attempt['speedup']:.2f}x ± {100 * (attempt['spread'] or 0):.1f}%)"
            llm = attempt["llm"]
            tokens = (f"{llm['prompt_tokens']}+{llm['completion_tokens']} tokens"
                      if llm and llm["prompt_tokens"] is not None
                      else "no reply")
            via = (f"  [{llm['role']} {llm['prompt_version']}, {tokens}"
                   + (f", error: {llm['error']}" if llm["error"] else "") + "]") if llm else ""
            lines.append(f"  try {attempt['attempt'] + 1}: {attempt['skill']}{params} -> {attempt['status']}: "
                         f"{attempt['reason']}{timing}{via}")
    lines += [line for record in reopened for line in ("", _reopened_line(record))]   # its new rounds not run yet
    return "\n".join(lines)


def _reopened_line(record: dict) -> str:
    """One reopening of the run (`resume --more-rounds`): when, by how many rounds, why, and its evidence."""
    evidence = (f"round {record['round']} reuses round {record['evidence_from']}'s evidence"
                if record.get("evidence_from") is not None else f"round {record['round']} profiles its kernel anew")
    return (f"reopened {record['at']}: {record['more']} more round{'s' if record['more'] != 1 else ''} "
            f"({record['from']} -> {record['to']}): {record['why']}; {evidence}")
