"""Batches on a Ray cluster write nothing from the nodes (issue 21): a local Ray cluster on this host
(two CPUs, two declared GPUs) whose every Python process refuses to open anything under the folder
holding the driver's run stores (batch_ray_kit/sitecustomize.py, shown to bite). `--no-gpu` batches
with the real nvcc: started on the cluster, judged there and resumed locally, and the other way
round, give the pending prompts and verdicts of the same batch run locally throughout; runs judged
at once on the cluster come back with every attempt id they name pointing at their own attempts;
a KernelBench member's first kernel reaches the task folder through the driver; a Ray worker killed
while it compiles a candidate leaves the store as it was (while it starts a run: only the run's
reserved number is used up). No Ray process outlives the module."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sqlite3
import threading
import time
import uuid
from pathlib import Path

import pytest

from skillbase.bench.suite import bench_dir
from skillbase.harness.jobs import Job, LocalExecutor
from skillbase.run.batch import BatchOutcome, resume_all, start_batch
from skillbase.run.pending import list_pending
from skillbase.run.store import RunStore
from skillbase.run.types import Settings

ray = pytest.importorskip("ray")
ray_executor = pytest.importorskip("skillbase.harness.ray_executor")

KIT = Path(__file__).resolve().parent / "batch_ray_kit"
OPS = ("relu", "gelu")
SETTINGS = Settings(rounds=2, repairs=1, agent="external", engine=False)   # --no-engine: see test_batch.py
pytestmark = [pytest.mark.nvcc, pytest.mark.skipif(shutil.which("nvcc") is None, reason="the jobs build with nvcc")]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The cluster, the folder its processes may not touch, where they note a try, and a suite."""
    root = tmp_path_factory.mktemp("batch_ray")
    off_limits, notes = root / "driver-only", root / "notes.txt"
    off_limits.mkdir()
    notes.touch()
    suite = root / "suite"
    for op in OPS:
        shutil.copytree(bench_dir() / "ops" / op, suite / "ops" / op)
    names = ("PYTHONPATH", "SKILLBASE_CACHE", "SKILLBASE_TEST_OFF_LIMITS", "SKILLBASE_TEST_OFF_LIMITS_NOTES")
    saved = {name: os.environ.get(name) for name in names}
    # The cluster's processes inherit this environment (this process started before it: it is not guarded).
    os.environ.update(PYTHONPATH=os.pathsep.join(p for p in (str(KIT), saved["PYTHONPATH"]) if p),
                      SKILLBASE_CACHE=str(root / "cache"), SKILLBASE_TEST_OFF_LIMITS=str(off_limits),
                      SKILLBASE_TEST_OFF_LIMITS_NOTES=str(notes))
    executor = ray_executor.RayExecutor(init_options={"num_cpus": 2, "num_gpus": 2})
    yield {"cluster": executor, "off_limits": off_limits, "notes": notes, "suite": suite}
    executor.close()
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    assert not ray.is_initialized()
    deadline = time.time() + 20
    while (left := _ray_processes()) and time.time() < deadline:
        time.sleep(0.5)
    assert not left, f"Ray processes outlived the module: {left}"


def _processes() -> dict[int, tuple[int, str, str]]:
    """Every process: pid -> (parent pid, name, command line)."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found[int(stat.parent.name)] = (int(text[text.rindex(")") + 2:].split()[1]),
                                        text[text.index("(") + 1:text.rindex(")")], command)
    return found


def _ray_processes() -> list[str]:
    """This process's descendants that belong to Ray."""
    table, mine, todo = _processes(), [], [os.getpid()]
    while todo:
        parent = todo.pop()
        for pid, (ppid, name, command) in table.items():
            if ppid == parent:
                todo.append(pid)
                if "ray" in (name + command).lower():
                    mine.append(name)
    return mine


# -- one batch, three ways ------------------------------------------------------------------------

def _candidate(suite: Path, op: str, step: int, broken: bool = False) -> str:
    source = (suite / "ops" / op / "fp32.cu").read_text()
    if broken:   # a build failure: the run asks the debugger for a repair
        source = source.replace("__global__", "__global__ this_does_not_compile", 1)
    return f"// {op}, answer {step}\n{source}"


# What the coder answers at each step: (operator -> (broken?, with a meta file?)).
ANSWERS = [{"relu": (False, True), "gelu": (True, True)},     # relu judged (round 0 done), gelu fails to build
           {"relu": (False, False), "gelu": (False, True)}]   # relu's round 1 (the run ends), gelu's repair


def _drive(world, name: str, executors: str) -> list[dict]:
    """Start a batch and answer it twice, each step on the executor `executors` names (L local, R Ray);
    what each step left, with this store's folder and the cluster's paths written as <store>."""
    store = world["off_limits"] / name / "store"
    chosen = {"L": LocalExecutor([]), "R": world["cluster"]}
    seen = [_seen(store, start_batch(SETTINGS, list(OPS), "fp32", gpu=False, store_path=store, suite=world["suite"],
                                     executor=chosen[executors[0]]))]
    for step, answers in enumerate(ANSWERS, start=1):
        for prompt in _pending(seen[-1]):
            broken, meta = answers[prompt["operator"]]
            Path(prompt["candidate"]).write_text(_candidate(world["suite"], prompt["operator"], step, broken))
            if meta:
                Path(prompt["meta"]).write_text(json.dumps({"model": "test-coder", "wall_s": 1.5 * step,
                                                            "reply_tokens": 100 + step}))
        seen.append(_seen(store, resume_all(store, executor=chosen[executors[step]])))
    _assert_linked(store)
    return [_normalised(state, store) for state in seen]


def _pending(state: dict) -> list[dict]:
    return state["outcome"]["pending"]


def _seen(store: Path, outcome: BatchOutcome) -> dict:
    """The batch's outcome, each pending prompt's text, and every attempt and verdict of the store."""
    document = outcome.to_json()
    document["members"].sort(key=lambda member: member["label"])
    opened = RunStore.open(store, read_only=True)
    try:
        runs = {}
        for run in sorted(opened.list_runs(), key=lambda r: r.id):
            calls = {c["attempt_id"]: c for c in opened.llm_calls(run.id)}
            runs[run.name] = {
                "status": run.status, "stop_reason": run.stop_reason, "task": run.task_path,
                "rounds": [(r["idx"], r["status"], r["outcome"]) for r in opened.rounds(run.id)],
                "attempts": [{key: a[key] for key in ("round_idx", "attempt_idx", "skill", "status", "kernel",
                                                      "parent_kernel")}
                             | {"llm": {key: calls[a["id"]][key] for key in ("role", "model", "prompt", "response",
                                                                             "prompt_tokens", "completion_tokens",
                                                                             "duration_s")}
                                if a["id"] in calls else None}
                             for a in opened.attempts(run.id)],
                "verdicts": {key: {k: v for k, v in (opened.step_result(run.id, key) or {}).items()
                                   if k in ("status", "reason", "source")}
                             for key in sorted(_step_keys(opened, run.id)) if key.endswith("/verdict")},
                "files": sorted(p.name for p in (store / "runs" / run.name).iterdir()),
            }
    finally:
        opened.close()
    prompts = [{**p, "text": Path(p["prompt"]).read_text()} for p in document["pending"]]
    document["pending"] = prompts
    # How long each judgement took (wall_s, phases_s) differs run to run; what was decided must not.
    document["members"] = [{k: v for k, v in m.items() if k not in ("wall_s", "phases_s")}
                           for m in document["members"]]
    return {"outcome": document, "runs": runs}


def _step_keys(store: RunStore, run_id: int) -> list[str]:
    return [json.loads(event["payload_json"])["key"]
            for event in store.events(run_id) if event["kind"] == "step-finished"]


def _normalised(state: dict, store: Path) -> dict:
    text = json.dumps(state, sort_keys=True).replace(str(store), "<store>")
    return json.loads(text)


def _assert_linked(store: Path) -> None:
    """Every attempt id a run's rows name is one of that run's attempts, the one its step key says."""
    opened = RunStore.open(store, read_only=True)
    try:
        for run in opened.list_runs():
            attempts = {a["id"]: (a["round_idx"], a["attempt_idx"]) for a in opened.attempts(run.id)}
            for call in opened.llm_calls(run.id):
                assert call["attempt_id"] in attempts, (run.name, dict(call))
            for key in _step_keys(opened, run.id):
                if key.endswith("/candidate") and key.startswith("r"):
                    round_part, _, attempt_part = key.removesuffix("/candidate").split("/")
                    named = opened.step_result(run.id, key)["attempt_id"]
                    assert attempts.get(named) == (int(round_part[1:]), int(attempt_part[1:])), (run.name, key)
            for event in opened.events(run.id):
                if event["kind"] == "attempt-finished":
                    assert json.loads(event["payload_json"])["attempt_id"] in attempts, (run.name, dict(event))
    finally:
        opened.close()


def test_the_guard_refuses_the_clusters_processes_the_driver_folder(world):
    secret = world["off_limits"] / "secret.txt"
    secret.write_text("the driver's")
    (peeked,) = world["cluster"].run([Job("peek", "batch_ray_kit:peek_payload", {"path": str(secret)})],
                                     lambda result: None)
    assert peeked.value is None and "PermissionError: off limits" in (peeked.error or "")
    assert str(secret) in world["notes"].read_text()
    world["notes"].write_text("")


def test_a_batch_on_the_cluster_matches_the_local_batch_either_way(world):
    local = _drive(world, "local", "LLL")
    # What the batch must go through, so that the comparison below means something.
    assert [p["key"] for p in _pending(local[0])] == ["r0/v0/a0"] * 2
    assert sorted((p["operator"], p["key"], p["kind"]) for p in _pending(local[1])) == [
        ("gelu", "r0/v0/a1", "debugger"), ("relu", "r1/v0/a0", "coder")]
    assert sorted(p["operator"] for p in _pending(local[2])) == ["gelu"]
    assert local[1]["outcome"]["counts"] == {"judged": 2} and local[2]["outcome"]["counts"] == {"judged": 2}
    assert [a["llm"]["model"] for run in local[2]["runs"].values() for a in run["attempts"]] == ["test-coder"] * 4

    started_there = _drive(world, "cluster-first", "RRL")
    started_here = _drive(world, "cluster-last", "LLR")
    for step, expected in enumerate(local):
        assert started_there[step] == expected, f"step {step}: started and judged on the cluster, resumed here"
        assert started_here[step] == expected, f"step {step}: started and judged here, resumed on the cluster"
    assert world["notes"].read_text() == "", "a process of the cluster touched the driver's store"


def _dump(store: Path) -> tuple[list[str], dict[str, str]]:
    """The database's every row (sqlite_sequence too) and every other file's digest."""
    db = sqlite3.connect(f"file:{store / 'runs.sqlite3'}?mode=ro", uri=True)
    try:
        rows = list(db.iterdump())
    finally:
        db.close()
    files = {p.relative_to(store).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(store.rglob("*")) if p.is_file() and not p.name.startswith("runs.sqlite3")}
    return rows, files


COMPILERS = {"nvcc", "cicc", "ptxas", "cudafe++", "cc1plus", "gcc", "g++", "fatbinary", "nvlink"}


def _without_waiting_notes(dump: tuple[list[str], dict[str, str]]) -> tuple[list[str], dict[str, str]]:
    """A dump without the `candidate-waiting` events (why a candidate is not judged yet) and the events table's
    sequence counter they advance."""
    rows, files = dump
    return [r for r in rows if "candidate-waiting" not in r and "'events'" not in r], files


def _kill_workers_while_compiling(times: int, stop: threading.Event, killed: list[int]) -> None:
    """SIGKILL the Ray worker whose job process (`python -m skillbase.harness.jobs`) has a compiler
    running below it, `times` times (each a new worker: Ray retries the job on another)."""
    while len(killed) < times and not stop.is_set():
        table = _processes()
        for ppid, name, _ in table.values():
            if name not in COMPILERS:
                continue
            chain, up = [], ppid
            while up in table and up > 1:
                chain.append(up)
                up = table[up][0]
            job = next((p for p in chain if "skillbase.harness.jobs" in table[p][2]), None)
            worker = table[job][0] if job is not None else None
            if worker is not None and worker not in killed and worker in table:
                os.kill(worker, signal.SIGKILL)
                killed.append(worker)
                break
        time.sleep(0.02)


def test_a_worker_killed_while_judging_leaves_the_store_as_it_was(world):
    store = world["off_limits"] / "killed" / "store"
    started = start_batch(SETTINGS, ["relu"], "fp32", gpu=False, store_path=store, suite=world["suite"],
                          executor=world["cluster"])
    (prompt,) = started.pending
    # A source never built before (the build cache would skip the compiler this test waits for).
    prompt.candidate_path.write_text(f"// {uuid.uuid4()}\n" + _candidate(world["suite"], "relu", 1))
    before = _dump(store)
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_workers_while_compiling, args=(2, stop, killed), daemon=True)
    killer.start()
    try:
        lost = resume_all(store, executor=world["cluster"])
    finally:
        stop.set()
        killer.join()
    assert len(killed) == 2, "the job was never caught compiling"
    (member,) = lost.members
    assert member.action == "interrupted" and member.reason.startswith(
        "interrupted: the Ray worker died running this job (2 attempts)")
    # Nothing judged, nothing half-written: the one change is the note `pending` gives as the reason.
    assert _without_waiting_notes(_dump(store)) == _without_waiting_notes(before)
    (still,) = list_pending(store)
    assert still.waiting == member.reason
    # Nothing was lost either: the candidate is judged by the next resume, here.
    judged = resume_all(store, executor=LocalExecutor([]))
    assert [(m.run, m.action) for m in judged.members] == [(prompt.run, "judged")]
    assert world["notes"].read_text() == ""


def test_a_kernelbench_member_writes_its_first_kernel_through_the_driver(world):
    """A generator run's passing answer becomes the task's model.cu: written on the node into the task
    folder's copy, and by the driver into the task folder (which the cluster may not touch either)."""
    from skillbase.kernelbench.importer import import_problems
    from skillbase.run.batch import start_kernelbench_batch

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"
    tasks, store = world["off_limits"] / "kb" / "tasks", world["off_limits"] / "kb" / "store"
    import_problems(fixtures, tasks, problems=("2_ReLU",))
    settings = Settings(rounds=1, repairs=1, agent="external")
    started = start_kernelbench_batch(settings, tasks, gpu=False, store_path=store, executor=world["cluster"])
    (prompt,) = started.pending
    assert (prompt.kind, prompt.key) == ("generator", "g/a0") and prompt.prompt_path.is_relative_to(store)
    kernel = tasks / "level1_2_ReLU" / "model.cu"
    answer = (fixtures / "kernels" / "relu.cu").read_text()
    prompt.candidate_path.write_text(answer)
    resumed = resume_all(store, executor=world["cluster"])
    (member,) = resumed.members
    assert member.action == "judged" and member.reason.startswith("g/a0: unverified: compiled"), member
    assert kernel.read_text() == answer
    opened = RunStore.open(store, read_only=True)
    try:
        run = opened.get_run(prompt.run_id)
        assert (run.status, run.task_path, run.manifest["task_path"]) == ("finished", str(kernel), str(kernel))
        assert run.manifest["task_digest"] == hashlib.sha256(answer.encode()).hexdigest()[:16]
    finally:
        opened.close()
    assert world["notes"].read_text() == ""


def test_a_worker_killed_while_starting_a_run_leaves_only_its_number_unused(world, tmp_path):
    suite = tmp_path / "suite"
    shutil.copytree(world["suite"] / "ops" / "relu", suite / "ops" / "relu")
    kernel = suite / "ops" / "relu" / "fp32.cu"
    kernel.write_text(f"// {uuid.uuid4()}\n" + kernel.read_text())    # never built: the start compiles it
    store = world["off_limits"] / "killed-start" / "store"
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_workers_while_compiling, args=(2, stop, killed), daemon=True)
    killer.start()
    try:
        lost = start_batch(SETTINGS, ["relu"], "fp32", gpu=False, store_path=store, suite=suite,
                           executor=world["cluster"])
    finally:
        stop.set()
        killer.join()
    assert len(killed) == 2, "the job was never caught compiling"
    (member,) = lost.members
    assert member.action == "interrupted" and member.reason.startswith(
        "interrupted: the Ray worker died running this job (2 attempts)")
    rows, files = _dump(store)
    assert not [row for row in rows if row.startswith(('INSERT INTO "runs"', 'INSERT INTO "events"'))]
    assert not [name for name in files if name.startswith("runs/")]
    assert 'INSERT INTO "sqlite_sequence" VALUES(\'runs\',1);' in rows   # run_1 was reserved for it
    # The next resume starts the member, under the next number.
    started = resume_all(store, executor=LocalExecutor([]))
    assert [(m.run, m.action) for m in started.members] == [("run_2", "started")]
    assert world["notes"].read_text() == ""


def test_work_on_a_run_that_changed_meanwhile_is_not_recorded(world):
    """Two workers on one run (a second `resume --all` elsewhere): the driver finds the run written to
    since its copy left, and records nothing of the job's work rather than mixing the two."""
    from skillbase.run.transfer import Shipment

    store_path = world["off_limits"] / "meanwhile" / "store"
    started = start_batch(SETTINGS, ["relu"], "fp32", gpu=False, store_path=store_path, suite=world["suite"],
                          executor=world["cluster"])
    (prompt,) = started.pending
    job = Job("advance-run", "skillbase.run.batch:advance_payload",
              {"store": str(store_path), "run": prompt.run_id, "candidate": _candidate(world["suite"], "relu", 1),
               "key": prompt.key, "reply": None}, label=prompt.run)
    store = RunStore.open(store_path)
    try:
        with Shipment(store) as shipment:
            (done,) = world["cluster"].run(shipment.ship([job]), lambda result: None)
            assert done.error is None and done.value["rows"] is not None    # judged on the node
            store.note_waiting(prompt.run_id, prompt.key, "written meanwhile by another resume")
            before = _dump(store_path)
            settled = shipment.settle(done)
    finally:
        store.close()
    assert settled.value is None and settled.error.startswith(
        f"{prompt.run}: its work could not be recorded: {prompt.run} changed in the store at {store_path} while a job")
    assert _dump(store_path) == before
    assert world["notes"].read_text() == ""
