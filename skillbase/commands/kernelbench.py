"""`skillbase kernelbench`: KernelBench problems as skillbase tasks (docs/kernelbench.md)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import click

from skillbase.commands.options import (
    batch_start_options,
    comma_list,
    executor_options,
    json_option,
    refuse_gpus_on_ray,
    stop_at_floor_option,
    store_option,
    workers_per_gpu_option,
)
from skillbase.run.types import MAX_ROUNDS


@click.group("kernelbench")
def kernelbench() -> None:
    """KernelBench problems (a Model, get_inputs, get_init_inputs) as skillbase tasks."""


@kernelbench.command("import")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--level", type=int, default=None, help="Only the problems of levelN/ (a checkout's folder).")
@click.option("--problems", "problems", multiple=True,
              help="Only these problems, by number (1) or file name (1_Square_matrix_multiplication_); repeatable.")
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), default=Path("kernelbench_tasks"),
              show_default=True, help="Where the task folders are written (one per problem).")
@click.option("--timeout", "timeout_s", type=float, default=120.0, show_default=True,
              help="Seconds one problem file may take to probe (it runs in its own process).")
@click.option("--force", is_flag=True, help="Replace task folders of an earlier import (model.cu included).")
@click.option("--refresh", is_flag=True,
              help="Bring task folders of an earlier import up to date: their adapter (kb_task.py, problem.json) is "
                   "rewritten when their specs would not change; model.cu and the specs are kept. Not with --force.")
@json_option
def import_(path: Path, level: int | None, problems: tuple[str, ...], out: Path, timeout_s: float, force: bool,
            refresh: bool, as_json: bool) -> None:
    """Write one task per KernelBench problem under PATH (a checkout or a folder; nothing is copied here).

    Each problem is run on the CPU in its own process to read its shapes, dtypes and operators; a
    problem that does not import, draws random numbers in its forward pass, returns a tuple or has a
    dynamic shape is listed with its reason, and the others import.

    With --refresh a problem whose folder exists is probed again: its folder is refreshed (new adapter
    files), unchanged (already current) or refused (its specs would change: import with --force into
    a new folder); a problem without a folder imports as usual.
    """
    from skillbase import ui
    from skillbase.kernelbench.importer import STATUSES, import_problems

    with ui.progress("probing KernelBench problems") as bar:
        report = import_problems(path, out, level=level, problems=problems, force=force, timeout_s=timeout_s,
                                 progress=bar.note, refresh=refresh)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=1))
        return
    for p in report.problems:
        if p.status == "imported":
            work = "" if p.work_model else "  (no flops model: memory-bound floor only)"
            scalars = "".join(f"  scalar {n} = {a['value']!r} ({a['dtype']})" for n, a in p.scalars.items())
            click.echo(f"imported  {p.problem} -> {p.task_dir}  sizes {', '.join(p.symbols)}{scalars}{work}")
        elif p.status == "refreshed":
            click.echo(f"refreshed {p.problem} -> {p.task_dir}  (adapter files rewritten; specs and model.cu kept)")
        elif p.status == "unchanged":
            click.echo(f"unchanged {p.problem} -> {p.task_dir}  (already current)")
        else:
            click.echo(f"{p.status:<9} {p.problem}: {p.reason}")
    counts = Counter(p.status for p in report.problems)
    shown = [s for s in STATUSES if refresh or s in ("imported", "skipped")]   # --refresh's three only with it
    click.echo(f"{', '.join(f'{counts[s]} {s}' for s in shown)}; tasks in {report.out}")


@kernelbench.command("score")
@click.argument("tasks", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--kernel", "kernel_name", default="model.cu", show_default=True,
              help="The kernel file to score in each task folder (e.g. a run's best.cu copied there).")
@click.option("--no-compile", is_flag=True, help="Skip torch.compile (PyTorch eager only).")
@json_option
def score(tasks: tuple[Path, ...], kernel_name: str, no_compile: bool, as_json: bool) -> None:
    """Time each imported task's kernel and PyTorch eager / torch.compile with the harness; KernelBench's
    scores by level (speedup over eager, fast_p, geomean). Needs a GPU."""
    from skillbase import ui
    from skillbase.kernelbench.scoring import score_tasks

    with ui.progress("timing KernelBench tasks") as bar:
        report = score_tasks(list(tasks), kernel_name=kernel_name, compile=not no_compile, progress=bar.note)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=1))
        return
    document = report.to_json()

    def us(value):
        return f"{value:.1f}" if value is not None else "-"

    for p in document["problems"]:
        speedup = f"{p['speedup_vs_eager']:.2f}x" if p["speedup_vs_eager"] else "-"
        tail = f"  ({p['reason']})" if p["reason"] else ""
        click.echo(f"{p['problem']}: kernel {us(p['kernel_us'])} µs, eager {us(p['eager_us'])} µs, "
                   f"compile {us(p['compile_us'])} µs, {speedup} over eager{tail}")
    for level in document["levels"]:
        fast = ", ".join(f"{k} {v:.0%}" for k, v in level["fast_p"].items())
        geo = level["geomean_speedup_vs_eager"]
        click.echo(f"level {level['level']}: {level['verified']}/{level['problems']} verified; {fast}; geomean "
                   f"{f'{geo:.2f}x' if geo else '-'} over eager ({level['geomean_over']} problems)")


@kernelbench.command("optimize")
@click.argument("tasks_dir", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--agent", type=click.Choice(["external", "openai"]), required=True,
              help="Who writes each first kernel and applies the skills: external (a coder answers each prompt; "
                   "`pending`, `resume --all`) or openai (the configured endpoint).")
@click.option("--problems", "problems", multiple=True,
              help="Only these tasks: folder (level1_2_ReLU), problem (level1/2_ReLU.py) or level1/2; repeatable.")
@click.option("--rounds", type=click.IntRange(1, MAX_ROUNDS), default=3, show_default=True,
              help="Skill rounds per run after its first kernel.")
@click.option("--repairs", type=click.IntRange(0, 10), default=3, show_default=True,
              help="At most this many debugger repairs per attempt (the first kernel's included).")
@click.option("--model", default=None, help="Model name for --agent openai.")
@click.option("--no-gpu", is_flag=True, help="Compile-only runs (nothing verified or timed, no PyTorch baselines).")
@click.option("--no-compile", is_flag=True,
              help="Time PyTorch eager only (`kernelbench baselines` adds torch.compile later).")
@click.option("--defer-baselines", is_flag=True,
              help="Start without a GPU (--agent external): every generator prompt now; each member's PyTorch "
                   "times are taken on the GPU by the `resume --all` that judges its first answer.")
@stop_at_floor_option
@batch_start_options
@executor_options
@store_option
@json_option
def optimize(tasks_dir: Path, agent: str, problems: tuple[str, ...], rounds: int, repairs: int, model: str | None,
             no_gpu: bool, no_compile: bool, defer_baselines: bool, stop_at_floor: float, candidates: Path | None,
             gpus: str | None, workers_per_gpu: int, time_limit_s: float | None,
             executor_kind: str, address: str | None, store_path, as_json: bool) -> None:
    """One batch of generator runs, one per imported task in TASKS_DIR (`kernelbench import --out`).

    Each run's coder writes the task's first kernel from the PyTorch reference, then the skill rounds
    optimize it. With --agent external each run waits at a `generator` prompt: `skillbase pending` lists
    them, `skillbase resume --all` judges the candidates. `skillbase kernelbench report` scores the batch."""
    from skillbase import ui
    from skillbase.commands.pending import print_batch_outcome
    from skillbase.run.batch import start_kernelbench_batch
    from skillbase.run.types import Settings

    refuse_gpus_on_ray(executor_kind, gpus, workers_per_gpu)
    settings = Settings(rounds=rounds, repairs=repairs, agent=agent, model=model, stop_at_floor=stop_at_floor)
    with ui.progress(f"kernelbench optimize ({agent})") as bar:
        outcome = start_kernelbench_batch(
            settings, tasks_dir, problems, gpu=not no_gpu, compile=not no_compile, store_path=store_path,
            candidates=candidates, gpus=comma_list(gpus), workers_per_gpu=workers_per_gpu,
            time_limit_s=time_limit_s, executor_kind=executor_kind, address=address, defer_baselines=defer_baselines,
            progress=None if as_json else bar.step)
    print_batch_outcome(outcome, as_json)


@kernelbench.command("baselines")
@click.argument("batches", nargs=-1)
@click.option("--problems", "problems", multiple=True,
              help="Only these members: folder (level1_2_ReLU), problem (level1/2_ReLU.py) or level1/2; repeatable.")
@click.option("--gpus", default=None,
              help="Comma-separated GPU indices, each named once; one worker each, or --workers-per-gpu "
                   "(default: every GPU).")
@click.option("--time-limit", "time_limit_s", type=click.FloatRange(min=1), default=None,
              help="Start no further timing after this many seconds (run the command again for the rest).")
@click.option("--retry-failed", is_flag=True,
              help="Time again a torch.compile that failed to verify (after a harness fix; its reason is replaced).")
@workers_per_gpu_option
@store_option
@json_option
def baselines(batches: tuple[str, ...], problems: tuple[str, ...], gpus: str | None, time_limit_s: float | None,
              retry_failed: bool, workers_per_gpu: int, store_path, as_json: bool) -> None:
    """Add the PyTorch times the members of KernelBench batches (default: the latest) lack: torch.compile
    for a batch started with --no-compile (or --defer-baselines --no-compile), and eager where its timing
    failed (the device out of memory, say), each timed by the harness on the GPU. A recorded eager time
    stays as it is. `kernelbench report` then shows the torch.compile column and its geomean. Members
    with nothing missing are left alone, so running it again continues where a --time-limit stopped it."""
    from skillbase import ui
    from skillbase.commands.pending import print_batch_outcome
    from skillbase.run.batch import add_missing_baselines

    with ui.progress("kernelbench baselines") as bar:
        outcome = add_missing_baselines(store_path, batches, problems, gpus=comma_list(gpus),
                                        progress=None if as_json else bar.step, time_limit_s=time_limit_s,
                                        workers_per_gpu=workers_per_gpu, retry_failed=retry_failed)
    print_batch_outcome(outcome, as_json)


@kernelbench.command("report")
@click.argument("batches", nargs=-1)
@store_option
@json_option
def report(batches: tuple[str, ...], store_path, as_json: bool) -> None:
    """KernelBench's scores of a `kernelbench optimize` batch (default: the latest): per problem the
    verified speedup over PyTorch eager and torch.compile, per level fast_p and the geomean."""
    from skillbase.run.kernelbench_report import kernelbench_report

    done = kernelbench_report(store_path, batches)
    if as_json:
        click.echo(json.dumps(done.to_json(), indent=1))
        return
    for line in done.lines():
        click.echo(line)
