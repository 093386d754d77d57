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
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from skillbase.agents.client import ChatClient, LLMUnavailable
from skillbase.agents.coder import (
    FREE_CHOICE,
    UNKNOWN_STANDING,
    NoCodeInReply,
    Prompt,
    coder_prompt,
    debugger_prompt,
    extract_cuda,
    free_coder_prompt,
)
from skillbase.agents.tokens import count_tokens
from skillbase.corpus.model import HEADINGS, Skill
from skillbase.files import write_text_atomically
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
    """Only what the firing rules read (CUDAMaster's filtering): their reasons and focus rows, a quantity once with
    every threshold its leaves compared it against (rules test one quantity in several leaves)."""
    if candidate is None:
        return ""
    thresholds: dict[tuple[str, str], list[str]] = {}
    for row in candidate.focus:
        seen = thresholds.setdefault((row.name, _value(row.observed)), [])
        limit = None if row.threshold is None else _value(row.threshold)
        if limit is not None and limit not in seen:
            seen.append(limit)
    lines = [str(candidate.because)] if candidate.because else []
    for (name, value), limits in thresholds.items():
        said = f" (threshold{'s' if len(limits) > 1 else ''} {', '.join(limits)})" if limits else ""
        lines.append(f"- {name} = {value}{said}")
    return "\n".join(lines)


def _value(value: Any) -> str:
    """A value for a prompt: a float to three significant digits without trailing zeros (0.3137254901960784 -> 0.314,
    0.2 -> 0.2, 33816576.0 -> 33816576)."""
    if not isinstance(value, float):
        return str(value)
    text = _fig(value)
    return text.rstrip("0").rstrip(".") if "." in text else text


def render_diagnosis(proposals: tuple[Candidate, ...], title_of: Callable[[str], str | None]) -> str:
    """The engine's proposals for an open choice, in its order: each skill, its title, the rule's estimate, its
    reason and the focus rows it read (`render_evidence` per proposal)."""
    parts = []
    shown: dict[str, str] = {}   # a body already written -> its skill: two rules can fire on one finding
    for rank, proposal in enumerate(proposals, 1):
        title = title_of(proposal.skill)
        estimate = (f"; the rule's estimate: {proposal.time_saved_fraction:.0%} of the time at stake"
                    if proposal.time_saved_fraction else "")
        head = f"{rank}. `{proposal.skill}`" + (f" ({title})" if title else "") + estimate
        body = render_evidence(proposal)
        if body in shown:
            body = f"The same evidence as `{shown[body]}` above."
        elif body:
            shown[body] = proposal.skill
        parts.append(head + ("\n" + "\n".join(f"   {line}" for line in body.splitlines()) if body else ""))
    return "\n".join(parts)


def render_memory(state: LoopState) -> str:
    return "\n".join(f"- {t.skill}: {t.status}" + (f" ({t.note})" if t.note else "") for t in state.tried)


@dataclass(frozen=True)
class TimedSize:
    """One size a run is timed at: its preset, the size symbols, the task's work model there, and the
    roofline floor it gives (None where the work model or the GPU gives none)."""

    preset: str
    sizes: dict[str, int]
    nbytes: float
    flops: float
    memory_us: float | None              # bytes at the GPU's DRAM bandwidth
    compute_us: float | None             # flops at the GPU's compute peak
    floor_us: float | None               # the roofline floor (the larger of the two)

    @property
    def bound(self) -> str | None:
        """Which side sets the floor: memory or compute."""
        if self.floor_us is None:
            return None
        return "compute" if self.compute_us is not None and self.compute_us == self.floor_us else "memory"


@dataclass(frozen=True)
class Standing:
    """Where the kernel stands: the task's sizes and the run's measured times against the roofline floor.

    Only measurements and the task, never the engine's choice: the engine-on and engine-off prompts
    carry the same section. A figure nobody measured is None, and `render_standing` says unknown."""

    dtype: str                           # the task's array types, e.g. "f32" or "bf16, f32"
    timed: tuple[TimedSize, ...]         # the sizes the run is timed at (its time is their geometric mean)
    checked: tuple[str, ...] = ()        # the presets every candidate is verified at
    irregular: dict[str, int] = field(default_factory=dict)
    gpu: str | None = None
    sm_count: int | None = None          # the GPU's SMs (its datasheet's)
    floor_us: float | None = None        # at the timed size (the geometric mean of their floors when several)
    floor_unknown: str = ""              # why floor_us is None
    baseline_us: float | None = None
    best_us: float | None = None

    @property
    def speedup(self) -> float | None:
        return self.baseline_us / self.best_us if self.baseline_us and self.best_us else None

    @property
    def pct_of_floor(self) -> float | None:
        """floor / time of the current best in percent (100: at the roofline)."""
        return 100.0 * self.floor_us / self.best_us if self.floor_us and self.best_us else None

    @property
    def max_gain(self) -> float | None:
        """How much faster the current best can get before it reaches the floor."""
        return self.best_us / self.floor_us if self.floor_us and self.best_us else None


def render_standing(standing: Standing | None) -> str:
    """The prompt's "Where the kernel stands" section: the same text whether the engine chose or not."""
    if standing is None:
        return UNKNOWN_STANDING
    one = len(standing.timed) == 1
    where = "at that size" if one else "over the timed sizes"
    lines = [f"- GPU: {standing.gpu}" + (f" ({standing.sm_count} SMs)." if standing.sm_count else ".")
             if standing.gpu else "- GPU: none (a compile-only run).", f"- Data type: {standing.dtype}."]
    if one:
        size = standing.timed[0]
        lines.append(f"- Timed at preset {size.preset}: {_symbols(size.sizes)}.")
        lines.append(f"- Work per call at that size (the task's work model): {_work(size)}.")
    else:
        lines.append(f"- Timed at {len(standing.timed)} presets; each time below is the geometric mean over them:")
        for size in standing.timed:
            floor = (f"floor {_fig(size.floor_us)} µs, bound by {size.bound}" if size.floor_us is not None
                     else "floor unknown")
            lines.append(f"  - {size.preset}: {_symbols(size.sizes)}: {_work(size)}; {floor}")
    if standing.checked:
        lines.append(f"- Verified at presets {', '.join(standing.checked)}"
                     + (f" and at {_symbols(standing.irregular)}" if standing.irregular else "") + ".")
    if standing.baseline_us is None:
        lines.append(f"- Time {where}: unknown (this run has not timed a kernel).")
    else:
        best = f"{_fig(standing.best_us)} µs" if standing.best_us is not None else "unknown"
        gain = f": {standing.speedup:.2f}x so far" if standing.speedup is not None else ""
        lines.append(f"- Time {where}: the baseline {_fig(standing.baseline_us)} µs, the current best {best}{gain}.")
    peaks = f"the {standing.gpu}'s datasheet DRAM bandwidth and compute peak"
    if standing.floor_us is None:
        lines.append(f"- Roofline floor {where}: unknown ({standing.floor_unknown or 'not computed'}).")
    elif one:
        size = standing.timed[0]
        # a side the work model leaves out (a KernelBench task's FLOPs, say) bounds nothing: it says so
        sides = ", ".join(f"{name} {_fig(value)} µs" if value is not None else f"{name}: none in the work model"
                          for name, value in (("memory", size.memory_us), ("compute", size.compute_us)))
        lines.append(f"- Roofline floor at that size: {_fig(standing.floor_us)} µs, bound by {size.bound} "
                     f"({sides}; {peaks}).")
    else:
        lines.append(f"- Roofline floor over the timed sizes (the geometric mean of their floors; {peaks}): "
                     f"{_fig(standing.floor_us)} µs.")
    pct, gain = standing.pct_of_floor, standing.max_gain
    if pct is None or gain is None:
        why = (standing.floor_unknown or "not computed") if standing.floor_us is None else "no measured time"
        lines.append(f"- Share of the floor and the gain left: unknown ({why}).")
    elif pct < 100.0:
        lines.append(f"- A kernel at {_fig(pct)} % of its floor, as the current best is, can gain at most "
                     f"{_fig(gain)}x.")
    else:
        lines.append(f"- The current best is at {_fig(pct)} % of its floor: at or past it (data reused from the L2 or "
                     "tensor cores beat the DRAM bandwidth and FP32 peak), so the floor bounds no further gain.")
    return "\n".join(lines)


def _symbols(sizes: dict[str, int]) -> str:
    return ", ".join(f"{name} = {value}" for name, value in sizes.items())


def _work(size: TimedSize) -> str:
    moved = f"{_si(size.nbytes, 'B')} moved" if size.nbytes else "no bytes in the work model"
    flops = _si(size.flops, "FLOP") if size.flops else "no FLOPs in the work model"
    return f"{moved}, {flops}"


def _si(value: float, unit: str) -> str:
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{_fig(value / scale)} {prefix}{unit}"
    return f"{_fig(value)} {unit}"


def _fig(value: float) -> str:
    """Three significant digits, never an exponent (1234.5 -> 1235, 0.00171 -> 0.00171)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    return f"{value:.{max(0, 2 - math.floor(math.log10(abs(value))))}f}"


def _flatten(value: Any) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{k}: {v}" for k, v in value.items())
    return str(value).strip()


class PromptBuilder:
    """The coder prompt for a first try, the debugger prompt for a repair."""

    def __init__(self, launcher: str, kernel_name: str, skill_lookup: Callable[[str], Skill | None],
                 example_lookup: Callable[[str, str, Candidate | None], str],
                 standing: Callable[[LoopState], Standing] | None = None):
        self.launcher = launcher
        self.kernel_name = kernel_name
        self.skill_lookup = skill_lookup          # id -> the skill, or None
        self.example_lookup = example_lookup      # (id, current kernel, candidate) -> verified example text or ""
        self.standing = standing                  # the run's state -> where its kernel stands (None: unknown)

    def build(self, request: ApplyRequest, state: LoopState) -> Prompt:
        standing = render_standing(self.standing(state) if self.standing is not None else None)
        first = request.attempt == 0 or not request.history
        if first and request.skill == FREE_CHOICE:
            # the coder's own choice: engine off, or engine on with every proposal tried on this kernel, where the
            # profile's evidence stays in the prompt as the diagnosis (coder_open)
            diagnosis = render_diagnosis(request.diagnosis, self._title) if request.diagnosis else ""
            return free_coder_prompt(launcher=self.launcher, memory=render_memory(state), standing=standing,
                                     diagnosis=diagnosis, kernel_name=self.kernel_name, kernel=state.best_source)
        if first:
            skill = self.skill_lookup(request.skill)
            return coder_prompt(launcher=self.launcher, skill_id=request.skill,
                                skill_title=skill.title if skill is not None else request.skill,
                                skill_card=render_card(skill), evidence=render_evidence(request.candidate),
                                memory=render_memory(state), standing=standing,
                                example=self.example_lookup(request.skill, state.best_source, request.candidate),
                                kernel_name=self.kernel_name, kernel=state.best_source)
        last = request.history[-1]
        earlier = "\n".join(f"- try {h.attempt + 1}: {h.status}: {h.reason}" for h in request.history[:-1])
        skill_id = "the optimization this kernel applies" if request.skill == FREE_CHOICE else request.skill
        return debugger_prompt(launcher=self.launcher, skill_id=skill_id, failure_kind=last.status,
                               error=(last.details or last.reason), history=earlier,
                               kernel=last.source if last.source is not None else state.best_source)

    def _title(self, skill_id: str) -> str | None:
        skill = self.skill_lookup(skill_id)
        return skill.title if skill is not None else None


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


def write_waiting(run_dir: Path, key: str, skill: str, kind: str, prompt: Path, template: str | None = None) -> Path:
    """The run's `waiting.json`: which request (step `key`, `skill`, the prompt's role `kind`) waits for
    a candidate, the prompt file answering it and its template (none for a generator prompt). Written
    whole or not at all (a reader, `pending`, never sees half of it). `skillbase.run.pending` reads it."""
    document = {"key": key, "skill": skill, "kind": kind, "prompt": str(prompt)}
    if template is not None:
        document["template"] = template
    path = run_dir / "waiting.json"
    write_text_atomically(path, json.dumps(document))
    return path


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
            if path.exists():
                return self._answered(request, prompt, path.read_text(), self.shown_template(request, prompt), state)
            return self._answered(request, prompt, prompt.text, prompt.template.name, state)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(prompt.text)
        write_waiting(self.run_dir, request.key, request.skill, prompt.role, path, prompt.template.name)
        raise Paused(request.skill, path)

    def shown_template(self, request: ApplyRequest, prompt: Prompt) -> str:
        """The template of the prompt file the coder answered: the one `waiting.json` names (a prompt
        written before it named one was v1 of its role), so a run paused across a template change
        records the version its coder saw."""
        try:
            waiting = json.loads((self.run_dir / "waiting.json").read_text())
        except (OSError, ValueError):
            return prompt.template.name
        if not isinstance(waiting, dict) or waiting.get("key") != request.key:
            return prompt.template.name
        named = waiting.get("template")
        return named if isinstance(named, str) else f"{prompt.template.role}.v1"

    def _answered(self, request: ApplyRequest, prompt: Prompt, shown: str, shown_version: str,
                  state: LoopState) -> Produced:
        reply = self.reply or CoderReply()
        self.reply = None                       # it describes this one candidate only
        prompt_tokens = count_tokens(shown)
        call = LLMCall(role=prompt.role, model=reply.model or "(not named)", endpoint_name="external",
                       prompt_version=shown_version, prompt=shown, response=request.external_source,
                       prompt_tokens=prompt_tokens, completion_tokens=reply.reply_tokens, duration_s=reply.wall_s)
        return Produced(source=request.external_source, flags=state.best_flags,
                        tokens=prompt_tokens + (reply.reply_tokens or 0), llm_call=call)
