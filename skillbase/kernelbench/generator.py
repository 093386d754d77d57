"""The generator step (`optimize --from-reference`): the first `.cu` of an imported KernelBench task.

KernelSkill's generator writes a first CUDA version of the PyTorch model before any optimization.
Here the coder (an LLM over the openai client) gets the versioned `generator` prompt: the launcher
signature the spec names, every argument's shape and meaning, the sizes and the model's source. The
harness judges its answer like any candidate (on a GPU: verified against the PyTorch reference; with
--no-gpu: built and statically checked only), the debugger repairs a failure up to `repairs` times,
and the first kernel that passes is written as the task's `model.cu`; the skill rounds then start
from it. With `--agent external` a run waits for it: its generator prompt is pending like any other
(skillbase.run.session.start_generator_run).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from skillbase.agents.coder import NoCodeInReply, Prompt, debugger_prompt, extract_cuda
from skillbase.agents.prompts import load_prompt
from skillbase.errors import InputError
from skillbase.task import TaskSpec, load_task
from skillbase.task.dtypes import DTYPES

__all__ = ["GENERATOR", "GeneratorOutcome", "PASSING", "generate_first_kernel", "generator_prompt",
           "judge_in_scratch", "launcher_signature", "repair_prompt", "require_generator"]

GENERATOR = "generator"
PASSING = {"accepted", "unverified"}
SYSTEM = "You are a careful CUDA engineer. You answer with code, not questions."


def require_generator(kernel: Path, agent: str) -> None:
    """The generator step needs a coder and must not overwrite a kernel that exists."""
    if agent == "none":
        raise InputError("--from-reference needs a coder to write the first kernel; --agent none has none",
                         hint="use --agent openai (an OpenAI-compatible endpoint) or --agent external")
    if Path(kernel).exists():
        raise InputError(f"{kernel} exists; --from-reference writes the first version of the kernel",
                         hint=f"optimize it as it is: skillbase optimize {kernel} (without --from-reference)")


def launcher_signature(spec: TaskSpec) -> str:
    """`extern "C" void kb_forward(const float* x, ..., float* out, int batch_size, ...)` from the spec."""
    params = []
    for a in spec.args:
        if a.pointer:
            params.append(f"{'const ' if a.role == 'in' else ''}{DTYPES[a.dtype].c_types[0]}* {a.name}")
        else:
            params.append(f"{DTYPES[a.dtype].c_types[0]} {a.name}")
    return f'extern "C" void {spec.launcher}({", ".join(params)})'


def _facts(task_dir: Path) -> dict:
    path = task_dir / "problem.json"
    if not path.is_file():
        raise InputError(f"{task_dir}: no problem.json: --from-reference starts from a KernelBench task",
                         hint="import the problem first: skillbase kernelbench import PATH --out DIR")
    return json.loads(path.read_text())


def generator_prompt(kernel: Path, spec: TaskSpec | None = None) -> Prompt:
    """The generator prompt of the task whose kernel will be `kernel` (model.cu of an imported task)."""
    spec = spec or load_task(kernel, check_launcher=False)
    task_dir = kernel.parent
    facts = _facts(task_dir)
    params = dict(facts.get("params", []))
    scalars = facts.get("scalars", {})
    rows = []
    for a in spec.args:
        if a.name in scalars and not a.pointer:
            kind = scalars[a.name]["type"]
            value = f"{a.value.text} ({kind} {bool(int(a.value.text))})" if kind == "bool" else a.value.text
            rows.append(f"- `{a.name}`: {a.dtype} scalar `{DTYPES[a.dtype].c_types[0]} {a.name}` = {value}, passed by "
                        f"value (not a pointer): the Python {kind} forward() receives as this input")
            continue
        if not a.pointer:
            continue
        shape = "[" + ", ".join(e.text for e in a.shape) + "]"
        meaning = ("the model's output" if a.role == "out" else
                   f"the model's parameter or buffer `{params[a.name]}`" if a.name in params else
                   "an input of forward()")
        rows.append(f"- `{a.name}`: {a.dtype} {shape}, {meaning}")
    sizes = ", ".join(f"{k} = {v}" for k, v in spec.presets[spec.scored[0]].items())
    irregular = ", ".join(f"{k} = {v}" for k, v in spec.irregular.items())
    rtol, atol_scale = spec.tolerance_for(spec.outputs[0])
    template = load_prompt(GENERATOR)
    model = (task_dir / "kb_task.py").read_text().split("# ---- skillbase adapter")[0].rstrip()
    user = template.render(signature=launcher_signature(spec), arguments="\n".join(rows),
                           sizes=f"scored: {sizes}; also verified at: {irregular}",
                           tolerance=f"rtol {rtol:g} plus {atol_scale:g} x max|reference|",
                           problem=facts.get("problem", task_dir.name), model=model)
    return Prompt(template, [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}])


@dataclass
class GeneratorOutcome:
    """The tries of the generator step: the kernel (written once a try passed) and each try's verdict."""
    kernel: Path
    written: bool
    tries: list[dict] = field(default_factory=list)   # {"attempt", "status", "reason", "tokens"}

    def to_json(self) -> dict:
        return {"kernel": str(self.kernel), "written": self.written, "tries": self.tries}


def generate_first_kernel(kernel: Path, agent: str, complete: Callable[[list[dict]], tuple[str, int]] | None,
                          judge_for: Callable[[Path], object], repairs: int = 3,
                          progress: Callable[[str], None] = lambda message: None) -> GeneratorOutcome:
    """Ask for, judge and repair the first kernel of an imported task; write it as `kernel` once it passes.

    `complete(messages) -> (reply text, tokens)` is the LLM (agent openai); `judge_for(task_kernel)`
    the run's judge for a task whose kernel is `task_kernel` (verify on a GPU, compile-only without):
    each try is judged in a scratch copy of the task folder, since the task's own kernel does not
    exist yet. A kernel that never passes is not written: the error names the last failure."""
    kernel = Path(kernel)
    require_generator(kernel, agent)
    if complete is None:
        raise InputError(f"--agent {agent} answers the generator prompt through a paused run",
                         hint="skillbase optimize KERNEL --from-reference --agent external")
    spec = load_task(kernel, check_launcher=False)
    prompt = generator_prompt(kernel, spec)
    outcome = GeneratorOutcome(kernel, written=False)
    history: list[str] = []
    source = None
    for attempt in range(repairs + 1):
        progress(f"generator: try {attempt + 1} of {repairs + 1}")
        reply, tokens = complete(prompt.messages)
        try:
            source = extract_cuda(reply, spec.launcher)
        except NoCodeInReply as error:
            verdict_status, verdict_reason, details = "no-code", error.message, error.message
        else:
            verdict = judge_in_scratch(kernel, source, judge_for)
            verdict_status, verdict_reason = str(getattr(verdict.status, "value", verdict.status)), verdict.reason
            details = getattr(verdict, "details", "") or verdict_reason
        outcome.tries.append({"attempt": attempt, "status": verdict_status, "reason": verdict_reason,
                              "tokens": tokens})
        if verdict_status in PASSING:
            kernel.write_text(source)
            outcome.written = True
            return outcome
        prompt = repair_prompt(spec, verdict_status, details, history, source)
        history.append(f"- try {attempt + 1}: {verdict_status}: {verdict_reason}")
    last = outcome.tries[-1]
    raise InputError(f"the generator's {len(outcome.tries)} tries all failed; the last: {last['status']}: "
                     f"{last['reason']}", hint="more repairs (--repairs) or another model (--model)")


def repair_prompt(spec: TaskSpec, status: str, details: str, history: list[str], source: str | None) -> Prompt:
    """The debugger's prompt for a generator try that failed (`history`: one line per earlier try)."""
    return debugger_prompt(launcher=spec.launcher, skill_id="the first CUDA version of the model",
                           failure_kind=status, error=details, history="\n".join(history),
                           kernel=source or "(no code in the reply)")


def judge_in_scratch(kernel: Path, source: str, judge_for: Callable[[Path], object]):
    """The judge's verdict on `source` as the kernel of a scratch copy of the task (spec, adapter)."""
    with tempfile.TemporaryDirectory(prefix="skillbase-generator-") as scratch:
        for name in (f"{kernel.stem}.task.yaml", "kb_task.py", "problem.json"):
            shutil.copyfile(kernel.parent / name, Path(scratch) / name)
        task_kernel = Path(scratch) / kernel.name
        task_kernel.write_text(source)
        return judge_for(task_kernel).baseline(source)
