"""Every engine decision of round >= 1 in an LLM bench store: the chosen skill, the rule(s) that proposed it and the
evidence values they read, the estimate, the outcome and the measured speedup, whether the run had already won a
round, and what today's rules choose on the same stored evidence (first untried or won-again proposal; 'free' = the
coder's free choice). Read-only on the store.

    python after_first_win.py STORE > rounds-after-first-win.md
"""

from __future__ import annotations

import collections
import json
import sqlite3
import sys
from pathlib import Path

from skillbase.engine import Engine
from skillbase.evidence import load_evidence_json


def main(store: Path) -> None:
    db = sqlite3.connect(f"file:{store / 'runs.sqlite3'}?mode=ro", uri=True)
    runs = {r[0]: (r[1], json.loads(r[2])) for r in db.execute("select id, task_name, manifest_json from runs")}
    first_win = dict(db.execute("select run_id, min(round_idx) from attempts where status='accepted' group by run_id"))
    engine = Engine.load()
    latest = {}
    for rid, rnd, skill, cands in db.execute("select run_id, round_idx, chosen_skill, candidates_json from decisions "
                                             "where round_idx >= 1 order by id"):
        if runs[rid][1]["settings"].get("engine", True):
            latest[(rid, rnd)] = (skill, json.loads(cands))   # the round's last decision (after any redecide)
    rows, tally = [], collections.defaultdict(lambda: [0, 0, [], 0])
    for (rid, rnd), (skill, cands) in sorted(latest.items()):
        atts = db.execute("select skill, status, speedup from attempts where run_id=? and round_idx=? "
                          "order by attempt_idx", (rid, rnd)).fetchall()
        tried = atts[0][0] if atts else skill
        won = [a for a in atts if a[1] == "accepted"]
        outcome, speedup = ("pending", None)
        if atts:
            outcome, speedup = ("accepted", won[0][2]) if won else (atts[-1][1], atts[-1][2])
        chosen = next((c for c in cands if c["skill"] == tried), None)
        after = rid in first_win and first_win[rid] < rnd
        doc = db.execute("select document from evidence where run_id=? and round_idx=?", (rid, rnd)).fetchone()
        today = "-"
        if doc:
            result = engine.evaluate(load_evidence_json(store / "artifacts" / "objects" / doc[0][:2] / doc[0]))
            pick = next((c for c in result.candidates if c.demoted in (None, "won")), None)
            today = "free" if pick is None else f"{pick.skill} {100 * (pick.time_saved_fraction or 0):.0f}%"
        if chosen:
            rules = ", ".join(r.split(".", 2)[-1] for r in chosen["rules"])
            seen, read = set(), []
            for f in chosen["focus"]:
                if f["name"] not in seen and isinstance(f["observed"], (int, float)):
                    seen.add(f["name"])
                    read.append(f"{f['name']} {f['observed']:.3g}")
            share = chosen.get("time_saved_fraction")
            est = f"{100 * share:.0f}%" if share is not None else "-"
        else:
            rules, read, est = "", [], "-"
        rows.append(f"| {runs[rid][0]} | {rnd} | {'yes' if after else 'no'} | {tried} | {rules} | {'; '.join(read)} | "
                    f"{est} | {outcome} | {f'{speedup:.2f}x' if speedup else '-'} | {today} |")
        if after and tried and tried != "free-choice":
            t = tally[tried]
            if outcome == "pending":
                t[3] += 1
            else:
                t[0] += 1
                t[1] += outcome == "accepted"
                t[2].append(speedup)
    print("| run | round | after a win | skill | rule(s) | evidence read | est. | outcome | measured | today |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print("\n| skill (rounds after the run's first win) | judged | accepted | measured | pending |")
    print("|---|---|---|---|---|")
    for skill, (n, acc, sp, pend) in sorted(tally.items(), key=lambda kv: (-kv[1][0], kv[0])):
        print(f"| {skill} | {n} | {acc} | {', '.join(f'{x:.2f}' if x else '-' for x in sp)} | {pend} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
