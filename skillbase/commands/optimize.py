"""`skillbase optimize K.cu`, `skillbase resume run_N` and `skillbase stop run_N`."""

from __future__ import annotations

from pathlib import Path

import click

from skillbase import ui
from skillbase.commands.options import (
    comma_list,
    executor_options,
    extra_rules_option,
    json_option,
    refuse_gpus_on_ray,
    stop_at_floor_option,
    store_option,
    workers_per_gpu_option,
)
from skillbase.run.types import AGENTS, MAX_ROUNDS, Settings


def _agent_default() -> str:
    from skillbase.agents.client import api_key_configured

    return "openai" if api_key_configured() else "none"


@click.command("optimize")
@extra_rules_option
@click.argument("kernel", type=click.Path(dir_okay=False))
@click.option("--rounds", type=click.IntRange(1, MAX_ROUNDS), default=10, show_default=True,
              help="Rounds of optimization.")
@click.option("--repairs", type=click.IntRange(0, 10), default=3, show_default=True,
              help="At most this many debugger repairs per attempt.")
@click.option("--agent", type=click.Choice(AGENTS), default=None,
              help="Who applies skills: an LLM (default when OPENAI_API_KEY is set), a person/another agent "
                   "(external), or mechanical skills only (none).")
@click.option("--model", default=None, help="Model name for --agent openai.")
@click.option("--preset", default=None, help="Size preset to profile and time (default: the spec's scored presets).")
@click.option("--time-budget", type=click.FloatRange(min=1), default=None, help="Stop after this many seconds.")
@click.option("--token-budget", type=click.IntRange(min=1), default=None, help="Stop after this many LLM tokens.")
@stop_at_floor_option
@click.option("--no-gpu", is_flag=True, help="Compile-only run (no verification or timing; nothing is accepted).")
@click.option("--report", "saved_report", type=click.Path(dir_okay=False, exists=True), default=None,
              help="A saved .ncu-rep of KERNEL as it is now: used as the first round's evidence instead of profiling.")
@click.option("--from-reference", is_flag=True,
              help="KERNEL does not exist yet (an imported KernelBench task's model.cu): the coder writes its first "
                   "version from the PyTorch reference, verified and repaired, then the rounds start from it.")
@json_option
@store_option
def optimize(extra_rules, kernel, rounds, repairs, agent, model, preset, time_budget, token_budget, stop_at_floor,
             no_gpu, saved_report, from_reference, as_json, store_path):
    """Optimize KERNEL (a .cu with its .task.yaml) round by round; every round lands in the run store."""
    from skillbase.run.session import start_run

    settings = Settings(rounds=rounds, repairs=repairs, agent=agent or _agent_default(), model=model,
                        time_budget_s=time_budget, token_budget=token_budget, stop_at_floor=stop_at_floor,
                        extra_rules=tuple(str(Path(p).resolve()) for p in extra_rules))
    if from_reference and settings.agent == "external":
        from skillbase.run.session import start_generator_run

        # A run that waits for its first kernel: the generator prompt is pending like any other.
        _print_summary(start_generator_run(Path(kernel), settings, store_path=store_path, preset=preset,
                                           gpu=not no_gpu), as_json)
        return
    if from_reference:
        from skillbase.run.session import generate_from_reference

        generate_from_reference(Path(kernel), settings, gpu=not no_gpu)
    summary = start_run(Path(kernel), settings, store_path=store_path, preset=preset, gpu=not no_gpu,
                        saved_report=Path(saved_report) if saved_report else None)
    _print_summary(summary, as_json)


@click.command("resume")
@click.argument("run_ref", required=False)
@click.option("--candidate", type=click.Path(dir_okay=False, exists=True), default=None,
              help="For a run paused by --agent external: the new kernel to judge.")
@click.option("--all", "all_runs", is_flag=True,
              help="Every paused run: judge each candidate present (run_N.cu, optional run_N.meta.json), "
                   "continue killed batch runs, leave the rest waiting with the reason.")
@click.option("--candidates", type=click.Path(file_okay=False, exists=True), default=None,
              help="With --all: the folder holding the candidates (default: where `pending` says).")
@click.option("--batch", default=None, help="With --all: only this batch's runs (batch_N).")
@click.option("--gpus", default=None,
              help="With --all: comma-separated GPU indices, each named once; one worker each, or --workers-per-gpu "
                   "(default: all).")
@workers_per_gpu_option
@click.option("--time-limit", "time_limit_s", type=click.FloatRange(min=1), default=None,
              help="With --all: start no further run after this many seconds (the next --all takes them up).")
@click.option("--jobs", type=click.IntRange(0, 64), default=None,
              help="With --all: parallel nvcc processes that build every candidate before the GPU jobs judge them "
                   "(default: one per core, at most 16; 0: build each when it is judged).")
@click.option("--more-rounds", type=click.IntRange(1, MAX_ROUNDS), default=None,
              help="Reopen RUN_REF (with --all: every run that spent its rounds) for N more rounds and go on as the "
                   "loop would have with a larger --rounds: an external run pauses at its next prompt (its last "
                   "profile reused, the kernel's static features recomputed by today's analyser). Only a run that "
                   "ended for `rounds`; any other end is left as it is.")
@click.option("--below-floor", type=click.FloatRange(min=0, min_open=True), default=None,
              help="With --all --more-rounds: only runs whose best kernel runs below this share of its roofline "
                   "floor (default 0.5). Runs with no known floor (no work model, compile-only) are not picked: "
                   "name one to reopen it.")
@executor_options
@json_option
@store_option
def resume(run_ref, candidate, all_runs, candidates, batch, gpus, workers_per_gpu, time_limit_s, jobs, more_rounds,
           below_floor, executor_kind, address, as_json, store_path):
    """Continue RUN_REF from its last finished step (after a crash, Ctrl-C or an external pause),
    or with --all every paused run of the store at once; with --more-rounds N, give runs that spent
    their --rounds N more."""
    from skillbase.errors import InputError

    if more_rounds is not None:
        _more_rounds(run_ref, all_runs, more_rounds, below_floor, batch, as_json, store_path,
                     others=bool(candidate or candidates or gpus or workers_per_gpu != 1 or time_limit_s
                                 or jobs is not None or executor_kind != "local" or address))
        return
    if below_floor is not None:
        raise InputError("--below-floor goes with --more-rounds", hint="skillbase resume --all --more-rounds 2 "
                                                                       "--below-floor 0.5")
    if all_runs:
        if run_ref or candidate:
            raise InputError("--all resumes every paused run; it takes no RUN_REF or --candidate",
                             hint="put each candidate in the folder as run_N.cu and pass --candidates FOLDER")
        from skillbase.commands.pending import print_batch_outcome
        from skillbase.run.batch import resume_all

        refuse_gpus_on_ray(executor_kind, gpus, workers_per_gpu)
        # a bar with counts and an ETA on a terminal, one line per run when piped
        with ui.progress("resume --all") as bar:
            outcome = resume_all(store_path, candidates=Path(candidates) if candidates else None, batch=batch,
                                 gpus=comma_list(gpus), workers_per_gpu=workers_per_gpu,
                                 time_limit_s=time_limit_s, executor_kind=executor_kind, address=address,
                                 progress=None if as_json else bar.step, jobs=jobs)
        print_batch_outcome(outcome, as_json)
        return
    if run_ref is None:
        raise InputError("which run? pass RUN_REF, or --all for every paused run",
                         hint="`skillbase pending` lists the paused runs")
    if candidates or batch or gpus or workers_per_gpu != 1 or time_limit_s or jobs is not None \
            or executor_kind != "local" or address:
        raise InputError("--candidates, --batch, --gpus, --workers-per-gpu, --time-limit, --jobs, --executor and "
                         "--address go with --all",
                         hint="skillbase resume --all --candidates DIR")
    from skillbase.datafile.yamldoc import read_text
    from skillbase.run.session import resume_run

    summary = resume_run(run_ref, store_path=store_path,
                         candidate=read_text(Path(candidate)) if candidate else None)
    _print_summary(summary, as_json)


@click.command("stop")
@click.argument("run_ref")
@click.option("--reason", required=True, help="Why (the run's stop reason: `runs` and `explain` show it).")
@json_option
@store_option
def stop(run_ref: str, reason: str, as_json: bool, store_path) -> None:
    """End a paused or interrupted run by hand: it is finished with "stopped by hand: REASON", keeps its
    rounds and best kernel, and leaves `pending` and `resume --all` (a running run is refused)."""
    from skillbase.run.session import stop_run

    summary = stop_run(run_ref, reason, store_path)
    if as_json:
        import json

        click.echo(json.dumps(summary, indent=2, default=str))
    else:
        click.echo(f"{summary['run']}: {summary['status']} ({summary['stop_reason']})")


def _more_rounds(run_ref, all_runs: bool, more_rounds: int, below_floor: float | None, batch, as_json: bool,
                 store_path, others: bool) -> None:
    """`resume RUN --more-rounds N` / `resume --all --more-rounds N`: the runs reopened, then what waits."""
    from skillbase.commands.pending import print_batch_outcome
    from skillbase.errors import InputError
    from skillbase.run.reopen import reopen

    if others:
        raise InputError("--more-rounds takes RUN_REF or --all, with --below-floor and --batch; not --candidate, "
                         "--candidates, --gpus, --workers-per-gpu, --time-limit, --jobs, --executor or --address",
                         hint="reopen first, then answer the prompts and `skillbase resume --all`")
    with ui.progress("resume --more-rounds") as bar:
        outcome = reopen(store_path, runs=[run_ref] if run_ref else [], more_rounds=more_rounds, all_runs=all_runs,
                         below_floor=below_floor, batch=batch, progress=None if as_json else bar.step)
    print_batch_outcome(outcome, as_json)


def _print_summary(summary: dict, as_json: bool) -> None:
    import json

    if as_json:
        click.echo(json.dumps(summary, indent=2, default=str))
        _exit_if_failed(summary)
        return
    from rich.table import Table

    console = ui.console()
    table = Table(title=f"{summary['run']}: {summary['status']} — {summary['stop_reason'] or ''}", title_justify="left")
    # Per round: the interleaved comparison against the kernel the round started from; the last line
    # divides the baseline's and the best kernel's medians, so the two can differ in the last digit.
    for column in ("round", "skill", "outcome", "best try", "vs round start"):
        table.add_column(column)
    for row in summary["rounds"]:
        table.add_row(str(row["round"]), row["skill"] or "—", row["outcome"] or "—", row["best"] or "—",
                      f"{row['speedup']:.2f}x" if row.get("speedup") else "—")
    console.print(table)
    if summary.get("speedup"):
        console.print(f"best verified speedup over the baseline: {summary['speedup']:.2f}x "
                      f"({summary['baseline_us']:.1f} µs -> {summary['best_us']:.1f} µs); "
                      f"best kernel: {summary['best_path']}")
    console.print(f"explain it: skillbase explain {summary['run']}")
    _exit_if_failed(summary)


def _exit_if_failed(summary: dict) -> None:
    """A run that ended `failed` (every attempt failed for an outside reason, such as an endpoint that
    never answered) exits like an environment problem, after its summary is shown."""
    from skillbase.errors import EnvironmentProblem

    if summary["status"] == "failed":
        raise click.exceptions.Exit(EnvironmentProblem.exit_code)
