"""`skillbase bench`: list the suite, run it on GPUs through the harness, report its scores.

A thin click layer over `skillbase.bench.results`. The GPU part (`_measure`) is isolated: it needs an NVIDIA
GPU and the harness's verify-and-time API (`skillbase.harness.compare`), and without either `bench
run` stops with one line saying which is missing. With several GPUs (`--gpus 0,1`) one worker process
per GPU (CUDA_VISIBLE_DEVICES set before the harness is imported) takes tasks from a shared queue.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import click

from skillbase.bench import results as lib
from skillbase.commands.options import json_option
from skillbase.errors import EnvironmentProblem, InputError


@click.group("bench")
def bench() -> None:
    """The MSKernelBench-style suite: 50 operators, FP32 and BF16, baselines and vendor libraries."""


@bench.command("list")
@json_option
@click.option("--dir", "root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Suite folder (default: $SKILLBASE_BENCH_DIR, else bench/ in the source tree).")
def list_(as_json: bool, root: Path | None) -> None:
    """List operators, their category and implementations."""
    ops = lib.discover(root)
    if as_json:
        click.echo(json.dumps([o.to_dict() for o in ops], indent=1, default=str))
        return
    width = max(len(o.name) for o in ops)
    for o in ops:
        impls = ", ".join(i.name for i in o.implementations)
        click.echo(f"{o.name:<{width}}  {o.category:<11}  {impls}")
    n_impl = sum(len(o.implementations) for o in ops)
    click.echo(f"{len(ops)} operators, {n_impl} implementations")


def _split(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


@bench.command("run")
@click.option("--ops", "ops_csv", default=None, help="Comma-separated operators (default: all).")
@click.option("--dtype", type=click.Choice(lib.DTYPES), default=None, help="Only this dtype (default: both).")
@click.option("--impl", type=click.Choice(lib.KINDS), default="baseline",
              help="baseline | vendor (library implementations) | best (best_<dtype>.cu where present, else baseline).")
@click.option("--gpus", default=None, help="Comma-separated GPU indices; one worker process per GPU (default: 0).")
@click.option("--preset", "presets_csv", default=None, help="Comma-separated presets (default: each task's scored presets).")
@click.option("--dir", "root", type=click.Path(file_okay=False, path_type=Path), default=None, help="Suite folder.")
@json_option
def run(ops_csv, dtype, impl, gpus, presets_csv, root, as_json) -> None:
    """Verify and time the chosen implementations; results go to bench/results/<gpu>/."""
    ops = lib.discover(root)
    impls = lib.select(ops, _split(ops_csv), dtype, impl)
    if not impls:
        raise InputError("nothing to run for that selection", hint="see `skillbase bench list`")
    gpu_ids = _split(gpus) or ["0"]
    gpu_name = _require_gpu()
    _require_harness()
    jobs = _jobs(impls, _split(presets_csv))
    meta = {"skillbase": _version(), "git": _git_head()}
    done = []

    def record(result: lib.SizeResult) -> None:
        # Saved as each result arrives: an interrupted suite keeps everything it measured.
        done.append(result)
        lib.save_results(gpu_name, [result], meta, root)
        timing = (f"{result.runtime_us:,.1f} us" if result.runtime_us else "—") + \
            (f" (baseline {result.baseline_us:,.1f} us)" if result.baseline_us and result.impl != result.dtype else "")
        click.echo(f"[{len(done)}/{sum(len(presets) for _, presets in jobs)}] {result.op} {result.impl} {result.preset}: {result.status} {timing}"
                   + (f" -- {result.reason}" if result.status != lib.VERIFIED and result.reason else ""), err=True)

    results = _run_jobs(jobs, gpu_ids, record)
    path = lib.results_dir(gpu_name, root) / "results.json"
    s = lib.scores(results, gpu=lib.gpu_slug(gpu_name))
    if as_json:
        click.echo(json.dumps({"results": str(path), "scores": s}, indent=1))
    else:
        click.echo(f"{s['verified']}/{s['tasks']} verified; weighted speedup {lib._fmt(s['weighted_speedup'])}; "
                   f"results in {path}")


@bench.command("report")
@click.option("--gpu", "gpu", default=None, help="GPU folder under bench/results/ (default: every one present).")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write an HTML report here (one file per GPU when several).")
@click.option("--dir", "root", type=click.Path(file_okay=False, path_type=Path), default=None, help="Suite folder.")
@json_option
def report(gpu, html_path, root, as_json) -> None:
    """Print the scores of stored results as Markdown (and write HTML)."""
    results_root = (root or lib.bench_dir()) / "results"
    folders = [results_root / lib.gpu_slug(gpu)] if gpu else sorted(p for p in results_root.glob("*") if (p / "results.json").is_file())
    if not folders or not all((f / "results.json").is_file() for f in folders):
        raise InputError(f"no bench results under {results_root}" + (f" for {gpu}" if gpu else ""),
                         hint="run `skillbase bench run` on a GPU machine first")
    out = {}
    for folder in folders:
        meta, results = lib.load_results(folder / "results.json")
        meta.setdefault("gpu", folder.name)
        if as_json:
            out[folder.name] = lib.scores(results, gpu=lib.gpu_slug(meta["gpu"]))
        else:
            click.echo(lib.render_markdown(meta, results))
        if html_path:
            target = html_path if len(folders) == 1 else html_path.with_name(f"{html_path.stem}-{folder.name}{html_path.suffix}")
            target.write_text(lib.render_html(meta, results))
    if as_json:
        click.echo(json.dumps(out, indent=1))


# -- the GPU part ----------------------------------------------------------------------------------

def _require_gpu() -> str:
    """The name of GPU 0, or an EnvironmentProblem on a machine without one."""
    if shutil.which("nvidia-smi") is None:
        raise EnvironmentProblem("no NVIDIA GPU found (nvidia-smi is not installed)",
                                 hint="run `skillbase bench run` on a GPU machine; `bench list` and `bench report` work anywhere")
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise EnvironmentProblem(f"nvidia-smi failed ({error})") from None
    names = [line.strip() for line in out.stdout.splitlines() if line.strip()]
    if out.returncode != 0 or not names:
        raise EnvironmentProblem("no NVIDIA GPU found (nvidia-smi lists none)")
    return names[0]


def _require_harness() -> None:
    try:
        from skillbase.harness import compare  # noqa: F401
    except ImportError:
        raise EnvironmentProblem("the harness's verify-and-time API (skillbase.harness.compare) is not installed",
                                 hint="update skillbase; bench run needs skillbase.harness.compare") from None


def _jobs(impls: list[lib.Implementation], presets: list[str]) -> list[tuple[lib.Implementation, tuple[str, ...]]]:
    """One job per implementation, timing all its presets in one harness evaluation: verification
    (every scored size plus the irregular one) then runs once per implementation, not once per size."""
    from skillbase.task import load_task

    jobs = []
    for impl in impls:
        spec = load_task(impl.spec_path)
        wanted = tuple(presets or spec.scored)
        for preset in wanted:
            if preset not in spec.presets:
                raise InputError(f"{impl.op}: no preset {preset} (presets: {', '.join(spec.presets)})")
        jobs.append((impl, wanted))
    return jobs


def _visible(gpu_ids: list[str]) -> list[str]:
    """--gpus indices as CUDA_VISIBLE_DEVICES values: relative to an existing CUDA_VISIBLE_DEVICES
    (so `CUDA_VISIBLE_DEVICES=1 skillbase bench run` runs on GPU 1, not on 0)."""
    import os

    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    out = []
    for g in gpu_ids:
        if visible and g.isdigit():
            if int(g) >= len(visible):
                raise InputError(f"--gpus {g}: only {len(visible)} GPU(s) visible (CUDA_VISIBLE_DEVICES={','.join(visible)})")
            out.append(visible[int(g)])
        else:
            out.append(g)
    return out


def _run_jobs(jobs, gpu_ids: list[str], on_result=lambda result: None) -> list[lib.SizeResult]:
    gpu_ids = _visible(gpu_ids)
    if len(gpu_ids) == 1:
        import os

        os.environ["CUDA_VISIBLE_DEVICES"] = gpu_ids[0]
        results = []
        for impl, presets in jobs:
            for result in _measure(impl, presets):
                result.device = gpu_ids[0]
                results.append(result)
                on_result(result)
        return results
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    tasks, done = ctx.Queue(), ctx.Queue()
    for i, job in enumerate(jobs):
        tasks.put((i, job))
    for _ in gpu_ids:
        tasks.put(None)
    workers = [ctx.Process(target=_worker, args=(gpu, tasks, done), daemon=True) for gpu in gpu_ids]
    for w in workers:
        w.start()
    by_job = _collect(jobs, done, workers, on_result)
    for w in workers:
        w.join()
    return [r for i in sorted(by_job) for r in by_job[i]]


def _collect(jobs, done, workers, on_result, poll_s: float = 5.0) -> dict[int, list[lib.SizeResult]]:
    """Results from the workers' queue as they arrive. A worker that dies (a driver fault can take
    the process down) loses the job it held: once no worker is left alive, every job without a
    result is recorded as an error instead of waiting for it forever."""
    import queue

    by_job: dict[int, list[lib.SizeResult]] = {}
    while len(by_job) < len(jobs):
        try:
            i, data = done.get(timeout=poll_s)
        except queue.Empty:
            if any(w.is_alive() for w in workers):
                continue
            codes = ", ".join(str(w.exitcode) for w in workers)
            for i, (impl, presets) in enumerate(jobs):
                if i not in by_job:
                    by_job[i] = [_failure(impl, preset, f"the worker process exited (exit codes {codes}) "
                                                        "before this implementation was measured")
                                 for preset in presets]
                    for result in by_job[i]:
                        on_result(result)
            break
        by_job[i] = [lib.SizeResult.from_dict(d) for d in data]
        for result in by_job[i]:
            on_result(result)
    return by_job


def _failure(impl: lib.Implementation, preset: str, reason: str) -> lib.SizeResult:
    return lib.SizeResult(op=impl.op, dtype=impl.dtype, impl=impl.name, preset=preset, status="error", reason=reason)


def _worker(gpu: str, tasks, done) -> None:
    import os

    os.environ["CUDA_VISIBLE_DEVICES"] = gpu          # before anything initialises CUDA in this process
    while True:
        item = tasks.get()
        if item is None:
            return
        i, (impl, presets) = item
        done.put((i, [dict(r.to_dict(), device=gpu) for r in _measure(impl, presets)]))


# Harness CheckResult status -> bench result status (everything but ok is a failure).
_STATUS = {"ok": lib.VERIFIED, "incorrect": "incorrect", "spec-error": "incorrect", "build-failed": "build-failed",
           "load-failed": "build-failed", "crashed": "crashed", "timeout": "timeout",
           "rejected-static": "rejected-static", "quarantined": "quarantined"}


def _measure(impl: lib.Implementation, presets: tuple[str, ...]) -> list[lib.SizeResult]:
    """Verify one implementation and time it at each preset (interleaved with its operator's
    baseline for a vendor or best kernel) in one harness evaluation; one SizeResult per preset.

    Everything the harness needs comes from the implementation's task spec: a vendor kernel's spec
    names the libraries to link, its setup/teardown hooks, the library it may call and the baseline
    kernel as its reference; the baseline is timed under its own spec (no ad-hoc flags)."""
    from skillbase.harness.runtime import Options, evaluate
    from skillbase.task import load_task

    spec = load_task(impl.spec_path)
    bases = []
    for preset in presets:
        flops, nbytes = spec.work(preset)
        bases.append(dict(op=impl.op, dtype=impl.dtype, impl=impl.name, preset=preset, flops=float(flops),
                          bytes=float(nbytes)))
    try:
        options = Options(presets=tuple(presets))
        if impl.kind == "baseline":
            result = evaluate(impl.baseline_path, options=options)
        else:
            # vendor: its own task (spec beside it); best: the baseline's task. Either way the
            # operator's baseline kernel is timed interleaved, under its own spec.
            task = impl.cu_path if impl.kind == "vendor" else impl.baseline_path
            result = evaluate(task, candidate=impl.cu_path, baseline=impl.baseline_path, options=options,
                              baseline_task=impl.baseline_path)
    except Exception as error:  # one implementation's failure is recorded, never the end of the run
        return [lib.SizeResult(**b, status="error", reason=f"{type(error).__name__}: {error}"[:500]) for b in bases]
    timings = {t.size: t for t in result.timings}
    out = []
    for b in bases:
        t = timings.get(b["preset"])
        cand = t.kernels.get("candidate") if t else None
        base = t.kernels.get("baseline") if t else None
        status = _STATUS.get(result.status, "error")
        reason = result.reason or ""
        if result.status == "quarantined":       # only the sizes that looked impossible are quarantined
            status = "quarantined" if cand is not None and cand.suspicious else lib.VERIFIED
            reason = cand.suspicious if cand is not None and cand.suspicious else ""
        if cand is None or cand.stats is None:
            if status == lib.VERIFIED:
                status, reason = "error", "no timing at this size"
            out.append(lib.SizeResult(**b, status=status, reason=reason))
            continue
        runtime = cand.stats.median_us
        baseline = base.stats.median_us if base is not None and base.stats else (runtime if impl.kind == "baseline"
                                                                                    else None)
        spreads = [k.stats.rel_spread for k in (cand, base) if k is not None and k.stats]
        out.append(lib.SizeResult(**b, status=status, runtime_us=runtime, baseline_us=baseline,
                                  spread=max(spreads) if spreads else None, floor_us=cand.floor_us,
                                  cold_l2=cand.cold_l2, reason=reason))
    return out


def _version() -> str:
    from skillbase import __version__

    return __version__


def _git_head() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10,
                             cwd=Path(__file__).resolve().parent)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None
