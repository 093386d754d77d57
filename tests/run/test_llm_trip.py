"""tools/llm_bench_trip.sh STEP=resume FROM=DIR: a run folder's committed store and the coders' answers unpacked
into the trip's store on the GPU machine (CPU: an empty store, so `resume --all` has nothing to judge)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

from skillbase.run.pack import pack_store
from skillbase.run.store import RunStore

REPO = Path(__file__).resolve().parents[2]


def test_resume_from_a_committed_run_folder_unpacks_its_store_and_answers_and_judges(tmp_path):
    store = tmp_path / "made" / "store"
    RunStore.open(store).close()
    run_dir = tmp_path / "committed"
    run_dir.mkdir()
    pack_store(run_dir / "store.tar.gz", store, reports=False)
    answer = tmp_path / "answers" / "batches" / "batch_1" / "candidates" / "run_1.cu"
    answer.parent.mkdir(parents=True)
    text = f"// an answer {os.urandom(8).hex()}\n"
    answer.write_text(text)
    with tarfile.open(run_dir / "answers-waiting.tar.gz", "w:gz") as tar:
        tar.add(answer, arcname="batches/batch_1/candidates/run_1.cu")
    out, answers = tmp_path / "out", tmp_path / "trip" / "answers.tar.gz"
    env = {**os.environ, "SETUP": "skip", "OUT": str(out), "STORE": str(tmp_path / "device"), "LIMIT": "30",
           "STEP": "resume", "FROM": str(run_dir), "ANSWERS": str(answers),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", "tools/llm_bench_trip.sh"], cwd=REPO, env=env, capture_output=True, text=True)
    log = (out / "trip.log").read_text()
    assert done.returncode == 0, done.stderr + log
    steps = [line.split(" (")[0] for line in log.splitlines() if line.startswith("== ") and " rc=" not in line]
    assert steps == ["== answers from " + str(run_dir), "== resume --all", "== pending"], (steps, log)
    assert all(" rc=0 " in line for line in log.splitlines() if line.startswith("== ") and " rc=" in line), log
    assert not answers.exists()             # with FROM no answers archive is made or read: straight into the store
    assert (tmp_path / "device" / "batches" / "batch_1" / "candidates" / "run_1.cu").read_text() == text
    assert (out / "store.tar.gz").is_file()
