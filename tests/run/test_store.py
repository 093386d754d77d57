"""The run store: numbering, transactions, crash safety, artifacts, and clear errors."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from skillbase.errors import InputError
from skillbase.run.store import RunStore, parse_run_ref


@pytest.fixture
def store(tmp_path):
    s = RunStore.open(tmp_path / "store")
    yield s
    s.close()


def test_runs_are_numbered_and_listed(store):
    first = store.create_run("k/a.cu", "a", {"seed": 1})
    second = store.create_run("k/b.cu", "b", {"seed": 2})
    assert second == first + 1
    assert [r.name for r in store.list_runs()] == [f"run_{second}", f"run_{first}"]
    assert [r.task_name for r in store.list_runs(task="a")] == ["a"]
    assert store.get_run(f"run_{first}").manifest == {"seed": 1}


@pytest.mark.parametrize("ref,expected", [("run_42", 42), ("42", 42), (7, 7), (" run_3 ", 3)])
def test_run_refs(ref, expected):
    assert parse_run_ref(ref) == expected


@pytest.mark.parametrize("ref", ["run-4", "r42", "run_", "forty"])
def test_bad_run_refs(ref):
    with pytest.raises(InputError, match="not a run id"):
        parse_run_ref(ref)


def test_unknown_run_is_a_clear_error(store):
    with pytest.raises(InputError, match=r"no run run_99 .*skillbase runs"):
        store.get_run("run_99")


def test_failed_transaction_leaves_nothing(store):
    run_id = store.create_run("k.cu", "k", {})
    with pytest.raises(RuntimeError):
        with store.transaction() as tx:
            tx.start_round(run_id, 0, "a" * 64)
            tx.finish_step(run_id, "round-0/evidence", {"ok": True})
            raise RuntimeError("crash in the middle of a step")
    assert store.rounds(run_id) == []
    assert store.step_result(run_id, "round-0/evidence") is None


def test_attempts_decisions_and_skill_stats(store):
    run_id = store.create_run("k.cu", "k", {})
    with store.transaction() as tx:
        tx.start_round(run_id, 0, "b" * 64)
        tx.add_decision(run_id, 0, "mem.coalesce", {}, [{"skill": "mem.coalesce"}], "c" * 64, "top candidate")
        a0 = tx.add_attempt(run_id, 0, 0, "mem.coalesce", {}, "b" * 64, None)
        tx.finish_attempt(a0, "build-failed", reason="k.cu:3: error")
        a1 = tx.add_attempt(run_id, 0, 1, "mem.coalesce", {}, "b" * 64, "d" * 64)
        tx.finish_attempt(a1, "accepted", runtime_us=50.0, baseline_us=100.0, speedup=2.0, spread=0.01)
        tx.finish_round(run_id, 0, "accepted")
    assert [a["status"] for a in store.attempts(run_id)] == ["build-failed", "accepted"]
    stats = store.skill_outcome_stats()
    # A round counts once for its skill, whatever the number of repairs inside it.
    assert stats["mem.coalesce"] == {"tried": 1, "accepted": 1, "failed": 0, "mean_accepted_speedup": 2.0}
    assert stats == store.skill_outcome_stats(exclude_run=run_id + 1)
    assert store.skill_outcome_stats(exclude_run=run_id) == {}
    kinds = [e["kind"] for e in store.events(run_id)]
    assert kinds[0] == "run-created" and "attempt-finished" in kinds and kinds[-1] == "round-finished"


def test_artifacts_are_content_addressed_and_checked(store):
    digest = store.artifacts.put_text("__global__ void k() {}")
    assert store.artifacts.put_text("__global__ void k() {}") == digest
    assert store.artifacts.get_text(digest) == "__global__ void k() {}"
    store.artifacts.path_for(digest).write_text("tampered")
    with pytest.raises(InputError, match="corrupt"):
        store.artifacts.get_text(digest)
    with pytest.raises(InputError, match="missing"):
        store.artifacts.get_text("0" * 64)


def test_newer_store_is_refused_untouched(tmp_path):
    location = tmp_path / "store"
    RunStore.open(location).close()
    db = sqlite3.connect(location / "runs.sqlite3")
    db.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    db.commit()
    db.close()
    before = (location / "runs.sqlite3").read_bytes()
    with pytest.raises(InputError, match="newer skillbase"):
        RunStore.open(location)
    assert (location / "runs.sqlite3").read_bytes() == before


def test_not_a_database_is_a_clear_error(tmp_path):
    location = tmp_path / "store"
    location.mkdir()
    (location / "runs.sqlite3").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(InputError, match="not a skillbase run store"):
        RunStore.open(location)


def test_kill_9_mid_write_keeps_every_finished_step(tmp_path):
    """A writer killed with SIGKILL loses at most the step in flight; the store stays readable."""
    location = tmp_path / "store"
    run_id = RunStore.open(location).create_run("k.cu", "k", {})
    writer = textwrap.dedent(f"""
        import sys, time
        from skillbase.run.store import RunStore
        store = RunStore.open({str(location)!r})
        i = 0
        while True:
            with store.transaction() as tx:
                tx.start_round({run_id}, i, "e" * 64)
                tx.finish_step({run_id}, f"round-{{i}}", {{"i": i}})
                tx.finish_round({run_id}, i, "accepted")
            i += 1
            if i == 5:
                print("ready", flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    store = RunStore.open(location)
    steps = store.finished_steps(run_id)
    rounds = store.rounds(run_id)
    assert len(steps) >= 5
    # Every finished step has its round finished too: the transaction is all or nothing.
    assert len(rounds) == len(steps)
    assert all(r["status"] == "finished" for r in rounds)


def test_a_running_run_whose_process_died_shows_as_interrupted(tmp_path):
    import json
    import socket
    import subprocess

    from skillbase.run.store import RunStore

    store = RunStore.open(tmp_path / "store")
    alive = store.get_run(store.create_run(str(tmp_path / "k.cu"), "k", {}))
    store.claim(alive.id)                                    # this test's own process: alive
    assert store.shown_status(alive) == "running"
    dead = store.get_run(store.create_run(str(tmp_path / "k.cu"), "k", {}))
    gone = subprocess.Popen(["true"])
    gone.wait()
    with store.transaction() as tx:
        tx.event(dead.id, "owner", {"host": socket.gethostname(), "pid": gone.pid})
    assert store.shown_status(dead) == "interrupted"
    with store.transaction() as tx:                          # another machine's run: left as stored
        tx.event(dead.id, "owner", {"host": socket.gethostname() + "-elsewhere", "pid": gone.pid})
    assert store.shown_status(dead) == "running"
    assert json.loads(store.db.execute("SELECT payload_json FROM events WHERE kind='owner' LIMIT 1").fetchone()[0])["pid"]
