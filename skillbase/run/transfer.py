"""A batch run worked on where the run store is out of reach (a Ray node), written back by the driver.

An executor that is `remote` (`skillbase.harness.ray_executor.RayExecutor`) runs a job on a machine
that cannot see this host's files, so a batch's job (`skillbase.run.batch:start_payload`,
`advance_payload`) cannot open the store there. `Shipment` turns each job into one that carries a
private store of its own: the driver writes a single-run store (the run's rows, the artifacts they
name except saved Nsight Compute reports, the run's folder `runs/run_N/`, its batch, and the other
runs' per-skill outcomes its evidence records) into a folder the job ships with, beside the task's
folder. A run not created yet is reserved first (`RunStore.reserve_run_id`): the node creates it
under that number, so every `run_N` path and name is already right.

On the node, `detached_payload` points the copy's paths at the shipped folders (as `store unpack`
does), runs the same payload against the copy, and returns what the job returned plus the run's
rows, the new artifacts and the run folder's new or changed files, every path pointed back at the
driver's folders. The driver applies it (`Shipment.settle`): artifacts by digest, the rows in one
transaction (`RunStore.apply_run_rows`: new rows renumbered), then the files; nothing at all when the
run was written to in the store since its copy left (a second `resume` elsewhere). A job that dies on its
node returns nothing, so the store is left as it was (only the reserved run number stays unused);
the job is retried or recorded as an error as any other. A job that fails after its run recorded
the failure (a run that could not start is recorded as failed) has those rows applied too, as the
local executor would have left them, and its error reported.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillbase.errors import InputError, SkillbaseError
from skillbase.files import is_partial
from skillbase.harness.jobs import Job, JobResult, describe_error, folders_of, run_job
from skillbase.run.store import RunStore, run_name

__all__ = ["CARRIED", "Shipment", "detached_payload"]

CARRIED = "carried.json"     # in a shipped store: where it came from, which run it holds
_DIGEST = re.compile(r"\b[0-9a-f]{64}\b")
_NOT_RUN_FILES = ("runs.sqlite3", "runs.sqlite3-wal", "runs.sqlite3-shm", CARRIED)


@dataclass(frozen=True)
class _Ticket:
    """What the driver remembers of one shipped job."""

    job: Job                 # the job as the batch made it
    run_id: int
    kernel: Path             # the run's task file on the driver
    kernel_existed: bool     # whether it existed when the job left (a generator run writes it)
    copied_at: int | None    # the run's last event when it was copied (None: a run to start)


class Shipment:
    """Batch jobs rewritten to carry private stores, and their results applied to `store`.

    Use as a context manager: the shipped stores live in a scratch folder until the jobs are done."""

    def __init__(self, store: RunStore):
        self.store = store
        self.tickets: list[_Ticket] = []
        self._scratch = tempfile.TemporaryDirectory(prefix="skillbase-shipment-")

    def __enter__(self) -> Shipment:
        return self

    def __exit__(self, *exc: object) -> None:
        self._scratch.cleanup()

    def ship(self, jobs: list[Job]) -> list[Job]:
        """Each job with a private copy of its run's store in its `folders` (in job order: a result's
        index names its ticket: one call per shipment)."""
        return [self._ship(job) for job in jobs]

    def _ship(self, job: Job) -> Job:
        payload = job.payload
        if payload.get("run") is None:   # a member to start: the run is created on the node, under this number
            run_id, rows, kernel = self.store.reserve_run_id(), {}, Path(payload["kernel"])
        else:
            run_id = int(payload["run"])
            rows, kernel = self.store.run_rows(run_id), Path(self.store.get_run(run_id).task_path)
        batch_id = payload.get("batch") or next((row["batch_id"] for row in rows.get("batch_runs", [])), None)
        folder = Path(self._scratch.name) / f"job_{len(self.tickets)}"
        copy = RunStore.open(folder)
        try:
            copy.load_run_copy(rows, self.store.get_batch(batch_id) if batch_id is not None else None, run_id,
                               self.store.skill_outcome_stats(exclude_run=run_id))
        finally:
            copy.close()
        reports = {row["report"] for row in rows.get("evidence", []) if row.get("report")}  # judging never reads one
        for digest in _digests(rows) - reports:
            source = self.store.artifacts.objects / digest[:2] / digest
            if source.is_file():
                target = copy.artifacts.path_for(digest)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
        own = self.store.location / "runs" / run_name(run_id)
        if own.is_dir():
            shutil.copytree(own, folder / "runs" / run_name(run_id), symlinks=False)
        task = folders_of(kernel)[0]
        (folder / CARRIED).write_text(json.dumps({"store": str(self.store.location), "task": task, "run": run_id}))
        self.tickets.append(_Ticket(job, run_id, kernel, kernel.exists(), self.store.last_event_id(run_id)))
        moved = {"store": str(folder)} | ({"kernel": str(kernel.resolve())} if "kernel" in payload else {})
        inner = Job(job.kind, job.function, payload | moved, job.label)
        return Job(job.kind, "skillbase.run.transfer:detached_payload",
                   {"job": inner.to_json(), "store": str(folder), "task": task}, job.label,
                   folders=(str(folder), task))

    def settle(self, result: JobResult) -> JobResult:
        """The job's work applied to the store; the result as the batch's own job would have given it."""
        ticket = self.tickets[result.index]
        if result.error is not None:
            return JobResult(result.index, ticket.job, result.device, None, result.error, result.wall_s,
                             result.phases_s)
        shipped = result.value
        try:
            self._apply(ticket, shipped)
        except (SkillbaseError, OSError) as problem:   # that run's failure, in one line; the batch goes on
            why = problem.message if isinstance(problem, SkillbaseError) else f"{problem.strerror or problem}"
            return JobResult(result.index, ticket.job, result.device, None,
                             f"{run_name(ticket.run_id)}: its work could not be recorded: {why}", result.wall_s,
                             result.phases_s)
        return JobResult(result.index, ticket.job, result.device, shipped["value"], shipped["error"], result.wall_s,
                         result.phases_s)

    def _apply(self, ticket: _Ticket, shipped: dict[str, Any]) -> None:
        self.store.require_unchanged(ticket.run_id, ticket.copied_at)   # before anything is written
        location = self.store.location
        own = location / "runs" / run_name(ticket.run_id)
        kernel = _decoded(shipped["kernel"]) if shipped.get("kernel") is not None else None
        if kernel is not None and not ticket.kernel_existed and ticket.kernel.exists() \
                and ticket.kernel.read_bytes() != kernel:
            raise InputError(f"{ticket.kernel} appeared while the run worked on its first kernel elsewhere",
                             hint="move it away and run `resume --all` again")
        for digest, data in shipped["artifacts"].items():
            if self.store.artifacts.put_bytes(_decoded(data)) != digest:
                raise InputError(f"artifact {digest[:12]} came back with other content")
        staged: list[tuple[Path, Path]] = []
        try:
            for relative, data in shipped["files"].items():
                target = location / relative
                if not target.resolve().is_relative_to(own.resolve()):
                    raise InputError(f"the job wrote {relative}, outside {own}")
                target.parent.mkdir(parents=True, exist_ok=True)
                staged.append((target.with_name(target.name + ".arriving"), target))
                staged[-1][0].write_bytes(_decoded(data))
            if shipped["rows"] is not None:
                self.store.apply_run_rows(ticket.run_id, shipped["rows"], ticket.copied_at)
        except BaseException:
            for arriving, _ in staged:
                arriving.unlink(missing_ok=True)
            raise
        for arriving, target in staged:      # renames after the commit: the window between is one rename each
            os.replace(arriving, target)
        for relative in shipped["removed"]:
            (location / relative).unlink(missing_ok=True)
        if kernel is not None and not ticket.kernel.exists():
            ticket.kernel.write_bytes(kernel)


# -- on the node ------------------------------------------------------------------------------------

def detached_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """The job a `Shipment` sends: run the batch's job against the shipped store copy, then return
    {"value", "error"} of that job and what it did to the run ("rows", "artifacts", "files",
    "removed", "kernel"), every path pointed back at the driver's folders."""
    location = Path(payload["store"])
    carried = json.loads((location / CARRIED).read_text())
    here = [(carried["store"], str(location)), (carried["task"], payload["task"])]
    back = [(new, old) for old, new in here]
    inner = Job.from_json(payload["job"])
    copy = RunStore.open(location)
    try:
        copy.relocate([(old.rstrip("/") + "/", new.rstrip("/") + "/") for old, new in here if old != new])
        made = copy.run_rows(carried["run"])["runs"]
        kernel = Path(made[0]["task_path"] if made else inner.payload["kernel"])
    finally:
        copy.close()
    kernel_existed = kernel.exists()    # a generator run writes its first kernel: the driver gets it
    before = _files(location)
    try:
        value, error = run_job(inner), None
    except Exception as failure:  # the job's failure is its result; the run may still have recorded it
        value, error = None, describe_error(failure)
    copy = RunStore.open(location)
    try:
        rows = copy.run_rows(carried["run"])
    finally:
        copy.close()
    after = _files(location)
    own = f"runs/{run_name(carried['run'])}/"
    return {"value": _moved(value, back), "error": _moved(error, back),
            "rows": _moved(rows, back) if rows["runs"] else None,
            "artifacts": {name.rsplit("/", 1)[1]: _encoded((location / name).read_bytes())
                          for name in after if name.startswith("artifacts/") and name not in before},
            "files": {name: _encoded(_moved_bytes((location / name).read_bytes(), back))
                      for name, digest in after.items() if name.startswith(own) and before.get(name) != digest},
            "removed": [name for name in before if name.startswith(own) and name not in after],
            "kernel": _encoded(kernel.read_bytes()) if not kernel_existed and kernel.is_file() else None}


def _files(location: Path) -> dict[str, str]:
    """Every file of a store folder but its database and files half-written, by relative path, with its digest
    (`.tmp-*`: what versions before `skillbase.files` left when killed mid-write; `is_partial`: what it leaves)."""
    return {path.relative_to(location).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(location.rglob("*"))
            if path.is_file() and not path.is_symlink() and path.name not in _NOT_RUN_FILES
            and not path.name.startswith(".tmp-") and not is_partial(path)}


def _moved(value: Any, moves: list[tuple[str, str]]) -> Any:
    """`value` with every path under one folder of `moves` under the other (in JSON text too)."""
    if isinstance(value, dict):
        return {key: _moved(item, moves) for key, item in value.items()}
    if isinstance(value, list):
        return [_moved(item, moves) for item in value]
    if isinstance(value, str):
        for old, new in moves:
            for a, b in {(old, new), (json.dumps(old)[1:-1], json.dumps(new)[1:-1])}:
                if value == a:
                    value = b
                value = value.replace(a.rstrip("/") + "/", b.rstrip("/") + "/")
    return value


def _moved_bytes(data: bytes, moves: list[tuple[str, str]]) -> bytes:
    try:
        return _moved(data.decode("utf-8"), moves).encode("utf-8")
    except UnicodeDecodeError:
        return data


def _digests(rows: dict[str, list[dict[str, Any]]]) -> set[str]:
    """Every artifact digest the rows name (columns and the JSON in them)."""
    return {match for table in rows.values() for row in table for value in row.values() if isinstance(value, str)
            for match in _DIGEST.findall(value)}


def _encoded(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _decoded(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)
