"""`skillbase skills verify`: each skill's example, checked on the GPU the way the loop checks candidates.

For every skill with `examples/before.cu`, `after.cu` and `task.yaml`:
1. the harness verifies `after` against `before` (the reference) on every scored size plus the
   irregular one, and times them interleaved (A B A B) in one worker process;
2. ncu profiles `before` and the engine ranks skills from that evidence (plus `before`'s static
   features and ptxas): the skill should be in the top 3.
The table (skill, before µs, after µs, speedup, verdict, rank, date, GPU) is printed and can be
written as Markdown and JSON, so the figures committed in the repository come with their command.
"""

from __future__ import annotations

import datetime
import json
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from skillbase.config import cache_root
from skillbase.corpus.model import EXAMPLE_FILES, Corpus
from skillbase.errors import InputError, SkillbaseError

if TYPE_CHECKING:
    from skillbase.engine import Engine
    from skillbase.evidence import Evidence

PROFILE_TIMEOUT_S = 240.0


@dataclass
class ExampleResult:
    skill: str
    before_us: float | None
    after_us: float | None
    speedup: float | None
    spread: float | None
    verdict: str              # faster | not-faster | incorrect | failed: <reason>
    rank: int | None          # the skill's rank in advise on `before`'s evidence (None: not proposed)
    top3: list[str]
    reason: str
    date: str
    gpu: str | None


def example_folders(corpus: Corpus, ids: tuple[str, ...] = ()) -> list[tuple[str, Path]]:
    """(skill id, examples folder) of every complete example, or of the skills `ids` names."""
    wanted = set(ids)
    unknown = wanted - corpus.ids()
    if unknown:
        raise InputError(f"unknown skill id(s): {', '.join(sorted(unknown))}",
                         hint="`skillbase skills list` shows them")
    found = []
    for skill in corpus:
        if wanted and skill.id not in wanted:
            continue
        if all((skill.examples_dir / name).exists() for name in EXAMPLE_FILES):
            found.append((skill.id, skill.examples_dir))
    if wanted and not found:
        raise InputError("none of the named skills has a complete example (before.cu, after.cu, task.yaml)")
    return found


def work_dir(skill_id: str) -> Path:
    """A fixed folder per skill, so nvcc's build cache (keyed on the path too) is reused across runs."""
    return cache_root() / "verify" / skill_id


def prebuild(folders: list[tuple[str, Path]], jobs: int, say: Callable[[str], None] = lambda m: None) -> None:
    """Build every staged before/after in parallel first: nvcc dominates, the GPU work is serial."""
    from skillbase.harness.build import build_all
    from skillbase.task import load_task

    paths = [p for skill_id, folder in folders for p in _stage(folder, work_dir(skill_id))]
    requests = []
    for path in paths:
        try:
            spec = load_task(path, check_launcher=False)   # the build the harness makes: its link and arch
        except SkillbaseError:
            continue   # reported with its reason when the example is verified
        requests.append({"cu_path": path, "link": spec.link, "task_arch": spec.arch})
    say(f"building {len(requests)} kernels with {jobs} parallel nvcc jobs")
    build_all(requests, jobs)   # failures are reported with their reason when the example is verified


def _stage(folder: Path, work: Path) -> tuple[Path, Path]:
    """before.cu and after.cu, each with the spec beside it under the name load_task looks for."""
    work.mkdir(parents=True, exist_ok=True)
    for name in ("before", "after"):
        shutil.copyfile(folder / f"{name}.cu", work / f"{name}.cu")
        shutil.copyfile(folder / "task.yaml", work / f"{name}.task.yaml")
    for extra in folder.iterdir():   # hooks or data files the spec refers to
        if extra.suffix in (".py", ".npy", ".json") and not (work / extra.name).exists():
            shutil.copyfile(extra, work / extra.name)
    return work / "before.cu", work / "after.cu"


def verify_example(skill_id: str, folder: Path, engine: Engine | None, preset: str | None = None,
                   profile: bool = True, say: Callable[[str], None] = lambda m: None,
                   keep_profile: Path | None = None) -> ExampleResult:
    """Verify and time one example; with `profile` (the engine given) also rank the skill on before.cu."""
    from skillbase.harness.env import gpu_name
    from skillbase.harness.runtime import Options, evaluate

    date = datetime.date.today().isoformat()
    gpu = gpu_name()
    work = work_dir(skill_id)
    before, after = _stage(folder, work)
    say(f"{skill_id}: verifying after.cu against before.cu and timing both")
    result = evaluate(before, candidate=after, baseline=before, options=Options(preset=preset), progress=say)
    after_us, before_us, speedup, spread, verdicts = result.summary()
    if result.status != "ok":
        verdict, reason = ("incorrect" if result.status == "incorrect" else f"failed: {result.status}"), result.reason
    elif speedup is not None and "faster" in verdicts and "slower" not in verdicts:
        verdict, reason = "faster", f"{speedup:.2f}x ({', '.join(verdicts)})"
    else:
        verdict, reason = "not-faster", f"{(speedup or 0):.2f}x ({', '.join(verdicts) or 'no timing'})"
    rank, top3 = None, []
    if profile:
        from skillbase.profiling import profile_evidence

        say(f"{skill_id}: profiling before.cu")
        try:
            # A bounded profile: one pathological example must not hold the GPU for the whole table.
            profiled = profile_evidence(before, preset=preset, out=work / "profile", progress=say,
                                        timeout_s=PROFILE_TIMEOUT_S)
        except SkillbaseError as error:   # the timing above stands; only the rank is missing
            reason += f"; not ranked: the profile failed ({error.message})"
        else:
            if keep_profile is not None:
                keep_profile.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(profiled.profile.report, keep_profile / f"{skill_id}.before.ncu-rep")
                shutil.copyfile(before, keep_profile / f"{skill_id}.before.cu")
            # Metrics, static features and ptxas: exactly what `skillbase profile` gives advise.
            evidence = profiled.evidence
            evaluation = engine.evaluate(evidence)
            ranked = [c.skill for c in evaluation.candidates]
            rank = ranked.index(skill_id) + 1 if skill_id in ranked else None
            top3 = ranked[:3]
    return ExampleResult(skill=skill_id, before_us=before_us, after_us=after_us, speedup=speedup, spread=spread,
                         verdict=verdict, rank=rank, top3=top3, reason=reason, date=date, gpu=gpu)


def kept_profile_evidence(report: Path, source: Path, task: Path, work: Path, preset: str | None = None) -> Evidence:
    """What `skills verify` ranks an example's skill on, rebuilt from what `--keep-profiles` kept: REPORT
    with SOURCE (before.cu) and the example's TASK spec beside it, staged in WORK (what the task allows is
    evidence, and its arch is the target of before.cu's ptxas facts); without a TASK file, the profile and
    source alone. PRESET: the size REPORT was profiled at, for the task's work model (default: the task's
    first scored preset, where `skills verify` profiles without `--preset`; the kept files do not name it)."""
    from skillbase.evidence import build_evidence
    from skillbase.evidence.build import attach_task
    from skillbase.task.spec import load_task

    if not task.is_file():
        return build_evidence(report=report, source=source)
    staged = work / "before.cu"
    shutil.copyfile(source, staged)
    shutil.copyfile(task, work / "before.task.yaml")
    if preset is None:
        try:
            preset = load_task(staged, check_launcher=False).scored[0]
        except InputError:
            pass        # attach_task says once that the spec was not used
    return attach_task(build_evidence(report=report, source=staged), staged, preset)


def verify_examples(corpus: Corpus, ids: tuple[str, ...], engine: Engine | None, *, preset: str | None = None,
                    jobs: int = 1, keep_profiles: Path | None = None, out: Path | None = None, command: str = "",
                    on_build: Callable[[str], None] = lambda m: None, on_step: Callable[[str], None] = lambda m: None,
                    on_detail: Callable[[str], None] = lambda m: None,
                    on_progress: Callable[[int, int, str], None] = lambda done, total, line: None
                    ) -> list[ExampleResult]:
    """`skills verify`: build every example in parallel, then verify, time and (with an engine)
    rank each one in turn. One broken example does not stop the others; with `out` the table is
    rewritten after every example, so an interrupted session keeps what it measured. `on_step`
    hears one line per example and its verdict, `on_detail` the steps inside it, `on_progress`
    (done, total, verdict line) the count before the first and after each (`ui.progress`'s step)."""
    folders = example_folders(corpus, ids)
    on_progress(0, len(folders), "")
    prebuild(folders, jobs, say=on_build)
    results = []
    for index, (skill_id, folder) in enumerate(folders, 1):
        on_step(f"[{index}/{len(folders)}] {skill_id}")
        try:
            result = verify_example(skill_id, folder, engine, preset=preset, profile=engine is not None,
                                    say=on_detail, keep_profile=keep_profiles)
        except SkillbaseError as error:   # one broken example must not stop the others
            result = ExampleResult(skill=skill_id, before_us=None, after_us=None, speedup=None, spread=None,
                                   verdict="failed: error", rank=None, top3=[], reason=error.message, date="", gpu=None)
        results.append(result)
        on_step(f"  -> {result.verdict}: {result.reason}; rank {result.rank}")
        on_progress(len(results), len(folders), f"{skill_id}: {result.verdict}")
        if out is not None:
            write_results(results, out, command)
    return results


def results_json(results: list[ExampleResult]) -> dict:
    """`skills verify --json`."""
    from skillbase.documents import versioned

    return versioned("skills-verify", {"results": [asdict(r) for r in results]})


def to_markdown(results: list[ExampleResult], command: str) -> str:
    def us(value):
        return f"{value:,.1f}" if value else "—"

    lines = [f"Command: `{command}`", "",
             "| skill | before (µs) | after (µs) | speedup | spread | verdict | rank in advise | top 3 | date | GPU |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r.skill} | {us(r.before_us)} | {us(r.after_us)} | "
                     f"{f'{r.speedup:.2f}x' if r.speedup else '—'} | {f'{100 * r.spread:.1f}%' if r.spread else '—'} | "
                     f"{r.verdict} | {r.rank or '—'} | {', '.join(r.top3)} | {r.date} | {r.gpu or '—'} |")
    faster = sum(r.verdict == "faster" for r in results)
    top3 = sum(1 for r in results if r.rank and r.rank <= 3)
    lines += ["", f"{faster} of {len(results)} examples verified faster; the engine ranked the skill in its top 3 "
                  f"on {top3} of {len(results)}."]
    return "\n".join(lines) + "\n"


def write_results(results: list[ExampleResult], out: Path, command: str) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(to_markdown(results, command))
    out.with_suffix(".json").write_text(json.dumps([asdict(r) for r in results], indent=1) + "\n")
