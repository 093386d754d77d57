"""One real round of a batch through Ray on the GPU (issue 21): `bench optimize --executor ray` on a
Ray instance with this machine's GPUs profiles and times each baseline on the node and pauses at the
engine's prompt, everything written by the driver (the saved ncu reports came back with the rows);
the candidates are judged on the cluster, the next ones locally, from the one store.

    python -m pytest -q -p no:cacheprovider -m gpu tests/run/test_batch_ray_gpu.py     # H200
"""

from __future__ import annotations

import json
import time

import pytest

from skillbase.bench.suite import bench_dir
from skillbase.harness.jobs import LocalExecutor
from skillbase.run.batch import resume_all, start_batch
from skillbase.run.pending import list_pending
from skillbase.run.store import RunStore
from skillbase.run.types import Settings

ray_executor = pytest.importorskip("skillbase.harness.ray_executor")
pytestmark = [pytest.mark.gpu, pytest.mark.nvcc]

OPS = ("matrix_mul", "softmax")


def log(done: int, total: int, line: str) -> None:
    print(f"[{done}/{total}] {line}")


def answer(prompts, note: str) -> None:
    """Each operator's own baseline, untouched but for a comment: verified, and no faster than itself."""
    for prompt in prompts:
        source = (bench_dir() / "ops" / prompt.operator / "fp32.cu").read_text()
        prompt.candidate_path.write_text(f"// the baseline, {note}\n{source}")
        prompt.meta_path.write_text(json.dumps({"model": "gpu test", "wall_s": 1.0, "reply_tokens": 10}))


@pytest.mark.timeout(900)   # two baselines timed and profiled, two candidates judged on Ray, then up to two here
def test_a_batch_round_on_the_gpu_through_ray_then_here(tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    store_path = tmp_path / "store"
    began = time.time()
    cluster = ray_executor.RayExecutor()        # a Ray instance on this machine, with its GPUs
    try:
        assert cluster.gpu_model, "Ray started without a GPU it could name"
        started = start_batch(Settings(rounds=2, repairs=0, agent="external"), ops=OPS, preset="m", gpu=True,
                              store_path=store_path, progress=log, executor=cluster)
        assert [m.action for m in started.members] == ["started", "started"], started.to_json()
        waiting = list_pending(store_path)
        assert waiting, f"the engine proposed nothing for {OPS}: {started.to_json()}"
        answer(waiting, "judged on Ray")
        judged = resume_all(store_path, progress=log, executor=cluster)
    finally:
        cluster.close()
    on_ray = time.time() - began
    assert {m.action for m in judged.members} == {"judged"}, judged.to_json()
    store = RunStore.open(store_path, read_only=True)
    try:
        for member in started.members:
            run = store.get_run(member.run)
            assert run.baseline_us > 0 and run.manifest["gpu"] == cluster.gpu_model     # timed on the node's GPU
            reports = [row["report"] for row in store.evidence_rows(run.id) if row["report"]]
            assert reports and all(store.artifacts.path_for(d).is_file() for d in reports)   # came back
        for prompt in waiting:
            verdict = store.step_result(prompt.run_id, "r0/v0/a0/verdict")
            assert verdict["status"] in ("slower", "accepted"), verdict
            assert verdict["runtime_us"] > 0 and verdict["baseline_us"] > 0
            [call] = store.llm_calls(prompt.run_id)
            assert call["model"] == "gpu test" and call["prompt_tokens"] > 100
    finally:
        store.close()
    following = list_pending(store_path)
    assert {p.key for p in following} <= {"r1/v0/a0"}
    began = time.time()
    if following:
        answer(following, "judged here")
        here = resume_all(store_path, progress=log, executor=LocalExecutor(["0"]))
        assert {m.action for m in here.members} == {"judged"}, here.to_json()
    print(f"on Ray (start + judge, with Ray's start): {on_ray:.1f} s; the next round here: {time.time() - began:.1f} s")
