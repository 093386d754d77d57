"""How a chosen skill becomes a candidate kernel in the LLM agent modes of the loop.

Both implement `skillbase.run.types.Applier`:
- `LLMApplier` (`--agent openai`): the coder writes the first candidate; after a compile or
  verification failure the debugger repairs it, seeing the error and the repair history.
- `ExternalApplier` (`--agent external`): writes the coder prompt into the run's folder and raises
  `Paused`; the loop pauses the run, and a person or another coding agent answers with
  `skillbase resume run_N --candidate new.cu`.
Every LLM call is returned as an `LLMCall` (role, model, endpoint host, prompt version, prompt and
response text, token counts, duration, error) that the loop stores with the attempt. Nothing here
touches the run store.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from skillbase.agents.client import ChatClient, LLMUnavailable
from skillbase.agents.coder import (
    FREE_CHOICE,
    NoCodeInReply,
    Prompt,
    coder_prompt,
    debugger_prompt,
    extract_cuda,
    free_coder_prompt,
)
from skillbase.agents.tokens import count_tokens
from skillbase.corpus.model import HEADINGS, Skill
from skillbase.run.types import ApplyRequest, Candidate, LLMCall, LoopState, Paused, Produced, Status

# The headings of a skill a coder needs (the rest is for a reader choosing a skill), with the
# titles and in the order `skills show` renders them.
CARD_KEYS = frozenset({"summary", "what_it_does", "why_it_helps", "how", "parameters", "anti_patterns", "risks"})
CARD_FIELDS = tuple((key, title) for key, title in HEADINGS if key in CARD_KEYS)


def render_card(skill: Skill | None) -> str:
    """The skill's card for a prompt: the headings a coder needs, not the whole entry."""
    if skill is None:
        return "(no skill card available)"
    parts = []
    for key, title in CARD_FIELDS:
        value = skill.get(key)
        if not value:
            continue
        if isinstance(value, list):
            body = "\n".join(f"- {_flatten(item)}" for item in value)
        elif isinstance(value, dict):
            body = "\n".join(f"- {k}: {_flatten(v)}" for k, v in value.items())
        else:
            body = str(value).strip()
        parts.append(f"### {title}\n{body}")
    return "\n\n".join(parts)


def render_evidence(candidate: Candidate | None) -> str:
    """Only what the firing rules read (CUDAMaster's filtering): their reasons and focus rows."""
    if candidate is None:
        return ""
    lines = []
    if candidate.because:
        lines.append(str(candidate.because))
    for row in candidate.focus:
        lines.append(f"- {row.name} = {row.observed}"
                     + (f" (threshold {row.threshold})" if row.threshold is not None else ""))
    return "\n".join(lines)


def render_memory(state: LoopState) -> str:
    return "\n".join(f"- {t.skill}: {t.status}" for t in state.tried)


def _flatten(value: Any) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{k}: {v}" for k, v in value.items())
    return str(value).strip()


class PromptBuilder:
    """The coder prompt for a first try, the debugger prompt for a repair."""

    def __init__(self, launcher: str, kernel_name: str, skill_lookup: Callable[[str], Skill | None],
                 example_lookup: Callable[[str, str, Candidate | None], str]):
        self.launcher = launcher
        self.kernel_name = kernel_name
        self.skill_lookup = skill_lookup          # id -> the skill, or None
        self.example_lookup = example_lookup      # (id, current kernel, candidate) -> verified example text or ""

    def build(self, request: ApplyRequest, state: LoopState) -> Prompt:
        if (request.attempt == 0 or not request.history) and request.skill == FREE_CHOICE:
            return free_coder_prompt(launcher=self.launcher, memory=render_memory(state),
                                     kernel_name=self.kernel_name, kernel=state.best_source)
        if request.attempt == 0 or not request.history:
            skill = self.skill_lookup(request.skill)
            return coder_prompt(launcher=self.launcher, skill_id=request.skill,
                                skill_title=skill.title if skill is not None else request.skill,
                                skill_card=render_card(skill), evidence=render_evidence(request.candidate),
                                memory=render_memory(state),
                                example=self.example_lookup(request.skill, state.best_source, request.candidate),
                                kernel_name=self.kernel_name, kernel=state.best_source)
        last = request.history[-1]
        earlier = "\n".join(f"- try {h.attempt + 1}: {h.status}: {h.reason}" for h in request.history[:-1])
        skill_id = "the optimization this kernel applies" if request.skill == FREE_CHOICE else request.skill
        return debugger_prompt(launcher=self.launcher, skill_id=skill_id, failure_kind=last.status,
                               error=(last.details or last.reason), history=earlier,
                               kernel=last.source if last.source is not None else state.best_source)


class LLMApplier:
    """`--agent openai`: the coder and the debugger over an OpenAI-compatible endpoint."""

    can_repair = True

    def __init__(self, client: ChatClient, prompts: PromptBuilder):
        self.client = client
        self.prompts = prompts

    def variants(self, skill: str, params: dict, state: LoopState) -> list[dict]:
        return [params]

    def produce(self, request: ApplyRequest, state: LoopState) -> Produced:
        prompt = self.prompts.build(request, state)
        call = LLMCall(role=prompt.role, model=self.client.config.model,
                       endpoint_name=self.client.config.endpoint_name, prompt_version=prompt.template.name,
                       prompt=prompt.text)
        try:
            completion = self.client.complete(prompt.messages)
        except LLMUnavailable as error:
            return Produced(source=None, error=error.message, kind=Status.LLM_ERROR,
                            llm_call=replace(call, error=error.message))
        call = replace(call, response=completion.text, prompt_tokens=completion.prompt_tokens,
                       completion_tokens=completion.completion_tokens, duration_s=round(completion.duration_s, 3))
        tokens = (completion.prompt_tokens or 0) + (completion.completion_tokens or 0)
        try:
            source = extract_cuda(completion.text, self.prompts.launcher)
        except NoCodeInReply as error:
            return Produced(source=None, error=error.message, kind=Status.NO_CODE, tokens=tokens,
                            llm_call=replace(call, error=error.message))
        return Produced(source=source, flags=state.best_flags, tokens=tokens, llm_call=call)


@dataclass(frozen=True)
class CoderReply:
    """What a coder outside skillbase says about its candidate (`run_N.meta.json`): who wrote it, how
    long it took, how many tokens its reply was. The prompt's tokens are counted by skillbase."""

    model: str | None = None
    wall_s: float | None = None
    reply_tokens: int | None = None


class ExternalApplier:
    """`--agent external`: writes the prompt for a person or another agent and pauses until a candidate is given.

    The candidate handed back is recorded as a call of the coder (or debugger): the prompt it was
    given and its token count, the candidate as the reply, and what `reply` says about it."""

    can_repair = True

    def __init__(self, prompts: PromptBuilder, run_dir: Path, reply: CoderReply | None = None):
        self.prompts = prompts
        self.run_dir = run_dir
        self.reply = reply

    def variants(self, skill: str, params: dict, state: LoopState) -> list[dict]:
        return [params]

    def prompt_path(self, request: ApplyRequest) -> Path:
        return self.run_dir / f"{request.key.replace('/', '-')}.prompt.md"

    def produce(self, request: ApplyRequest, state: LoopState) -> Produced:
        prompt = self.prompts.build(request, state)
        path = self.prompt_path(request)
        if request.external_source is not None:
            return self._answered(request, prompt, path.read_text() if path.exists() else prompt.text, state)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(prompt.text)
        (self.run_dir / "waiting.json").write_text(json.dumps({"key": request.key, "skill": request.skill,
                                                               "kind": prompt.role, "prompt": str(path)}))
        raise Paused(request.skill, path)

    def _answered(self, request: ApplyRequest, prompt: Prompt, shown: str, state: LoopState) -> Produced:
        reply = self.reply or CoderReply()
        self.reply = None                       # it describes this one candidate only
        prompt_tokens = count_tokens(shown)
        call = LLMCall(role=prompt.role, model=reply.model or "(not named)", endpoint_name="external",
                       prompt_version=prompt.template.name, prompt=shown, response=request.external_source,
                       prompt_tokens=prompt_tokens, completion_tokens=reply.reply_tokens, duration_s=reply.wall_s)
        return Produced(source=request.external_source, flags=state.best_flags,
                        tokens=prompt_tokens + (reply.reply_tokens or 0), llm_call=call)
