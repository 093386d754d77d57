"""`resume --all` builds every candidate present in parallel before the GPU jobs judge them (issue 16):
the prebuild makes the very builds the judges make (same scratch copy, flags, arch: the same cache
key), so each judge finds its candidate in the cache, and it decides nothing: the verdicts of a batch
are the same with and without it. nvcc really runs (compile-only `--no-gpu` batches); each call is
recorded with the thread it ran on, the prebuild's pool being the only other thread."""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillbase.bench.suite import bench_dir
from skillbase.cli import cli
from skillbase.run.batch import resume_all
from skillbase.run.pending import list_pending
from skillbase.run.store import RunStore

pytestmark = pytest.mark.nvcc

OPS = ("relu", "gelu", "elu", "sigmoid")


@pytest.fixture
def suite(tmp_path, monkeypatch):
    root = tmp_path / "suite_here"
    for op in OPS:
        shutil.copytree(bench_dir() / "ops" / op, root / "ops" / op)
    monkeypatch.setenv("SKILLBASE_BENCH_DIR", str(root))
    return root


@pytest.fixture
def nvcc_calls(monkeypatch):
    """Every nvcc build from now on: (on the main thread?, the source it compiled)."""
    calls: list[tuple[bool, str]] = []
    real = subprocess.run

    def recording(command, *args, **kwargs):
        if isinstance(command, list) and "-o" in command and str(command[0]).endswith("nvcc"):
            calls.append((threading.current_thread() is threading.main_thread(), command[command.index("-o") + 2]))
        return real(command, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", recording)
    return calls


def a_candidate(op: str, note: str) -> str:
    """The operator's own baseline with a comment: a real kernel that builds and defines the launcher."""
    return f"// candidate: {note}\n" + (bench_dir() / "ops" / op / "fp32.cu").read_text()


def start_batch(store: Path) -> dict[str, dict]:
    """A compile-only external batch over OPS; what each operator's run waits for."""
    args = ["bench", "optimize", "--agent", "external", "--no-engine", "--no-gpu", "--ops", ",".join(OPS),
            "--rounds", "2", "--repairs", "1", "--store", str(store), "--json"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return waiting(store)


def waiting(store: Path) -> dict[str, dict]:
    return {p["operator"]: p for p in (e.to_json() for e in list_pending(store))}


def judged(calls: list[tuple[bool, str]], cache: Path) -> tuple[list[str], list[str]]:
    """The candidates' builds (sources under the cache's scratch copies): (in the pool, by the judge)."""
    scratch = str(cache / "candidates")
    built = [(main, source) for main, source in calls if source.startswith(scratch)]
    return [s for main, s in built if not main], [s for main, s in built if main]


def one_trip(tmp_path: Path, monkeypatch, name: str, jobs: int, calls: list) -> tuple[dict, list, dict, Path]:
    """A fresh store and cache: good candidates for relu and sigmoid, one that does not build for gelu,
    none for elu; one `resume --all` with `jobs`. -> (its members, the attempts, pending after, the cache)."""
    cache = tmp_path / f"cache-{name}"
    monkeypatch.setenv("SKILLBASE_CACHE", str(cache))
    store = tmp_path / f"store-{name}"
    prompts = start_batch(store)
    Path(prompts["relu"]["candidate"]).write_text(a_candidate("relu", "grid-stride"))
    Path(prompts["sigmoid"]["candidate"]).write_text(a_candidate("sigmoid", "float4"))
    Path(prompts["gelu"]["candidate"]).write_text(a_candidate("gelu", "broken") + "\nint does_not_build = ;\n")
    calls.clear()
    outcome = resume_all(store, jobs=jobs).to_json()
    opened = RunStore.open(store)
    try:
        attempts = {run.name: [(f"r{a['round_idx']}/a{a['attempt_idx']}", a["status"], a["reason"])
                               for a in opened.attempts(run.id)] for run in opened.list_runs()}
    finally:
        opened.close()
    after = {op: (p["key"], p["kind"], p["waiting"]) for op, p in waiting(store).items()}
    # The same batch in another store: its paths aside, the documents must be equal.
    # How long each judgement took (wall_s, phases_s) differs run to run; what was decided must not.
    members = [{**{k: v for k, v in m.items() if k not in ("wall_s", "phases_s")},
                "reason": m["reason"].replace(str(store), "STORE")} for m in outcome["members"]]
    after = {op: tuple(str(v).replace(str(store), "STORE") for v in entry) for op, entry in after.items()}
    return members, attempts, after, cache


def test_the_judges_find_the_prebuilt_candidates_in_the_cache(suite, tmp_path, monkeypatch, nvcc_calls):
    members, attempts, after, cache = one_trip(tmp_path, monkeypatch, "prebuilt", 2, nvcc_calls)
    pooled, by_judge = judged(nvcc_calls, cache)
    # Three candidates built in the pool; the judges rebuilt only the broken one (a failure is not cached).
    assert len(pooled) == len(set(pooled)) == 3
    assert len(by_judge) == 1 and Path(by_judge[0]).read_text().endswith("int does_not_build = ;\n")
    assert {m["action"] for m in members} == {"judged", "waiting"}
    assert after["gelu"][:2] == ("r0/v0/a1", "debugger")

    # The debugger's repair flows the same way: built in the pool, a cache hit for the judge.
    Path(waiting(tmp_path / "store-prebuilt")["gelu"]["candidate"]).write_text(a_candidate("gelu", "repaired"))
    nvcc_calls.clear()
    repaired = resume_all(tmp_path / "store-prebuilt", jobs=2).to_json()
    assert "r0/v0/a1: unverified" in next(m["reason"] for m in repaired["members"] if m["action"] == "judged")
    pooled, by_judge = judged(nvcc_calls, cache)
    assert len(pooled) == 1 and by_judge == []


def test_a_batch_is_judged_the_same_with_and_without_the_prebuild(suite, tmp_path, monkeypatch, nvcc_calls):
    with_prebuild = one_trip(tmp_path, monkeypatch, "prebuilt", 4, nvcc_calls)
    pooled, by_judge = judged(nvcc_calls, with_prebuild[3])
    assert len(pooled) == 3 and len(by_judge) == 1
    without = one_trip(tmp_path, monkeypatch, "plain", 0, nvcc_calls)
    pooled, by_judge = judged(nvcc_calls, without[3])
    assert pooled == [] and len(by_judge) == 3   # --jobs 0: every candidate built by its judge
    assert with_prebuild[:3] == without[:3]
    # The broken candidate's verdict is the judge's own, with the compiler's first error.
    gelu = next(steps for steps in with_prebuild[1].values() if steps and steps[0][1] == "build-failed")
    assert gelu[0][0] == "r0/a0" and "error" in gelu[0][2]
    statuses = sorted(s for steps in with_prebuild[1].values() for _, s, _ in steps)
    assert statuses == ["build-failed", "unverified", "unverified"]


def test_resume_jobs_goes_with_all(tmp_path):
    result = CliRunner().invoke(cli, ["resume", "run_1", "--jobs", "2", "--store", str(tmp_path / "store")])
    assert result.exit_code != 0 and "--jobs" in result.exception.message




def test_a_kernelbench_first_kernel_is_prebuilt_for_its_generator_judge(tmp_path, monkeypatch, nvcc_calls):
    """A generator run's answer is judged as the task's first kernel (a scratch copy of the task, no
    flags): the prebuild makes that build too."""
    from skillbase.kernelbench.importer import import_problems

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"
    cache = tmp_path / "cache"
    monkeypatch.setenv("SKILLBASE_CACHE", str(cache))
    tasks, store = tmp_path / "tasks", tmp_path / "store"
    import_problems(fixtures, tasks, problems=("2_ReLU",))
    result = CliRunner().invoke(cli, ["kernelbench", "optimize", str(tasks), "--agent", "external", "--no-gpu",
                                      "--rounds", "1", "--store", str(store), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    [prompt] = list_pending(store)
    prompt.candidate_path.write_text((fixtures / "kernels" / "relu.cu").read_text())
    nvcc_calls.clear()
    [member] = resume_all(store, jobs=2).members
    assert member.action == "judged" and member.reason.startswith("g/a0: unverified: compiled"), member
    pooled, by_judge = judged(nvcc_calls, cache)
    assert len(pooled) == 1 and by_judge == []


@pytest.mark.gpu
@pytest.mark.timeout(600)
def test_on_a_gpu_the_harness_finds_the_prebuilt_library_in_the_cache(tmp_path, monkeypatch, nvcc_calls):
    """The harness's build (a loadable library for this GPU's arch) is the one prebuilt: one GPU, so the
    job runs in this process and its builds are recorded."""
    from skillbase.run.batch import start_batch as start_gpu_batch
    from skillbase.run.types import Settings

    cache = tmp_path / "cache"
    monkeypatch.setenv("SKILLBASE_CACHE", str(cache))
    store = tmp_path / "store"
    start_gpu_batch(Settings(rounds=2, repairs=0, agent="external", engine=False), ops=("relu",), preset="s",
                    gpu=True, store_path=store, gpus=["0"])
    [prompt] = list_pending(store)
    source = a_candidate("relu", "resubmitted")
    prompt.candidate_path.write_text(source)
    nvcc_calls.clear()
    outcome = resume_all(store, gpus=["0"], jobs=2)
    assert [m.action for m in outcome.members] == ["judged"], outcome.to_json()
    # The candidate's scratch copy (the next round's profile may build the best's, which was built at the start).
    [copy] = [str(p) for p in (cache / "candidates").glob("*/fp32.cu") if p.read_text() == source]
    assert [main for main, built in nvcc_calls if built == copy] == [False]
    opened = RunStore.open(store)
    try:
        verdict = opened.step_result(prompt.run_id, "r0/v0/a0/verdict")
    finally:
        opened.close()
    assert verdict["status"] in ("slower", "accepted") and verdict["runtime_us"] > 0, verdict
