"""`skillbase kernelbench optimize`: one batch of generator runs over imported KernelBench tasks,
advanced by `pending` / `resume --all` like every batch, and `kernelbench report` on it. On the CPU
(`--no-gpu`: built and statically checked, never verified), through the real CLI and a real store;
the GPU test at the end runs the same flow verified and timed against PyTorch eager and torch.compile.

    python -m pytest -q -p no:cacheprovider tests/kernelbench/test_batch.py            # CPU
    python -m pytest -q -p no:cacheprovider -m gpu tests/kernelbench/test_batch.py     # H200
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from skillbase.cli import cli
from skillbase.documents import DOCUMENTS, schema_path
from skillbase.errors import InputError
from skillbase.harness.jobs import NOT_STARTED, Job, JobResult
from skillbase.kernelbench.importer import import_problems
from skillbase.run.batch import PYTORCH_STEP, resume_all, start_kernelbench_batch
from skillbase.run.pending import list_pending
from skillbase.run.store import RunStore
from skillbase.run.types import Settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"
KERNELS = FIXTURES / "kernels"
PROBLEMS = ("1_Matmul", "2_ReLU", "2_Gemm_Scale_ReLU")


def invoke(*argv: str):
    result = CliRunner().invoke(cli, [str(a) for a in argv], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def run_cli(*argv) -> subprocess.CompletedProcess:
    """The installed command line in its own process: exit codes and one-line errors as a user sees them."""
    return subprocess.run([sys.executable, "-m", "skillbase", *map(str, argv)], capture_output=True, text=True)


def document(*argv: str) -> dict:
    return json.loads(invoke(*argv, "--json").stdout)


def validate(kind: str, data: dict) -> None:
    jsonschema.Draft202012Validator(json.loads(schema_path(kind).read_text())).validate(data)
    assert data["schema_version"] == DOCUMENTS[kind]


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("kb") / "tasks"
    report = import_problems(FIXTURES, out, problems=PROBLEMS)
    assert sorted(p.problem for p in report.imported) == \
        ["level1/1_Matmul.py", "level1/2_ReLU.py", "level2/2_Gemm_Scale_ReLU.py"], report.to_json()
    return out


@pytest.fixture()
def tasks(imported, tmp_path) -> Path:
    """A fresh copy of the three imported tasks (the batch writes model.cu into them)."""
    return Path(shutil.copytree(imported, tmp_path / "tasks"))


def by_task(runs: RunStore) -> dict[str, object]:
    return {m.operator: runs.get_run(m.run_id) for m in runs.batch_members()}


def test_the_batch_waits_at_one_generator_prompt_per_task_and_resume_all_judges_each(tasks, tmp_path):
    store = tmp_path / "store"
    started = document("kernelbench", "optimize", tasks, "--agent", "external", "--no-gpu", "--rounds", "1",
                       "--repairs", "1", "--store", store)
    validate("batch", started)
    assert started["batch"] == "batch_1" and started["counts"] == {"started": 3}
    prompts = list_pending(store)
    assert sorted((p.kind, p.key, p.skill) for p in prompts) == [("generator", "g/a0", "generator")] * 3
    assert {p.batch for p in prompts} == {"batch_1"}
    assert all("Write the FIRST CUDA version" in p.prompt_path.read_text() for p in prompts)
    assert not any((tasks / name / "model.cu").exists() for name in ("level1_1_Matmul", "level1_2_ReLU"))

    runs = RunStore.open(store)
    try:
        members = by_task(runs)
    finally:
        runs.close()
    relu, matmul, gemm = (members[n].name for n in ("level1_2_ReLU", "level1_1_Matmul", "level2_2_Gemm_Scale_ReLU"))
    candidates = {p.run: p.candidate_path for p in prompts}
    candidates[relu].write_text((KERNELS / "relu.cu").read_text())                       # correct
    candidates[matmul].write_text("import torch\n\ndef forward(a, b):\n    return a @ b\n")  # not CUDA
    resumed = document("resume", "--all", "--store", store)
    validate("batch", resumed)
    actions = {m["run"]: (m["action"], m["reason"]) for m in resumed["members"]}
    assert actions[relu][0] == "judged" and actions[relu][1].startswith("g/a0: unverified: compiled")
    assert actions[matmul] == ("waiting", f"not CUDA: {matmul}.cu defines no __global__ kernel")
    assert actions[gemm] == ("waiting", f"missing: no {gemm}.cu in {candidates[gemm].parent}")

    # the passing answer became the task's kernel and its run went on to the rounds; the others still wait
    assert (tasks / "level1_2_ReLU" / "model.cu").read_text() == (KERNELS / "relu.cu").read_text()
    assert not (tasks / "level1_1_Matmul" / "model.cu").exists()
    assert not (tasks / "level2_2_Gemm_Scale_ReLU" / "model.cu").exists()
    runs = RunStore.open(store)
    try:
        states = {name: (str(runs.shown_status(run)), bool(run.manifest.get("task_digest")))
                  for name, run in by_task(runs).items()}
    finally:
        runs.close()
    assert states == {"level1_2_ReLU": ("finished", True), "level1_1_Matmul": ("paused", False),
                      "level2_2_Gemm_Scale_ReLU": ("paused", False)}
    waiting = {p.run: (p.kind, p.key) for p in list_pending(store)}
    assert waiting == {matmul: ("generator", "g/a0"), gemm: ("generator", "g/a0")}

    report = document("kernelbench", "report", "--store", store)
    validate("kernelbench-report", report)
    assert report["batches"] == [{"batch": "batch_1", "agent": "external", "gpu": False, "tasks": str(tasks.resolve()),
                                  "problems": 3}]
    problems = {p["task"]: p for p in report["problems"]}
    assert [p["problem"] for p in report["problems"]] == \
        ["level1/1_Matmul.py", "level1/2_ReLU.py", "level2/2_Gemm_Scale_ReLU.py"]
    assert problems["level1_2_ReLU"]["generator_tries"] == 1 and problems["level1_1_Matmul"]["generator_tries"] == 0
    # compile-only: nothing is verified, so nothing is fast and there is no geomean (fast_p counts every problem)
    assert all(not p["verified"] and p["speedup_vs_eager"] is None for p in report["problems"])
    assert all(p["reason"] == "compile-only batch (--no-gpu): not verified or timed" for p in report["problems"])
    assert [(lv["level"], lv["problems"], lv["verified"], lv["fast_p"]["fast_0"], lv["geomean_speedup_vs_eager"])
            for lv in report["levels"]] == [(1, 2, 0, 0.0, None), (2, 1, 0, 0.0, None)]
    # a KernelBench batch is not a bench batch: `bench optimize-report` leaves it to `kernelbench report`
    assert document("bench", "optimize-report", "--store", store)["runs"] == []


def test_problems_pick_tasks_and_a_written_kernel_or_no_coder_is_refused_before_anything_is_recorded(tasks,
                                                                                                    tmp_path):
    store = tmp_path / "store"
    started = document("kernelbench", "optimize", tasks, "--agent", "external", "--no-gpu", "--store", store,
                       "--problems", "level1/2", "--problems", "level2_2_Gemm_Scale_ReLU")
    assert started["counts"] == {"started": 2}
    assert sorted(p.operator for p in list_pending(store)) == ["level1_2_ReLU", "level2_2_Gemm_Scale_ReLU"]

    (tasks / "level1_1_Matmul" / "model.cu").write_text("// mine\n")
    other = tmp_path / "other"
    done = run_cli("kernelbench", "optimize", tasks, "--agent", "external", "--no-gpu", "--store", other)
    assert done.returncode == 2 and done.stderr.splitlines()[0] == (
        "error: 1 task(s) already have a model.cu (level1_1_Matmul); the batch writes each first kernel")
    assert (tasks / "level1_1_Matmul" / "model.cu").read_text() == "// mine\n" and not other.exists()
    done = run_cli("kernelbench", "optimize", tasks, "--agent", "external", "--no-gpu", "--store", other,
                   "--problems", "level3/7")
    assert done.returncode == 2 and done.stderr.splitlines()[0] == f"error: {tasks}: no imported task level3/7"
    done = run_cli("kernelbench", "optimize", tasks, "--agent", "none", "--no-gpu")
    assert done.returncode == 2 and "'none' is not one of 'external', 'openai'" in done.stderr
    done = run_cli("kernelbench", "report", "--store", store, "batch_9")
    assert done.returncode != 0 and "batch_9" in done.stderr.splitlines()[0] and "Traceback" not in done.stderr


def test_stop_at_floor_reaches_every_member_and_a_share_outside_0_to_1_is_refused(tasks, tmp_path):
    # each member's manifest settings are what its loop and `resume --all` decide with: the CLI's default if not given
    store = tmp_path / "store"
    document("kernelbench", "optimize", tasks, "--agent", "external", "--no-gpu", "--store", store,
             "--problems", "level1/2", "--problems", "level2/2", "--stop-at-floor", "0.5")
    runs = RunStore.open(store)
    assert runs.get_batch("batch_1").settings["settings"]["stop_at_floor"] == 0.5
    assert sorted(r.manifest["settings"]["stop_at_floor"] for r in by_task(runs).values()) == [0.5, 0.5]
    runs.close()
    other = tmp_path / "other"
    document("kernelbench", "optimize", tasks, "--agent", "external", "--no-gpu", "--store", other,
             "--problems", "level1/1")
    runs = RunStore.open(other)
    assert [r.manifest["settings"]["stop_at_floor"] for r in by_task(runs).values()] == [0.75]
    runs.close()
    done = run_cli("kernelbench", "optimize", tasks, "--agent", "external", "--no-gpu", "--store", tmp_path / "x",
                   "--stop-at-floor", "1.5")
    assert done.returncode == 2 and "--stop-at-floor" in done.stderr and not (tmp_path / "x").exists()
    # the library refuses it too, before anything is recorded
    with pytest.raises(InputError, match="is not a share of the roofline floor"):
        start_kernelbench_batch(Settings(agent="external", stop_at_floor=-0.1), tasks, gpu=False,
                                store_path=tmp_path / "y")
    assert not (tmp_path / "y").exists()


def test_with_openai_each_member_gets_its_first_kernel_from_the_endpoint_then_its_rounds(tasks, tmp_path,
                                                                                         monkeypatch):
    from llm_server import ScriptedLLM, Step

    store = tmp_path / "store"
    reply = f"Here it is.\n```cuda\n{(KERNELS / 'relu.cu').read_text()}```\n"
    with ScriptedLLM([Step(reply)]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        started = document("kernelbench", "optimize", tasks, "--agent", "openai", "--model", "m", "--no-gpu",
                           "--rounds", "1", "--store", store, "--problems", "level1/2")
        (request,) = server.requests
    assert "Write the FIRST CUDA version" in request["messages"][-1]["content"]
    assert started["counts"] == {"started": 1} and started["pending"] == []
    assert (tasks / "level1_2_ReLU" / "model.cu").read_text() == (KERNELS / "relu.cu").read_text()
    (problem,) = document("kernelbench", "report", "--store", store)["problems"]
    assert (problem["task"], problem["status"]) == ("level1_2_ReLU", "finished")


class RecordingExecutor:
    """Reports every job handed to it as not started (a time limit reached at once), keeping the jobs: what
    `resume --all` asks of the GPU workers, without a GPU here."""

    remote = False

    def __init__(self) -> None:
        self.jobs: list[Job] = []

    def run(self, jobs, on_result):
        self.jobs.extend(jobs)
        results = [JobResult(i, job, None, error=NOT_STARTED) for i, job in enumerate(jobs)]
        for result in results:
            on_result(result)
        return results


def test_a_deferred_start_writes_every_generator_prompt_without_a_gpu_and_judging_times_pytorch_first(tasks,
                                                                                                     tmp_path):
    """--defer-baselines: the batch is a GPU batch whose start needs no GPU (only prompts are written); each
    member owes its PyTorch times, taken by the job that judges its first answer and never again."""
    store = tmp_path / "store"
    started = document("kernelbench", "optimize", tasks, "--agent", "external", "--defer-baselines", "--rounds",
                       "1", "--store", store, "--problems", "level1/2", "--problems", "level2/2")
    assert started["counts"] == {"started": 2}
    prompts = {p.operator: p for p in list_pending(store)}
    assert sorted(prompts) == ["level1_2_ReLU", "level2_2_Gemm_Scale_ReLU"]
    assert {(p.kind, p.key) for p in prompts.values()} == {("generator", "g/a0")}
    runs = RunStore.open(store)
    batch = runs.get_batch("batch_1").settings
    assert (batch["gpu"], batch["compile"], batch["defer_baselines"]) == (True, True, True)
    members = by_task(runs)
    assert all(r.manifest["gpu_run"] and runs.step_result(r.id, PYTORCH_STEP) is None for r in members.values())
    runs.close()
    relu, gemm = members["level1_2_ReLU"], members["level2_2_Gemm_Scale_ReLU"]

    # only the answered member is judged, and its job takes the owed baselines (compile too) first
    prompts["level1_2_ReLU"].candidate_path.write_text((KERNELS / "relu.cu").read_text())
    executor = RecordingExecutor()
    outcome = resume_all(store, executor=executor)
    (job,) = executor.jobs
    assert (job.payload["run"], job.payload["key"], job.payload["baselines_compile"]) == (relu.id, "g/a0", True)
    assert [(m.label, m.action) for m in outcome.members] == [("run_2", "waiting"), ("run_1", "deferred")]

    # once recorded (as that job records them on the GPU) they are not owed again
    runs = RunStore.open(store)
    with runs.transaction() as tx:
        tx.finish_step(relu.id, PYTORCH_STEP, {"eager": 10.0, "compile": 8.0})
    runs.close()
    prompts["level2_2_Gemm_Scale_ReLU"].candidate_path.write_text((KERNELS / "relu.cu").read_text())
    executor = RecordingExecutor()
    resume_all(store, executor=executor)
    assert sorted((j.payload["run"], j.payload["baselines_compile"]) for j in executor.jobs) == \
        [(relu.id, None), (gemm.id, True)]

    # a batch timed at its start owes nothing (compile-only here: it times no baselines at all)
    other = tmp_path / "other"
    fresh = Path(shutil.copytree(tasks, tmp_path / "fresh", ignore=shutil.ignore_patterns("model.cu")))
    document("kernelbench", "optimize", fresh, "--agent", "external", "--no-gpu", "--store", other,
             "--problems", "level1/2")
    (prompt,) = list_pending(other)
    prompt.candidate_path.write_text((KERNELS / "relu.cu").read_text())
    executor = RecordingExecutor()
    resume_all(other, executor=executor)
    assert [j.payload["baselines_compile"] for j in executor.jobs] == [None]


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="on a GPU machine judging proceeds")
def test_without_a_gpu_a_deferred_batch_is_judged_nowhere_and_its_answers_stay(tasks, tmp_path):
    store = tmp_path / "store"
    document("kernelbench", "optimize", tasks, "--agent", "external", "--defer-baselines", "--store", store,
             "--problems", "level1/2")
    (prompt,) = list_pending(store)
    prompt.candidate_path.write_text((KERNELS / "relu.cu").read_text())
    done = run_cli("resume", "--all", "--store", store)
    assert done.returncode != 0 and done.stderr.splitlines()[0].startswith("error: no NVIDIA GPU found")
    assert "Traceback" not in done.stderr
    assert prompt.candidate_path.read_text() == (KERNELS / "relu.cu").read_text()
    assert [(p.run, p.key) for p in list_pending(store)] == [("run_1", "g/a0")]


def test_defer_baselines_is_refused_without_an_external_coder_or_with_no_gpu(tasks, tmp_path):
    store = tmp_path / "store"
    done = run_cli("kernelbench", "optimize", tasks, "--agent", "openai", "--defer-baselines", "--store", store)
    assert done.returncode == 2 and done.stderr.splitlines()[0] == (
        "error: --defer-baselines needs --agent external (openai writes and judges each first kernel at once, "
        "on the GPU)")
    done = run_cli("kernelbench", "optimize", tasks, "--agent", "external", "--no-gpu", "--defer-baselines",
                   "--store", store)
    assert done.returncode == 2 and done.stderr.splitlines()[0] == (
        "error: --defer-baselines with --no-gpu: a compile-only batch times no PyTorch baselines")
    assert not store.exists()


@pytest.mark.gpu
def test_on_the_gpu_the_report_scores_the_verified_kernel_against_pytorch_eager_and_compile(tasks, tmp_path):
    """ReLU answered with a correct kernel, the fused GEMM with ReLU's (it fails; its debugger's repair is
    left unanswered): ReLU is verified and timed, its speedups are the recorded times' ratios, and the
    level scores count the unverified problems as not fast."""
    store = tmp_path / "store"
    document("kernelbench", "optimize", tasks, "--agent", "external", "--rounds", "1", "--repairs", "1",
             "--store", store, "--problems", "level1/2", "--problems", "level2/2")
    prompts = {p.operator: p for p in list_pending(store)}
    prompts["level1_2_ReLU"].candidate_path.write_text((KERNELS / "relu.cu").read_text())
    prompts["level2_2_Gemm_Scale_ReLU"].candidate_path.write_text((KERNELS / "relu.cu").read_text())  # another task's
    document("resume", "--all", "--store", store)
    report = document("kernelbench", "report", "--store", store)
    validate("kernelbench-report", report)
    relu, gemm = report["problems"]
    assert relu["verified"] and relu["kernel_us"] > 0 and relu["eager_us"] > 0 and relu["compile_us"] > 0, relu
    assert math.isclose(relu["speedup_vs_eager"], relu["eager_us"] / relu["kernel_us"])
    assert math.isclose(relu["speedup_vs_compile"], relu["compile_us"] / relu["kernel_us"])
    assert not gemm["verified"] and gemm["speedup_vs_eager"] is None and gemm["reason"]
    level1, level2 = report["levels"]
    assert level1["fast_p"]["fast_0"] == 1.0 and level1["geomean_over"] == 1
    assert math.isclose(level1["geomean_speedup_vs_eager"], relu["speedup_vs_eager"])
    assert level1["fast_p"]["fast_1"] == (1.0 if relu["speedup_vs_eager"] > 1 else 0.0)
    assert level2["fast_p"]["fast_0"] == 0.0 and level2["geomean_speedup_vs_eager"] is None


@pytest.mark.gpu
def test_on_the_gpu_a_deferred_batch_times_pytorch_when_it_judges_the_first_answers(tasks, tmp_path):
    """Started with --defer-baselines (prompts only), the first `resume --all` times each answered member's
    PyTorch eager and torch.compile before judging it, whether the answer passes (ReLU) or not (the fused
    GEMM answered with ReLU's kernel); the report then scores ReLU against those times."""
    store = tmp_path / "store"
    document("kernelbench", "optimize", tasks, "--agent", "external", "--defer-baselines", "--rounds", "1",
             "--repairs", "1", "--store", store, "--problems", "level1/2", "--problems", "level2/2")
    report = document("kernelbench", "report", "--store", store)
    assert all(p["eager_us"] is None for p in report["problems"])
    for prompt in list_pending(store):
        prompt.candidate_path.write_text((KERNELS / "relu.cu").read_text())
    document("resume", "--all", "--store", store)
    relu, gemm = document("kernelbench", "report", "--store", store)["problems"]
    assert relu["verified"] and relu["eager_us"] > 0 and relu["compile_us"] > 0, relu
    assert math.isclose(relu["speedup_vs_eager"], relu["eager_us"] / relu["kernel_us"])
    assert not gemm["verified"] and gemm["eager_us"] > 0 and gemm["compile_us"] > 0, gemm
