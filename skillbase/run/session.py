"""Start and resume runs: wire the loop's collaborators, record the manifest, run, summarise.

`start_run()` creates a run, builds its collaborators (the judge, the evidence source, the
engine's decision, the agent mode's applier), records the manifest and executes the loop;
`resume_run()` rebuilds the same collaborators from the run's manifest and continues from the last
finished step. The user's files are never modified: candidates live in the cache, the best kernel
of a run is written to `<store>/runs/run_N/best.cu` (and kept as an artifact).
"""

from __future__ import annotations

import hashlib
import json
import platform
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from skillbase import __version__, ui
from skillbase.agents.appliers import CoderReply, ExternalApplier, LLMApplier, PromptBuilder, Standing, write_waiting
from skillbase.agents.client import ChatClient, default_model, load_config
from skillbase.agents.coder import FREE_CHOICE
from skillbase.corpus.examples import example_for_coder
from skillbase.corpus.load import load_corpus
from skillbase.corpus.model import Corpus
from skillbase.documents import versioned
from skillbase.engine import Engine
from skillbase.errors import EnvironmentProblem, InputError, SkillbaseError
from skillbase.harness import env
from skillbase.harness.runtime import require_gpu
from skillbase.harness.scratch import copy_headers, copy_spec
from skillbase.run.evidence import EvidenceCollector
from skillbase.run.explain import explain_run
from skillbase.run.judges import judge_for
from skillbase.run.loop import Loop, attempt_key, choose
from skillbase.run.mechanical import MechanicalApplier
from skillbase.run.pending import pending_in, run_folder
from skillbase.run.standing import standing_of
from skillbase.run.store import RunRow, RunStore
from skillbase.run.types import (
    Applier,
    Candidate,
    Decide,
    EvidenceRow,
    EvidenceSource,
    Judge,
    LoopState,
    RunStatus,
    Settings,
    Status,
)
from skillbase.task import TaskSpec, load_task


@dataclass(frozen=True)
class Collaborators:
    """What the loop of one run talks to, built from the task, the settings and the machine."""

    engine: Engine
    corpus: Corpus
    judge: Judge
    evidence: EvidenceSource
    decide: Decide
    applier: Applier
    endpoint: str | None = None          # the LLM endpoint's host (`--agent openai`)


def start_run(kernel: Path, settings: Settings, store_path=None, preset: str | None = None, gpu: bool = True,
              progress: Callable[[str], None] | None = None, saved_report: Path | None = None,
              on_created: Callable[[RunStore, int], None] | None = None, task_name: str | None = None) -> dict:
    """A new run of `kernel`, executed until it finishes or pauses; `on_created(store, run_id)` is
    called once the run exists, before any work (a batch records its member there); `task_name` names
    the task in `runs` (default: the kernel's file name)."""
    settings.check()
    store = RunStore.open(store_path)
    spec = _load_task(kernel)
    if preset is not None:
        spec.sizes_for(preset)   # an unknown preset is a one-line error before a run exists, GPU or not
    if gpu:
        _require_gpu()   # before a run exists: a machine without a GPU leaves no failed run behind
    if settings.agent == "openai" and settings.model is None:
        settings = replace(settings, model=default_model())   # recorded: `resume` asks the same model
    run_id = store.create_run(str(kernel.resolve()), task_name or kernel.stem, {})
    if on_created is not None:
        on_created(store, run_id)
    try:
        wired = _collaborators(kernel, spec, settings, store, run_id, preset, gpu, saved_report)
    except BaseException:
        store.update_run(run_id, status=RunStatus.FAILED, stop_reason="could not start (see the error)")
        raise
    run_manifest = manifest(kernel, settings, wired, profile=gpu)
    run_manifest.update(preset=preset, gpu_run=gpu, launcher=spec.launcher,
                        saved_report=str(saved_report.resolve()) if saved_report else None)
    store.set_manifest(run_id, run_manifest)
    return _execute(store, run_id, kernel, settings, wired, None, progress)


def resume_run(ref, store_path=None, candidate: str | None = None,
               progress: Callable[[str], None] | None = None, reply: CoderReply | None = None) -> dict:
    """Continue a run; `candidate` answers a paused one, `reply` says who wrote it (model, wall time,
    reply tokens: an external coder's meta file). Away from the run's GPU, an external run whose next step is
    its round's decision or prompt goes on to that prompt (`decides_away_from_its_gpu`)."""
    store = RunStore.open(store_path)
    run = store.get_run(ref)
    if run.status == RunStatus.FINISHED:
        raise InputError(f"{run.name} already finished ({run.stop_reason})",
                         hint="start a new run with `skillbase optimize`")
    if candidate is not None and run.status != RunStatus.PAUSED:
        raise InputError(f"{run.name} is not waiting for a candidate (status {run.status})",
                         hint="--candidate answers a run paused by --agent external")
    if run.manifest.get("from_reference") and not run.manifest.get("task_digest"):
        return _resume_generator(store, run, candidate, reply, progress)   # still waiting for its first kernel
    same_gpu(run)
    kernel = unchanged_task(run)
    stored = run.manifest.get("settings") or {}
    settings = Settings.from_stored(stored)
    saved = run.manifest.get("saved_report")
    wired = _collaborators(kernel, _load_task(kernel), settings, store, run.id, run.manifest.get("preset"),
                           run.manifest.get("gpu_run", True), Path(saved) if saved else None, reply,
                           elsewhere=_GpuElsewhere(run) if decides_away_from_its_gpu(store, run, candidate) else None)
    # claim() marks it running, under the owner check: setting `running` here first would make a
    # paused run's live starter (a test, an MCP server) look like an owner still driving it.
    store.update_run(run.id, stop_reason=None)
    return _execute(store, run.id, kernel, settings, wired, candidate, progress)


def other_gpu(run: RunRow, here: str | None) -> tuple[str, str] | None:
    """(why, what to do) when `run` was timed on a GPU of another model than `here` (this machine's GPU,
    `env.gpu_name()`): its baseline and best are figures of that GPU, its next verdicts, evidence and roofline
    floor would be this one's, and its speedup a ratio of the two. None when it may go on here (the same model, no
    GPU here: a run then goes on only as far as it needs none, `_GpuElsewhere`; or nothing timed yet)."""
    recorded = run.manifest.get("gpu")
    if run.manifest.get("gpu_run", True) and run.baseline_us is not None and recorded and here and here != recorded:
        return (f"{run.name} was timed on {recorded}, this machine's GPU is {here}: its speedup would divide one "
                "GPU's time by another's", f"resume it on a machine with {recorded}, or start a new run here")
    return None


def same_gpu(run: RunRow) -> None:
    """Refuse to go on with `run` on another GPU model than the one it was timed on (`other_gpu`)."""
    if (refused := other_gpu(run, env.gpu_name())) is not None:
        raise InputError(refused[0], hint=refused[1])


def task_digest(kernel: Path) -> str:
    """The task kernel's digest as a run's manifest records it (`task_digest`)."""
    return hashlib.sha256(kernel.read_bytes()).hexdigest()[:16]


def unchanged_task(run: RunRow) -> Path:
    """The run's task kernel, there and as it was when the run started (its manifest's `task_digest`):
    resuming or re-deciding the run on a changed kernel would mix two kernels in one run."""
    kernel = Path(run.task_path)
    if not kernel.is_file():
        raise InputError(f"{run.name}'s task {kernel} no longer exists", hint="restore it to go on with the run")
    recorded = run.manifest.get("task_digest")
    if recorded and task_digest(kernel) != recorded:
        raise InputError(f"{kernel} changed since {run.name} started; going on would mix two kernels",
                         hint="start a new run with `skillbase optimize`")
    return kernel


def summarise(store: RunStore, run_id: int) -> dict:
    """The run's outcome (also `optimize --json`); writes the best kernel, with its spec, into the run's folder."""
    report = explain_run(store, run_id)
    run = store.get_run(run_id)
    best_path = None
    if run.best_kernel:
        folder = store.location / "runs" / run.name
        folder.mkdir(parents=True, exist_ok=True)
        best_path = folder / "best.cu"
        best_source = store.artifacts.get_text(run.best_kernel)
        best_path.write_text(best_source)
        spec = Path(run.task_path).with_name(Path(run.task_path).stem + ".task.yaml")
        if spec.exists():
            copy_spec(spec, folder / "best.task.yaml")   # with its reference and hooks: best.cu checks as it stands
        copy_headers(best_source, Path(run.task_path), folder)   # and its local headers, when it has any
    rounds = []
    for entry in report["rounds"]:
        accepted = [a for a in entry["attempts"] if a["status"] == Status.ACCEPTED]
        best = min(accepted, key=lambda a: a["runtime_us"]) if accepted else None
        rounds.append({"round": entry["round"], "skill": (entry["decision"] or {}).get("skill"),
                       "outcome": entry["outcome"], "best": f"{best['runtime_us']:.1f} µs" if best else None,
                       "speedup": best["speedup"] if best else None})
    # a paused run waits for a kernel: say which prompt to answer and where the candidate goes
    waiting = next(iter(pending_in(store, run_id=run_id)), None) if run.status == RunStatus.PAUSED else None
    return versioned("run-summary", {
        "run": run.name, "status": run.status, "stop_reason": run.stop_reason, "baseline_us": run.baseline_us,
        "best_us": run.best_us, "speedup": run.speedup, "best_path": str(best_path) if best_path else None,
        "pending": waiting.to_json() if waiting is not None else None, "rounds": rounds})


def generate_from_reference(kernel: Path, settings: Settings, gpu: bool = True,
                            progress: Callable[[str], None] | None = None):
    """`optimize --from-reference --agent openai`: the generator step (skillbase.kernelbench.generator)
    with the run's judge; writes `kernel` (an imported KernelBench task's model.cu) once a try passes.
    (`--agent external` starts a run that waits for it instead: `start_generator_run`.)"""
    from skillbase.kernelbench.generator import generate_first_kernel, require_generator

    require_generator(kernel, settings.agent)
    spec = load_task(kernel, check_launcher=False)
    if gpu:
        _require_gpu()
    complete = None
    if settings.agent == "openai":
        client = ChatClient(load_config(model=settings.model or default_model()))

        def complete(messages: list[dict]) -> tuple[str, int]:
            reply = client.complete(messages)
            return reply.text, (reply.prompt_tokens or 0) + (reply.completion_tokens or 0)

    console = ui.console(stderr=True)
    return generate_first_kernel(kernel, settings.agent, complete, _generator_judge(spec, gpu),
                                 repairs=settings.repairs,
                                 progress=progress or (lambda message: console.print(f"[dim]{message}[/dim]")))


def _generator_judge(spec: TaskSpec, gpu: bool) -> Callable[[Path], Judge]:
    def judge_of(task_kernel: Path) -> Judge:
        return judge_for(task_kernel, spec, gpu)
    return judge_of


GENERATOR_KEY = "g/a{attempt}"     # pending.py reads it: kind generator (a0) or debugger (a1...)


def start_generator_run(kernel: Path, settings: Settings, store_path=None, preset: str | None = None,
                        gpu: bool = True, on_created: Callable[[RunStore, int], None] | None = None) -> dict:
    """`optimize --from-reference --agent external`: a run that waits for its first kernel. The
    generator prompt is its first pending prompt (kind `generator`); `resume` / `resume --all` judge
    the answer, ask the debugger for repairs, and once one passes write `kernel` and start the rounds.
    `on_created(store, run_id)` as for `start_run` (a KernelBench batch records its member there)."""
    from skillbase.kernelbench.generator import generator_prompt, require_generator

    require_generator(kernel, settings.agent)
    spec = load_task(kernel, check_launcher=False)
    prompt = generator_prompt(kernel, spec)        # a task that is not an imported problem fails here
    store = RunStore.open(store_path)
    run_id = store.create_run(str(kernel.resolve()), kernel.parent.name, {})
    if on_created is not None:
        on_created(store, run_id)
    store.set_manifest(run_id, {"from_reference": True, "task_path": str(kernel.resolve()), "agent": settings.agent,
                                "settings": asdict(settings), "preset": preset, "gpu_run": gpu,
                                "launcher": spec.launcher, "skillbase_version": __version__})
    _ask_generator(store, run_id, 0, prompt.text, prompt.template.name)
    return summarise(store, run_id)


def _ask_generator(store: RunStore, run_id: int, attempt: int, text: str, role: str) -> None:
    key = GENERATOR_KEY.format(attempt=attempt)
    path = _generator_prompt_path(store, run_id, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    write_waiting(path.parent, key, "generator", role, path)
    store.update_run(run_id, status=RunStatus.PAUSED,
                     stop_reason=f"waiting for the first kernel ({key}: the {role} prompt is in {path})")


def stop_run(ref, reason: str, store_path=None) -> dict:
    """End a paused or interrupted run by hand (`skillbase stop`), say because no answer can help it (a task
    whose reference cannot tell kernels apart) or its rounds are no longer wanted: it is `finished` with
    "stopped by hand: <reason>", keeps its rounds and best kernel, leaves `pending` and `resume --all`, and
    `resume` refuses it like any finished run. A running run (its process alive) is refused."""
    import time

    reason = " ".join(str(reason).split())
    if not reason:
        raise InputError("a stop needs a reason (it is the run's stop reason, shown by runs and explain)",
                         hint='skillbase stop run_N --reason "why"')
    store = RunStore.open(store_path)
    try:
        run = store.get_run(ref)
        status = store.shown_status(run)
        if status not in (RunStatus.PAUSED, RunStatus.INTERRUPTED):
            raise InputError(f"{run.name} is {status}" + (f" ({run.stop_reason})" if run.stop_reason else "") +
                             ": only a paused or interrupted run can be stopped",
                             hint="a running run stops with Ctrl-C in its terminal" if status == RunStatus.RUNNING
                             else "it has ended already; `skillbase explain` shows how")
        with store.transaction() as tx:
            tx.event(run.id, "stopped", {"reason": reason, "was": str(status)})
        store.update_run(run.id, status=RunStatus.FINISHED, stop_reason=f"stopped by hand: {reason}",
                         finished_at=time.time())
        (run_folder(store, run.id) / "waiting.json").unlink(missing_ok=True)   # nothing waits any more
        return summarise(store, run.id)
    finally:
        store.close()


DETAILS_KEPT = 4000   # the end of a failure's details that the debugger prompt shows (agents.coder.debugger_prompt)


def _generator_prompt_path(store: RunStore, run_id: int, key: str) -> Path:
    return run_folder(store, run_id) / f"{key.replace('/', '-')}.prompt.md"


def _generator_attempt(key: str) -> int:
    return int(key.rsplit("/a", 1)[1])


def _generator_history(store: RunStore, run_id: int, attempt: int) -> list[str]:
    """One line per generator try before `attempt`, as the debugger's prompt lists them."""
    return [f"- try {n + 1}: {store.step_result(run_id, GENERATOR_KEY.format(attempt=n) + '/verdict')['status']}"
            for n in range(attempt)]


def _generator_prompt_again(store: RunStore, run, key: str) -> tuple[str, str]:
    """(text, role) of the generator prompt `key` written again from the task and the store: the generator's
    from the task as at the start, a debugger's from the try before it (its verdict and source). A verdict
    recorded before its details were kept gives its one-line reason in their place."""
    from skillbase.kernelbench.generator import generator_prompt, repair_prompt

    kernel = Path(run.task_path)
    spec = load_task(kernel, check_launcher=False)
    attempt = _generator_attempt(key)
    if attempt == 0:
        return generator_prompt(kernel, spec).text, "generator"
    failed = GENERATOR_KEY.format(attempt=attempt - 1)
    verdict = store.step_result(run.id, f"{failed}/verdict") or {}
    tried = store.step_result(run.id, f"{failed}/candidate") or {}
    source = store.artifacts.get_text(tried["source"]) if tried.get("source") else None
    prompt = repair_prompt(spec, verdict.get("status", "failed"), verdict.get("details") or verdict.get("reason", ""),
                           _generator_history(store, run.id, attempt - 1), source)
    return prompt.text, "debugger"


def _resume_generator(store: RunStore, run, candidate: str | None, reply: CoderReply | None,
                      progress: Callable[[str], None] | None) -> dict:
    """Judge an answer to a run's generator prompt; on a pass write the kernel and start the rounds."""
    from skillbase.kernelbench.generator import PASSING, judge_in_scratch, repair_prompt
    from skillbase.run.pending import waiting_key

    kernel = Path(run.task_path)
    key = waiting_key(store, run.id)
    waiting = _generator_prompt_path(store, run.id, key) if key is not None and key.startswith("g/") else None
    if candidate is None and waiting is not None and not waiting.exists():
        _ask_generator(store, run.id, _generator_attempt(key), *_generator_prompt_again(store, run, key))
        return summarise(store, run.id)   # its prompt is gone (a store rebuilt without prompts): written again
    if candidate is None or waiting is None:
        asked = (f": the {'generator' if key == 'g/a0' else 'debugger'} prompt is in {waiting}" if waiting is not None
                 else " (the generator prompt)")
        raise InputError(f"{run.name} waits for its first kernel{asked}",
                         hint=f"write it to a file, then: skillbase resume {run.name} --candidate FILE")
    if kernel.exists():
        raise InputError(f"{kernel} appeared while {run.name} waited for it; the run would overwrite it",
                         hint="move it away, or optimize it with a new run")
    settings = Settings.from_stored(run.manifest["settings"])
    spec = load_task(kernel, check_launcher=False)
    gpu = run.manifest.get("gpu_run", True)
    if gpu:
        _require_gpu()
    verdict = judge_in_scratch(kernel, candidate, _generator_judge(spec, gpu))
    status = str(getattr(verdict.status, "value", verdict.status))
    digest = store.artifacts.put_text(candidate)
    meta = asdict(reply) if reply is not None else None
    with store.transaction() as tx:
        tx.finish_step(run.id, f"{key}/candidate", {"source": digest, "kind": "generator", "reply": meta})
        # the details as the debugger reads them, so that its prompt can be written again from the store
        tx.finish_step(run.id, f"{key}/verdict", {"status": status, "reason": verdict.reason,
                                                  "details": (getattr(verdict, "details", "") or "")[-DETAILS_KEPT:],
                                                  "memory": dict(getattr(verdict, "memory", {}) or {})})
    attempt = _generator_attempt(key)
    if status in PASSING:
        kernel.write_text(candidate)
        (progress or (lambda m: None))(f"{run.name}: the first kernel passed ({status}); written to {kernel}")
        wired = _collaborators(kernel, _load_task(kernel), settings, store, run.id, run.manifest.get("preset"),
                               gpu, None)
        run_manifest = manifest(kernel, settings, wired, profile=gpu)
        run_manifest.update(preset=run.manifest.get("preset"), gpu_run=gpu, launcher=spec.launcher,
                            saved_report=None, from_reference=True)
        store.set_manifest(run.id, run_manifest)
        store.update_run(run.id, stop_reason=None)
        return _execute(store, run.id, kernel, settings, wired, None, progress)
    history = _generator_history(store, run.id, attempt)
    if attempt >= settings.repairs:
        store.update_run(run.id, status=RunStatus.FAILED,
                         stop_reason=f"the generator's {attempt + 1} tries all failed; the last: {status}: "
                                     f"{verdict.reason}")
        return summarise(store, run.id)
    prompt = repair_prompt(spec, status, getattr(verdict, "details", "") or verdict.reason, history, candidate)
    _ask_generator(store, run.id, attempt + 1, prompt.text, "debugger")
    return summarise(store, run.id)


# -- wiring ---------------------------------------------------------------------------------------

def _load_task(kernel: Path) -> TaskSpec:
    if not kernel.exists():
        raise InputError(f"{kernel}: no such file")
    return load_task(kernel)


def _require_gpu() -> None:
    try:
        require_gpu()
    except EnvironmentProblem as problem:
        raise EnvironmentProblem(problem.message,
                                 hint=f"{problem.hint}; or pass --no-gpu for a compile-only run") from None


def _collaborators(kernel: Path, spec: TaskSpec, settings: Settings, store: RunStore, run_id: int,
                   preset: str | None, gpu: bool, saved_report: Path | None,
                   reply: CoderReply | None = None, elsewhere: _GpuElsewhere | None = None) -> Collaborators:
    """`elsewhere` (a run's GPU not on this machine) stands in for the judge and the evidence source."""
    engine = Engine.load(extra_rules=tuple(settings.extra_rules))
    corpus = load_corpus()
    if gpu and elsewhere is None:
        _require_gpu()
    judge = elsewhere or judge_for(kernel, spec, gpu, preset=preset)
    # The run's own engine names the metrics to profile: a user's --extra-rules may read more.
    evidence = elsewhere or EvidenceCollector(kernel, profile=gpu, arch=spec.arch or "sm_90", preset=preset,
                                              saved_report=saved_report,
                                              metrics=list(engine.required_ncu_metrics()),
                                              past=lambda: store.skill_outcome_stats(exclude_run=run_id))
    mechanical = mechanical_applier(corpus, settings)
    gpu_name = elsewhere.gpu if elsewhere is not None else env.gpu_name() if gpu else None
    standing = run_standing(kernel, spec, preset, gpu_name)
    decide = make_decide(settings.agent, engine, corpus, mechanical, engine_on=settings.engine, standing=standing,
                         stop_at_floor=settings.stop_at_floor)
    if settings.agent == "none":
        return Collaborators(engine, corpus, judge, evidence, decide, mechanical)

    prompts = prompt_builder(kernel, spec, corpus, standing)
    if settings.agent == "openai":
        client = ChatClient(load_config(model=settings.model))
        return Collaborators(engine, corpus, judge, evidence, decide, LLMApplier(client, prompts),
                             endpoint=client.config.endpoint_name)
    return Collaborators(engine, corpus, judge, evidence, decide,
                         ExternalApplier(prompts, store.location / "runs" / f"run_{run_id}", reply))


def decides_away_from_its_gpu(store: RunStore, run: RunRow, candidate: str | None = None) -> bool:
    """Whether `run` goes on here although this machine lacks its GPU: an external run (no candidate to judge)
    whose last round has its evidence recorded and nothing produced yet. Its next steps, the decision (on the
    recorded evidence, held against the floor of the GPU its manifest names) and the prompt, need no GPU, and
    it pauses again before anything is judged (`skillbase resume --more-rounds` records such evidence)."""
    settings = Settings.from_stored(run.manifest.get("settings") or {})
    if candidate is not None or settings.agent != "external" or not run.manifest.get("gpu_run", True) \
            or env.gpu_name() is not None:
        return False
    rounds = store.rounds(run.id)
    if not rounds or rounds[-1]["status"] != "started":
        return False
    idx = rounds[-1]["idx"]
    return (store.step_result(run.id, f"r{idx}/evidence") is not None
            and store.step_result(run.id, f"{attempt_key(idx, 0, 0)}/candidate") is None)


class _GpuElsewhere:
    """The judge and evidence source of a run going on away from its GPU (`decides_away_from_its_gpu`): its
    decision and prompt need neither; anything that does is one line, not a guess."""

    def __init__(self, run: RunRow):
        self.run, self.gpu = run.name, run.manifest.get("gpu")

    def _refuse(self, what: str):
        raise EnvironmentProblem(f"{self.run} needs its GPU ({self.gpu or 'unknown'}) to {what}; this machine has "
                                 "none", hint=f"`skillbase resume {self.run}` on a GPU machine goes on from here")

    def baseline(self, source: str):
        self._refuse("time its baseline")

    def judge(self, source, flags, best_source, best_flags):
        self._refuse("judge a candidate")

    def evidence(self, source, flags, history):
        self._refuse("profile its current kernel")


def recorded_standing(run: RunRow, kernel: Path, spec: TaskSpec) -> Callable[[LoopState], Standing]:
    """`run_standing` of `run` on the GPU its manifest records (none for a compile-only run), wherever this
    machine is: what `redecide` and `resume --more-rounds` decide with and pick runs by."""
    gpu = run.manifest.get("gpu") if run.manifest.get("gpu_run", True) else None
    return run_standing(kernel, spec, run.manifest.get("preset"), gpu)


def run_standing(kernel: Path, spec: TaskSpec, preset: str | None, gpu: str | None) -> Callable[[LoopState], Standing]:
    """Where a run of `kernel` stands on `gpu` (None: a compile-only run) at `preset`: what its prompts show
    and what its decision holds against --stop-at-floor (issue 16). A bench task's folder is its operator."""
    return standing_of(spec, kernel.parent.name, preset, gpu)


def prompt_builder(kernel: Path, spec: TaskSpec, corpus: Corpus,
                   standing: Callable[[LoopState], Standing]) -> PromptBuilder:
    """The coder's and debugger's prompts of a run of `kernel`: the skill cards and verified examples of
    `corpus`, and where the kernel stands (`run_standing`)."""
    def example(skill_id: str, source: str, candidate: Candidate | None) -> str:
        return example_for_coder(corpus, skill_id, source=source,
                                 candidate=candidate.stored() if candidate is not None else None)

    return PromptBuilder(spec.launcher, kernel.stem, corpus.get, example, standing)


def mechanical_applier(corpus: Corpus, settings: Settings) -> MechanicalApplier:
    """The skills' mechanical sweeps and compile flags: `--agent none`'s applier, and what the decision
    asks whether a skill can be applied without a coder."""
    return MechanicalApplier(lambda skill_id: _mechanical_of(corpus, skill_id), settings.sweep_limit)


def _mechanical_of(corpus: Corpus, skill_id: str) -> dict | None:
    skill = corpus.get(skill_id)
    return skill.mechanical if skill is not None else None


def make_decide(agent: str, engine: Engine, corpus: Corpus, mechanical: MechanicalApplier,
                engine_on: bool = True, standing: Callable[[LoopState], Standing] | None = None,
                stop_at_floor: float = 0.0) -> Decide:
    """The engine's ranking -> candidates, each marked applicable or not in this agent mode. With the
    engine off (the ablation) the one candidate is the coder's free choice; the engine's result is
    still recorded, so `explain` shows what it would have chosen. With a coder (external, openai) and a
    profile, the coder's free choice is also the last candidate, taken when the engine's own are all
    tried or inapplicable; except when `standing` (the run's, as its prompts show it) puts the current
    best at `stop_at_floor` of its roofline floor or more (Settings.stop_at_floor; 0: never): then, with
    nothing of the engine's left, the free choice is recorded as not offered and the run stops."""

    def decide(evidence, state: LoopState) -> tuple[list[Candidate], str]:
        result = engine.evaluate(evidence)
        if not engine_on:
            free = _free_choice("engine off: the coder chooses the optimization", state)
            return [free], json.dumps(result.to_json(), sort_keys=True, default=str)
        candidates = []
        for proposed in result.candidates:
            skill = corpus.get(proposed.skill)
            # A skill the engine proposes but the corpus lacks has no card to forbid applying it.
            auto = skill is None or skill.auto_apply
            applicable = auto and (agent != "none" or mechanical.applicable(proposed.skill, state.best_source))
            candidates.append(Candidate(
                skill=proposed.skill, score=proposed.score, time_saved_fraction=proposed.time_saved_fraction,
                rules=tuple(proposed.rules),
                # a constrained skill carries the task's reason first: the coder must honour it
                because=(f"{proposed.constraint} Otherwise: {proposed.because}" if proposed.constraint
                         else proposed.because), applicable=applicable,
                focus=tuple(EvidenceRow(row.name, row.observed, row.threshold) for row in proposed.focus)))
        if agent == "none":
            offer = mechanical.sweep_offer(candidates, state.best_source)
            if offer is not None:
                candidates.append(offer)
        elif evidence.focus() is not None:
            # Last in line, so it is chosen only when every proposal is tried or inapplicable: a profiled
            # run stops at its --rounds budget, not for want of a skill the rules can name (a compile-only
            # run, with no profile, cannot accept anything and still stops) ...
            near = near_floor(standing(state), stop_at_floor) if standing is not None else None
            if near is None:
                candidates.append(_free_choice(
                    "the engine has no further proposal for this kernel: the coder chooses the optimization", state))
            elif choose(candidates, state.tabu, state.best_digest) is None:
                # ... unless the kernel is near its floor: a round would buy little; the loop stops with this
                candidates.append(_free_choice(f"the engine has no proposal left and {near}: stopped", state,
                                               offered=False))
        return candidates, json.dumps(result.to_json(), sort_keys=True, default=str)

    return decide


def _free_choice(because: str, state: LoopState, offered: bool = True) -> Candidate:
    # A new parameter each round: a rejected free choice does not make the next round tabu.
    return Candidate(FREE_CHOICE, 0.0, None, (), because, applicable=offered, params={"round": len(state.tried)})


def near_floor(standing: Standing, stop_at_floor: float) -> str | None:
    """Where the current best stands when it runs at `stop_at_floor` (a share) of its roofline floor or more,
    in words; None when it is further away, the floor or its time is unknown, or `stop_at_floor` is 0."""
    pct, gain = standing.pct_of_floor, standing.max_gain
    if not stop_at_floor or pct is None or gain is None or pct < 100.0 * stop_at_floor:
        return None
    left = f"at most {gain:.2f}x left" if gain > 1.0 else "at or past it"
    return (f"the kernel runs at {pct:.0f} % of its roofline floor ({left}; --stop-at-floor {stop_at_floor:g})")


def manifest(task_path: Path, settings: Settings, wired: Collaborators, profile: bool) -> dict:
    """What a run was made with: versions, digests, settings and the machine (`explain` shows it)."""
    return {
        "skillbase_version": __version__,
        "git": env.git_revision(),
        "task_path": str(task_path.resolve()),
        "task_digest": task_digest(task_path),
        "agent": settings.agent,
        "model": settings.model if settings.agent == "openai" else None,
        "endpoint": wired.endpoint,
        "settings": asdict(settings),
        "rules_digest": wired.engine.rules_digest,
        "vocabulary_digest": wired.engine.vocabulary_digest,
        "thresholds": wired.engine.thresholds_path,
        "corpus_digest": wired.corpus.digest,
        "gpu": env.gpu_name(),
        "driver": env.driver_version(),
        "nvcc": env.nvcc_version(),
        "python": platform.python_version(),
        "profiled": profile,
    }


def _execute(store: RunStore, run_id: int, kernel: Path, settings: Settings, wired: Collaborators,
             candidate: str | None, progress: Callable[[str], None] | None) -> dict:
    console = ui.console(stderr=True)
    report = progress or (lambda message: console.print(f"[dim]run_{run_id}[/dim] {message}"))
    loop = Loop(store, run_id, kernel, settings, wired.judge, wired.evidence, wired.decide, wired.applier,
                progress=report)
    store.claim(run_id)   # `runs` can then tell a run whose process died from one still going
    try:
        loop.run(external_candidate=candidate)
    except KeyboardInterrupt:
        store.update_run(run_id, status=RunStatus.INTERRUPTED,
                         stop_reason="interrupted (Ctrl-C); `skillbase resume` continues")
        raise
    except EnvironmentProblem as problem:
        # The machine, not the run, failed (no GPU, the device's memory taken by others): nothing was judged, so
        # the run is interrupted, and `resume` (also `resume --all`) goes on from its last finished step.
        store.update_run(run_id, status=RunStatus.INTERRUPTED,
                         stop_reason=f"interrupted: {problem.message}; `skillbase resume` continues")
        raise
    except Exception as error:
        # Re-raised to the caller (the CLI reports it); the store records that the run failed, and why when the
        # error is one of ours (a task that cannot judge any kernel, say), so `runs` and reports can say it.
        why = f"stopped: {error.message}" if isinstance(error, SkillbaseError) else "stopped by an error"
        store.update_run(run_id, status=RunStatus.FAILED, stop_reason=f"{why}; `skillbase resume` retries")
        raise
    return summarise(store, run_id)
