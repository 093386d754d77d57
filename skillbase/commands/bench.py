"""`skillbase bench`: list the suite, run it on GPUs through the harness, report its scores.

Parses options, calls `skillbase.bench` (suite, runner, results, report) and renders. The suite is
`--dir` (default: the one shipped in the package); results live under `--results` (default:
$SKILLBASE_BENCH_RESULTS, else ~/.local/share/skillbase/results), one `<gpu-slug>/bench/` per GPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from skillbase.bench import report as bench_report
from skillbase.bench import results as bench_results
from skillbase.bench import runner, suite
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
from skillbase.run.types import AGENTS, MAX_ROUNDS, Settings

suite_option = click.option("--dir", "root", type=click.Path(file_okay=False, path_type=Path), default=None,
                            help="Suite folder (default: $SKILLBASE_BENCH_DIR, else the suite shipped in the package).")
results_option = click.option("--results", "results_root", type=click.Path(file_okay=False, path_type=Path),
                              default=None, help="Results folder, one <gpu>/bench/ per GPU (default: "
                                                 "$SKILLBASE_BENCH_RESULTS, else ~/.local/share/skillbase/results).")


@click.group("bench")
def bench() -> None:
    """The MSKernelBench-style suite: 50 operators, FP32 and BF16, baselines and vendor libraries."""


@bench.command("list")
@json_option
@suite_option
def list_(as_json: bool, root: Path | None) -> None:
    """List operators, their category and implementations."""
    listed = suite.Suite(suite.discover(root))
    if as_json:
        click.echo(json.dumps(listed.to_json(), indent=1))
        return
    width = max(len(o.name) for o in listed.operators)
    for o in listed.operators:
        impls = ", ".join(i.name for i in o.implementations)
        click.echo(f"{o.name:<{width}}  {o.category:<11}  {impls}")
    click.echo(f"{len(listed.operators)} operators, {listed.implementation_count} implementations")


def _result_line(result: bench_results.SizeResult) -> str:
    timing = (f"{result.runtime_us:,.1f} us" if result.runtime_us else "—") + \
        (f" (baseline {result.baseline_us:,.1f} us)" if result.baseline_us and result.impl != result.dtype else "")
    failed = result.status != bench_results.VERIFIED and result.reason
    line = f"{result.op} {result.impl} {result.preset}: {result.status} {timing}" + (f" -- {result.reason}" if failed
                                                                                    else "")
    if result.phases_s:     # the job's last size: where its time went
        spent = sorted(result.phases_s.items(), key=lambda item: -item[1])
        line += f" [job {sum(result.phases_s.values()):.1f} s: " + ", ".join(f"{k} {v:.1f}" for k, v in spent) + "]"
    return line


@bench.command("run")
@click.option("--ops", "ops_csv", default=None, help="Comma-separated operators (default: all).")
@click.option("--dtype", type=click.Choice(suite.DTYPES), default=None, help="Only this dtype (default: both).")
@click.option("--impl", type=click.Choice(suite.KINDS), default="baseline",
              help="baseline | vendor (library implementations) | best (best_<dtype>.cu where present, else "
                   "baseline) | torch (PyTorch eager) | torch_compile (the same through torch.compile).")
@click.option("--gpus", default=None,
              help="Comma-separated GPU indices, each named once; one worker process per GPU, or --workers-per-gpu "
                   "(default: every GPU).")
@workers_per_gpu_option
@click.option("--preset", "presets_csv", default=None,
              help="Comma-separated presets (default: each task's scored presets).")
@executor_options
@suite_option
@results_option
@json_option
def run(ops_csv, dtype, impl, gpus, workers_per_gpu, presets_csv, executor_kind, address, root, results_root,
        as_json) -> None:
    """Verify and time the chosen implementations; results go to <results>/<gpu>/bench/."""
    from skillbase import ui

    refuse_gpus_on_ray(executor_kind, gpus, workers_per_gpu)

    # a bar with counts and an ETA on a terminal, one line per result when piped
    with ui.progress(f"bench run ({impl})") as bar:
        done = runner.run_bench(comma_list(ops_csv), dtype, impl, comma_list(gpus), comma_list(presets_csv),
                                root, results_root, executor_kind=executor_kind, address=address,
                                workers_per_gpu=workers_per_gpu,
                                progress=lambda result, count, total: bar.step(count, total, _result_line(result)))
    s = done.scores
    if as_json:
        click.echo(json.dumps(done.to_json(), indent=1))
    else:
        speedup = bench_report.number(s["weighted_speedup"])
        click.echo(f"{s['verified']}/{s['tasks']} verified; weighted speedup {speedup}; results in {done.path}")


@bench.command("optimize")
@click.option("--agent", type=click.Choice(AGENTS), required=True,
              help="Who applies the skills: external (a coder answers each prompt; `pending`, `resume --all`), "
                   "openai (the configured endpoint) or none (mechanical skills only).")
@click.option("--ops", "ops_csv", default=None, help="Comma-separated operators (default: all).")
@click.option("--dtype", type=click.Choice(suite.DTYPES), default="fp32", show_default=True, help="The runs' dtype.")
@click.option("--rounds", type=click.IntRange(1, MAX_ROUNDS), default=3, show_default=True, help="Rounds per run.")
@click.option("--repairs", type=click.IntRange(0, 10), default=3, show_default=True,
              help="At most this many debugger repairs per attempt.")
@click.option("--preset", default=None, help="Size preset to profile and time (default: each task's scored presets).")
@click.option("--no-engine", is_flag=True,
              help="The ablation: the coder chooses the optimization itself; everything else is the same.")
@stop_at_floor_option
@click.option("--model", default=None, help="Model name for --agent openai.")
@click.option("--no-gpu", is_flag=True, help="Compile-only runs (no verification or timing; nothing is accepted).")
@click.option("--again", is_flag=True,
              help="Start new runs even of operators still in progress in an earlier batch with the same settings "
                   "(refused without it: `skillbase resume --all` continues those).")
@batch_start_options
@executor_options
@suite_option
@store_option
@json_option
def optimize(agent, ops_csv, dtype, rounds, repairs, preset, no_engine, stop_at_floor, model, no_gpu, again, candidates,
             gpus, workers_per_gpu, time_limit_s, executor_kind, address, root, store_path, as_json) -> None:
    """Start one optimization run per operator, as one batch in the run store.

    With --agent external each run pauses at its first prompt: `skillbase pending` lists them,
    `skillbase resume --all` judges the candidates written for them."""
    from skillbase import ui
    from skillbase.commands.pending import print_batch_outcome
    from skillbase.run.batch import start_batch

    refuse_gpus_on_ray(executor_kind, gpus, workers_per_gpu)
    settings = Settings(rounds=rounds, repairs=repairs, agent=agent, model=model, engine=not no_engine,
                        stop_at_floor=stop_at_floor)
    # a bar with counts and an ETA on a terminal, one line per run when piped
    with ui.progress(f"bench optimize ({agent})") as bar:
        outcome = start_batch(settings, comma_list(ops_csv), dtype, preset, gpu=not no_gpu, store_path=store_path,
                              candidates=candidates, suite=root, gpus=comma_list(gpus), time_limit_s=time_limit_s,
                              executor_kind=executor_kind, address=address, again=again,
                              workers_per_gpu=workers_per_gpu, progress=None if as_json else bar.step)
    print_batch_outcome(outcome, as_json)


@bench.command("optimize-report")
@click.argument("batches", nargs=-1)
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Also write report.md, report.json and report.html into this folder.")
@results_option
@store_option
@json_option
def optimize_report(batches, out_dir, results_root, store_path, as_json) -> None:
    """Summarise `bench optimize` batches (default: every batch in the store).

    Per run and per category: verified speedups, against the vendor, % of roofline, skills, tokens;
    engine on vs off when both were run."""
    from skillbase.run.batch_report import batch_report

    report = batch_report(store_path, batches, results_root)
    data = report.to_json()
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "report.md").write_text(report.to_markdown())
        (out_dir / "report.json").write_text(json.dumps(data, indent=1, default=str) + "\n")
        (out_dir / "report.html").write_text(report.to_html())
    click.echo(json.dumps(data, indent=1, default=str) if as_json else report.to_markdown())


@bench.command("report")
@click.option("--gpu", "gpu", default=None, help="GPU folder under the results folder (default: every one present).")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write an HTML report here (one file per GPU when several).")
@click.option("--force", is_flag=True, help="Overwrite an existing HTML report.")
@click.option("--against", "reference", type=click.Choice(suite.REFERENCES), default="baseline",
              help="State the summary's speedups against this reference at each size: baseline | vendor | torch "
                   "| torch_compile.")
@results_option
@json_option
def report(gpu, html_path, reference, results_root, as_json, force) -> None:
    """Print the scores of stored results as Markdown (and write HTML)."""
    stored = bench_results.load_stored(results_root, gpu)
    targets = bench_report.html_targets(html_path, list(stored), force) if html_path else {}
    for slug, (meta, results) in stored.items():
        if not as_json:
            click.echo(bench_report.render_markdown(meta, results, reference))
        if html_path:
            targets[slug].write_text(bench_report.render_html(meta, results, reference))
    if as_json:
        click.echo(json.dumps(bench_report.StoredScores(stored, reference).to_json(), indent=1))
