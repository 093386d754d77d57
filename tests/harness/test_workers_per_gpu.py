"""Several workers per GPU (`--workers-per-gpu N`): the local executor starts N worker processes per
GPU, whose jobs overlap, and returns the results in job order; one worker per GPU never overlaps two
jobs on it. The option's bounds, its refusal with --executor ray and the refusal of a GPU named twice
in --gpus, through the real entry point. The GPU lock's debug log of exclusive sections (what the GPU
test reads), with real processes; on a GPU (`gpu` mark), `bench run --workers-per-gpu 2` verifies
everything and its timed phases never overlapped."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import shutil
import time
from itertools import combinations
from pathlib import Path

import pytest

from skillbase.bench.runner import visible_devices
from skillbase.errors import InputError
from skillbase.harness import env
from skillbase.harness.gpu_lock import LOG_ENV, gpu_lock
from skillbase.harness.jobs import MAX_WORKERS_PER_GPU, Job, LocalExecutor

REPO = Path(__file__).resolve().parents[2]


def _jobs(marks: Path, count: int, meet: int, hold_s: float) -> list[Job]:
    marks.mkdir()
    tokens = random.Random().sample(range(10**6), count)
    return [Job("rendezvous", "jobs_kit:rendezvous_payload",
                {"marks": str(marks), "token": token, "meet": meet, "wait_s": 30.0, "hold_s": hold_s},
                label=f"job {i}") for i, token in enumerate(tokens)]


def _overlap(a: dict, b: dict) -> bool:
    return max(a["start"], b["start"]) < min(a["end"], b["end"])


def test_two_workers_on_one_gpu_run_two_jobs_at_once_and_return_them_in_order(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    gpus = visible_devices(["0"], found=1, workers_per_gpu=2)
    assert gpus == ["0", "0"]
    # Each job waits until two have started: only two workers side by side let every job meet.
    jobs = _jobs(tmp_path / "marks", 5, meet=2, hold_s=0.2)
    seen = []
    results = LocalExecutor(gpus).run(jobs, seen.append)
    assert [r.index for r in results] == list(range(5)) and sorted(seen, key=lambda r: r.index) == results
    assert [r.value["token"] for r in results] == [j.payload["token"] for j in jobs]
    values = [r.value for r in results]
    assert all(v["met"] for v in values), values
    assert {r.device for r in results} == {"0"} and {v["device"] for v in values} == {"0"}
    assert len({v["pid"] for v in values}) == 2
    assert _overlap(values[0], values[1]), values[:2]


def test_one_worker_per_gpu_never_runs_two_jobs_on_it_at_once(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    gpus = visible_devices(["0", "1"], found=2)
    assert gpus == ["0", "1"]
    results = LocalExecutor(gpus).run(_jobs(tmp_path / "marks", 6, meet=1, hold_s=0.15), lambda result: None)
    assert [r.index for r in results] == list(range(6)) and all(r.error is None for r in results)
    by_device: dict[str, list[dict]] = {}
    for r in results:
        by_device.setdefault(r.device, []).append(r.value)
    for device, values in by_device.items():
        assert len({v["pid"] for v in values}) == 1, (device, values)      # one worker per GPU
        assert not any(_overlap(a, b) for a, b in combinations(values, 2)), (device, values)


def test_each_gpu_is_listed_once_per_worker_relative_to_cuda_visible_devices(monkeypatch):
    rng = random.Random()
    visible = [str(v) for v in rng.sample(range(16), 4)]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", ",".join(visible))
    picked = rng.sample(range(4), rng.randint(1, 4))
    workers = rng.randint(1, MAX_WORKERS_PER_GPU)
    got = visible_devices([str(i) for i in picked], workers_per_gpu=workers)
    assert got == [visible[i] for i in picked for _ in range(workers)]
    assert visible_devices([], workers_per_gpu=workers) == [v for v in visible for _ in range(workers)]


@pytest.mark.parametrize("workers", [0, MAX_WORKERS_PER_GPU + 1, -1])
def test_workers_per_gpu_out_of_bounds_is_refused_by_the_library(workers):
    with pytest.raises(InputError, match=f"--workers-per-gpu {workers}: expected 1 to {MAX_WORKERS_PER_GPU}"):
        visible_devices(["0"], found=1, workers_per_gpu=workers)


@pytest.mark.parametrize("gpus", [["0", "0"], ["1", "0", "1"]])
def test_a_gpu_named_twice_is_refused_with_the_way_to_say_it(gpus, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with pytest.raises(InputError, match="--gpus names GPU") as refused:
        visible_devices(gpus, found=2)
    assert "--workers-per-gpu" in refused.value.hint


# -- the CLI -----------------------------------------------------------------------------------------

def _commands(suite: Path, store: Path, tasks: Path) -> list[list[str]]:
    """Every command that takes --workers-per-gpu, ready to run."""
    return [["bench", "run", "--dir", str(suite), "--dtype", "fp32", "--results", str(store / "results")],
            ["bench", "optimize", "--agent", "external", "--dir", str(suite), "--store", str(store)],
            ["resume", "--all", "--store", str(store)],
            ["kernelbench", "optimize", str(tasks), "--agent", "external", "--store", str(store)]]


def test_every_command_refuses_workers_out_of_bounds_and_on_ray(skillbase, suite, tmp_path):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    for command in _commands(suite, tmp_path / "store", tasks):
        for bad in ("0", str(MAX_WORKERS_PER_GPU + 1)):
            done = skillbase(*command, "--workers-per-gpu", bad)
            assert done.returncode == 2 and "Invalid value for '--workers-per-gpu'" in done.stderr, (command, done)
        done = skillbase(*command, "--workers-per-gpu", "2", "--executor", "ray")
        assert done.returncode == 2, (command, done)
        assert "error: --workers-per-gpu starts workers on this machine's GPUs; with --executor ray" in done.stderr
        assert "Traceback" not in done.stderr
    assert not list((tmp_path / "store").glob("batches/*"))


def test_a_gpu_named_twice_is_refused_before_anything_is_recorded(skillbase, suite, tmp_path, monkeypatch):
    gpu = env.Gpu(0, "NVIDIA H200", "580.159.04", "9.0", "143771 MiB")
    monkeypatch.setattr(env, "require_gpus", lambda hint="": [gpu, gpu])
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    store = tmp_path / "store"
    for command in _commands(suite, store, tmp_path)[:2]:
        done = skillbase(*command, "--gpus", "0,1,0")
        assert done.returncode == 2, (command, done)
        assert "error: --gpus names GPU 0 twice (0,1,0)" in done.stderr and "--workers-per-gpu N" in done.stderr
    assert not list(store.glob("batches/*")) and not (store / "results").exists()


def test_workers_per_gpu_goes_with_resume_all_only(skillbase, tmp_path):
    done = skillbase("resume", "run_1", "--workers-per-gpu", "2", "--store", str(tmp_path / "store"))
    assert done.returncode == 2 and "--workers-per-gpu" in done.stderr and "go with --all" in done.stderr


# -- the GPU lock's record of its exclusive sections -------------------------------------------------

def _hold(cache: str, log: str, uuid: str, nested: bool, seconds: float) -> None:
    os.environ["SKILLBASE_CACHE"], os.environ[LOG_ENV] = cache, log
    with gpu_lock(uuid=uuid, shared=nested):
        if nested:      # a worker: shared for its job, exclusive for its timed phase
            with gpu_lock(uuid=uuid):
                time.sleep(seconds)
        else:
            time.sleep(seconds)
        with gpu_lock(uuid=uuid, shared=True):     # nested shared: no section of its own
            pass


def exclusive_sections(log: Path) -> dict[str, list[tuple[float, float, int]]]:
    """$SKILLBASE_GPU_LOCK_LOG as (start, end, pid) per lock, in start order."""
    out: dict[str, list[tuple[float, float, int]]] = {}
    for line in log.read_text().splitlines():
        name, pid, start, end = line.split()
        out.setdefault(name, []).append((float(start), float(end), int(pid)))
    return {name: sorted(spans) for name, spans in out.items()}


def overlapping(spans: list[tuple[float, float, int]]) -> list[tuple]:
    return [(a, b) for a, b in zip(spans, spans[1:], strict=False) if b[0] < a[1]]


def test_the_lock_logs_each_exclusive_section_once_and_they_never_overlap(tmp_path):
    uuid = f"GPU-{random.Random().randrange(16**8):08x}-1111-2222-3333-444444444444"
    log = tmp_path / "sections.log"
    context = multiprocessing.get_context("spawn")
    nested = [False, True, False, True]
    procs = [context.Process(target=_hold, args=(str(tmp_path / "cache"), str(log), uuid, n, 0.2)) for n in nested]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    spans = exclusive_sections(log)
    assert list(spans) == [uuid] and len(spans[uuid]) == 4
    assert {pid for _, _, pid in spans[uuid]} == {p.pid for p in procs}
    assert all(end - start >= 0.19 for start, end, _ in spans[uuid])
    assert not overlapping(spans[uuid]), spans


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_bench_run_with_two_workers_per_gpu_verifies_everything_and_times_alone(skillbase, tmp_path, monkeypatch):
    suite = tmp_path / "suite"
    for op in ("relu", "vector_add"):
        shutil.copytree(REPO / "bench" / "ops" / op, suite / "ops" / op)
    log = tmp_path / "sections.log"
    monkeypatch.setenv(LOG_ENV, str(log))
    done = skillbase("bench", "run", "--dir", str(suite), "--dtype", "fp32", "--gpus", "0", "--workers-per-gpu", "2",
                     "--results", str(tmp_path / "results"), "--json")
    assert done.returncode == 0, done.stderr
    stored = json.loads(Path(json.loads(done.stdout)["results"]).read_text())["results"]
    assert len(stored) >= 2 and all(r["status"] == "verified" for r in stored), stored
    spans = exclusive_sections(log)
    assert spans and all(len(s) >= 1 for s in spans.values())
    for name, sections in spans.items():
        assert not overlapping(sections), (name, sections)


# -- files two workers share: a candidate's scratch copy -------------------------------------------

def _copy_in_a_loop(cache: str, task: str, source: str, seconds: float) -> None:
    from skillbase.harness.scratch import scratch_copy

    os.environ["SKILLBASE_CACHE"] = cache
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        scratch_copy(Path(task), source)


def test_two_tasks_with_one_file_name_and_one_source_get_scratch_folders_of_their_own(tmp_path, monkeypatch):
    """Every KernelBench task's kernel is `model.cu`: two tasks judged at once with the same source must not
    share a scratch folder, or one job would load the other task's spec. Two such tasks (large specs, so a
    rewrite in place would be caught between truncation and end) are copied over and over by two processes;
    each copy's spec read meanwhile is always its own task's, whole."""
    from skillbase.harness.scratch import scratch_copy

    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    rng = random.Random()
    source = f"// candidate {rng.randrange(10**9)}\n"
    specs = {}
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "k.cu").write_text("// k\n")
        spec = f"launcher: k\n# {side}\n" + "".join(f"# {rng.random()}\n" for _ in range(60_000))
        (tmp_path / side / "k.task.yaml").write_text(spec)
        specs[side] = spec
    copies = {side: scratch_copy(tmp_path / side / "k.cu", source) for side in ("a", "b")}
    assert copies["a"].parent != copies["b"].parent
    assert all(copies[side].read_text() == source for side in copies)
    unchanged = copies["a"].with_name("k.task.yaml").stat()
    assert scratch_copy(tmp_path / "a" / "k.cu", source) == copies["a"]     # the same again: nothing rewritten
    assert copies["a"].with_name("k.task.yaml").stat().st_mtime_ns == unchanged.st_mtime_ns
    context = multiprocessing.get_context("spawn")
    procs = [context.Process(target=_copy_in_a_loop, args=(str(tmp_path / "cache"), str(tmp_path / side / "k.cu"),
                                                           source, 3.0)) for side in ("a", "b")]
    for p in procs:
        p.start()
    while any(p.is_alive() for p in procs):
        for side, copy in copies.items():
            text = copy.with_name("k.task.yaml").read_text()
            assert text == specs[side], f"{side}: {len(text)} characters, not its own spec"
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert not list(copy.parent.glob(".*partial"))
