"""The prebuild of `resume --all` asks each run's judge how it builds a candidate (`build_request`) instead
of restating it: the prebuilt artifact is the judged one by construction. These tests hold each judge's
answer to the build it really makes: the compile-only judge's (nvcc runs, an sm_90a task) and the
harness's inside `evaluate` (its `build()` call recorded, then stopped: no GPU here)."""

from __future__ import annotations

import inspect
import shutil
import threading
from pathlib import Path

import pytest

from skillbase.harness import build as harness_build
from skillbase.harness import runtime
from skillbase.run import judges
from skillbase.run.batch import prebuild_candidates
from skillbase.run.judges import CompileOnlyJudge, HarnessJudge, judge_for
from skillbase.run.session import resume_run, start_run
from skillbase.run.store import RunStore
from skillbase.run.types import Settings, Status
from skillbase.task import load_task

REPO = Path(__file__).resolve().parents[2]
SM90A_TASK = REPO / "tests" / "fixtures" / "sm90a"
SIGNATURE = inspect.signature(harness_build.build)


def arguments(*args, **kwargs) -> dict:
    """A `build()` call's arguments with every default filled in, so two spellings of one build compare equal."""
    bound = SIGNATURE.bind(*args, **kwargs)
    bound.apply_defaults()
    bound.arguments["extra_flags"] = tuple(bound.arguments["extra_flags"])
    bound.arguments["link"] = tuple(bound.arguments["link"])
    return dict(bound.arguments)


@pytest.fixture
def task(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "task"
    shutil.copytree(SM90A_TASK, folder)
    return folder / "scale.cu"


def a_candidate(task: Path, note: str) -> str:
    return f"// candidate: {note}\n" + task.read_text()


@pytest.mark.nvcc
def test_the_prebuilt_candidate_is_the_one_the_compile_only_judge_builds(task, tmp_path, monkeypatch):
    """An sm_90a run without a GPU: the prebuild's build and the judge's have the same arguments and cache
    key, and the judge's is a cache hit."""
    store_path = tmp_path / "store"
    summary = start_run(task, Settings(rounds=1, repairs=0, agent="external", engine=False), store_path=store_path,
                        gpu=False, progress=lambda m: None)
    assert summary["status"] == "paused", summary
    store = RunStore.open(store_path)
    run = store.get_run(summary["run"])

    builds: list[tuple[str, dict, object]] = []   # (who: pool | judge, arguments, BuildResult)
    real = harness_build.build

    def recording(*args, **kwargs):
        result = real(*args, **kwargs)
        who = "judge" if threading.current_thread() is threading.main_thread() else "pool"
        builds.append((who, arguments(*args, **kwargs), result))
        return result

    monkeypatch.setattr(harness_build, "build", recording)   # build_all's builds
    monkeypatch.setattr(judges, "build", recording)          # the judge's
    source = a_candidate(task, "prebuilt")
    try:
        assert prebuild_candidates(store, [(run.id, source)], jobs=1) == 1
        finished = resume_run(run.name, store_path=store_path, candidate=source, progress=lambda m: None)
        attempts = store.attempts(run.id)
    finally:
        store.close()
    assert finished["status"] == "finished"
    assert [a["status"] for a in attempts] == [Status.UNVERIFIED]
    [(_, pooled, prebuilt)] = [b for b in builds if b[0] == "pool"]
    [(_, judged, built)] = [b for b in builds if b[0] == "judge" and b[1]["cu_path"] == pooled["cu_path"]]
    assert judged == pooled and built.key == prebuilt.key
    assert not prebuilt.cached and built.cached
    assert built.arch == "sm_90a" and "-gencode=arch=compute_90a,code=sm_90a" in built.command


def test_the_harness_judges_request_is_the_build_evaluate_makes(task, monkeypatch):
    """On a GPU the candidate is built inside the harness's `evaluate`: what the harness judge tells the
    prebuild is the argument list of that very `build()` call (recorded, then stopped before nvcc)."""
    class Stopped(Exception):
        pass

    calls: list[dict] = []

    def stop_at_build(*args, **kwargs):
        calls.append(arguments(*args, **kwargs))
        raise Stopped

    monkeypatch.setattr(runtime, "require_gpu", lambda: None)
    monkeypatch.setattr(harness_build, "build", stop_at_build)
    judge = judge_for(task, load_task(task), gpu=True)
    assert isinstance(judge, HarnessJudge)
    source, flags = a_candidate(task, "on a GPU"), ("-lineinfo",)
    with pytest.raises(Stopped):
        judge.judge(source, flags, task.read_text(), ())
    assert calls == [arguments(**judge.build_request(source, flags))]
    assert calls[0]["task_arch"] == "sm_90a" and calls[0]["extra_flags"] == flags and not calls[0]["compile_only"]


@pytest.mark.parametrize("gpu", [False, True])
def test_a_candidate_the_static_check_refuses_is_not_prebuilt(task, gpu):
    """Both judges stop such a candidate before building it, so the prebuild asks for nothing."""
    refused = a_candidate(task, "host state") + "\n#include <thread>\nvoid spin() { std::thread t([]{}); t.join(); }\n"
    judge = judge_for(task, load_task(task), gpu=gpu)
    assert judge.build_request(refused, ()) is None
    if isinstance(judge, CompileOnlyJudge):
        assert judge.judge(refused, (), task.read_text(), ()).status == Status.REJECTED_STATIC
