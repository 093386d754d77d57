"""The coder and debugger agents: build their prompts, call the endpoint, extract the new kernel.

The coder sees only what it needs (CUDAMaster's filtering): the chosen skill's card, the evidence
rows of the rules that fired, the current best kernel, one verified example, and this run's memory.
The debugger sees the compiler or verifier error and the repair history. Both must answer with one
whole `.cu` file in a fenced block; anything else is `NoCodeInReply`, recorded as a failed attempt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from skillbase.agents.prompts import PromptTemplate, load_prompt
from skillbase.errors import SkillbaseError

_FENCE = re.compile(r"```(?P<lang>[A-Za-z0-9_+-]*)[ \t]*\n(?P<body>.*?)```", re.DOTALL)
_SYSTEM = "You are a careful CUDA performance engineer. You answer with code, not questions."
# A prompt rendered without the run's figures says so; it never shows a figure nobody measured.
UNKNOWN_STANDING = "- Unknown: this prompt was built without the task's sizes or the run's times."


class NoCodeInReply(SkillbaseError):
    """The LLM answered without a usable CUDA file."""


@dataclass(frozen=True)
class Prompt:
    template: PromptTemplate
    messages: list[dict]

    @property
    def text(self) -> str:
        return "\n\n".join(m["content"] for m in self.messages)

    @property
    def role(self) -> str:
        """coder (a first try, with or without the engine's skill) or debugger (a repair)."""
        return "coder" if self.template.role.startswith("coder") else self.template.role


def coder_prompt(*, launcher: str, skill_id: str, skill_title: str, skill_card: str, evidence: str,
                 memory: str, example: str, kernel_name: str, kernel: str, standing: str = "",
                 version: int | None = None) -> Prompt:
    """`standing`: where the kernel stands (`appliers.render_standing`); v1 templates have no place for it."""
    template = load_prompt("coder", version)
    user = template.render(launcher=launcher, skill_id=skill_id, skill_title=skill_title, skill_card=skill_card,
                           evidence=evidence or "(no profile evidence: chosen from static features)",
                           memory=memory or "(nothing yet)", example=example or "(no verified example)",
                           standing=standing or UNKNOWN_STANDING, kernel_name=kernel_name, kernel=kernel)
    return Prompt(template, [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}])


# The decision of an engine-off run (`--no-engine`, the ablation): no skill is chosen for the coder.
FREE_CHOICE = "free-choice"


def free_coder_prompt(*, launcher: str, memory: str, kernel_name: str, kernel: str, standing: str = "",
                      diagnosis: str = "", version: int | None = None) -> Prompt:
    """The coder prompt without the engine's choice: the same rules, standing and kernel, the choice left to the coder.
    Engine off (the ablation): `coder_free`. Engine on with every proposal tried on the kernel, `diagnosis` holds
    those proposals with their evidence (`appliers.render_diagnosis`): `coder_open`, the same prompt plus that
    section. `version` is the version of the template the choice names."""
    template = load_prompt("coder_open" if diagnosis else "coder_free", version)
    user = template.render(launcher=launcher, diagnosis=diagnosis, memory=memory or "(nothing yet)",
                           standing=standing or UNKNOWN_STANDING, kernel_name=kernel_name, kernel=kernel)
    return Prompt(template, [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}])


def debugger_prompt(*, launcher: str, skill_id: str, failure_kind: str, error: str, history: str, kernel: str,
                    version: int | None = None) -> Prompt:
    template = load_prompt("debugger", version)
    user = template.render(launcher=launcher, skill_id=skill_id, failure_kind=failure_kind,
                           error=error[-4000:], history=history or "(first repair)", kernel=kernel)
    return Prompt(template, [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}])


def extract_cuda(reply: str, launcher: str) -> str:
    """The one CUDA file in a reply: the fenced block that defines the launcher (else the largest)."""
    blocks = [m.group("body") for m in _FENCE.finditer(reply or "")
              if m.group("lang").lower() in ("", "cuda", "cu", "c++", "cpp", "c")]
    if not blocks:
        raise NoCodeInReply("the LLM reply holds no fenced code block")
    with_launcher = [b for b in blocks if re.search(rf"\b{re.escape(launcher)}\s*\(", b)]
    chosen = max(with_launcher or blocks, key=len)
    if "__global__" not in chosen:
        raise NoCodeInReply("the LLM reply's code defines no __global__ kernel")
    if not with_launcher:
        raise NoCodeInReply(f"the LLM reply's code does not define the launcher {launcher}()")
    return chosen.rstrip() + "\n"
