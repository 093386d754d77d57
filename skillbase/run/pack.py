"""The run store packed into one file for a trip to a GPU machine, and unpacked there (or back here).

`pack_store()` writes `FILE.tar.gz` holding a consistent copy of the database (SQLite's online
backup: runs may be writing) and every other file of the store (artifacts, the runs' prompts, the
batches' candidates), plus `pack.json` naming the folders its absolute paths point into (the store's
recorded folder, the bench suite, the checkout). `unpack_store()` extracts it into a store folder,
refusing to replace an existing store without `force`, and rewrites those paths to this machine's
folders, so `pending` and `resume --all` work where it lands. One trip: pack here, unpack there,
`resume --all`, pack there, unpack here.
"""

from __future__ import annotations

import json
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillbase import config
from skillbase.documents import versioned
from skillbase.errors import InputError
from skillbase.files import written_aside
from skillbase.harness import env
from skillbase.run.store import RunStore

_ROOT = "skillbase-store"                          # the one folder inside the archive
_DB_FILES = ("runs.sqlite3", "runs.sqlite3-wal", "runs.sqlite3-shm")
PACK_FORMAT = 1


@dataclass(frozen=True)
class Packed:
    archive: Path
    store: Path
    runs: int
    files: int
    bytes: int

    def to_json(self) -> dict[str, Any]:
        return versioned("store-pack", {"archive": str(self.archive), "store": str(self.store), "runs": self.runs,
                                        "files": self.files, "bytes": self.bytes})


def _folders() -> dict[str, str]:
    """The folders outside the store that a store's absolute paths point into, on this machine."""
    checkout = env.source_checkout()
    return {"bench": str(config.bench_dir().resolve()), "checkout": str(checkout) if checkout else ""}


def pack_store(archive: Path, store_path=None, force: bool = False, reports: bool = True) -> Packed:
    """Write the store at `store_path` (default: the configured one) into `archive` (.tar.gz).

    `reports=False` leaves the saved Nsight Compute reports out: judging and the next decisions read
    the evidence from the database, so the trip to the GPU machine needs none of them (they are the
    bulk of a profiled store), and unpacking over a store keeps the reports it already holds."""
    archive = Path(archive)
    location = config.store_location(store_path)
    if not (location / "runs.sqlite3").is_file():
        raise InputError(f"no run store at {location}", hint="--store names the store to pack")
    if archive.exists() and not force:
        raise InputError(f"{archive} exists", hint="pass --force to replace it, or name another file")
    if not archive.name.endswith((".tar.gz", ".tgz")):
        raise InputError(f"{archive.name}: the archive is a .tar.gz", hint="name it e.g. trip.tar.gz")
    store = RunStore.open(location)
    files = 0
    try:
        runs = len(store.list_runs())
        left_out = set() if reports else store.report_digests()   # artifacts are named by their digest
        with tempfile.TemporaryDirectory(prefix="skillbase-pack-") as scratch:
            copy = Path(scratch) / "runs.sqlite3"
            store.backup_to(copy)
            manifest = Path(scratch) / "pack.json"
            # the folder the database's paths point into (opening followed a moved or copied store to here)
            manifest.write_text(json.dumps({"format": PACK_FORMAT, "store": store.recorded_root(), **_folders()}))
            # a killed pack never leaves a truncated archive under the real name
            with written_aside(archive) as partial, tarfile.open(partial, "w:gz") as tar:
                tar.add(manifest, f"{_ROOT}/pack.json")
                tar.add(copy, f"{_ROOT}/runs.sqlite3")
                for path in sorted(location.rglob("*")):
                    if path.is_symlink() or path.name in _DB_FILES or path.name in left_out:
                        continue
                    # folders too: an empty candidates folder is where a coder writes on the other side
                    tar.add(path, f"{_ROOT}/{path.relative_to(location).as_posix()}", recursive=False)
                    files += path.is_file()
    finally:
        store.close()
    return Packed(archive, location, runs, files + 1, archive.stat().st_size)


def unpack_store(archive: Path, store_path=None, force: bool = False) -> Packed:
    """Extract `archive` into the store at `store_path`; an existing store is replaced only with `force`."""
    archive = Path(archive)
    if not archive.is_file():
        raise InputError(f"{archive}: no such file")
    location = config.store_location(store_path)
    if (location / "runs.sqlite3").exists() and not force:
        raise InputError(f"a run store already exists at {location}",
                         hint="pass --force to replace its runs with the archive's, or --store another folder")
    try:
        tar = tarfile.open(archive, "r:gz")
    except (tarfile.TarError, OSError) as error:
        raise InputError(f"{archive}: not a .tar.gz ({error})") from None
    with tar, tempfile.TemporaryDirectory(prefix="skillbase-unpack-", dir=_scratch_parent(location)) as scratch:
        members = tar.getmembers()
        if not members or any(not m.name.startswith(f"{_ROOT}/") for m in members):
            raise InputError(f"{archive}: not a packed skillbase store", hint="make one with `skillbase store pack`")
        tar.extractall(scratch, filter="data")   # refuses absolute paths, .. and links out of the folder
        unpacked = Path(scratch) / _ROOT
        try:
            origin = json.loads((unpacked / "pack.json").read_text())
        except (OSError, ValueError):
            raise InputError(f"{archive}: its pack.json is missing or unreadable") from None
        if not (unpacked / "runs.sqlite3").is_file():
            raise InputError(f"{archive}: holds no runs.sqlite3")
        (unpacked / "pack.json").unlink()
        location.mkdir(parents=True, exist_ok=True)
        for name in _DB_FILES:
            (location / name).unlink(missing_ok=True)
        files = 0
        for path in sorted(unpacked.rglob("*")):
            if path.is_dir():
                (location / path.relative_to(unpacked)).mkdir(parents=True, exist_ok=True)
            elif path.is_file():
                target = location / path.relative_to(unpacked)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(path, target)   # artifacts are named by content: replacing one changes nothing
                files += 1
    # Follows the store's recorded folder (pack.json's `store`) to this one, quietly: landing elsewhere is the point.
    store = RunStore.open(location, say_moved=False)
    try:
        store.relocate(_moves(origin, location))   # the suite's and checkout's (and an older pack's store folder)
        runs = len(store.list_runs())
    finally:
        store.close()
    return Packed(archive, location, runs, files, archive.stat().st_size)


def _scratch_parent(location: Path) -> Path:
    # Beside the store, so moving the files in is a rename on one file system.
    parent = location.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    return parent


def _moves(origin: dict, location: Path) -> list[tuple[str, str]]:
    """(old prefix, new prefix) pairs, the store's own folder first (it may sit inside the checkout)."""
    here = {"store": str(location.resolve()), **_folders()}
    moves = []
    for key in ("store", "bench", "checkout"):
        old, new = origin.get(key) or "", here.get(key) or ""
        if old and new and old != new:
            moves.append((old.rstrip("/") + "/", new.rstrip("/") + "/"))
    return moves

