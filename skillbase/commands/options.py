"""Option decorators shared by several commands (sqlite-utils style): `--json`, `--store`,
`--extra-rules`, `--skills-dir`, `--executor`/`--address`, `--workers-per-gpu`, a batch's
`--candidates`/`--gpus`/`--time-limit`, `--stop-at-floor`."""

from __future__ import annotations

from pathlib import Path

import click

from skillbase.harness.jobs import MAX_WORKERS_PER_GPU
from skillbase.run.types import Settings

json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON instead of text.")
store_option = click.option(
    "--store", "store_path", type=click.Path(file_okay=False), default=None, envvar="SKILLBASE_STORE",
    help="Run store folder (default: $SKILLBASE_STORE, else ~/.local/share/skillbase).")


extra_rules_option = click.option(
    "--extra-rules", "extra_rules", multiple=True, type=click.Path(file_okay=False, exists=True),
    help="Your own rules folder (derive/, propose/ with cases), added to the built-in rules; repeatable. "
         "Also $SKILLBASE_RULES_PATH. Rule ids must not collide with built-in ones.")

skills_dir_option = click.option(
    "--skills-dir", "skills_dirs", multiple=True, type=click.Path(file_okay=False),
    help="Extra skill folder (<category>/<id>/skill.yaml inside); repeatable. Also $SKILLBASE_SKILL_PATH.")


def executor_options(function):
    """`--executor local|ray` and `--address`: where a command's GPU jobs run."""
    from skillbase.harness.executors import EXECUTORS

    function = click.option(
        "--address", default=None,
        help="With --executor ray: the cluster's head as HOST:PORT, or auto (the cluster this machine is a node "
             "of); default: a Ray instance started on this machine for the command.")(function)
    return click.option(
        "--executor", "executor_kind", type=click.Choice(EXECUTORS), default="local", show_default=True,
        help="Where the GPU jobs run: this machine's GPUs (local) or a Ray cluster, one GPU per job (ray: the "
             "`ray` extra; docs/ray.md).")(function)


def comma_list(value: str | None) -> list[str]:
    """A comma-separated option (`--ops`, `--gpus`, `--presets`) as its non-empty items."""
    return [v.strip() for v in (value or "").split(",") if v.strip()]


stop_at_floor_option = click.option(
    "--stop-at-floor", type=click.FloatRange(0, 1), default=Settings.stop_at_floor, show_default=True,
    help="With a coder and a profile: once the engine has no proposal left, stop when the best kernel runs at this "
         "share of its roofline floor or more, instead of asking for the coder's own choice (0: never).")


workers_per_gpu_option = click.option(
    "--workers-per-gpu", type=click.IntRange(1, MAX_WORKERS_PER_GPU), default=1, show_default=True,
    help="Worker processes per GPU: their loading, input drawing, reference and compiling overlap; timing, cheat "
         "probes and profiling stay one at a time per GPU. Each worker holds its own inputs and reserves the device "
         "memory its judgement needs first: where two do not fit the GPU, the second waits (memory_wait).")


def batch_start_options(function):
    """`--candidates`, `--gpus`, `--workers-per-gpu`, `--time-limit`: where a new batch expects its answers and
    how it starts its runs."""
    function = workers_per_gpu_option(function)
    function = click.option(
        "--time-limit", "time_limit_s", type=click.FloatRange(min=1), default=None,
        help="Start no further run after this many seconds (`skillbase resume --all` starts the rest).")(function)
    function = click.option(
        "--gpus", default=None,
        help="Comma-separated GPU indices, each named once; one worker each, or --workers-per-gpu (default: every "
             "GPU).")(function)
    return click.option(
        "--candidates", type=click.Path(file_okay=False, path_type=Path), default=None,
        help="Where the batch's candidates are expected (default: <store>/batches/batch_N/candidates).")(function)


def refuse_gpus_on_ray(executor_kind: str, gpus: str | None, workers_per_gpu: int = 1) -> None:
    """--gpus and --workers-per-gpu pick this machine's GPUs; on a Ray cluster Ray places each job on a free GPU."""
    if executor_kind != "local" and gpus:
        from skillbase.errors import InputError

        raise InputError("--gpus picks this machine's GPUs; with --executor ray the cluster places each job",
                         hint="drop --gpus (start the Ray nodes with --num-gpus N to limit what Ray uses)")
    from skillbase.bench.runner import check_workers_per_gpu

    check_workers_per_gpu(workers_per_gpu, executor_kind)
