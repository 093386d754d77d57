"""The run store: every optimization run, round, attempt, decision and LLM call, in SQLite.

One SQLite database (stdlib `sqlite3`, WAL journal) plus a content-addressed artifact folder
(`skillbase.run.artifacts`) beside it. Every write is one transaction, so a crash, `kill -9` or Ctrl-C
leaves the store at the last finished step; the loop records each finished step under a key
(`steps` table) so `skillbase resume run_N` continues from there without redoing it. `explain`
and `report` read only from here and never re-run anything.

Every SQL statement of skillbase lives here, behind one error boundary (`_Guarded`): a database
error or a JSON column that does not parse becomes one line (`store damaged: …` with how to recover,
or the disk being full, or the store read-only), never a traceback. Read commands (runs, explain,
report, pending) open the store with `RunStore.open(..., read_only=True)` and never write: an existing
database is opened read-only; where none exists nothing is created (a path given with --store or
$SKILLBASE_STORE is "no run store at PATH", the default location not made yet reads as an empty
store). A database that is missing or empty beside an artifact folder of earlier runs is refused
rather than started over (run ids would restart at run_1 and the history would be lost).
`claim` is the owner lock `resume` honours. A round's decision is its last `decisions` row: one that
`skillbase redecide` replaced stays, marked by a `decision-superseded` event (`superseded_decisions`), so
no schema change was needed and a store written before it reads the same. Likewise a run given more rounds
(`skillbase resume --more-rounds`) keeps its raised --rounds in its manifest's settings and the reopening
as a `rounds-added` event (`rounds_added`): when, from how many rounds to how many, why.

The store holds absolute paths into its own folder (the runs' prompts in their waiting.json, a batch's
candidates folder), so it records that folder (the `root` row of `meta`). A store moved or copied by
hand (`mv`, `cp -r`) is followed on its first writable open: those paths are rewritten to its new
folder, as `store unpack` does, with one `note:` line on stderr, so a copy never reads or writes the
original's files. A read-only open writes nothing and translates them as it reads instead.

Location (`skillbase.config.store_location`), first match wins: an explicit path (`--store`),
`$SKILLBASE_STORE`, then `$XDG_DATA_HOME/skillbase` (default `~/.local/share/skillbase`): one store
per user, so run numbers are unique wherever the user starts a run from.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import socket
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from skillbase.config import data_root, store_location
from skillbase.errors import EnvironmentProblem, InputError, SkillbaseError
from skillbase.files import write_text_atomically
from skillbase.run.artifacts import ArtifactStore
from skillbase.run.types import Outcome, RunStatus

SCHEMA_VERSION = 1
ROOT = "root"     # meta key: the folder the store's absolute paths point into (`RunStore.relocate` keeps it)
ATTEMPT_PHASES = "phases_json"    # the attempts column that stores older than it lack (`_Tx.attempt_phases_column`)

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at REAL NOT NULL,
    finished_at REAL,
    task_path TEXT NOT NULL,
    task_name TEXT NOT NULL,
    status TEXT NOT NULL,              -- running | paused | finished | failed | interrupted
    stop_reason TEXT,
    manifest_json TEXT NOT NULL,
    baseline_us REAL,
    best_us REAL,
    best_kernel TEXT                   -- artifact digest of the best verified kernel
);
CREATE TABLE IF NOT EXISTS rounds (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    idx INTEGER NOT NULL,
    status TEXT NOT NULL,              -- started | finished
    started_at REAL NOT NULL,
    finished_at REAL,
    kernel TEXT,                       -- digest of the kernel this round started from
    outcome TEXT,                      -- a run.types.Outcome: accepted | rejected | no-candidate
    PRIMARY KEY (run_id, idx)
);
CREATE TABLE IF NOT EXISTS evidence (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    round_idx INTEGER NOT NULL,
    kernel TEXT NOT NULL,
    document TEXT NOT NULL,            -- artifact digest of the evidence JSON
    report TEXT,                       -- artifact digest of the .ncu-rep, when profiled
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    round_idx INTEGER NOT NULL,
    chosen_skill TEXT,
    params_json TEXT NOT NULL,
    candidates_json TEXT NOT NULL,
    trace TEXT NOT NULL,               -- artifact digest of the full engine result (every leaf)
    reason TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    round_idx INTEGER NOT NULL,
    attempt_idx INTEGER NOT NULL,      -- 0 = first try, 1.. = repairs
    skill TEXT,
    params_json TEXT NOT NULL,
    parent_kernel TEXT,
    kernel TEXT,
    status TEXT NOT NULL,              -- a run.types.Status: pending | build-failed | incorrect | ... | accepted
    reason TEXT,
    runtime_us REAL,
    baseline_us REAL,
    speedup REAL,
    spread REAL,
    created_at REAL NOT NULL,
    finished_at REAL,
    phases_json TEXT                   -- its judging's {phase: seconds} (harness.phases), NULL: none recorded
);
CREATE TABLE IF NOT EXISTS llm_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    attempt_id INTEGER,
    role TEXT NOT NULL,                -- coder | debugger
    model TEXT,
    endpoint_name TEXT,
    prompt_version TEXT,
    prompt TEXT,                       -- artifact digests
    response TEXT,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    duration_s REAL,
    error TEXT,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS steps (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    key TEXT NOT NULL,
    result_json TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (run_id, key)
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    ts REAL NOT NULL,
    kind TEXT NOT NULL,
    payload_json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS attempts_by_run ON attempts(run_id, round_idx);
CREATE INDEX IF NOT EXISTS attempts_by_skill ON attempts(skill, status);
CREATE INDEX IF NOT EXISTS events_by_run ON events(run_id, id);
"""

DECISION_SUPERSEDED = "decision-superseded"   # the event that marks a round's decision replaced (`redecide`)
ROUNDS_ADDED = "rounds-added"                 # the event that reopens a run that spent its rounds (`reopen`)
ROUND_REOPENED = "round-reopened"             # the event that reopens a no-candidate round (`redecide`)

_RUN_REF = re.compile(r"^(?:run_)?(\d{1,18})$")   # at most 18 digits: every id fits SQLite's 64-bit integer
DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT)


class StoreDamaged(InputError):
    """The database opened, but what it holds cannot be read: garbage pages, a dropped table, a JSON
    column that does not parse. The message names the store; the hint says how to recover."""


def recovery_hint(db_path: Path) -> str:
    return (f"keep a copy of {db_path}; `sqlite3 {db_path.name} .recover | sqlite3 recovered.sqlite3` saves what "
            "is readable, or point --store / SKILLBASE_STORE at a new folder to start over")


def store_problem(error: Exception, db_path: Path) -> SkillbaseError:
    """The one translation of a database error into what the user reads."""
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    lowered = text.lower()
    if "disk is full" in lowered or getattr(error, "errno", None) in DISK_ERRORS:
        return EnvironmentProblem(f"the run store at {db_path.parent} cannot grow: the disk is full ({text})",
                                  hint="free some space; the last finished step is kept and `skillbase resume` "
                                       "continues from it")
    if "readonly" in lowered or "read-only" in lowered:
        return EnvironmentProblem(f"the run store at {db_path.parent} is read-only ({text})",
                                  hint="make the folder and runs.sqlite3 writable, or pass --store")
    if "locked" in lowered or "busy" in lowered:
        return EnvironmentProblem(f"the run store at {db_path.parent} is busy ({text})",
                                  hint="another skillbase process holds it; retry when it is done")
    if "unable to open" in lowered:
        return EnvironmentProblem(f"cannot open the run store {db_path} ({text})",
                                  hint="check the folder's permissions, or pass --store")
    if "file is not a database" in lowered or "not a database" in lowered:
        return InputError(f"{db_path} is not a skillbase run store ({text})",
                          hint="point --store / SKILLBASE_STORE at another folder; nothing was changed")
    return StoreDamaged(f"store damaged: {db_path}: {text}", hint=recovery_hint(db_path))


def column_json(value: Any, db_path: Path, what: str, expect: type | None = None, items: type | None = None) -> Any:
    """A JSON column's value; one that does not parse, or is not an `expect` (of `items`), is a
    StoreDamaged naming the column (readers index into these documents)."""
    try:
        document = json.loads(value)
    except (TypeError, ValueError, RecursionError):
        raise StoreDamaged(f"store damaged: {db_path}: {what} is not JSON ({str(value)[:40]!r})",
                           hint=recovery_hint(db_path)) from None
    shaped = expect is None or (isinstance(document, expect) and (
        items is None or all(isinstance(item, items) for item in document)))
    if not shaped:
        kind = (expect.__name__ if expect else "") + (f" of {items.__name__}" if items else "")
        raise StoreDamaged(f"store damaged: {db_path}: {what} is not a JSON {kind} ({str(value)[:40]!r})",
                           hint=recovery_hint(db_path))
    return document


def column_number(value: Any, db_path: Path, what: str) -> float | None:
    """A REAL column's value (None when NULL). SQLite stores whatever it is given, so text or bytes
    there is damage, reported like any other rather than failing in a format string later."""
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return value
    raise StoreDamaged(f"store damaged: {db_path}: {what} is not a number ({str(value)[:40]!r})",
                       hint=recovery_hint(db_path))


class _Result:
    """The rows of one statement, fetched inside the error boundary (a damaged page fails there)."""

    def __init__(self, rows: list[sqlite3.Row], lastrowid: int | None, rowcount: int):
        self.rows, self.lastrowid, self.rowcount = rows, lastrowid, rowcount

    def fetchone(self) -> sqlite3.Row | None:
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[sqlite3.Row]:
        return list(self.rows)

    def __iter__(self) -> Iterator[sqlite3.Row]:
        return iter(self.rows)


class _Guarded:
    """A connection whose every statement runs inside the store's error boundary."""

    def __init__(self, connection: sqlite3.Connection, db_path: Path):
        self.connection, self.db_path = connection, db_path

    def execute(self, sql: str, args: tuple | list = ()) -> _Result:
        try:
            cursor = self.connection.execute(sql, args)
            return _Result(cursor.fetchall(), cursor.lastrowid, cursor.rowcount)
        except (sqlite3.ProgrammingError, sqlite3.InterfaceError):
            raise   # our own mistake in a statement, not the user's store
        except (sqlite3.DatabaseError, UnicodeDecodeError) as error:
            # a damaged page can hold text that is not UTF-8, the schema's included (found by the store fuzzer)
            raise store_problem(error, self.db_path) from None

    def backup(self, target: sqlite3.Connection) -> None:
        try:
            self.connection.backup(target)
        except sqlite3.DatabaseError as error:
            raise store_problem(error, self.db_path) from None

    def close(self) -> None:
        self.connection.close()


def parse_run_ref(ref: str | int) -> int:
    """`run_42`, `42` or 42 -> 42; anything else is a one-line error."""
    if isinstance(ref, int):
        return ref
    match = _RUN_REF.match(str(ref).strip())
    if not match:
        raise InputError(f"not a run id: {ref!r}", hint="run ids look like run_42; `skillbase runs` lists them")
    return int(match.group(1))


def run_name(run_id: int) -> str:
    return f"run_{run_id}"


@dataclass(frozen=True)
class RunRow:
    id: int
    created_at: float
    finished_at: float | None
    task_path: str
    task_name: str
    status: RunStatus
    stop_reason: str | None
    manifest: dict
    baseline_us: float | None
    best_us: float | None
    best_kernel: str | None

    @property
    def name(self) -> str:
        return run_name(self.id)

    @property
    def speedup(self) -> float | None:
        if self.baseline_us and self.best_us:
            return self.baseline_us / self.best_us
        return None


# Batches (`bench optimize`) came after schema 1: their tables are made on first use.
_BATCH_SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at REAL NOT NULL,
    settings_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_runs (
    run_id INTEGER PRIMARY KEY REFERENCES runs(id),
    batch_id INTEGER NOT NULL REFERENCES batches(id),
    operator TEXT NOT NULL,
    dtype TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS batch_runs_by_batch ON batch_runs(batch_id, run_id)
"""

_BATCH_REF = re.compile(r"^(?:batch_)?(\d+)$")


def parse_batch_ref(ref: str | int) -> int:
    """`batch_3`, `3` or 3 -> 3; anything else is a one-line error."""
    if isinstance(ref, int):
        return ref
    match = _BATCH_REF.match(str(ref).strip())
    if not match:
        raise InputError(f"not a batch id: {ref!r}", hint="batch ids look like batch_3; `skillbase pending` names them")
    return int(match.group(1))


def batch_name(batch_id: int) -> str:
    return f"batch_{batch_id}"


@dataclass(frozen=True)
class BatchRow:
    id: int
    created_at: float
    settings: dict

    @property
    def name(self) -> str:
        return batch_name(self.id)


@dataclass(frozen=True)
class BatchMember:
    batch_id: int
    run_id: int
    operator: str
    dtype: str


class RunStore:
    """SQLite database + artifact folder. Open with `RunStore.open(path_or_None)`."""

    def __init__(self, location: Path):
        # Absolute: paths written from it (a waiting run's prompt) must not depend on the caller's working directory.
        self.location = Path(location).absolute()
        self.db_path = self.location / "runs.sqlite3"
        self.artifacts = ArtifactStore(self.location / "artifacts")
        self._db: _Guarded | None = None
        self.read_only = False
        self._read_moves: list[tuple[str, str]] = []   # a read-only open of a moved store: old root -> here

    @classmethod
    def open(cls, location: Path | str | None = None, read_only: bool = False, *, say_moved: bool = True) -> RunStore:
        """The store at `location` (see store_location). `read_only` (runs, explain, report, pending)
        writes nothing on disk: an existing database is opened read-only; where there is none, a location
        given explicitly (--store, $SKILLBASE_STORE: likely a typo) is an error, and the default location
        not made yet reads as an empty store. `say_moved=False`: a store found moved is relocated without
        the note (`store unpack`, where landing in another folder is the point)."""
        store = cls(store_location(location))
        if read_only:
            store._open_for_reading()
            old = store._old_root()
            if old is not None:   # nothing is written: the paths are translated as they are read (`here`)
                store._read_moves = [(_slash(old), _slash(str(store.location)))]
        else:
            store._connect()
            store._follow_move(say_moved)
        return store

    def _open_for_reading(self) -> None:
        self._refuse_lost_database()
        if self._holds_database():
            self._connect(read_only=True)
        elif self.location.resolve() == data_root().resolve():
            self._connect_empty()
        else:
            raise InputError(f"no run store at {self.location.absolute()}",
                             hint=f"check the path given with --store or $SKILLBASE_STORE; without either the store "
                                  f"is {data_root()}; `skillbase optimize` creates a store on its first run")

    def _holds_database(self) -> bool:
        """Whether a database is there (a non-empty file, or a WAL not yet checkpointed into one)."""
        wal = self.db_path.with_name(self.db_path.name + "-wal")
        try:
            return self.db_path.stat().st_size > 0 or (wal.exists() and wal.stat().st_size > 0)
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError:
            return True   # there but unreadable: the connection reports it

    def _connect_empty(self) -> None:
        # The default store before the first run: an empty schema in memory, so reads answer "no runs
        # yet" / "no run run_N" through the same code, and nothing is created on disk.
        raw = sqlite3.connect(":memory:", isolation_level=None)
        raw.row_factory = sqlite3.Row
        raw.executescript(_SCHEMA + ";" + _BATCH_SCHEMA)
        raw.execute("INSERT INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        self._db, self.read_only = _Guarded(raw, self.db_path), True

    def _read_only_uri(self) -> str:
        uri = f"file:{quote(str(self.db_path.resolve()))}?mode=ro"
        # mode=ro still needs the WAL index (-shm) beside the database, which SQLite creates there: in a
        # folder we may not write, with no -wal (no writer, nothing pending), the file is read as
        # immutable instead. Only then: immutable ignores a writer's pending WAL pages and later changes.
        wal = self.db_path.with_name(self.db_path.name + "-wal")
        if not os.access(self.location, os.W_OK) and not wal.exists():
            uri += "&immutable=1"
        return uri

    # -- connection and schema ---------------------------------------------------------------

    def _connect(self, read_only: bool = False) -> None:
        if not read_only:
            try:
                self.location.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise InputError(f"cannot create the run store at {self.location}: {error.strerror}",
                                 hint="set SKILLBASE_STORE or pass --store to a writable folder") from None
        self._refuse_lost_database()
        try:
            if read_only:
                raw = sqlite3.connect(self._read_only_uri(), uri=True, timeout=30, isolation_level=None)
            else:
                raw = sqlite3.connect(self.db_path, timeout=30, isolation_level=None)
        except sqlite3.DatabaseError as error:
            raise store_problem(error, self.db_path) from None
        raw.row_factory = sqlite3.Row
        db = _Guarded(raw, self.db_path)
        try:
            if not read_only:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            version = self._schema_version(db)
            if version is None and read_only:
                raise InputError(f"{self.db_path} is not a skillbase run store (it has no schema version)",
                                 hint="point --store / SKILLBASE_STORE at a folder written by `skillbase optimize`; "
                                      "nothing was changed")
        except SkillbaseError:
            raw.close()
            raise
        self.read_only = read_only
        if version is not None and version > SCHEMA_VERSION:
            raise InputError(
                f"the run store at {self.location} was written by a newer skillbase (schema {version}, "
                f"this one reads up to {SCHEMA_VERSION})", hint="upgrade skillbase; the store was not touched")
        self._db = db
        if version is None:
            with self.transaction() as tx:
                tx.executescript_safe(_SCHEMA)
                tx.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)",
                           (str(SCHEMA_VERSION),))
                tx.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (ROOT, str(self.location)))

    def _refuse_lost_database(self) -> None:
        """A missing or empty database beside the artifacts of earlier runs was lost or truncated:
        starting a new one there would restart the run ids and orphan the history."""
        wal = self.db_path.with_name(self.db_path.name + "-wal")
        try:
            empty = not self.db_path.exists() or self.db_path.stat().st_size == 0
            if not empty or (wal.exists() and wal.stat().st_size > 0):
                return
            earlier = next(self.artifacts.objects.glob("*/*"), None)
        except OSError:
            return   # the connection below reports an unreadable folder
        if earlier is not None:
            state = "missing" if not self.db_path.exists() else "empty (0 bytes)"
            raise StoreDamaged(f"store damaged: {self.db_path} is {state} but {self.artifacts.root} holds the "
                               "artifacts of earlier runs", hint="restore runs.sqlite3 from a backup; to start a new "
                               "store instead, move the artifacts folder aside or pass --store")

    def _schema_version(self, db: _Guarded) -> int | None:
        has_meta = db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
        if not has_meta:
            return None
        row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        try:
            return int(row[0]) if row else None
        except (TypeError, ValueError):
            raise StoreDamaged(f"store damaged: {self.db_path}: schema_version is {row[0]!r}",
                               hint=recovery_hint(self.db_path)) from None

    # -- the store's own folder: followed when the store was moved or copied ------------------

    def recorded_root(self) -> str | None:
        """The folder the store's absolute paths point into, as recorded (None: a store written before it was)."""
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (ROOT,)).fetchone()
        if row is None:
            return None
        if not isinstance(row[0], str) or not os.path.isabs(row[0]):
            raise StoreDamaged(f"store damaged: {self.db_path}: its recorded folder is {row[0]!r}",
                               hint=recovery_hint(self.db_path))
        return row[0]

    def _old_root(self) -> str | None:
        """The other folder this store's paths still point into (it was moved or copied), else None."""
        old = self.recorded_root()
        if old is None:
            old = self._inferred_root()
        return None if old is None or _same_folder(old, self.location) else old

    def _inferred_root(self) -> str | None:
        """Where a store written before its folder was recorded points its paths: the folder every paused
        run's prompt (named in its waiting.json) sits in, as `<root>/runs/run_N/` of that very run whose
        file was copied along; None when there is none or they disagree (nothing is then rewritten)."""
        roots = set()
        for waiting in (self.location / "runs").glob("run_*/waiting.json"):
            try:
                prompt = json.loads(waiting.read_text()).get("prompt")
            except (OSError, ValueError, AttributeError):
                continue
            if not isinstance(prompt, str) or not os.path.isabs(prompt):
                continue
            path = Path(prompt)
            if (path.parent.name, path.parent.parent.name) == (waiting.parent.name, "runs") \
                    and (waiting.parent / path.name).is_file():
                roots.add(str(path.parents[2]))
        return roots.pop() if len(roots) == 1 else None

    def _follow_move(self, say: bool = True) -> None:
        """A store moved or copied by hand still points into its old folder: rewrite its paths to this one
        (a copy would otherwise read and write the original's prompts and candidates), and say so once."""
        old = self._old_root()
        if old is not None:
            self.relocate([(_slash(old), _slash(str(self.location)))])
            if say:
                log.warning("note: the run store at %s was moved or copied from %s: its paths now point here",
                            self.location, old)
        elif self.recorded_root() is None:
            with self.transaction() as tx:
                tx.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (ROOT, str(self.location)))

    def here(self, text: str) -> str:
        """`text` (a path, or JSON naming paths) as this store's folder has it: a read-only open of a moved or
        copied store translates its old folder's paths (a writable open rewrote them on disk: unchanged)."""
        if not self._read_moves or not isinstance(text, str):
            return text
        return _moved_path(_moved_json(text, self._read_moves), self._read_moves)

    @property
    def db(self) -> _Guarded:
        assert self._db is not None, "store is closed"
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    @contextmanager
    def transaction(self) -> Iterator[_Tx]:
        """One atomic write: BEGIN IMMEDIATE ... COMMIT, rolled back on any exception."""
        if self.read_only:
            raise InputError(f"the run store at {self.location} was opened read-only",
                             hint="this command only reads the store")
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield _Tx(self.db)
        except BaseException:
            try:
                self.db.execute("ROLLBACK")
            except SkillbaseError:
                pass   # SQLite already rolled back (a full disk does that); the first error is the one to show
            raise
        else:
            self.db.execute("COMMIT")

    # -- runs --------------------------------------------------------------------------------

    def create_run(self, task_path: str, task_name: str, manifest: dict) -> int:
        with self.transaction() as tx:
            cursor = tx.execute(
                "INSERT INTO runs(created_at, task_path, task_name, status, manifest_json) VALUES (?,?,?,?,?)",
                (time.time(), str(task_path), task_name, RunStatus.RUNNING, _dumps(manifest)))
            run_id = int(cursor.lastrowid)
            tx.event(run_id, "run-created", {"task": task_name})
        return run_id

    def get_run(self, ref: str | int) -> RunRow:
        run_id = parse_run_ref(ref)
        row = self.db.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            raise InputError(f"no run {run_name(run_id)} in the store at {self.location}",
                             hint="`skillbase runs` lists the runs there; --store picks another store")
        return _run_row(row, self.db_path, self.here)

    def list_runs(self, task: str | None = None, skill: str | None = None,
                  status: RunStatus | None = None, limit: int | None = None) -> list[RunRow]:
        """Runs newest first: those whose task name or path contains `task`, that tried `skill`,
        whose shown status (`shown_status`) is `status`."""
        if status in (RunStatus.RUNNING, RunStatus.INTERRUPTED):
            # A killed run is stored as running; its shown status says interrupted.
            shown = [r for r in self.list_runs(task=task, skill=skill) if self.shown_status(r) == status]
            return shown[:limit] if limit else shown
        sql = "SELECT * FROM runs WHERE 1=1"
        args: list[Any] = []
        if task:
            sql += " AND (task_name LIKE ? OR task_path LIKE ?)"
            args += [f"%{task}%", f"%{task}%"]
        if status:
            sql += " AND status = ?"
            args.append(status)
        if skill:
            sql += " AND id IN (SELECT run_id FROM attempts WHERE skill = ?)"
            args.append(skill)
        sql += " ORDER BY id DESC"
        if limit:
            sql += " LIMIT ?"
            args.append(min(int(limit), 2**62))   # SQLite integers are 64-bit; more rows than that do not exist
        return [_run_row(row, self.db_path, self.here) for row in self.db.execute(sql, args)]

    def update_run(self, run_id: int, **fields: Any) -> None:
        allowed = {"status", "stop_reason", "baseline_us", "best_us", "best_kernel", "finished_at"}
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"unknown run fields: {sorted(unknown)}")
        if not fields:
            return
        columns = ", ".join(f"{name}=?" for name in fields)
        with self.transaction() as tx:
            tx.execute(f"UPDATE runs SET {columns} WHERE id=?", (*fields.values(), run_id))
            tx.event(run_id, "run-updated", fields)

    def set_manifest(self, run_id: int, manifest: dict) -> None:
        """Record the run's manifest (versions, digests, settings, machine), once its collaborators exist."""
        with self.transaction() as tx:
            tx.execute("UPDATE runs SET manifest_json=? WHERE id=?", (_dumps(manifest), run_id))

    # -- steps (resume) ----------------------------------------------------------------------

    def step_result(self, run_id: int, key: str) -> dict | None:
        row = self.db.execute("SELECT result_json FROM steps WHERE run_id=? AND key=?", (run_id, key)).fetchone()
        return column_json(row[0], self.db_path, f"step {key!r} of run_{run_id}", dict) if row else None

    # -- rounds, evidence, decisions, attempts, LLM calls ------------------------------------

    def rounds(self, run_id: int) -> list[sqlite3.Row]:
        return list(self.db.execute("SELECT * FROM rounds WHERE run_id=? ORDER BY idx", (run_id,)))

    def decisions(self, run_id: int, round_idx: int | None = None) -> list[sqlite3.Row]:
        return self._rows("decisions", run_id, round_idx)

    def superseded_decisions(self, run_id: int) -> dict[int, dict]:
        """The run's decisions that a later one replaced (`skillbase redecide`), by decisions row id: the
        `decision-superseded` event's record (`at`: when; `by`: the new row's id; the rules and corpus that
        made it; where the old prompt and candidate went). A round's decision is its last row; the rows
        before it stay, marked here, so `explain` shows what the old rules chose."""
        found = {}
        for row in self.db.execute("SELECT ts, payload_json FROM events WHERE run_id=? AND kind=? ORDER BY id",
                                   (run_id, DECISION_SUPERSEDED)):
            record = column_json(row["payload_json"], self.db_path, f"a superseded decision of {run_name(run_id)}",
                                 dict)
            found[record.get("decision")] = record | {"at": row["ts"]}
        return found

    def rounds_added(self, run_id: int) -> list[dict]:
        """Each reopening of the run (`skillbase resume --more-rounds`), oldest first: its `rounds-added` event's
        record (`more`, `from`, `to`: the --rounds before and after, `round`: the first new round, `why`,
        `evidence_from`: the round whose stored evidence the first new round reuses, or None) and `at`: when."""
        return [column_json(row["payload_json"], self.db_path, f"a reopening of {run_name(run_id)}", dict)
                | {"at": row["ts"]}
                for row in self.db.execute("SELECT ts, payload_json FROM events WHERE run_id=? AND kind=? ORDER BY id",
                                           (run_id, ROUNDS_ADDED))]

    def rounds_reopened(self, run_id: int) -> dict[int, dict]:
        """The rounds `redecide` reopened (each had ended the run with no candidate), by round: its
        `round-reopened` event's record (`why`, `ended`: the run's stop reason then, `status`, `skill`, `rules`)
        and `at`: when."""
        return {record.get("round"): record | {"at": row["ts"]}
                for row in self.db.execute("SELECT ts, payload_json FROM events WHERE run_id=? AND kind=? ORDER BY id",
                                           (run_id, ROUND_REOPENED))
                for record in [column_json(row["payload_json"], self.db_path, f"a reopening of {run_name(run_id)}",
                                           dict)]}

    def attempts(self, run_id: int, round_idx: int | None = None) -> list[sqlite3.Row]:
        return self._rows("attempts", run_id, round_idx)

    def attempt_phases(self, attempt: sqlite3.Row) -> dict[str, float] | None:
        """Where an attempt's judging went, {phase: seconds} (`gpu_wait` among them); None where nothing was
        recorded: an attempt finished before phases were stored, or never finished."""
        text = attempt[ATTEMPT_PHASES] if ATTEMPT_PHASES in attempt.keys() else None
        if text is None:
            return None
        return column_json(text, self.db_path, f"attempt {attempt['id']}'s phases", dict)

    def evidence_rows(self, run_id: int, round_idx: int | None = None) -> list[sqlite3.Row]:
        return self._rows("evidence", run_id, round_idx)

    def llm_calls(self, run_id: int) -> list[sqlite3.Row]:
        return list(self.db.execute("SELECT * FROM llm_calls WHERE run_id=? ORDER BY id", (run_id,)))

    def events(self, run_id: int) -> list[sqlite3.Row]:
        return list(self.db.execute("SELECT * FROM events WHERE run_id=? ORDER BY id", (run_id,)))

    def _rows(self, table: str, run_id: int, round_idx: int | None) -> list[sqlite3.Row]:
        if round_idx is None:
            return list(self.db.execute(f"SELECT * FROM {table} WHERE run_id=? ORDER BY id", (run_id,)))
        return list(self.db.execute(f"SELECT * FROM {table} WHERE run_id=? AND round_idx=? ORDER BY id",
                                    (run_id, round_idx)))

    # -- liveness: a run whose process was killed (kill -9, a lost machine) still says "running" --
    def claim(self, run_id: int) -> None:
        """Make this process the run's owner (host and pid, as an event) and mark it running, in one
        transaction, so two `resume`s cannot both drive it. Refused while the run is running under
        another live process of this host (named in the error); a dead owner's run is taken over.
        Owners on other hosts cannot be checked from here and are taken over too."""
        host, pid = socket.gethostname(), os.getpid()
        with self.transaction() as tx:
            status = tx.execute("SELECT status FROM runs WHERE id=?", (run_id,)).fetchone()
            row = tx.execute("SELECT payload_json FROM events WHERE run_id=? AND kind='owner' "
                             "ORDER BY id DESC LIMIT 1", (run_id,)).fetchone()
            owner = column_json(row[0], self.db_path, f"the owner of {run_name(run_id)}") if row else None
            if (status is not None and status[0] == RunStatus.RUNNING and isinstance(owner, dict)
                    and owner.get("host") == host and owner.get("pid") != pid and _alive(owner.get("pid"))):
                raise InputError(f"{run_name(run_id)} is being run by process {owner['pid']} on {host}",
                                 hint=f"wait for it to finish or stop it (kill {owner['pid']}); "
                                      "a run whose process has died is taken over")
            tx.execute("UPDATE runs SET status=? WHERE id=? AND status!=?",
                       (RunStatus.RUNNING, run_id, RunStatus.RUNNING))
            tx.event(run_id, "owner", {"host": host, "pid": pid})

    def shown_status(self, run: RunRow) -> RunStatus:
        """The stored status, except a `running` run whose process is gone from this host:
        `interrupted` (resume continues it). Runs owned by another host are left as stored."""
        if run.status != RunStatus.RUNNING:
            return run.status
        row = self.db.execute("SELECT payload_json FROM events WHERE run_id=? AND kind='owner' "
                              "ORDER BY id DESC LIMIT 1", (run.id,)).fetchone()
        if row is None:
            return run.status
        owner = column_json(row[0], self.db_path, f"the owner of {run.name}")
        if not isinstance(owner, dict) or owner.get("host") != socket.gethostname():
            return run.status
        try:
            os.kill(int(owner["pid"]), 0)
        except ProcessLookupError:
            return RunStatus.INTERRUPTED
        except (PermissionError, OSError, ValueError, KeyError):
            return run.status
        return run.status

    def skill_outcome_stats(self, exclude_run: int | None = None) -> dict[str, dict[str, Any]]:
        """Per-skill outcomes of finished rounds in past runs ({skill: {tried, accepted, failed,
        mean_accepted_speedup}}): recorded as `evidence.history["past"]` and shown by `explain`. The
        ranking does not read it yet: outcomes on other kernels are weak evidence for this one, and
        no measurement says how much they should move a candidate.

        A round tries one skill (possibly several variants and repairs); it counts once, as accepted
        or not, with the best accepted speedup of that round. A run's private copy (`load_run_copy`)
        answers with the outcomes its store had when the copy was made.
        """
        carried = self.db.execute("SELECT value FROM meta WHERE key=?", (_CARRIED_PAST,)).fetchone()
        if carried is not None:
            return column_json(carried[0], self.db_path, "the other runs' outcomes", dict)
        # a round's decision is its last decisions row (those before it were superseded: `redecide`)
        sql = ("SELECT d.chosen_skill AS skill, r.outcome AS outcome, "
               "(SELECT MAX(a.speedup) FROM attempts a WHERE a.run_id = r.run_id AND a.round_idx = r.idx "
               " AND a.status = 'accepted') AS speedup "
               "FROM rounds r JOIN decisions d ON d.id = (SELECT MAX(id) FROM decisions "
               " WHERE run_id = r.run_id AND round_idx = r.idx) "
               "WHERE r.status = 'finished' AND d.chosen_skill IS NOT NULL")
        args: tuple = ()
        if exclude_run is not None:
            sql += " AND r.run_id != ?"
            args = (exclude_run,)
        stats: dict[str, dict[str, Any]] = {}
        for row in self.db.execute(sql, args):
            entry = stats.setdefault(row["skill"], {"tried": 0, "accepted": 0, "failed": 0, "speedups": []})
            entry["tried"] += 1
            if row["outcome"] == Outcome.ACCEPTED:
                entry["accepted"] += 1
                entry["speedups"].append(column_number(row["speedup"], self.db_path, "an attempt's speedup") or 1.0)
            else:
                entry["failed"] += 1
        for entry in stats.values():
            speedups = entry.pop("speedups")
            entry["mean_accepted_speedup"] = sum(speedups) / len(speedups) if speedups else None
        return stats


    # -- batches (`bench optimize`): runs of one suite advanced together ---------------------

    def _batch_tables(self) -> bool:
        """Whether the batch tables are there. A writer makes them on first use, so a store written
        before batches existed gains them without a migration; read-only, a store without them has none."""
        if self.read_only:
            found = self.db.execute("SELECT COUNT(*) FROM sqlite_master WHERE type='table' "
                                    "AND name IN ('batches', 'batch_runs')").fetchone()[0]
            return found == 2
        for statement in _BATCH_SCHEMA.split(";"):
            if statement.strip():
                self.db.execute(statement)
        return True

    def create_batch(self, settings: dict) -> int:
        """A new batch with its settings (agent, rounds, dtype, engine on/off, the candidates folder)."""
        self._batch_tables()
        with self.transaction() as tx:
            cursor = tx.execute("INSERT INTO batches(created_at, settings_json) VALUES (?,?)",
                                (time.time(), _dumps(settings)))
        return int(cursor.lastrowid)

    def set_batch_settings(self, batch_id: int, settings: dict) -> None:
        self._batch_tables()
        with self.transaction() as tx:
            tx.execute("UPDATE batches SET settings_json=? WHERE id=?", (_dumps(settings), batch_id))

    def add_batch_run(self, batch_id: int, run_id: int, operator: str, dtype: str) -> None:
        self._batch_tables()
        with self.transaction() as tx:
            tx.execute("INSERT OR REPLACE INTO batch_runs(run_id, batch_id, operator, dtype) VALUES (?,?,?,?)",
                       (run_id, batch_id, operator, dtype))
            tx.event(run_id, "batch", {"batch": batch_name(batch_id), "operator": operator, "dtype": dtype})

    def get_batch(self, ref: str | int) -> BatchRow:
        batch_id = parse_batch_ref(ref)
        row = (self.db.execute("SELECT * FROM batches WHERE id=?", (batch_id,)).fetchone()
               if self._batch_tables() else None)
        if row is None:
            raise InputError(f"no batch {batch_name(batch_id)} in the store at {self.location}",
                             hint="`skillbase pending` names the batches of paused runs; --store picks another store")
        return BatchRow(id=row["id"], created_at=row["created_at"],
                        settings=column_json(self.here(row["settings_json"]), self.db_path,
                                             f"{batch_name(batch_id)}'s settings", dict))

    def list_batches(self) -> list[BatchRow]:
        if not self._batch_tables():
            return []
        return [BatchRow(id=row["id"], created_at=row["created_at"],
                         settings=column_json(self.here(row["settings_json"]), self.db_path,
                                              f"batch_{row['id']}'s settings", dict))
                for row in self.db.execute("SELECT * FROM batches ORDER BY id")]

    def batch_members(self, batch_id: int | None = None) -> list[BatchMember]:
        """The runs of one batch (every batch when None), in the order they were started."""
        if not self._batch_tables():
            return []
        sql = "SELECT * FROM batch_runs"
        args: tuple = ()
        if batch_id is not None:
            sql += " WHERE batch_id=?"
            args = (batch_id,)
        return [BatchMember(batch_id=row["batch_id"], run_id=row["run_id"], operator=row["operator"],
                            dtype=row["dtype"]) for row in self.db.execute(sql + " ORDER BY run_id", args)]

    def note_waiting(self, run_id: int, key: str, reason: str) -> None:
        """Why a paused run's candidate was not judged (missing, empty, not CUDA ...), for `pending`."""
        with self.transaction() as tx:
            tx.event(run_id, "candidate-waiting", {"key": key, "reason": reason})

    def last_event(self, run_id: int, kind: str) -> dict | None:
        found = self.last_event_at(run_id, kind)
        return found[0] if found else None

    def last_event_at(self, run_id: int, kind: str) -> tuple[dict, float] | None:
        """The run's latest event of `kind`: its payload and when it was recorded (epoch seconds)."""
        row = self.db.execute("SELECT payload_json, ts FROM events WHERE run_id=? AND kind=? ORDER BY id DESC LIMIT 1",
                              (run_id, kind)).fetchone()
        return (column_json(row[0], self.db_path, f"a {kind} event of run_{run_id}", dict), float(row[1])) \
            if row else None

    def report_digests(self) -> set[str]:
        """The artifact digest of every saved Nsight Compute report (the evidence's `.ncu-rep` files)."""
        return {row["report"] for row in self.db.execute(
            "SELECT DISTINCT report FROM evidence WHERE report IS NOT NULL")}

    def judged_sources(self, run_id: int) -> dict[str, str]:
        """The artifact digest of every candidate judged in the run, by its step key (`r0/v0/a0`)."""
        found = {}
        for row in self.db.execute("SELECT key, result_json FROM steps WHERE run_id=? AND key LIKE '%/candidate'",
                                   (run_id,)):
            result = column_json(row["result_json"], self.db_path, f"step {row['key']!r} of run_{run_id}")
            source = result.get("source") if isinstance(result, dict) else None
            if source:
                found[row["key"].removesuffix("/candidate")] = source
        return found

    def relocate(self, moves: list[tuple[str, str]]) -> None:
        """Rewrite the absolute paths the store holds (task paths, manifests, batch settings, the runs'
        waiting.json files) from one folder prefix to another (each ends in "/"), and record this folder as
        the store's root: a store unpacked on another machine, moved or copied, finds its files where it is."""
        moves = [(old, new) for old, new in moves if old != new]
        self._relocate_files(moves)   # first: a crash before the commit leaves the root, so the next open redoes it
        self._batch_tables()
        with self.transaction() as tx:
            for old, new in moves:
                tx.execute("UPDATE runs SET task_path = ? || substr(task_path, ?) WHERE task_path LIKE ? ESCAPE '\\'",
                           (new, len(old) + 1, _like_prefix(old)))
                tx.execute("UPDATE runs SET manifest_json = replace(manifest_json, ?, ?)", _json_prefixes(old, new))
                tx.execute("UPDATE batches SET settings_json = replace(settings_json, ?, ?)", _json_prefixes(old, new))
            tx.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (ROOT, str(self.location)))

    def _relocate_files(self, moves: list[tuple[str, str]]) -> None:
        """The runs' waiting.json files name their prompts by absolute path (an unreadable one is left: `pending`
        skips it and `resume run_N` asks again)."""
        for waiting in (self.location / "runs").glob("*/waiting.json"):
            try:
                text = waiting.read_text()
            except (OSError, ValueError):
                continue
            if _moved_json(text, moves) == text:
                continue
            try:
                write_text_atomically(waiting, _moved_json(text, moves))
            except OSError as error:
                raise EnvironmentProblem(f"cannot rewrite {waiting} for the store's folder: {error.strerror or error}",
                                         hint="make the store's folder writable") from None

    # -- one run carried to a job that cannot reach this store (skillbase.run.transfer) ------------

    def run_rows(self, run_id: int) -> dict[str, list[dict[str, Any]]]:
        """Every row of one run, by table (`RUN_TABLES`), as plain values."""
        self._batch_tables()
        return {table: [dict(row) for row in self.db.execute(
                    f"SELECT * FROM {table} WHERE {'id' if table == 'runs' else 'run_id'}=? ORDER BY rowid",
                    (run_id,))]
                for table in RUN_TABLES}

    def reserve_run_id(self) -> int:
        """A run number no run of this store will ever take (AUTOINCREMENT never reuses one): a run
        started in a private copy elsewhere is created under it and applied back under it. One never
        used leaves a gap in the numbering, nothing else."""
        with self.transaction() as tx:
            seq = tx.execute("SELECT seq FROM sqlite_sequence WHERE name='runs'").fetchone()
            top = tx.execute("SELECT MAX(id) FROM runs").fetchone()[0] or 0
            run_id = max(seq[0] if seq else 0, top) + 1
            _set_sequence(tx, "runs", run_id)
        return run_id

    def load_run_copy(self, rows: dict[str, list[dict[str, Any]]], batch: BatchRow | None, run_id: int,
                      past: dict[str, Any]) -> None:
        """Make this new, empty store the private copy of run `run_id`: its `rows` (`run_rows`, ids kept;
        none for a run not created yet, which will be created under `run_id`), its batch, and the other
        runs' outcomes as the original store has them (what `skill_outcome_stats` answers here)."""
        self._batch_tables()
        with self.transaction() as tx:
            if batch is not None:
                tx.execute("INSERT INTO batches(id, created_at, settings_json) VALUES (?,?,?)",
                           (batch.id, batch.created_at, _dumps(batch.settings)))
            for table in RUN_TABLES:
                for row in rows.get(table, []):
                    _insert(tx, table, row)
            if not rows.get("runs"):
                _set_sequence(tx, "runs", run_id - 1)
            tx.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?,?)", (_CARRIED_PAST, json.dumps(past)))

    def last_event_id(self, run_id: int) -> int | None:
        """The id of the run's last event (every write to a run adds one): None for a run not in the store."""
        return self.db.execute("SELECT MAX(id) FROM events WHERE run_id=?", (run_id,)).fetchone()[0]

    def require_unchanged(self, run_id: int, copied_at: int | None) -> None:
        """Refuse to apply a private copy's work to a run written here since the copy was made
        (`copied_at`: its `last_event_id` then): two workers on one run, one's work would be mixed
        into the other's."""
        if self.last_event_id(run_id) != copied_at:
            raise InputError(f"{run_name(run_id)} changed in the store at {self.location} while a job worked on "
                             "its copy elsewhere (another resume?); that job's work was not recorded",
                             hint="`resume --all` again goes on from what the store holds")

    def apply_run_rows(self, run_id: int, rows: dict[str, list[dict[str, Any]]], copied_at: int | None) -> None:
        """Replace run `run_id`'s rows by `rows` (its private copy's, after a job worked on it elsewhere),
        in one transaction. Rows this store has keep their ids; new rows of the numbered tables get
        this store's next ids (rows other jobs added meanwhile hold the copy's), and a new attempt's
        id is followed where it is named: llm_calls.attempt_id, `attempt_id` in steps and events.
        Refused, nothing written, when the run changed here since its copy was made (`require_unchanged`,
        checked again inside the transaction)."""
        self._batch_tables()
        attempts: dict[int, int] = {}     # the copy's id of a new attempt -> its id here
        with self.transaction() as tx:
            self.require_unchanged(run_id, copied_at)
            tx.attempt_phases_column()     # the copy's attempts carry their phases (a new store has the column)
            for table in RUN_TABLES:
                if table in _NUMBERED:
                    have = {row[0] for row in tx.execute(f"SELECT id FROM {table} WHERE run_id=?", (run_id,))}
                elif table != "runs":
                    tx.execute(f"DELETE FROM {table} WHERE run_id=?", (run_id,))
                for row in rows.get(table, []):
                    row = _follow_attempts(table, row, attempts)
                    if table == "runs":
                        if not _update(tx, table, row):
                            _insert(tx, table, row)
                    elif table not in _NUMBERED:
                        _insert(tx, table, row)
                    elif row["id"] in have:
                        _update(tx, table, row)
                    else:
                        new = _insert(tx, table, {k: v for k, v in row.items() if k != "id"})
                        if table == "attempts":
                            attempts[row["id"]] = new

    def backup_to(self, target: Path) -> None:
        """A consistent copy of the database (SQLite's online backup), even while runs write to it."""
        copy = sqlite3.connect(target)
        try:
            self.db.backup(copy)
        finally:
            copy.close()


class _Tx:
    """The write API inside one transaction; every method appends to the run's event stream too."""

    def __init__(self, db: _Guarded):
        self.db = db

    def execute(self, sql: str, args: tuple | list = ()) -> _Result:
        return self.db.execute(sql, args)

    def executescript_safe(self, script: str) -> None:
        # executescript() would COMMIT our open transaction; run statement by statement instead.
        for statement in script.split(";"):
            if statement.strip():
                self.db.execute(statement)

    def event(self, run_id: int, kind: str, payload: dict) -> None:
        self.db.execute("INSERT INTO events(run_id, ts, kind, payload_json) VALUES (?,?,?,?)",
                        (run_id, time.time(), kind, _dumps(payload)))

    def finish_step(self, run_id: int, key: str, result: dict) -> None:
        self.db.execute("INSERT OR REPLACE INTO steps(run_id, key, result_json, created_at) VALUES (?,?,?,?)",
                        (run_id, key, _dumps(result), time.time()))
        self.event(run_id, "step-finished", {"key": key})

    def start_round(self, run_id: int, idx: int, kernel: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO rounds(run_id, idx, status, started_at, kernel) VALUES (?,?,?,?,?)",
                        (run_id, idx, "started", time.time(), kernel))
        self.event(run_id, "round-started", {"round": idx, "kernel": kernel})

    def finish_round(self, run_id: int, idx: int, outcome: str) -> None:
        self.db.execute("UPDATE rounds SET status='finished', finished_at=?, outcome=? WHERE run_id=? AND idx=?",
                        (time.time(), outcome, run_id, idx))
        self.event(run_id, "round-finished", {"round": idx, "outcome": outcome})

    def add_evidence(self, run_id: int, round_idx: int, kernel: str, document: str, report: str | None) -> int:
        cursor = self.db.execute(
            "INSERT INTO evidence(run_id, round_idx, kernel, document, report, created_at) VALUES (?,?,?,?,?,?)",
            (run_id, round_idx, kernel, document, report, time.time()))
        self.event(run_id, "evidence", {"round": round_idx, "kernel": kernel})
        return int(cursor.lastrowid)

    def add_decision(self, run_id: int, round_idx: int, chosen_skill: str | None, params: dict,
                     candidates: list, trace: str, reason: str) -> int:
        cursor = self.db.execute(
            "INSERT INTO decisions(run_id, round_idx, chosen_skill, params_json, candidates_json, trace, reason,"
            " created_at)"
            " VALUES (?,?,?,?,?,?,?,?)",
            (run_id, round_idx, chosen_skill, _dumps(params), _dumps(candidates), trace, reason, time.time()))
        self.event(run_id, "decision", {"round": round_idx, "skill": chosen_skill, "reason": reason})
        return int(cursor.lastrowid)

    def supersede_decision(self, run_id: int, round_idx: int, superseded: int, key: str, decision: dict, trace: str,
                           record: dict, stop_reason: str) -> int:
        """Make `decision` (a decision step's result, its trace an artifact digest) round `round_idx`'s
        decision in place of row `superseded`, which stays: a new decisions row, the step `key` replaced,
        a `decision-superseded` event (`record`: who decided and what moved), the run's stop reason. The
        new row's id."""
        new = self.add_decision(run_id, round_idx, decision["skill"], decision["params"], decision["candidates"],
                                trace, decision["reason"])
        self.finish_step(run_id, key, decision)
        self.event(run_id, DECISION_SUPERSEDED, {**record, "round": round_idx, "decision": superseded, "by": new})
        self.db.execute("UPDATE runs SET stop_reason=? WHERE id=?", (stop_reason, run_id))
        return new

    def add_rounds(self, run_id: int, manifest: dict, record: dict, stop_reason: str) -> None:
        """Reopen a finished run for more rounds: its `manifest` (the settings' raised --rounds) recorded, the
        run `interrupted` (`resume` goes on from its last finished step) with `stop_reason`, and a
        `rounds-added` event holding `record` (`RunStore.rounds_added`)."""
        self.db.execute("UPDATE runs SET manifest_json=? WHERE id=?", (_dumps(manifest), run_id))
        self._reopen(run_id, RunStatus.INTERRUPTED, stop_reason, ROUNDS_ADDED, record)

    def reopen_round(self, run_id: int, idx: int, status: RunStatus, stop_reason: str, record: dict) -> None:
        """Reopen a finished run at its last round `idx`, which ended it with no candidate and has just been
        given one (`redecide`): the round's outcome step dropped and the round `started` again (the loop then
        tries the round's decision), the run `status` (paused at the round's prompt, or interrupted: `resume`
        goes on) with `stop_reason`, and a `round-reopened` event holding `record` (why, under which rules)."""
        self.db.execute("DELETE FROM steps WHERE run_id=? AND key=?", (run_id, f"r{idx}/outcome"))
        self.db.execute("UPDATE rounds SET status='started', finished_at=NULL, outcome=NULL WHERE run_id=? AND idx=?",
                        (run_id, idx))
        self._reopen(run_id, status, stop_reason, ROUND_REOPENED, {**record, "round": idx})

    def _reopen(self, run_id: int, status: RunStatus, stop_reason: str, kind: str, record: dict) -> None:
        """A finished run live again (`status`, no end time), with the event `kind` saying why."""
        self.db.execute("UPDATE runs SET status=?, stop_reason=?, finished_at=NULL WHERE id=?",
                        (status, stop_reason, run_id))
        self.event(run_id, kind, record)

    def add_attempt(self, run_id: int, round_idx: int, attempt_idx: int, skill: str | None, params: dict,
                    parent_kernel: str | None, kernel: str | None, status: str = "pending") -> int:
        cursor = self.db.execute(
            "INSERT INTO attempts(run_id, round_idx, attempt_idx, skill, params_json, parent_kernel, kernel, status,"
            " created_at)"
            " VALUES (?,?,?,?,?,?,?,?,?)",
            (run_id, round_idx, attempt_idx, skill, _dumps(params), parent_kernel, kernel, status, time.time()))
        self.event(run_id, "attempt", {"round": round_idx, "attempt": attempt_idx, "skill": skill, "status": status})
        return int(cursor.lastrowid)

    def finish_attempt(self, attempt_id: int, status: str, reason: str | None = None, runtime_us: float | None = None,
                       baseline_us: float | None = None, speedup: float | None = None, spread: float | None = None,
                       kernel: str | None = None, phases: dict[str, float] | None = None) -> None:
        """`phases`: where the judging's wall time went (the verdict's `phases_s`; None: not measured)."""
        self.attempt_phases_column()
        self.db.execute(
            "UPDATE attempts SET status=?, reason=?, runtime_us=?, baseline_us=?, speedup=?, spread=?,"
            " kernel=COALESCE(?, kernel), finished_at=?, phases_json=? WHERE id=?",
            (status, reason, runtime_us, baseline_us, speedup, spread, kernel, time.time(),
             None if phases is None else _dumps(phases), attempt_id))
        run_id = self.db.execute("SELECT run_id FROM attempts WHERE id=?", (attempt_id,)).fetchone()[0]
        self.event(run_id, "attempt-finished", {"attempt_id": attempt_id, "status": status, "reason": reason,
                                                "speedup": speedup})

    def attempt_phases_column(self) -> None:
        """attempts.phases_json, added by the first write that needs it (inside this transaction, which holds
        the write lock): a store written before it gains it as the batch tables came, without a migration
        (an added nullable column, which older code reads past); read-only, a store without it has none."""
        if ATTEMPT_PHASES not in _columns(self, "attempts"):
            self.db.execute(f"ALTER TABLE attempts ADD COLUMN {ATTEMPT_PHASES} TEXT")

    def add_llm_call(self, run_id: int, attempt_id: int | None, role: str, model: str | None,
                     endpoint_name: str | None, prompt_version: str | None, prompt: str | None,
                     response: str | None, prompt_tokens: int | None, completion_tokens: int | None,
                     duration_s: float | None, error: str | None) -> int:
        cursor = self.db.execute(
            "INSERT INTO llm_calls(run_id, attempt_id, role, model, endpoint_name, prompt_version, prompt, response,"
            " prompt_tokens, completion_tokens, duration_s, error, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (run_id, attempt_id, role, model, endpoint_name, prompt_version, prompt, response, prompt_tokens,
             completion_tokens, duration_s, error, time.time()))
        self.event(run_id, "llm-call", {"role": role, "model": model, "error": error,
                                        "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens})
        return int(cursor.lastrowid)


# A run's rows, parents first. The numbered tables' ids come from AUTOINCREMENT: a run's rows written
# in a private copy collide with rows other runs added meanwhile, so they are renumbered when applied.
RUN_TABLES = ("runs", "batch_runs", "rounds", "evidence", "decisions", "attempts", "llm_calls", "steps", "events")
_NUMBERED = frozenset({"evidence", "decisions", "attempts", "llm_calls", "events"})
_CARRIED_PAST = "carried_past_outcomes"    # meta key of a private copy: skill_outcome_stats' answer


def _columns(tx: _Tx, table: str) -> list[str]:
    return [row["name"] for row in tx.execute(f"PRAGMA table_info({table})")]


def _insert(tx: _Tx, table: str, row: dict[str, Any]) -> int:
    columns = [name for name in _columns(tx, table) if name in row]    # never a column the row names itself
    cursor = tx.execute(f"INSERT INTO {table}({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                        [row[name] for name in columns])
    return int(cursor.lastrowid)


def _update(tx: _Tx, table: str, row: dict[str, Any]) -> bool:
    columns = [name for name in _columns(tx, table) if name in row and name != "id"]
    cursor = tx.execute(f"UPDATE {table} SET {', '.join(f'{name}=?' for name in columns)} WHERE id=?",
                        [row[name] for name in columns] + [row["id"]])
    return cursor.rowcount > 0


def _set_sequence(tx: _Tx, table: str, value: int) -> None:
    if tx.execute("UPDATE sqlite_sequence SET seq=? WHERE name=?", (value, table)).rowcount == 0:
        tx.execute("INSERT INTO sqlite_sequence(name, seq) VALUES (?,?)", (table, value))


def _follow_attempts(table: str, row: dict[str, Any], attempts: dict[int, int]) -> dict[str, Any]:
    """`row` naming a renumbered attempt by its new id (its JSON re-dumped only then: the rest stays byte for byte)."""
    if table == "llm_calls" and row.get("attempt_id") in attempts:
        return {**row, "attempt_id": attempts[row["attempt_id"]]}
    column = {"steps": "result_json", "events": "payload_json"}.get(table)
    if column is None or '"attempt_id"' not in (row.get(column) or ""):
        return row
    try:
        document = json.loads(row[column])
    except ValueError:
        return row
    if isinstance(document, dict) and document.get("attempt_id") in attempts:
        return {**row, column: _dumps({**document, "attempt_id": attempts[document["attempt_id"]]})}
    return row


def _slash(folder: str) -> str:
    return folder.rstrip("/") + "/"


def _same_folder(recorded: str, location: Path) -> bool:
    """Whether the recorded root is this folder (by another name too: a symlink to it)."""
    try:
        return recorded == str(location) or Path(recorded).resolve() == location.resolve()
    except (OSError, RuntimeError):   # a symlink loop
        return False


def _json_prefixes(old: str, new: str) -> tuple[str, str]:
    """A JSON string that starts with the folder `old`, and the same one starting with `new` (as JSON text)."""
    return json.dumps(old)[:-1], json.dumps(new)[:-1]


def _moved_json(text: str, moves: list[tuple[str, str]]) -> str:
    """JSON `text` with every string under an old folder of `moves` under its new one."""
    for old, new in moves:
        text = text.replace(*_json_prefixes(old, new))
    return text


def _moved_path(path: str, moves: list[tuple[str, str]]) -> str:
    for old, new in moves:
        if path.startswith(old):
            return new + path[len(old):]
    return path


def _like_prefix(prefix: str) -> str:
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


def _alive(pid: Any) -> bool:
    """Whether a process with this pid exists on this host (one we may not signal still exists)."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OSError, ValueError, TypeError, OverflowError):
        return False
    return True


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _run_row(row: sqlite3.Row, db_path: Path, here=lambda text: text) -> RunRow:
    name = run_name(row["id"])
    try:
        status = RunStatus(row["status"])
    except ValueError:
        raise StoreDamaged(f"store damaged: {db_path}: {name} has status {row['status']!r}",
                           hint=recovery_hint(db_path)) from None
    manifest = column_json(here(row["manifest_json"]), db_path, f"{name}'s manifest", dict)
    return RunRow(id=row["id"], created_at=row["created_at"], finished_at=row["finished_at"],
                  task_path=here(row["task_path"]), task_name=row["task_name"], status=status,
                  stop_reason=row["stop_reason"], manifest=manifest,
                  baseline_us=column_number(row["baseline_us"], db_path, f"{name}'s baseline_us"),
                  best_us=column_number(row["best_us"], db_path, f"{name}'s best_us"), best_kernel=row["best_kernel"])
