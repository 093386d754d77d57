"""The run store under faults (issue 22): one error boundary ("store damaged: …" with how to recover),
read-only opening for read commands, no fresh start over a lost database, an owner lock that `resume`
honours, a full disk that keeps the last finished step, and a run whose every attempt failed for an
outside reason ending `failed` with a non-zero exit."""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import sys

import pytest

from skillbase.errors import EnvironmentProblem, InputError, SkillbaseError
from skillbase.run.store import RunStore, StoreDamaged, parse_run_ref


@pytest.fixture
def store_path(tmp_path):
    path = tmp_path / "store"
    store = RunStore.open(path)
    run_id = store.create_run("/k.cu", "k", {"settings": {"rounds": 1}})
    with store.transaction() as tx:
        tx.start_round(run_id, 0, "a" * 64)
        tx.add_decision(run_id, 0, "mem.coalesce", {"p": 1}, [{"skill": "mem.coalesce"}], "t" * 64, "why")
        tx.add_attempt(run_id, 0, 0, "mem.coalesce", {"p": 1}, None, None)
        tx.finish_step(run_id, "baseline", {"runtime_us": 10.0})
    store.artifacts.put_text("the baseline kernel")
    store.close()
    return path


def tamper(store_path, sql: str) -> None:
    db = sqlite3.connect(store_path / "runs.sqlite3")
    db.executescript(sql)
    db.close()


def read_everything(path) -> None:
    from skillbase.run.explain import explain_run

    store = RunStore.open(path, read_only=True)
    for run in store.list_runs():
        store.shown_status(run)
        explain_run(store, run.name)
        store.step_result(run.id, "baseline")


@pytest.mark.parametrize("sql,needle", [
    ("DROP TABLE attempts", "no such table"),
    ("UPDATE runs SET manifest_json = 'not json {'", "manifest is not JSON"),
    ("UPDATE decisions SET candidates_json = '{{'", "candidates is not JSON"),
    ("UPDATE steps SET result_json = 'NaN]'", "is not JSON"),
    ("UPDATE runs SET status = 'exploded'", "status 'exploded'"),
    ("UPDATE decisions SET candidates_json = '7'", "candidates is not a JSON list of dict"),
    ("UPDATE attempts SET params_json = '[1]'", "parameters is not a JSON dict"),
    ("UPDATE runs SET manifest_json = '\"text\"'", "manifest is not a JSON dict"),
    ("UPDATE runs SET best_us = 'fast'", "best_us is not a number"),
    ("UPDATE attempts SET speedup = x'00'", "speedup is not a number"),
    ("UPDATE meta SET value = 'one' WHERE key = 'schema_version'", "schema_version"),
])
def test_a_damaged_store_that_still_opens_is_one_clear_error(store_path, sql, needle):
    tamper(store_path, sql)
    with pytest.raises(StoreDamaged) as caught:
        read_everything(store_path)
    assert caught.value.message.startswith("store damaged: ") and needle in caught.value.message
    assert ".recover" in caught.value.hint and "--store" in caught.value.hint


def test_garbage_pages_are_a_clear_error(store_path):
    db_file = store_path / "runs.sqlite3"
    tamper(store_path, "PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(db_file.read_bytes())
    for offset in range(4096, len(data), 4096):   # every page after the header page
        data[offset: offset + 64] = os.urandom(64)
    db_file.write_bytes(bytes(data))
    with pytest.raises(SkillbaseError) as caught:
        read_everything(store_path)
    assert "store damaged" in caught.value.message or "not a skillbase run store" in caught.value.message


def contents(store_path) -> dict:
    """The database and the artifacts (SQLite's -wal/-shm side files are its own working state)."""
    return {p: p.read_bytes() for p in store_path.rglob("*") if p.is_file() and not p.name.endswith(("-wal", "-shm"))}


def test_read_commands_open_the_store_read_only(store_path):
    before = contents(store_path)
    store = RunStore.open(store_path, read_only=True)
    assert [r.name for r in store.list_runs()] == ["run_1"]
    with pytest.raises(InputError, match="read-only"):
        store.create_run("/x.cu", "x", {})
    store.close()
    assert contents(store_path) == before


def test_the_cli_read_commands_use_the_read_only_store(store_path):
    for command in (["runs"], ["explain", "run_1"]):
        done = subprocess.run([sys.executable, "-m", "skillbase", *command, "--store", str(store_path)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    tamper(store_path, "UPDATE runs SET manifest_json = 'nope'")
    done = subprocess.run([sys.executable, "-m", "skillbase", "explain", "run_1", "--store", str(store_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr and "store damaged" in done.stderr


@pytest.mark.parametrize("how", ["empty", "missing"])
def test_no_fresh_start_over_a_lost_database_beside_artifacts(store_path, how):
    db_file = store_path / "runs.sqlite3"
    for suffix in ("-wal", "-shm"):
        (store_path / f"runs.sqlite3{suffix}").unlink(missing_ok=True)
    if how == "empty":
        db_file.write_bytes(b"")
    else:
        db_file.unlink()
    artifacts = sorted(p for p in (store_path / "artifacts").rglob("*") if p.is_file())
    with pytest.raises(StoreDamaged, match="artifacts of earlier runs") as caught:
        RunStore.open(store_path)
    assert "backup" in caught.value.hint
    assert db_file.exists() == (how == "empty") and (not db_file.exists() or db_file.stat().st_size == 0)
    assert sorted(p for p in (store_path / "artifacts").rglob("*") if p.is_file()) == artifacts


def test_a_new_store_in_an_empty_folder_still_starts(tmp_path):
    assert RunStore.open(tmp_path / "new").list_runs() == []


def test_resume_honours_a_live_owner_and_takes_over_a_dead_one(store_path):
    store = RunStore.open(store_path)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with store.transaction() as tx:
            tx.event(1, "owner", {"host": __import__("socket").gethostname(), "pid": sleeper.pid})
        with pytest.raises(InputError, match=f"being run by process {sleeper.pid}"):
            store.claim(1)
    finally:
        sleeper.kill()
        sleeper.wait()
    store.claim(1)   # its owner died: taken over
    assert store.last_event(1, "owner")["pid"] == os.getpid()
    store.claim(1)   # the owner itself may claim again


def test_a_paused_run_is_not_locked_by_a_live_process(store_path):
    store = RunStore.open(store_path)
    store.update_run(1, status="paused")
    with store.transaction() as tx:   # e.g. an MCP server that paused it and lives on
        tx.event(1, "owner", {"host": __import__("socket").gethostname(), "pid": os.getppid()})
    store.claim(1)
    assert store.get_run(1).status == "running"


def test_a_full_disk_keeps_the_last_finished_step(store_path):
    store = RunStore.open(store_path)
    pages = store.db.execute("PRAGMA page_count").fetchone()[0]
    store.db.execute(f"PRAGMA max_page_count={pages + 1}")   # SQLite's own SQLITE_FULL, as from a full disk
    with pytest.raises(EnvironmentProblem, match="disk is full") as caught:
        with store.transaction() as tx:
            tx.finish_step(1, "round0", {"blob": "x" * 200_000})
    assert "resume" in caught.value.hint
    store.close()
    again = RunStore.open(store_path)
    assert again.step_result(1, "baseline") == {"runtime_us": 10.0}
    assert again.step_result(1, "round0") is None


def test_a_full_disk_while_writing_an_artifact(store_path, monkeypatch):
    store = RunStore.open(store_path)
    before = sorted((store_path / "artifacts").rglob("*"))

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(EnvironmentProblem, match="disk is full"):
        store.artifacts.put_text("a new kernel")
    assert [p for p in sorted((store_path / "artifacts").rglob("*")) if p not in before and p.is_file()] == []


@pytest.mark.parametrize("ref", ["run_" + "9" * 30, "9" * 19, "run_-1"])
def test_huge_or_negative_run_ids_are_input_errors(store_path, ref):
    with pytest.raises(InputError):
        parse_run_ref(ref)
    store = RunStore.open(store_path, read_only=True)
    with pytest.raises(InputError):
        store.get_run(ref)


def test_a_huge_limit_is_not_an_overflow(store_path):
    assert len(RunStore.open(store_path, read_only=True).list_runs(limit=10 ** 30)) == 1
