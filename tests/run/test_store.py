"""The run store: numbering, transactions, crash safety, artifacts, and clear errors."""

from __future__ import annotations

import os
import random
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
    steps = [row[0] for row in store.db.execute("SELECT key FROM steps WHERE run_id=?", (run_id,))]
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
    owner = store.db.execute("SELECT payload_json FROM events WHERE kind='owner' LIMIT 1").fetchone()[0]
    assert json.loads(owner)["pid"]


# The schema (version 1) as the code before the run package wrote it, statement by statement.
PRE_MOVE_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at REAL NOT NULL, finished_at REAL,
    task_path TEXT NOT NULL, task_name TEXT NOT NULL, status TEXT NOT NULL, stop_reason TEXT,
    manifest_json TEXT NOT NULL, baseline_us REAL, best_us REAL, best_kernel TEXT);
CREATE TABLE rounds (run_id INTEGER NOT NULL REFERENCES runs(id), idx INTEGER NOT NULL, status TEXT NOT NULL,
    started_at REAL NOT NULL, finished_at REAL, kernel TEXT, outcome TEXT, PRIMARY KEY (run_id, idx));
CREATE TABLE evidence (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id INTEGER NOT NULL REFERENCES runs(id),
    round_idx INTEGER NOT NULL, kernel TEXT NOT NULL, document TEXT NOT NULL, report TEXT, created_at REAL NOT NULL);
CREATE TABLE decisions (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id INTEGER NOT NULL REFERENCES runs(id),
    round_idx INTEGER NOT NULL, chosen_skill TEXT, params_json TEXT NOT NULL, candidates_json TEXT NOT NULL,
    trace TEXT NOT NULL, reason TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE attempts (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id INTEGER NOT NULL REFERENCES runs(id),
    round_idx INTEGER NOT NULL, attempt_idx INTEGER NOT NULL, skill TEXT, params_json TEXT NOT NULL,
    parent_kernel TEXT, kernel TEXT, status TEXT NOT NULL, reason TEXT, runtime_us REAL, baseline_us REAL,
    speedup REAL, spread REAL, created_at REAL NOT NULL, finished_at REAL);
CREATE TABLE llm_calls (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id INTEGER NOT NULL REFERENCES runs(id),
    attempt_id INTEGER, role TEXT NOT NULL, model TEXT, endpoint_name TEXT, prompt_version TEXT, prompt TEXT,
    response TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, duration_s REAL, error TEXT,
    created_at REAL NOT NULL);
CREATE TABLE steps (run_id INTEGER NOT NULL REFERENCES runs(id), key TEXT NOT NULL, result_json TEXT NOT NULL,
    created_at REAL NOT NULL, PRIMARY KEY (run_id, key));
CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id INTEGER NOT NULL REFERENCES runs(id),
    ts REAL NOT NULL, kind TEXT NOT NULL, payload_json TEXT NOT NULL);
INSERT INTO meta VALUES ('schema_version', '1');
INSERT INTO runs VALUES (1, 1764547200.0, 1764547260.0, '/k/naive_sgemm.cu', 'naive_sgemm', 'finished',
    'ran 1 rounds', '{"agent": "none", "gpu": "NVIDIA H200", "settings": {"rounds": 1}}', 3148.96, 2548.96, NULL);
INSERT INTO rounds VALUES (1, 0, 'finished', 1764547201.0, 1764547259.0, 'k0', 'accepted');
INSERT INTO evidence VALUES (1, 1, 0, 'k0', '0000000000000000000000000000000000000000000000000000000000000000', NULL,
    1764547202.0);
INSERT INTO decisions VALUES (1, 1, 0, 'tune.parameter_sweep', '{}', '[{"applicable": true, "because": "tunables", '
    || '"focus": [], "rules": [], "score": 0.0, "skill": "tune.parameter_sweep", "speedup": null}]',
    '0000000000000000000000000000000000000000000000000000000000000000', 'tune.parameter_sweep: tunables',
    1764547203.0);
INSERT INTO attempts VALUES (1, 1, 0, 0, 'tune.parameter_sweep', '{"BLOCK_X": "32"}', 'k0', 'k1', 'accepted',
    '1.235x vs the current best', 2548.96, 3148.96, 1.2354, 0.01, 1764547204.0, 1764547258.0);
INSERT INTO steps VALUES (1, 'baseline', '{"status": "accepted", "runtime_us": 3148.96}', 1764547201.0);
INSERT INTO events VALUES (1, 1, 1764547200.0, 'run-created', '{"task": "naive_sgemm"}')
"""


def test_a_store_written_before_the_run_package_opens_and_explains(tmp_path):
    """Schema 1 is unchanged: a store the old code wrote opens as it is (no migration), its runs
    list, explain (its trace and evidence artifacts long pruned) and feed the per-skill outcomes."""
    from skillbase.run.explain import explain_run, render_text
    from skillbase.run.types import RunStatus

    location = tmp_path / "store"
    location.mkdir()
    db = sqlite3.connect(location / "runs.sqlite3")
    for statement in PRE_MOVE_SCHEMA.split(";"):
        db.execute(statement)
    db.commit()
    tables = db.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()
    db.close()

    store = RunStore.open(location)
    run = store.get_run("run_1")
    assert run.status == RunStatus.FINISHED and run.manifest["gpu"] == "NVIDIA H200"
    assert [r.name for r in store.list_runs(status=RunStatus.FINISHED)] == ["run_1"]
    assert store.step_result(1, "baseline") == {"status": "accepted", "runtime_us": 3148.96}
    report = explain_run(store, "run_1")
    assert report["rounds"][0]["decision"]["skill"] == "tune.parameter_sweep"
    assert report["rounds"][0]["decision"]["past"] == {}
    assert "try 1: tune.parameter_sweep" in render_text(report) and "past runs" not in render_text(report)
    assert store.skill_outcome_stats()["tune.parameter_sweep"]["accepted"] == 1
    store.close()
    db = sqlite3.connect(location / "runs.sqlite3")
    assert db.execute("SELECT value FROM meta").fetchone() == ("1",)
    assert db.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall() == tables   # not migrated


def _old_store(location):
    """A store as schema 1 was first written (PRE_MOVE_SCHEMA's run_1), at `location`."""
    location.mkdir()
    db = sqlite3.connect(location / "runs.sqlite3")
    for statement in PRE_MOVE_SCHEMA.split(";"):
        db.execute(statement)
    db.commit()
    db.close()
    return location


def test_an_older_store_gains_the_attempt_phases_on_its_first_finished_attempt(tmp_path):
    """attempts.phases_json came after schema 1: a store without it reads None for every attempt (read-only,
    nothing changes), its first finished attempt adds the column and keeps its phases (schema 1 still),
    and a private copy's phases (`transfer`: a new store has the column) are kept when applied back."""
    location = _old_store(tmp_path / "store")
    before = (location / "runs.sqlite3").read_bytes()
    reader = RunStore.open(location, read_only=True)
    assert [reader.attempt_phases(a) for a in reader.attempts(1)] == [None]
    reader.close()
    assert (location / "runs.sqlite3").read_bytes() == before

    rng = random.Random()
    phases = {"compile": round(rng.uniform(1, 9), 3), "gpu_wait": round(rng.uniform(1, 99), 3)}
    store = RunStore.open(location)
    with store.transaction() as tx:
        second = tx.add_attempt(1, 0, 1, "tune.parameter_sweep", {}, "k1", "k2")
        tx.finish_attempt(second, "slower", reason="no faster", phases=phases)
    assert [store.attempt_phases(a) for a in store.attempts(1)] == [None, phases]

    copy = RunStore.open(tmp_path / "copy")
    copy.load_run_copy(store.run_rows(1), None, 1, {})
    again = {"verify": round(rng.uniform(1, 9), 3), "gpu_wait": round(rng.uniform(1, 99), 3)}
    with copy.transaction() as tx:
        third = tx.add_attempt(1, 0, 2, "tune.parameter_sweep", {}, "k1", "k3")
        tx.finish_attempt(third, "incorrect", reason="wrong", phases=again)
    target = RunStore.open(_old_store(tmp_path / "old"))    # before its first finished attempt: no column yet
    target.apply_run_rows(1, copy.run_rows(1), target.last_event_id(1))
    assert [target.attempt_phases(a) for a in target.attempts(1)] == [None, phases, again]
    for opened in (store, copy, target):
        opened.close()
    db = sqlite3.connect(location / "runs.sqlite3")
    assert db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == ("1",)
    db.close()
