"""Every engine-on decision of an LLM bench store ranked again, read-only: the first untried (or won-again) proposal of
the rules in BEFORE_RULES and of the built-in rules, on the round's stored evidence (what `skillbase redecide` reads),
and on the same evidence with its static features re-read by today's analyser from the kernel the round's prompt
shows (what a fresh profile would carry: features added after the run are missing from the stored evidence). Prints
the decisions whose pick changes, with what the run measured for the skill it tried; 'free' = the coder's free choice.

    PYTHONPATH=. python redecide_fresh.py STORE BEFORE_RULES     # BEFORE_RULES: e.g. `git archive` of main's rules/
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
from pathlib import Path

from skillbase.engine import Engine
from skillbase.evidence import load_evidence_json
from skillbase.evidence.build import _align_names, _instances
from skillbase.evidence.static.features import static_features


def pick(engine: Engine, evidence) -> str:
    result = engine.evaluate(evidence)
    first = next((c for c in result.candidates if c.demoted in (None, "won")), None)
    return "free" if first is None else first.skill


def prompt_kernel(store: Path, run: int, round_idx: int) -> str | None:
    prompt = store / "runs" / f"run_{run}" / f"r{round_idx}-v0-a0.prompt.md"
    if not prompt.exists():
        return None
    text = prompt.read_text()
    head = text.find("## The current best kernel")
    if head < 0:
        return None
    start = text.find("```cuda", head) + len("```cuda")
    return text[start:text.find("```", start)]


def main(store: Path, before_rules: Path) -> None:
    db = sqlite3.connect(f"file:{store / 'runs.sqlite3'}?mode=ro", uri=True)
    before, after = Engine.load(rules_dirs=[before_rules]), Engine.load()
    runs = {r[0]: (r[1], json.loads(r[2])) for r in db.execute("select id, task_name, manifest_json from runs")}
    scratch = Path(tempfile.mkdtemp()) / "kernel.cu"
    seen, rows = set(), []
    for run, round_idx, doc in db.execute("select run_id, round_idx, document from evidence order by id desc"):
        if (run, round_idx) in seen or not runs[run][1]["settings"].get("engine", True):
            continue
        seen.add((run, round_idx))   # the round's last evidence (after any redecide)
        evidence = load_evidence_json(store / "artifacts" / "objects" / doc[:2] / doc)
        stored = (pick(before, evidence), pick(after, evidence))
        fresh = None
        code = prompt_kernel(store, run, round_idx)
        if code:
            scratch.write_text(code)
            evidence.static = static_features(scratch, instances=_instances(evidence))
            _align_names(evidence)
            fresh = (pick(before, evidence), pick(after, evidence))
        tried = db.execute("select skill, status, speedup from attempts where run_id=? and round_idx=? "
                           "order by attempt_idx", (run, round_idx)).fetchone()
        rows.append((runs[run][0], round_idx, stored, fresh, tried))
    print(f"{len(rows)} decisions; pick changed on the stored evidence: {sum(r[2][0] != r[2][1] for r in rows)}; "
          f"with the static features re-read: {sum(1 for r in rows if r[3] and r[3][0] != r[3][1])} "
          f"of {sum(1 for r in rows if r[3])}\n")
    print("| run | round | stored evidence: before -> after | static re-read: before -> after | the run tried |")
    print("|---|---|---|---|---|")
    for name, round_idx, stored, fresh, tried in sorted(rows):
        if stored[0] == stored[1] and (fresh is None or fresh[0] == fresh[1]):
            continue
        measured = "pending" if tried is None else f"{tried[0]} {tried[1]}" + (f" {tried[2]:.2f}x" if tried[2] else "")
        fresh_text = "-" if fresh is None else f"{fresh[0]} -> {fresh[1]}"
        print(f"| {name} | {round_idx} | {stored[0]} -> {stored[1]} | {fresh_text} | {measured} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
