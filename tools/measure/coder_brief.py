"""Print the brief a coder helper is given for one prompt (docs/external-mode.md, the coder protocol).

    python tools/measure/coder_brief.py PROMPT.md CANDIDATE.cu [--model NAME]

The brief is the whole of what the coder is told: read the one prompt, write the one file, record the
meta file, read nothing else (not the harness, the tests, other prompts or candidates). It is kept here,
not in a session's notes, so every session briefs its coders the same way.
"""

from __future__ import annotations

import argparse
from pathlib import Path

BRIEF = """\
You are a CUDA coder. Your whole task is one prompt file; treat it as the only context you have, the
way an LLM called over an API would.

1. Run `date +%s.%N` and keep the number it prints (your start time).
2. Read exactly one file: {prompt}
   Read no other file, list no folder, search nothing, compile nothing, run nothing else.
3. Write the complete `.cu` file that the prompt asks for to {candidate}
   (the file only: no Markdown fences, no commentary around it).
4. Run: {python} {meta_tool} {candidate} --model "{model}" --started <your start time>
5. Reply with the kernel file's content only.
"""


def brief(prompt: Path, candidate: Path, model: str) -> str:
    root = Path(__file__).resolve().parents[2]
    return BRIEF.format(prompt=prompt.resolve(), candidate=candidate.resolve(), model=model,
                        python=root / ".venv/bin/python", meta_tool=root / "tools/measure/coder_meta.py")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prompt", type=Path)
    parser.add_argument("candidate", type=Path)
    parser.add_argument("--model", default="claude helper of the lead")
    args = parser.parse_args()
    if not args.prompt.is_file():
        parser.error(f"{args.prompt}: no such prompt file")
    print(brief(args.prompt, args.candidate, args.model), end="")


if __name__ == "__main__":
    main()
