"""How a chosen skill becomes a candidate kernel in each agent mode of the loop.

- `LLMApplier` (`--agent openai`): the coder writes the first candidate; after a compile or
  verification failure the debugger repairs it, seeing the error and the repair history.
- `ExternalApplier` (`--agent external`): writes the coder prompt into the run's folder and pauses;
  a person or another coding agent answers with `skillbase resume run_N --candidate new.cu`.
Every LLM call is returned as a record (role, model, endpoint host, prompt version, prompt and
response artifacts, token counts, duration, error) that the loop stores with the attempt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from skillbase.agents.client import ChatClient, LLMUnavailable
from skillbase.agents.coder import NoCodeInReply, Prompt, coder_prompt, debugger_prompt, extract_cuda

CARD_FIELDS = (("summary", "Summary"), ("what_it_does", "What it does"), ("why_it_helps", "Why it helps"),
               ("how", "How"), ("parameters", "Parameters"), ("anti_patterns", "Anti-patterns"),
               ("risks", "Risks"))


def render_card(skill: dict | None) -> str:
    """The skill's card for a prompt: the headings a coder needs, not the whole entry."""
    if not skill:
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


def render_evidence(candidate: dict | None) -> str:
    """Only what the firing rules read (CUDAMaster's filtering): their reasons and focus rows."""
    if not candidate:
        return ""
    lines = []
    if candidate.get("because"):
        lines.append(str(candidate["because"]))
    for row in candidate.get("focus") or []:
        if isinstance(row, dict):
            name, observed, threshold = row.get("name"), row.get("observed"), row.get("threshold")
            lines.append(f"- {name} = {observed}" + (f" (threshold {threshold})" if threshold is not None else ""))
    return "\n".join(lines)


def render_memory(state) -> str:
    if not state.tried:
        return ""
    return "\n".join(f"- {t['skill']}: {t['status']}" for t in state.tried)


def _flatten(value: Any) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{k}: {v}" for k, v in value.items())
    return str(value).strip()


class PromptBuilder:
    """The coder prompt for a first try, the debugger prompt for a repair."""

    def __init__(self, store, launcher: str, kernel_name: str, skill_lookup, example_lookup):
        self.store = store
        self.launcher = launcher
        self.kernel_name = kernel_name
        self.skill_lookup = skill_lookup          # id -> skill dict or None
        self.example_lookup = example_lookup      # id -> verified example text or ""

    def build(self, skill, state, attempt, history, decision) -> Prompt:
        if attempt == 0 or not history:
            chosen = next((c for c in (decision or {}).get("candidates", []) if c.get("skill") == skill), None)
            card = self.skill_lookup(skill) or {}
            return coder_prompt(launcher=self.launcher, skill_id=skill, skill_title=card.get("title", skill),
                                skill_card=render_card(card), evidence=render_evidence(chosen),
                                memory=render_memory(state), example=self.example_lookup(skill, state.best_source, chosen),
                                kernel_name=self.kernel_name, kernel=state.best_source)
        last = history[-1]
        failing = self.store.artifacts.get_text(last["source"]) if last.get("source") else state.best_source
        earlier = "\n".join(f"- try {h['attempt'] + 1}: {h['status']}: {h['reason']}" for h in history[:-1])
        return debugger_prompt(launcher=self.launcher, skill_id=skill, failure_kind=last["status"],
                               error=(last.get("details") or last["reason"]), history=earlier, kernel=failing)


class LLMApplier:
    can_repair = True

    def __init__(self, client: ChatClient, prompts: PromptBuilder):
        self.client = client
        self.prompts = prompts
        self.store = prompts.store

    def produce(self, *, skill, params, state, attempt, history, decision=None, **_) -> dict:
        prompt = self.prompts.build(skill, state, attempt, history, decision)
        prompt_digest = self.store.artifacts.put_text(prompt.text)
        call = {"role": prompt.template.role, "model": self.client.config.model,
                "endpoint_name": self.client.config.endpoint_name, "prompt_version": prompt.template.name,
                "prompt": prompt_digest, "response": None, "prompt_tokens": None, "completion_tokens": None,
                "duration_s": None, "error": None}
        try:
            completion = self.client.complete(prompt.messages)
        except LLMUnavailable as error:
            call["error"] = error.message
            return {"source": None, "error": error.message, "kind": "llm-error", "llm_call": call}
        call.update(response=self.store.artifacts.put_text(completion.text), prompt_tokens=completion.prompt_tokens,
                    completion_tokens=completion.completion_tokens, duration_s=round(completion.duration_s, 3))
        tokens = (completion.prompt_tokens or 0) + (completion.completion_tokens or 0)
        try:
            source = extract_cuda(completion.text, self.prompts.launcher)
        except NoCodeInReply as error:
            call["error"] = error.message
            return {"source": None, "error": error.message, "kind": "no-code", "llm_call": call, "tokens": tokens}
        return {"source": source, "flags": state.best_flags, "llm_call": call, "tokens": tokens}


class ExternalApplier:
    """Writes the prompt for a person or another agent and pauses the run until a candidate is given."""

    can_repair = True

    def __init__(self, prompts: PromptBuilder, run_dir: Path):
        self.prompts = prompts
        self.store = prompts.store
        self.run_dir = run_dir

    def produce(self, *, skill, params, state, attempt, history, key, run_id, decision=None,
                external_candidate=None, **_) -> dict:
        if external_candidate is not None:
            return {"source": external_candidate, "flags": state.best_flags}
        from skillbase.run.loop import PausedForCandidate
        prompt = self.prompts.build(skill, state, attempt, history, decision)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        path = self.run_dir / f"{key.replace('/', '-')}.prompt.md"
        path.write_text(prompt.text)
        (self.run_dir / "waiting.json").write_text(json.dumps({"key": key, "skill": skill, "prompt": str(path)}))
        self.store.update_run(run_id, status="paused", stop_reason=f"waiting for a candidate for {skill}")
        raise PausedForCandidate(
            f"run_{run_id} is waiting for a candidate applying {skill}; the prompt is in {path}",
            hint=f"write the new kernel to a file, then: skillbase resume run_{run_id} --candidate FILE")
