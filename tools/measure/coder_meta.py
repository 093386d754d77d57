"""Write a coder's `run_N.meta.json` beside the candidate it wrote (docs/external-mode.md, the coder protocol).

    python tools/measure/coder_meta.py CANDIDATE.cu --model "claude helper of the lead" --started EPOCH_S

`reply_tokens` is the candidate's length in tiktoken's cl100k_base tokens, counted the way skillbase counts
every prompt (`skillbase.agents.tokens.count_tokens`), so prompt and reply figures are comparable across
models; `wall_s` is from `--started` (the coder's first step, `date +%s.%N`) to now.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from skillbase.agents.tokens import count_tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("candidate", type=Path)
    parser.add_argument("--model", required=True)
    parser.add_argument("--started", type=float, required=True, help="epoch seconds when the coder began")
    args = parser.parse_args()
    text = args.candidate.read_text()
    meta = {"model": args.model, "wall_s": round(time.time() - args.started, 1), "reply_tokens": count_tokens(text)}
    args.candidate.with_suffix(".meta.json").write_text(json.dumps(meta))
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
