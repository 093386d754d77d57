"""tools/kernelbench_trip.sh: one trip of a KernelBench batch to the GPU machine and back, as the session runs
it, with this machine playing both sides (two store folders, the device's emptied between trips as a fresh
machine's is). On the CPU the batch is compile-only (NO_GPU=1); the GPU test at the end runs the session's
own flow: the batch started here with --defer-baselines, its first answers judged and PyTorch timed by one trip.

    python -m pytest -q -p no:cacheprovider tests/kernelbench/test_trip.py            # CPU
    python -m pytest -q -p no:cacheprovider -m gpu tests/kernelbench/test_trip.py     # H200
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from skillbase.kernelbench.importer import import_problems
from skillbase.run.pending import list_pending
from skillbase.run.store import RunStore

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "kernelbench"
RELU = (FIXTURES / "kernels" / "relu.cu").read_text()
PROBLEMS = ("2_ReLU", "2_Gemm_Scale_ReLU")


def skillbase(*argv) -> str:
    done = subprocess.run([sys.executable, "-m", "skillbase", *map(str, argv)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def trip(tmp: Path, name: str, **settings: str) -> subprocess.CompletedProcess:
    """The script as the device runs it (repo root, its own $OUT), skillbase already installed (SETUP=skip)."""
    env = {**os.environ, "SETUP": "skip", "OUT": str(tmp / name), "STORE": str(tmp / "device" / "kbstore"),
           "LIMIT": "300", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", **settings}
    return subprocess.run(["bash", "tools/kernelbench_trip.sh"], cwd=REPO, env=env, capture_output=True, text=True)


def steps(out: Path) -> dict[str, int]:
    """Each step's exit status, as trip.log records it."""
    lines = (out / "trip.log").read_text().splitlines()
    return {line[3:].split(" rc=")[0]: int(line.split(" rc=")[1].split()[0]) for line in lines if " rc=" in line}


def batch_json(out: Path) -> dict:
    """The JSON document the trip's batch command printed into trip.log."""
    text = (out / "trip.log").read_text()
    start = text.index("\n{\n") + 1
    return json.loads(text[start:text.index("\n}\n", start) + 2])


@pytest.fixture()
def tasks(tmp_path) -> Path:
    """The imported tasks as the session makes them here: kb_tasks/ under a folder (the store's, later)."""
    out = tmp_path / "here-import" / "kb_tasks"
    report = import_problems(FIXTURES, out, problems=PROBLEMS)
    assert len(report.imported) == 2, report.to_json()
    return out


def test_a_start_trip_and_a_resume_trip_carry_the_tasks_the_answers_and_the_first_kernels(tasks, tmp_path):
    archive = tmp_path / "kb_tasks.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tasks, "kb_tasks")
    started = trip(tmp_path, "out1", STEP="start", NO_GPU="1", TASKS=str(archive), ROUNDS="1")
    assert started.returncode == 0, started.stdout + started.stderr
    out1 = tmp_path / "out1"
    assert steps(out1) == {"kernelbench optimize": 0, "pending": 0}
    assert batch_json(out1)["counts"] == {"started": 2}

    # here: the coders' side of the trip; every path of the store now points into this store's folder
    here = tmp_path / "here"
    skillbase("store", "unpack", out1 / "store.tar.gz", "--store", here)
    prompts = {p.operator: p for p in list_pending(here)}
    assert sorted(prompts) == ["level1_2_ReLU", "level2_2_Gemm_Scale_ReLU"]
    assert all(p.prompt_path.is_file() and p.candidate_path.parent.is_dir() and here in p.prompt_path.parents
               for p in prompts.values())
    runs = RunStore.open(here)
    assert {Path(r.task_path).parent.parent for r in runs.list_runs()} == {here / "kb_tasks"}
    runs.close()
    prompts["level1_2_ReLU"].candidate_path.write_text(RELU)
    answers = tmp_path / "kb_answers.tar.gz"
    skillbase("store", "pack", answers, "--store", here, "--without-reports")

    shutil.rmtree(tmp_path / "device")        # a fresh machine: only the archive brings the store and tasks
    resumed = trip(tmp_path, "out2", STEP="resume", ANSWERS=str(answers))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    out2 = tmp_path / "out2"
    assert steps(out2) == {"unpack": 0, "resume --all": 0, "pending": 0}
    judged = {m["label"]: m for m in batch_json(out2)["members"]}
    assert judged["run_1"]["action"] == "judged" and judged["run_1"]["reason"].startswith("g/a0: unverified")
    assert judged["run_2"]["action"] == "waiting" and judged["run_2"]["reason"].startswith("missing: no run_2.cu")

    # back here, the first kernel the device wrote is in its task, so the next trip's rounds find it
    skillbase("store", "unpack", out2 / "store.tar.gz", "--store", here, "--force")
    assert (here / "kb_tasks" / "level1_2_ReLU" / "model.cu").read_text() == RELU
    assert not (here / "kb_tasks" / "level2_2_Gemm_Scale_ReLU" / "model.cu").exists()
    assert [(p.run, p.key) for p in list_pending(here)] == [("run_2", "g/a0")]


def compile_only_trip(tasks: Path, tmp_path: Path) -> None:
    """A compile-only batch started by a first trip (its store in out1/store.tar.gz), the device then emptied."""
    archive = tmp_path / "kb_tasks.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tasks, "kb_tasks")
    started = trip(tmp_path, "out1", STEP="start", NO_GPU="1", TASKS=str(archive), ROUNDS="1")
    assert started.returncode == 0, started.stdout + started.stderr
    shutil.rmtree(tmp_path / "device")


def test_a_baselines_trip_unpacks_the_answers_runs_kernelbench_baselines_and_packs_the_store_back(tasks, tmp_path):
    """STEP=baselines on the CPU: a compile-only batch has no PyTorch times to add to (each member says so); the
    GPU side (torch.compile timed into each member) is tests/kernelbench/test_baselines.py's, with a double."""
    compile_only_trip(tasks, tmp_path)
    done = trip(tmp_path, "out2", STEP="baselines", ANSWERS=str(tmp_path / "out1" / "store.tar.gz"))
    assert done.returncode == 0, done.stdout + done.stderr
    out2 = tmp_path / "out2"
    assert steps(out2) == {"unpack": 0, "kernelbench baselines": 0, "pending": 0}
    members = batch_json(out2)["members"]
    assert [(m["label"], m["action"]) for m in members] == [("run_1", "left-alone"), ("run_2", "left-alone")]
    assert all(m["reason"].endswith("compile-only batch (--no-gpu): no PyTorch times") for m in members)
    assert (out2 / "store.tar.gz").is_file()


def test_a_baselines_and_resume_trip_unpacks_once_and_runs_both_steps(tasks, tmp_path):
    """STEP=baselines+resume: one unpack, `kernelbench baselines` with its share of the time, then `resume --all`
    (what a session needs when members owe PyTorch times and answers wait); RETRY_FAILED=1 passes --retry-failed."""
    compile_only_trip(tasks, tmp_path)
    done = trip(tmp_path, "out2", STEP="baselines+resume", ANSWERS=str(tmp_path / "out1" / "store.tar.gz"),
                BASELINES_SHARE="40", RETRY_FAILED="1")
    assert done.returncode == 0, done.stdout + done.stderr
    out2 = tmp_path / "out2"
    assert list(steps(out2)) == ["unpack", "kernelbench baselines", "resume --all", "pending"]
    assert set(steps(out2).values()) == {0}
    log = (out2 / "trip.log").read_text()
    command = next(line for line in log.splitlines() if line.startswith("== kernelbench baselines ("))
    limit = int(command.split("--time-limit ")[1].split()[0])
    assert 0 < limit <= 300 * 40 // 100 and command.endswith("--json --retry-failed")
    assert (out2 / "store.tar.gz").is_file()


def test_a_trip_refuses_a_missing_archive_or_a_start_over_a_store_with_one_line_before_installing(tmp_path):
    nothing = tmp_path / "nothing.tar.gz"
    for step, setting in (("resume", "ANSWERS"), ("start", "TASKS")):
        done = trip(tmp_path, "out", STEP=step, SETUP="", **{setting: str(nothing)})
        assert (done.returncode, done.stdout) == (
            2, f"no {nothing}: carry it (the device tool's carry) or name it (ANSWERS=, TASKS=)\n")
    nothing.write_bytes(b"")
    (tmp_path / "device" / "kbstore").mkdir(parents=True)
    (tmp_path / "device" / "kbstore" / "runs.sqlite3").write_bytes(b"")
    done = trip(tmp_path, "out", STEP="start", SETUP="", TASKS=str(nothing))
    assert (done.returncode, done.stdout) == (
        2, f"{tmp_path / 'device' / 'kbstore'} holds a store already: STEP=resume continues it\n")
    done = trip(tmp_path, "out", STEP="judge")
    assert (done.returncode, done.stdout) == (2, "STEP is start, resume, baselines or baselines+resume\n")
    assert not (tmp_path / "out").exists()      # refused before the install (SETUP="" would run it)


@pytest.mark.gpu
def test_on_the_gpu_the_first_trip_of_a_deferred_batch_judges_the_first_kernels_and_times_pytorch(tasks, tmp_path):
    """The session's flow: the batch started here without a GPU (--defer-baselines), its tasks inside the store;
    one resume trip judges the answered member (verified) and times PyTorch for it."""
    here = tmp_path / "here"
    shutil.copytree(tasks, here / "kb_tasks")
    skillbase("kernelbench", "optimize", here / "kb_tasks", "--agent", "external", "--defer-baselines", "--rounds",
              "1", "--store", here)
    prompts = {p.operator: p for p in list_pending(here)}
    prompts["level1_2_ReLU"].candidate_path.write_text(RELU)
    answers = tmp_path / "kb_answers.tar.gz"
    skillbase("store", "pack", answers, "--store", here, "--without-reports")
    resumed = trip(tmp_path, "out", STEP="resume", ANSWERS=str(answers))
    assert resumed.returncode == 0 and steps(tmp_path / "out")["resume --all"] == 0, resumed.stdout
    skillbase("store", "unpack", tmp_path / "out" / "store.tar.gz", "--store", here, "--force")
    report = json.loads(skillbase("kernelbench", "report", "--store", here, "--json"))
    relu = next(p for p in report["problems"] if p["task"] == "level1_2_ReLU")
    assert relu["verified"] and relu["eager_us"] > 0 and relu["compile_us"] > 0 and relu["speedup_vs_eager"], relu
    assert (here / "kb_tasks" / "level1_2_ReLU" / "model.cu").read_text() == RELU
