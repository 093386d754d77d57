"""Start and resume runs: build the loop's collaborators, show progress, summarise the outcome.

The user's files are never modified: candidates live in the cache, the best kernel of a run is
written to `<store>/runs/run_N/best.cu` (and kept as an artifact).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from skillbase import ui

from skillbase.errors import EnvironmentProblem, InputError
from skillbase.run.loop import Loop, MechanicalApplier, PausedForCandidate, Settings
from skillbase.run.evidence import EvidenceCollector
from skillbase.run.judges import CompileOnlyJudge, HarnessJudge, make_decide, manifest
from skillbase.run.store import RunStore


def _load_task(kernel: Path):
    from skillbase.task import load_task

    if not kernel.exists():
        raise InputError(f"{kernel}: no such file")
    return load_task(kernel)


def _collaborators(kernel: Path, spec, settings: Settings, store: RunStore, run_id: int, preset: str | None,
                   gpu: bool, saved_report: Path | None = None):
    from skillbase.engine import Engine

    engine = Engine.load(extra_rules=tuple(settings.extra_rules))
    corpus = _load_corpus()
    allow = tuple(getattr(spec, "allow", ()) or ())
    if gpu:
        _require_gpu()
        judge = HarnessJudge(kernel, preset=preset)
        evidence = EvidenceCollector(kernel, profile=True, preset=preset, saved_report=saved_report)
    else:
        judge = CompileOnlyJudge(kernel, allow=allow, hooks=tuple(getattr(spec, "hook_names", ()) or ()),
                                 link=tuple(getattr(spec, "link", ()) or ()))
        evidence = EvidenceCollector(kernel, profile=False, saved_report=saved_report)
    mechanical_applier = MechanicalApplier(lambda skill_id: (_skill_dict(corpus, skill_id) or {})
                                           .get("automation", {}).get("mechanical"), settings.sweep_limit)
    decide = make_decide(settings.agent, engine, corpus, mechanical_applier)
    appliers = {"none": mechanical_applier}
    kernel_name = kernel.stem
    if settings.agent in ("openai", "external"):
        from skillbase.agents.appliers import ExternalApplier, LLMApplier, PromptBuilder

        from skillbase.corpus.search import example_for_coder

        prompts = PromptBuilder(store, spec.launcher, kernel_name, lambda skill_id: _skill_dict(corpus, skill_id),
                                lambda skill_id, source=None, candidate=None:
                                example_for_coder(corpus, skill_id, source=source, candidate=candidate))
        if settings.agent == "openai":
            from skillbase.agents.client import ChatClient, load_config

            appliers["openai"] = LLMApplier(ChatClient(load_config(model=settings.model)), prompts)
        else:
            appliers["external"] = ExternalApplier(prompts, store.location / "runs" / f"run_{run_id}")
    return engine, corpus, judge, evidence, decide, appliers


def _load_corpus():
    try:
        from skillbase.corpus.load import load_corpus
    except ImportError:
        return None
    return load_corpus()


def _skill_dict(corpus, skill_id: str) -> dict | None:
    if corpus is None:
        return None
    skill = corpus.get(skill_id)
    if skill is None:
        return None
    return skill if isinstance(skill, dict) else getattr(skill, "data", None)


def _corpus_digest(corpus) -> str | None:
    if corpus is None:
        return None
    return getattr(corpus, "digest", None)


def _require_gpu() -> None:
    from skillbase.harness.runtime import require_gpu

    try:
        require_gpu()
    except EnvironmentProblem as problem:
        raise EnvironmentProblem(problem.message,
                                 hint=f"{problem.hint}; or pass --no-gpu for a compile-only run") from None


def start_run(kernel: Path, settings: Settings, store_path=None, preset: str | None = None, gpu: bool = True,
              progress=None, saved_report: Path | None = None) -> dict:
    store = RunStore.open(store_path)
    spec = _load_task(kernel)
    if gpu:
        _require_gpu()   # before a run exists: a machine without a GPU leaves no failed run behind
    run_id = store.create_run(str(kernel.resolve()), kernel.stem, {})
    try:
        engine, corpus, judge, evidence, decide, appliers = _collaborators(kernel, spec, settings, store, run_id,
                                                                           preset, gpu, saved_report)
    except BaseException:
        store.update_run(run_id, status="failed", stop_reason="could not start (see the error)")
        raise
    endpoint = appliers["openai"].client.config.endpoint_name if "openai" in appliers else None
    run_manifest = manifest(kernel, settings, engine, _corpus_digest(corpus), endpoint, profile=gpu)
    run_manifest.update(preset=preset, gpu_run=gpu, launcher=spec.launcher,
                        saved_report=str(saved_report.resolve()) if saved_report else None)
    with store.transaction() as tx:
        tx.execute("UPDATE runs SET manifest_json=? WHERE id=?", (_dumps(run_manifest), run_id))
    return _execute(store, run_id, kernel, settings, judge, evidence, decide, appliers, spec.launcher, None, progress)


def resume_run(ref, store_path=None, candidate: str | None = None, progress=None) -> dict:
    store = RunStore.open(store_path)
    run = store.get_run(ref)
    if run.status == "finished":
        raise InputError(f"{run.name} already finished ({run.stop_reason})",
                         hint="start a new run with `skillbase optimize`")
    if candidate is not None and run.status != "paused":
        raise InputError(f"{run.name} is not waiting for a candidate (status {run.status})",
                         hint="--candidate answers a run paused by --agent external")
    kernel = Path(run.task_path)
    if not kernel.exists():
        raise InputError(f"{run.name}'s task {kernel} no longer exists", hint="restore it to resume the run")
    current = hashlib.sha256(kernel.read_bytes()).hexdigest()[:16]
    if run.manifest.get("task_digest") and current != run.manifest["task_digest"]:
        raise InputError(f"{kernel} changed since {run.name} started; resuming would mix two kernels",
                         hint="start a new run with `skillbase optimize`")
    s = run.manifest.get("settings") or {}
    settings = Settings(**{k: v for k, v in s.items() if k in Settings.__dataclass_fields__})
    saved = run.manifest.get("saved_report")
    _, _, judge, evidence, decide, appliers = _collaborators(kernel, _load_task(kernel), settings, store, run.id,
                                                                run.manifest.get("preset"),
                                                                run.manifest.get("gpu_run", True),
                                                                Path(saved) if saved else None)
    store.update_run(run.id, status="running", stop_reason=None)
    return _execute(store, run.id, kernel, settings, judge, evidence, decide, appliers,
                    run.manifest.get("launcher"), candidate, progress)


def _execute(store, run_id, kernel, settings, judge, evidence, decide, appliers, launcher, candidate, progress):
    console = ui.console(stderr=True)
    report = progress or (lambda message: console.print(f"[dim]run_{run_id}[/dim] {message}"))
    loop = Loop(store, run_id, kernel, launcher, settings, judge, evidence, decide, appliers, progress=report)
    store.claim(run_id)   # `runs` can then tell a run whose process died from one still going
    try:
        loop.run(external_candidate=candidate)
    except PausedForCandidate as pause:
        report(pause.message)
        report(f"hint: {pause.hint}")
    except KeyboardInterrupt:
        store.update_run(run_id, status="interrupted", stop_reason="interrupted (Ctrl-C); `skillbase resume` continues")
        raise
    except Exception:
        store.update_run(run_id, status="failed", stop_reason="stopped by an error; `skillbase resume` retries")
        raise
    return summarise(store, run_id)


def summarise(store: RunStore, run_id: int) -> dict:
    from skillbase.run.explain import explain_run

    report = explain_run(store, run_id)
    run = store.get_run(run_id)
    best_path = None
    if run.best_kernel:
        folder = store.location / "runs" / run.name
        folder.mkdir(parents=True, exist_ok=True)
        best_path = folder / "best.cu"
        best_path.write_text(store.artifacts.get_text(run.best_kernel))
        spec = Path(run.task_path).with_name(Path(run.task_path).stem + ".task.yaml")
        if spec.exists():
            from skillbase.harness.compare import copy_spec

            copy_spec(spec, folder / "best.task.yaml")   # with its reference and hooks: best.cu checks as it stands
    rounds = []
    for entry in report["rounds"]:
        accepted = [a for a in entry["attempts"] if a["status"] == "accepted"]
        best = min(accepted, key=lambda a: a["runtime_us"]) if accepted else None
        rounds.append({"round": entry["round"], "skill": (entry["decision"] or {}).get("skill"),
                       "outcome": entry["outcome"], "best": f"{best['runtime_us']:.1f} µs" if best else None,
                       "speedup": best["speedup"] if best else None})
    return {"run": run.name, "status": run.status, "stop_reason": run.stop_reason, "baseline_us": run.baseline_us,
            "best_us": run.best_us, "speedup": run.speedup, "best_path": str(best_path) if best_path else None,
            "rounds": rounds}


def _dumps(value) -> str:
    import json

    return json.dumps(value, sort_keys=True, default=str)
