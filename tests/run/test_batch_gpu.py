"""One real round of a batch on the GPU (issue 16): `bench optimize` profiles and times each
operator's baseline and pauses at the engine's prompt; the candidates written for those prompts are
verified and timed by `resume --all` through the GPU job executor (one worker per visible GPU), and
each run pauses at its next prompt with the coder protocol recorded."""

from __future__ import annotations

import json

import pytest

from skillbase.bench.suite import bench_dir
from skillbase.run.batch import resume_all, start_batch
from skillbase.run.pending import list_pending
from skillbase.run.store import RunStore
from skillbase.run.types import Settings

pytestmark = [pytest.mark.gpu, pytest.mark.nvcc]

OPS = ("matrix_mul", "softmax")


def log(done: int, total: int, line: str) -> None:
    print(f"[{done}/{total}] {line}")


@pytest.mark.timeout(600)   # two baselines timed and profiled (ncu), two candidates verified and timed
def test_one_round_of_a_batch_is_profiled_judged_and_timed_on_the_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    store_path = tmp_path / "store"
    started = start_batch(Settings(rounds=2, repairs=0, agent="external"), ops=OPS, preset="m", gpu=True,
                          store_path=store_path, progress=log)
    assert [m.action for m in started.members] == ["started", "started"], started.to_json()
    store = RunStore.open(store_path)
    for member in started.members:
        assert store.get_run(member.run).baseline_us > 0       # timed on the GPU, not compile-only
    waiting = list_pending(store_path)
    assert waiting, f"the engine proposed nothing for {OPS}: {started.to_json()}"
    for prompt in waiting:
        assert prompt.kind == "coder" and prompt.skill != "free-choice" and prompt.prompt_path.is_file()
        # The operator's own baseline, untouched but for a comment: verified, and no faster than itself.
        source = (bench_dir() / "ops" / prompt.operator / "fp32.cu").read_text()
        prompt.candidate_path.write_text(f"// the baseline, resubmitted\n{source}")
        prompt.meta_path.write_text(json.dumps({"model": "gpu test", "wall_s": 1.0, "reply_tokens": 10}))

    outcome = resume_all(store_path, progress=log)
    assert {m.action for m in outcome.members} == {"judged"}, outcome.to_json()
    for prompt in waiting:
        verdict = store.step_result(prompt.run_id, "r0/v0/a0/verdict")
        assert verdict["status"] in ("slower", "accepted"), verdict       # verified and timed
        assert verdict["runtime_us"] > 0 and verdict["baseline_us"] > 0
        [call] = store.llm_calls(prompt.run_id)
        assert call["model"] == "gpu test" and call["prompt_tokens"] > 100
        # paused at the engine's next skill, or finished when the engine has none left to offer
        assert store.get_run(prompt.run_id).status in ("paused", "finished")
    assert {p.key for p in list_pending(store_path)} <= {"r1/v0/a0"}
    print(json.dumps(outcome.to_json(), indent=1, default=str))
