"""`skillbase report` on runs as they really end up in the store, including a run killed mid-attempt."""

from __future__ import annotations

from pathlib import Path

from skillbase.run.report import write_report
from skillbase.run.store import RunStore


def _killed_run(store: RunStore, task: Path) -> int:
    run_id = store.create_run(str(task), "naive_sgemm", {"agent": "none", "gpu": "NVIDIA H200"})
    with store.transaction() as tx:
        tx.start_round(run_id, 0, "k0")
        tx.add_decision(run_id, 0, "tune.parameter_sweep", {"BLOCK_X": "32"}, [], "", "the kernel declares tunables")
        finished = tx.add_attempt(run_id, 0, 0, "tune.parameter_sweep", {"BLOCK_X": "32"}, "k0", "k1")
        tx.finish_attempt(finished, "accepted", "1.2x vs the current best", runtime_us=2548.96, baseline_us=3148.96,
                          speedup=1.2354)
        tx.finish_round(run_id, 0, "improved")
        tx.start_round(run_id, 1, "k1")
        tx.add_decision(run_id, 1, "tune.parameter_sweep", {"BLOCK_X": "64"}, [], "", "the kernel declares tunables")
        # The process was killed while this attempt was being judged: still pending, no reason.
        tx.add_attempt(run_id, 1, 0, "tune.parameter_sweep", {"BLOCK_X": "64"}, "k1", "k2")
    store.update_run(run_id, baseline_us=3148.9601135253924, best_us=2548.9599704742423)
    return run_id


def test_report_of_a_killed_run_renders(tmp_path):
    task = tmp_path / "k.cu"
    task.write_text("// k\n")
    store = RunStore.open(tmp_path / "store")
    run_id = _killed_run(store, task)
    md, html = write_report(store, run_id, tmp_path / "out")
    text = Path(md).read_text()
    assert "3,149.0 µs" in text and "2,549.0 µs" in text      # rounded, not 16 digits
    assert "1.2x vs the current best" in text                 # the accepted attempt is the one shown
    assert "| 1 | tune.parameter_sweep |" in text and "pending" in text   # the cut-off round is listed
    assert Path(html).read_text().lstrip().lower().startswith("<!doctype html")
