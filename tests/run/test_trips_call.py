"""tools/trips_call.sh, the one device call of a session's trips, on the CPU: GPU tests (skipped here), an LLM trip
from a committed run folder and a KernelBench trip run side by side, and everything comes back in OUT."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

from skillbase.run.pack import pack_store
from skillbase.run.store import RunStore

REPO = Path(__file__).resolve().parents[2]


def _empty_store_archive(tmp_path: Path, name: str) -> Path:
    store = tmp_path / f"{name}-store"
    RunStore.open(store).close()
    archive = tmp_path / f"{name}.tar.gz"
    pack_store(archive, store, reports=False)
    return archive


def test_one_call_runs_the_gpu_tests_and_both_trips_and_brings_back_their_stores_and_logs(tmp_path):
    run_dir = tmp_path / "committed"
    run_dir.mkdir()
    _empty_store_archive(tmp_path, "llm").rename(run_dir / "store.tar.gz")
    answer = tmp_path / "answers" / "batches" / "batch_1" / "candidates" / "run_1.cu"
    answer.parent.mkdir(parents=True)
    answer.write_text(f"// an answer {os.urandom(8).hex()}\n")
    with tarfile.open(run_dir / "answers-waiting.tar.gz", "w:gz") as tar:
        tar.add(answer, arcname="batches/batch_1/candidates/run_1.cu")
    out, work = tmp_path / "out", tmp_path / "work"
    out.mkdir()
    env = {**os.environ, "SETUP": "skip", "OUT": str(out), "WORK": str(work), "BUDGET": "240", "LLM": "1", "KB": "1",
           "RUN": str(run_dir), "KB_ANSWERS": str(_empty_store_archive(tmp_path, "kb")),
           "GPU_TESTS": "tests/harness/test_compare_chunked.py",
           "SKILLBASE_CACHE": str(tmp_path / "cache"),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", "tools/trips_call.sh"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "llm-store.tar.gz").is_file() and (out / "kb-store.tar.gz").is_file(), sorted(out.iterdir())
    with tarfile.open(out / "logs.tar.gz") as tar:
        names = set(tar.getnames())
        test_log = tar.extractfile("logs/gpu-tests-test_compare_chunked.log").read().decode()
        llm_log = tar.extractfile("logs/llm/trip.log").read().decode()
        kb_log = tar.extractfile("logs/kb/trip.log").read().decode()
    assert {"logs/gpu-memory.log", "logs/llm/device.txt"} <= names, names
    assert "skipped" in test_log and "failed" not in test_log, test_log
    for log in (llm_log, kb_log):
        assert any(line.startswith("== resume --all") and " rc=0 " in line for line in log.splitlines()), log
    assert "== answers from" in llm_log     # the store and its answers were unpacked on the machine from the run folder
    assert "total" in done.stdout


def test_kb_step_baselines_and_cupti_first_are_passed_through(tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    out.mkdir()
    env = {**os.environ, "SETUP": "skip", "OUT": str(out), "WORK": str(work), "BUDGET": "200", "KB": "1",
           "KB_STEP": "baselines", "CUPTI": "1", "CUPTI_S": "5",
           "KB_ANSWERS": str(_empty_store_archive(tmp_path, "kb")), "SKILLBASE_CACHE": str(tmp_path / "cache"),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", "tools/trips_call.sh"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cupti_overhead rc=" in done.stdout
    assert (out / "cupti" / "cupti_overhead.json").is_file(), sorted(out.rglob("*"))
    with tarfile.open(out / "logs.tar.gz") as tar:
        kb_log = tar.extractfile("logs/kb/trip.log").read().decode()
        assert "logs/cupti.log" in tar.getnames()
    assert any(line.startswith("== kernelbench baselines") for line in kb_log.splitlines()), kb_log
    assert not any(line.startswith("== resume --all") for line in kb_log.splitlines()), kb_log


def test_an_unknown_kb_step_is_refused_before_anything_runs(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path), "WORK": str(tmp_path / "work"), "KB_STEP": "judge"}
    done = subprocess.run(["bash", "tools/trips_call.sh"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2, done.stdout
    assert done.stdout.strip() == "KB_STEP is resume, baselines or baselines+resume"
