"""The Python API: every operation of skillbase as a function with a typed result (`to_json()`).

The CLI's commands and the MCP server (`skillbase mcp`) are faces over these functions; a notebook
calls them directly (docs/api.md):

    import skillbase
    advice = skillbase.advise(report="naive_sgemm.h200.ncu-rep.xz", source="naive_sgemm.cu")
    advice.result.candidates[0].skill                 # the top-ranked skill
    skillbase.why_not(advice, "mem.vectorize")        # the rules that could propose it, and their failed leaves
    run = skillbase.Run.start("naive_sgemm.cu", agent="external", gpu=False,
                              saved_report="naive_sgemm.h200.ncu-rep.xz")
    run.pending().prompt_path.read_text()              # what a coder is asked to do
    submission = run.submit(open("my_try.cu").read())  # judged; the verdict and the next prompt

Each function loads what it needs when called (nothing heavy at import: `import skillbase` and the
CLI's start-up stay fast). Bad input raises `skillbase.errors.InputError`, a missing GPU or tool
`EnvironmentProblem`, each with a one-line message and a hint.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillbase.advise import Advice, advise, why_not
from skillbase.datafile.problems import did_you_mean
from skillbase.errors import InputError
from skillbase.run.types import AGENTS, Settings  # small: Run.start's defaults are the CLI's

if TYPE_CHECKING:
    from skillbase.corpus.model import Skill
    from skillbase.corpus.search import SearchResult
    from skillbase.engine import Engine, Rule
    from skillbase.evidence import Evidence
    from skillbase.harness.result import CheckResult
    from skillbase.run.pending import PendingPrompt
    from skillbase.run.report import WrittenReport

__all__ = ["Advice", "ProfileResult", "Run", "RuleExplanation", "SkillCard", "Submission", "advise", "check",
           "make_evidence", "pending", "profile", "rules_explain", "skills_list", "skills_search", "skills_show",
           "why_not"]

Progress = Callable[[str], None]


def _file(path: str | Path, what: str) -> Path:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: no such {what}", "check the path")
    return p


# -- evidence ------------------------------------------------------------------------------------

def make_evidence(report: str | Path | None = None, source: str | Path | None = None, *, kernel: str | None = None,
                  ptxas: str | Path | None = None, details: str | Path | None = None, arch: str | None = None,
                  preset: str | None = None) -> Evidence:
    """The evidence document of a profile (`.ncu-rep`, raw-page CSV or evidence JSON) and/or a kernel
    source (`.cu`: static features and a compile-only ptxas report). `ptxas`: an `nvcc -Xptxas -v`
    log to use instead of compiling; `details`: the `--page details` CSV beside a raw CSV; `arch`: the
    ptxas report's (default: the task spec's beside the source, else the GPU's, else sm_90); `preset`:
    the size preset the profile was taken at, a name in the task spec beside the source, which adds the
    task (`evidence.task`) and its work model at that size (roofline bytes and FLOPs)."""
    from skillbase.evidence import build_evidence
    from skillbase.evidence.build import attach_task, checked_preset

    if report is None and source is None:
        raise InputError("give a report, a source, or both", "evidence(report='K.ncu-rep', source='K.cu')")
    report_path = _file(report, "file") if report is not None else None
    source_path = _file(source, "source file") if source is not None else None
    if report_path is not None and report_path.suffix.lower() in (".cu", ".cuh") and source_path is None:
        report_path, source_path = None, report_path   # a bare source: static features and ptxas only
    if preset is not None:
        if report_path is None or source_path is None:
            raise InputError("a preset names the size a profile was taken at: give the report and the kernel's source",
                             "e.g. `skillbase evidence K.ncu-rep --source K.cu --preset large`")
        checked_preset(source_path, preset)
    ptxas_text = _file(ptxas, "ptxas log").read_text(errors="replace") if ptxas is not None else None
    evidence = build_evidence(report=report_path, source=source_path, ptxas_text=ptxas_text, kernel=kernel, arch=arch,
                              details=_file(details, "details CSV") if details is not None else None)
    return attach_task(evidence, source_path, preset) if preset is not None else evidence


# -- the skill corpus ----------------------------------------------------------------------------

@dataclass
class SkillCard:
    """One skill as `skills show` prints it: its data under the fixed headings, and the rules proposing it."""

    skill: Skill
    proposed_by: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        from skillbase.corpus import show

        return show.to_json(self.skill, self.proposed_by)

    def text(self) -> str:
        from skillbase.corpus import show

        return show.render(self.skill, self.proposed_by)


def skills_list(skills_dirs: Iterable[str | Path] = ()) -> list[Skill]:
    """Every skill of the corpus (built-in plus `skills_dirs` and $SKILLBASE_SKILL_PATH), by id."""
    from skillbase.corpus.load import load_corpus

    corpus = load_corpus(tuple(str(d) for d in skills_dirs), strict=False)
    return [corpus.skills[key] for key in sorted(corpus.skills)]


def skills_show(skill_id: str, skills_dirs: Iterable[str | Path] = ()) -> SkillCard:
    """The skill card of `skill_id` (an InputError with a did-you-mean for an unknown id)."""
    from skillbase.corpus import show
    from skillbase.corpus.load import load_corpus
    from skillbase.engine import Engine

    skill = load_corpus(tuple(str(d) for d in skills_dirs), strict=False).require(skill_id)
    return SkillCard(skill, show.proposed_by(Engine.load(), skill.id))


def skills_search(query: str, k: int = 5, skills_dirs: Iterable[str | Path] = (), *, semantic: bool = True,
                  rebuild: bool = False) -> SearchResult:
    """The `k` skills closest in meaning to `query` (needs the `search` extra; the index is cached and,
    like the model, kept for the rest of the process); `semantic=False`: by words (BM25, no extra)."""
    from skillbase.corpus import search
    from skillbase.corpus.load import load_corpus

    if not query.strip():
        raise InputError("the search query is empty", "say what the kernel suffers from, e.g. 'uncoalesced loads'")
    if semantic:
        search.require_extra()
    corpus = load_corpus(tuple(str(d) for d in skills_dirs), strict=False)
    return search.search(corpus, query, k, semantic=semantic, rebuild=rebuild)


# -- rules ---------------------------------------------------------------------------------------

@dataclass
class RuleExplanation:
    """A rule as `rules show` describes it (its condition, what it proposes or derives, its cases),
    with the meaning of each name it reads and, when evidence was given, its decision on that
    evidence with every leaf."""

    rule: Rule
    engine: Engine
    advice: Advice | None = None

    def to_json(self) -> dict[str, Any]:
        from skillbase.engine.catalogue import rule_detail

        detail = rule_detail(self.rule)     # what `rules show ID` says
        entries = self.engine.vocabulary.entries
        out: dict[str, Any] = {
            **detail,
            # the condition with each node's path and line: a decision's leaves are named by these paths
            "when_tree": _node_json(self.rule.when),
            "meanings": {name: {"meaning": entries[name].meaning, "unit": entries[name].unit,
                                "source": {entries[name].source: entries[name].ref}}
                         for name in detail["reads"] if name in entries},
            "decision": None}
        if self.advice is not None:
            decision = self.advice.result.decision(self.rule.id)
            out["decision"] = None if decision is None else decision.to_json()
            out["evidence_notes"] = list(self.advice.notes)
        return out


def _node_json(node: Any) -> dict[str, Any]:
    if node.op == "leaf":
        return {"path": node.path, "line": node.line, "expression": node.expression.text}
    return {"op": node.op, "path": node.path, "line": node.line, "children": [_node_json(c) for c in node.children]}


def rules_explain(rule_id: str, *, report: str | Path | None = None, evidence: str | Path | Evidence | None = None,
                  source: str | Path | None = None, kernel: str | None = None, thresholds: str | Path | None = None,
                  rules_dirs: list[str | Path] | None = None,
                  extra_rules: Iterable[str | Path] = ()) -> RuleExplanation:
    """Rule `rule_id` as written; with a report / evidence / source, also how it decided on that kernel."""
    from skillbase.engine import Engine

    given = any(x is not None for x in (report, evidence, source))
    if given:
        advice = advise(report, evidence, source, kernel, thresholds=thresholds, rules_dirs=rules_dirs,
                        extra_rules=tuple(extra_rules))
        engine = advice.engine
    else:
        advice, engine = None, Engine.load(list(rules_dirs) if rules_dirs else None, thresholds,
                                           extra_rules=tuple(extra_rules))
    rule = engine.rule(rule_id)
    if rule is None:
        known = [r.id for r in engine.rules]
        raise InputError(f"no rule `{rule_id}`", did_you_mean(rule_id, known, n=3) or "see `skillbase rules test`")
    return RuleExplanation(rule, engine, advice)


# -- the GPU: check and profile ------------------------------------------------------------------

def check(kernel: str | Path, candidate: str | Path | None = None, *, preset: str | None = None, time: bool = True,
          timeout_s: float = 600.0, progress: Progress | None = None) -> CheckResult:
    """Build, statically check, verify and time `kernel` (its `.task.yaml` beside it); with `candidate`,
    verify the candidate against `kernel` and time the two interleaved. Needs a GPU (EnvironmentProblem
    otherwise); the candidate's own failures are the result's `status` and `reason`."""
    from skillbase.harness.runtime import Options, evaluate

    # The harness checks the spec and the preset before the GPU: a bad input is said first.
    task = _file(kernel, "file")
    other = _file(candidate, "candidate") if candidate is not None else None
    return evaluate(task, candidate=other, baseline=task if other is not None else None,
                    options=Options(time=time, preset=preset, timeout_s=timeout_s), progress=progress)


@dataclass
class ProfileResult:
    """A profiled kernel: its ncu report, its evidence (written beside the report) and the advice on it."""

    report: Path
    evidence_path: Path | None
    evidence: Evidence
    advice: Advice

    def to_json(self) -> dict[str, Any]:
        from skillbase.documents import versioned

        return versioned("profile", {
            "report": str(self.report), "evidence_path": str(self.evidence_path) if self.evidence_path else None,
            "focus_kernel": self.evidence.focus_kernel, "advice": advice_json(self.advice, top=5)})


def profile(kernel: str | Path, *, preset: str | None = None, full: bool = False, out: str | Path = ".",
            timeout_s: float = 600.0, progress: Progress | None = None) -> ProfileResult:
    """Profile `kernel` once at a preset with ncu (the rules' metrics, or ncu's full set), write the
    report and its evidence JSON into `out`, and rank the skills for it. Needs a GPU and ncu."""
    from skillbase.profiling import profile_evidence

    task = _file(kernel, "file")
    profiled = profile_evidence(task, preset=preset, full=full, out=out, timeout_s=timeout_s, progress=progress)
    return ProfileResult(Path(profiled.profile.report), profiled.evidence_path, profiled.evidence,
                         advise(evidence=profiled.evidence))


def advice_json(advice: Advice, top: int | None = None, why_not_skill: str | None = None) -> dict[str, Any]:
    """The advice document (what `advise --json` prints): the engine's result with the first `top`
    candidates, `why_not` for one skill when asked, and where the evidence came from."""
    data = advice.result.to_json()
    if top is not None:
        data["candidates"] = data["candidates"][:top]
    if why_not_skill is not None:
        data["why_not"] = why_not(advice, why_not_skill)
    data["evidence_notes"] = list(advice.evidence.notes)
    data["ncu_guided_analysis"] = advice.evidence.guided_analysis()
    return data


# -- runs ----------------------------------------------------------------------------------------

def pending(store: str | Path | None = None, batch: str | int | None = None) -> list[PendingPrompt]:
    """Every run of the store paused for someone else's kernel (`--agent external`), oldest first."""
    from skillbase.run.pending import list_pending

    return list_pending(store, batch)


@dataclass
class Submission:
    """What judging one candidate gave: the verdict of each attempt it added (one; a debugger repair
    that the loop then asked for is the next prompt), the run's summary, and its next prompt if it paused."""

    run: str
    verdicts: list[dict[str, Any]]
    summary: dict[str, Any]
    next: PendingPrompt | None

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run, "verdict": self.verdicts[-1] if self.verdicts else None, "verdicts": self.verdicts,
                "summary": self.summary, "next": prompt_json(self.next)}


def prompt_json(prompt: PendingPrompt | None) -> dict[str, Any] | None:
    """A pending prompt with the prompt's text (an agent may not be able to read the store's folder)."""
    if prompt is None:
        return None
    text = prompt.prompt_path.read_text() if prompt.prompt_path is not None else None
    return {**prompt.to_json(), "prompt_text": text}


@dataclass
class Run:
    """One optimization run in a store: start it, see what it waits for, answer it, explain it.

        run = Run.start("K.cu", agent="external", gpu=False, saved_report="K.ncu-rep", store="runs/")
        run = Run("run_3", store="runs/")               # an existing run
    """

    ref: str
    store: str | Path | None = None
    summary: dict[str, Any] = field(default_factory=dict)   # the last start/submit's summary

    @classmethod
    def start(cls, kernel: str | Path, *, agent: str = "external", rounds: int = 10, repairs: int = 3,
              gpu: bool = True, preset: str | None = None, saved_report: str | Path | None = None,
              model: str | None = None, time_budget_s: float | None = None, token_budget: int | None = None,
              stop_at_floor: float = Settings.stop_at_floor, extra_rules: Iterable[str | Path] = (),
              store: str | Path | None = None, progress: Progress | None = None) -> Run:
        """Start a run of `kernel` (a .cu with its .task.yaml) and advance it until it finishes or, with
        `agent="external"`, pauses for a candidate (`pending()` says what for). `gpu=False`: a
        compile-only run that never accepts; `saved_report` is the first round's evidence.
        `stop_at_floor` (`--stop-at-floor`, a share between 0 and 1; 0: never): once the engine has no
        proposal left, a run whose best kernel runs at this share of its roofline floor or more stops
        instead of asking the coder for a free choice; a share outside 0..1 is an InputError."""
        from skillbase.run.session import start_run

        if agent not in AGENTS:
            raise InputError(f"unknown agent `{agent}`", f"one of {', '.join(AGENTS)}")
        task = _file(kernel, "kernel")
        report = _file(saved_report, "saved report") if saved_report is not None else None
        settings = Settings(rounds=rounds, repairs=repairs, agent=agent, model=model, time_budget_s=time_budget_s,
                            token_budget=token_budget, stop_at_floor=stop_at_floor,
                            extra_rules=tuple(str(Path(p).resolve()) for p in extra_rules))
        summary = start_run(task, settings, store_path=store, preset=preset, gpu=gpu, progress=progress,
                            saved_report=report)
        return cls(summary["run"], store, summary)

    def _open(self):
        """The store for reading (status, attempts, explain, report); submit writes through resume_run."""
        from skillbase.run.store import RunStore

        return RunStore.open(self.store, read_only=True)

    @property
    def status(self) -> str:
        store = self._open()
        try:
            return str(store.shown_status(store.get_run(self.ref)))
        finally:
            store.close()

    def pending(self) -> PendingPrompt | None:
        """The prompt this run waits on (None unless it is paused for a candidate)."""
        from skillbase.run.store import parse_run_ref

        run_id = parse_run_ref(self.ref)
        return next((p for p in pending(self.store) if p.run_id == run_id), None)

    def submit(self, candidate: str, progress: Progress | None = None) -> Submission:
        """Judge `candidate` (the new kernel's source text) as the answer to this run's pending prompt,
        continue the run until it pauses again or finishes, and say what happened. A run that is not
        waiting for a candidate is an InputError."""
        from skillbase.run.session import resume_run
        from skillbase.run.store import parse_run_ref

        if not candidate.strip():
            raise InputError("the candidate is empty", "submit the full source of the new kernel")
        store = self._open()
        try:
            run = store.get_run(self.ref)
            before = {row["id"] for row in store.attempts(run.id)}
        finally:
            store.close()
        summary = resume_run(self.ref, store_path=self.store, candidate=candidate, progress=progress)
        self.summary = summary
        store = self._open()
        try:
            added = [_attempt_json(row) for row in store.attempts(parse_run_ref(self.ref)) if row["id"] not in before]
        finally:
            store.close()
        return Submission(summary["run"], added, summary, self.pending())

    def stop(self, reason: str) -> dict[str, Any]:
        """End this paused or interrupted run by hand (`skillbase stop`): finished with "stopped by hand:
        <reason>", its rounds and best kernel kept; returns its summary. Any other state is an InputError."""
        from skillbase.run.session import stop_run

        self.summary = stop_run(self.ref, reason, self.store)
        return self.summary

    def explain(self, round_idx: int | None = None, fails_only: bool = False) -> dict[str, Any]:
        """Every decision of the run, its evidence and attempts, read from the store alone."""
        from skillbase.run.explain import explain_run

        store = self._open()
        try:
            return explain_run(store, self.ref, round_idx=round_idx, fails_only=fails_only)
        finally:
            store.close()

    def report(self, out_dir: str | Path = ".", force: bool = False) -> WrittenReport:
        """Write the run's Markdown and HTML report into `out_dir` (existing files need `force`)."""
        from skillbase.run.report import write_report

        store = self._open()
        try:
            return write_report(store, self.ref, out_dir, force=force)
        finally:
            store.close()

    def to_json(self) -> dict[str, Any]:
        return {"run": self.ref, "summary": self.summary, "pending": prompt_json(self.pending())}


def _attempt_json(row: Any) -> dict[str, Any]:
    return {"round": row["round_idx"], "attempt": row["attempt_idx"], "skill": row["skill"],
            "params": json.loads(row["params_json"]), "status": row["status"], "reason": row["reason"],
            "runtime_us": row["runtime_us"], "baseline_us": row["baseline_us"], "speedup": row["speedup"]}
