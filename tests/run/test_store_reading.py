"""Read commands never create or change a store (issue 22): `runs`, `explain`, `report` and `pending`
with a mistyped --store or $SKILLBASE_STORE say "no run store at PATH" (exit 2); before the first run
the default store reads as empty without being made; an existing store is opened read-only, also in a
folder the reader may not write."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from skillbase.errors import InputError
from skillbase.run.store import RunStore

READ_COMMANDS = [["runs"], ["explain", "run_1"], ["report", "run_1"], ["pending"]]


def tree(root: Path) -> dict[str, tuple[int, bytes | None]]:
    """Every path under root with its mode and, for files, its bytes (a changed mtime alone is no write)."""
    return {str(p.relative_to(root)): (p.stat().st_mode, p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*"))}


def skillbase(args: list[str], cwd: Path, env: dict[str, str], prefix: tuple[str, ...] = ()):
    return subprocess.run([*prefix, sys.executable, "-m", "skillbase", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def home(tmp_path):
    """A user whose default store (under XDG_DATA_HOME) has not been made yet, and no $SKILLBASE_STORE."""
    env = {k: v for k, v in os.environ.items() if k != "SKILLBASE_STORE"}
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    return tmp_path, env


def make_store(path: Path) -> Path:
    store = RunStore.open(path)
    run_id = store.create_run("/k.cu", "k", {"settings": {"rounds": 1}})
    with store.transaction() as tx:
        tx.start_round(run_id, 0, "a" * 64)
        tx.finish_step(run_id, "baseline", {"runtime_us": 10.0})
    store.close()
    return path


@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize("given_by", ["--store", "SKILLBASE_STORE"])
@pytest.mark.parametrize("command", READ_COMMANDS, ids=lambda c: c[0])
def test_a_mistyped_store_path_is_an_error_and_nothing_is_created(home, command, given_by, as_json):
    root, env = home
    typo = root / "stroe"
    args = [*command, *(["--json"] if as_json else [])]
    if given_by == "--store":
        args += ["--store", str(typo)]
    else:
        env["SKILLBASE_STORE"] = str(typo)
    before = tree(root)
    done = skillbase(args, root, env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    if as_json:
        error = json.loads(done.stdout)["error"]
        assert error["message"] == f"no run store at {typo}" and error["exit_code"] == 2
        assert str(root / "data" / "skillbase") in error["hint"] and "--store" in error["hint"]
    else:
        assert done.stderr.splitlines()[0] == f"error: no run store at {typo}"
    assert tree(root) == before


@pytest.mark.parametrize("as_json", [False, True])
def test_before_the_first_run_the_default_store_reads_empty_and_is_not_made(home, as_json):
    root, env = home
    flag = ["--json"] if as_json else []
    before = tree(root)
    runs = skillbase(["runs", *flag], root, env)
    assert runs.returncode == 0, runs.stderr
    if as_json:
        document = json.loads(runs.stdout)
        assert document["runs"] == [] and document["schema_version"] >= 1
        assert document["store"] == str(root / "data" / "skillbase")
    else:
        assert "no runs in" in runs.stdout and "yet" in runs.stdout
    pending = skillbase(["pending", *flag], root, env)
    assert pending.returncode == 0, pending.stderr
    assert (json.loads(pending.stdout)["prompts"] == []) if as_json else "no run is waiting" in pending.stdout
    for command, missing in ((["explain", "run_3"], "run run_3"), (["report", "run_3"], "run run_3"),
                             (["pending", "--batch", "batch_2"], "batch batch_2")):
        done = skillbase([*command, *flag], root, env)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stdout + done.stderr
        message = json.loads(done.stdout)["error"]["message"] if as_json else done.stderr.splitlines()[0]
        assert f"no {missing} in the store at {root / 'data' / 'skillbase'}" in message
    assert tree(root) == before and not (root / "data").exists()


def test_read_commands_leave_an_existing_store_as_it_was(home):
    root, env = home
    store = make_store(root / "store")
    before = {p: b for p, (_, b) in tree(store).items() if not p.endswith(("-wal", "-shm"))}
    out = root / "out"
    for command in READ_COMMANDS:
        done = skillbase([*command, "--json", "--store", str(store), *(["-o", str(out)] if command[0] == "report"
                                                                           else [])], root, env)
        assert done.returncode == 0, done.stdout + done.stderr
    after = {p: b for p, (_, b) in tree(store).items() if not p.endswith(("-wal", "-shm"))}
    assert after == before   # SQLite's -wal/-shm side files are its own working state
    assert sorted(p.name for p in out.iterdir()) == ["run_1.html", "run_1.md"]
    # `pending` reads batches; a store written before batches existed does not gain their tables by it
    tables = {row[0] for row in sqlite3.connect(store / "runs.sqlite3").execute("SELECT name FROM sqlite_master")}
    assert "batches" not in tables and "runs" in tables


def test_a_folder_without_a_store_or_with_an_empty_database_is_no_store(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "zero").mkdir()
    (tmp_path / "zero" / "runs.sqlite3").write_bytes(b"")
    for folder in ("empty", "zero"):
        with pytest.raises(InputError) as caught:
            RunStore.open(tmp_path / folder, read_only=True)
        assert caught.value.message == f"no run store at {tmp_path / folder}"
    assert (tmp_path / "zero" / "runs.sqlite3").stat().st_size == 0


def test_another_programs_database_is_not_a_store_and_is_not_changed(tmp_path):
    other = sqlite3.connect(tmp_path / "runs.sqlite3")
    other.execute("CREATE TABLE notes(text)")
    other.commit()
    other.close()
    before = tree(tmp_path)
    with pytest.raises(InputError, match="not a skillbase run store"):
        RunStore.open(tmp_path, read_only=True)
    assert tree(tmp_path) == before


def test_a_store_in_a_folder_the_reader_cannot_write_is_read(tmp_path):
    """Another user's store (or a read-only mount): mode=ro would need to create the -shm index beside
    the database, so the reader opens it immutable. As root every folder is writable, so the reader runs
    as `nobody` (setpriv) in a world-readable temporary folder."""
    as_root = os.geteuid() == 0
    if as_root and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: cannot take write access away from the reader")
    base = Path(tempfile.mkdtemp(prefix="skillbase-ro-"))
    try:
        base.chmod(0o755)
        store = make_store(base / "store")
        for side in ("runs.sqlite3-wal", "runs.sqlite3-shm"):
            assert not (store / side).exists()   # the writer checkpointed and removed them on close
        for path in [*store.rglob("*"), store]:
            path.chmod(stat.S_IMODE(path.stat().st_mode) & ~0o222)
        before = tree(store)
        prefix = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups") if as_root else ()
        env = {**os.environ, "HOME": str(base), "XDG_DATA_HOME": str(base / "data")}
        env.pop("SKILLBASE_STORE", None)
        for command in (["runs"], ["explain", "run_1"], ["pending"]):
            done = skillbase([*command, "--json", "--store", str(store)], base, env, prefix)
            assert done.returncode == 0, done.stdout + done.stderr
            if command == ["runs"]:
                assert [r["run"] for r in json.loads(done.stdout)["runs"]] == ["run_1"]
        assert tree(store) == before
    finally:
        for path in [base, *base.rglob("*")]:
            if path.is_dir():
                path.chmod(0o755)
        shutil.rmtree(base)
