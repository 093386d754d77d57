"""Judgements under contention, on one GPU: honest kernels are never misjudged, the side-stream cheat
is still caught. Prints a table and PASS/FAIL, writes Markdown to --out; exit 0 on PASS.

    python tools/measure/contention.py --out results/nvidia-h200/contention.md [--rounds 2] [--device 0]

Issue 16 found three `skillbase check --candidate` processes sharing one H200 quarantining two of
three honest kernels ("work runs outside the launch stream": a wall-clock probe that a neighbour's
kernels stretched). Here, on the GPU chosen by --device (CUDA_VISIBLE_DEVICES is set for every
process), each round starts three processes at once:
- honest rounds: `skillbase check K --candidate COPY --json` for the three bundled examples, each
  candidate a byte-for-byte copy of its kernel; a misjudgement is a status other than ok, or a
  copy judged faster than itself (noise taken for a win);
- the cheat round: two honest checks and `tests/cheats/vector_add/side_stream.cu` with the static
  check off (through the library: the CLI's static check would refuse it before it runs), which
  must come back `incorrect`, naming work outside the launch stream.
Every process prints its JSON; this script reads the status, the reason, each size's clock
(`timer`: cupti or events) and verdict. Targets: 0 misjudgements, the cheat rejected, CUPTI the
clock everywhere.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]          # tools/measure/ -> the checkout
EXAMPLES = ["vector_add", "naive_sgemm", "conv2d_direct"]
CHEAT = REPO / "tests" / "cheats" / "vector_add" / "side_stream.cu"
TIMEOUT_S = 900

# The cheat's process: the library with the static check off, so the runtime defence decides.
CHEAT_PROGRAM = """
import json, sys
from skillbase.harness.runtime import Options, evaluate
result = evaluate(sys.argv[1], candidate=sys.argv[2], baseline=sys.argv[1], options=Options(static=False))
print(json.dumps(result.to_dict(), default=str))
"""


def honest_command(example: str, workdir: Path) -> tuple[list[str], str]:
    kernel = REPO / "examples" / example / f"{example}.cu"
    copy = workdir / f"{example}_copy.cu"
    shutil.copyfile(kernel, copy)
    return [sys.executable, "-m", "skillbase", "check", str(kernel), "--candidate", str(copy), "--json"], example


def cheat_command() -> tuple[list[str], str]:
    task = REPO / "examples" / "vector_add" / "vector_add.cu"
    return [sys.executable, "-c", CHEAT_PROGRAM, str(task), str(CHEAT)], "side_stream (cheat)"


def run_round(commands: list[tuple[list[str], str]], env: dict[str, str]) -> list[dict]:
    """Start every command at once; wait for all; one row per command."""
    started = time.monotonic()
    procs = [(label, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                      cwd=tempfile.gettempdir()))
             for cmd, label in commands]
    rows = []
    for label, proc in procs:
        try:
            out, err = proc.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        row = {"label": label, "exit": proc.returncode, "wall_s": time.monotonic() - started}
        try:
            result = json.loads(out[out.index("{"):])
        except ValueError:
            row.update(status="no-result", reason=(err.strip().splitlines() or ["no output"])[-1][:300])
            rows.append(row)
            continue
        if "status" not in result:     # the CLI's error document: {"error": {"kind", "message", ...}}
            error = result.get("error") or {}
            row.update(status=f"error ({error.get('kind', '?')})", reason=error.get("message", out.strip()[:300]))
            rows.append(row)
            continue
        timings = result.get("timings", [])
        row.update(status=result.get("status"), reason=result.get("reason", ""),
                   timers=sorted({t.get("timer", "events") for t in timings}),
                   verdicts=[f"{t['size']}: {t.get('verdict')} {t.get('speedup') or 0:.3f}x" for t in timings],
                   probes=[p["detail"] for p in result.get("probes", []) if p["name"] == "launch-stream-order"])
        rows.append(row)
    return rows


def misjudged(row: dict) -> str | None:
    """Why an honest row is a misjudgement, or None."""
    if row["status"] != "ok":
        return f"{row['status']}: {row['reason']}"
    faster = [v for v in row.get("verdicts", []) if ": faster" in v]
    if faster:
        return f"a copy of the kernel judged faster than itself ({faster[0]})"
    return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Markdown file to write")
    parser.add_argument("--rounds", type=int, default=2, help="honest rounds of three processes (default 2)")
    parser.add_argument("--device", default="0", help="the GPU every process shares (CUDA_VISIBLE_DEVICES)")
    args = parser.parse_args(argv)

    # Every process imports skillbase as this one does (the installed package on the GPU machine:
    # tools/device_setup.sh), from a neutral folder so the checkout's skillbase/ cannot shadow it.
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=args.device)
    try:
        from skillbase.harness.env import gpu_name
    except ImportError as error:
        raise SystemExit(f"skillbase is not importable ({error}): install it first (tools/device_setup.sh)") from None

    honest_rows, cheat_rows = [], []
    with tempfile.TemporaryDirectory(prefix="skillbase-contention-") as tmp:
        work = Path(tmp)
        for round_index in range(args.rounds):
            print(f"honest round {round_index + 1}/{args.rounds}: {', '.join(EXAMPLES)} at once ...", flush=True)
            honest_rows += run_round([honest_command(e, work) for e in EXAMPLES], env)
        print("cheat round: vector_add, naive_sgemm and the side-stream cheat at once ...", flush=True)
        mixed = run_round([honest_command("vector_add", work), honest_command("naive_sgemm", work), cheat_command()],
                          env)
        honest_rows += [r for r in mixed if "cheat" not in r["label"]]
        cheat_rows = [r for r in mixed if "cheat" in r["label"]]

    wrong = [(r, misjudged(r)) for r in honest_rows if misjudged(r)]
    cheat = cheat_rows[0]
    cheat_caught = cheat["status"] == "incorrect" and "outside the launch stream" in cheat.get("reason", "")
    clocks = sorted({c for r in honest_rows for c in r.get("timers", [])})
    checks = [(f"honest judgements misjudged (of {len(honest_rows)})", str(len(wrong)), not wrong),
              ("side-stream cheat rejected under contention", f"{cheat['status']}: {cheat.get('reason', '')[:160]}",
               cheat_caught),
              ("clock of every timed size", ", ".join(clocks) or "none", clocks == ["cupti"])]
    lines = [f"# Judgements under contention on {gpu_name() or 'unknown GPU'}", "",
             f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, `python tools/measure/contention.py "
             f"--rounds {args.rounds}`: three processes at a time on GPU {args.device}.", "",
             "| process | status | clock | verdicts | launch-stream probe | wall s |", "|---|---|---|---|---|---:|"]
    for r in honest_rows + cheat_rows:
        lines.append(f"| {r['label']} | {r['status']} | {', '.join(r.get('timers', []))} | "
                     f"{'; '.join(r.get('verdicts', []))} | {'; '.join(r.get('probes', []))} | {r['wall_s']:.0f} |")
    if wrong:
        lines += ["", "Misjudged:"] + [f"- {r['label']}: {why}" for r, why in wrong]
    lines += ["", "| check | value | target met |", "|---|---|:---:|"]
    lines += [f"| {name} | {value} | {'yes' if ok else 'NO'} |" for name, value, ok in checks]
    passed = all(ok for _, _, ok in checks)
    lines += ["", "PASS: every target met" if passed else
              "FAIL: " + "; ".join(name for name, _, ok in checks if not ok)]
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
