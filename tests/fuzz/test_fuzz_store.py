"""Fuzzed store damage: random bytes over the database's pages, random SQL vandalism of its rows,
then everything the read commands read. Each is a result or one error; a read never changes the
database or the artifacts."""

from __future__ import annotations

import functools
import shutil
import sqlite3

from fuzz_kit import examples, snapshot, survive, unchanged
from hypothesis import given
from hypothesis import strategies as st

from skillbase.run.store import RunStore

TABLES = ["runs", "rounds", "decisions", "attempts", "steps", "events", "meta", "evidence", "llm_calls"]
COLUMNS = {"runs": ["status", "manifest_json", "id", "task_path", "best_us"], "decisions": ["params_json",
           "candidates_json", "trace"], "attempts": ["params_json", "status", "speedup"], "steps": ["result_json"],
           "events": ["payload_json", "kind"], "meta": ["value"], "rounds": ["outcome", "idx"]}
GARBAGE = st.one_of(st.text(max_size=30), st.integers(-2**63, 2**63 - 1), st.floats(), st.binary(max_size=20),
                    st.none(), st.sampled_from(["{", "NaN", "[1,", "\"x\"", "{\"host\": 1, \"pid\": \"x\"}"]))


@functools.cache
def template(root) -> None:
    store = RunStore.open(root)
    for n in range(3):
        run_id = store.create_run(f"/k{n}.cu", f"k{n}", {"settings": {"rounds": 1}})
        store.claim(run_id)
        with store.transaction() as tx:
            tx.start_round(run_id, 0, "a" * 64)
            tx.add_decision(run_id, 0, "mem.coalesce", {"p": n}, [{"skill": "mem.coalesce"}], "b" * 64, "why")
            attempt = tx.add_attempt(run_id, 0, 0, "mem.coalesce", {"p": n}, None, None)
            tx.finish_attempt(attempt, "incorrect", reason="off by one")
            tx.finish_step(run_id, "baseline", {"runtime_us": 10.0 + n})
            tx.finish_round(run_id, 0, "rejected")
    store.artifacts.put_text("a kernel")
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()


def read_everything(location) -> None:
    from skillbase.run.explain import explain_run, render_text

    store = RunStore.open(location, read_only=True)
    for run in store.list_runs(limit=10**20):
        store.shown_status(run)
        render_text(explain_run(store, run.name))
        store.step_result(run.id, "baseline")
        store.skill_outcome_stats()


@examples(150)
@given(data=st.data())
def test_a_damaged_store_is_read_or_refused_and_never_changed(tmp_path_factory, data):
    base = tmp_path_factory.getbasetemp() / "fuzz-store-template"
    template(base)
    location = tmp_path_factory.mktemp("store")
    shutil.copytree(base, location, dirs_exist_ok=True)
    db_file = location / "runs.sqlite3"
    if data.draw(st.booleans()):   # bytes over pages
        raw = bytearray(db_file.read_bytes())
        for _ in range(data.draw(st.integers(1, 5))):
            offset = data.draw(st.integers(0, len(raw) - 1))
            raw[offset: offset + 64] = data.draw(st.binary(min_size=1, max_size=64))
        if data.draw(st.booleans()):
            raw = raw[: data.draw(st.integers(0, len(raw)))]
        db_file.write_bytes(bytes(raw))
    else:                          # SQL vandalism
        db = sqlite3.connect(db_file)
        for _ in range(data.draw(st.integers(1, 3))):
            table = data.draw(st.sampled_from(TABLES))
            if data.draw(st.integers(0, 5)) == 0 or table not in COLUMNS:
                db.execute(f"DROP TABLE IF EXISTS {table}")
            else:
                column = data.draw(st.sampled_from(COLUMNS[table]))
                try:
                    db.execute(f"UPDATE {table} SET {column} = ?", (data.draw(GARBAGE),))
                except (sqlite3.Error, OverflowError):
                    pass
        db.commit()
        db.close()
    before = snapshot(location)
    survive("store damage", lambda: read_everything(location))
    unchanged(before, snapshot(location))


def test_schema_text_that_is_not_utf8_is_a_damaged_store(tmp_path_factory):
    """The fuzzer's case (CI, 2026-12-02): 64 bytes of the first page's schema text replaced by one 0x80 byte
    made SQLite hand back text Python cannot decode; the read must end in one store error, not a traceback."""
    from skillbase.errors import SkillbaseError

    base = tmp_path_factory.getbasetemp() / "fuzz-store-template"
    template(base)
    location = tmp_path_factory.mktemp("store-utf8")
    shutil.copytree(base, location, dirs_exist_ok=True)
    db_file = location / "runs.sqlite3"
    raw = bytearray(db_file.read_bytes())
    raw[3988:3988 + 64] = b"\x80"
    db_file.write_bytes(bytes(raw))
    before = snapshot(location)
    try:
        read_everything(location)
    except SkillbaseError as error:
        assert "\n" not in error.message
    unchanged(before, snapshot(location))
