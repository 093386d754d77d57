"""A run store moved or copied by hand (`mv`, `cp -r`) keeps working where it is: its absolute paths (the
runs' prompts in waiting.json, a batch's candidates folder) follow it on its first writable open, a
read-only open translates them without writing, and the original's files are never read or written.

Real components, on the CPU: a run of the naive-GEMM fixture paused by the external applier at its first
prompt (its saved H200 report is the evidence, nvcc builds, nothing is timed), in a real SQLite store,
made a member of a batch whose candidates folder is inside the store, as `bench optimize` makes it.
"""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from loop_kit import REPORT

from skillbase.cli import cli
from skillbase.run.pack import pack_store, unpack_store
from skillbase.run.pending import list_pending
from skillbase.run.session import start_run
from skillbase.run.store import ROOT, RunStore
from skillbase.run.types import Settings

pytestmark = pytest.mark.nvcc


def paused_store(task: Path, location: Path) -> None:
    """A store holding run_1, paused at its first prompt, in batch_1 (candidates in the store's own folder)."""
    summary = start_run(task, Settings(rounds=2, repairs=0, agent="external"), store_path=location, gpu=False,
                        saved_report=REPORT, progress=lambda m: None)
    assert summary["status"] == "paused" and Path(summary["pending"]["prompt"]).is_file()
    store = RunStore.open(location)
    batch = store.create_batch({"candidates": str(location / "batches" / "batch_1")})
    store.add_batch_run(batch, 1, "naive_gemm", "fp32")
    store.close()


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` (the database and its journals too) with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def held_text(location: Path) -> str:
    """Everything the store holds that names a path: its database's rows and its runs' waiting.json files."""
    with sqlite3.connect(location / "runs.sqlite3") as db:
        rows = "\n".join(db.iterdump())
    return rows + "".join(p.read_text() for p in sorted((location / "runs").glob("*/waiting.json")))


def assert_points_into(location: Path, elsewhere: Path) -> None:
    """`pending` names the prompt and the candidate inside `location`, and nothing the store holds names `elsewhere`."""
    [prompt] = list_pending(location)
    assert prompt.prompt_path == location / "runs" / "run_1" / "r0-v0-a0.prompt.md" and prompt.prompt_path.is_file()
    assert prompt.candidate_path == location / "batches" / "batch_1" / "run_1.cu"
    assert f"{elsewhere}/" not in held_text(location)


def notes(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "skillbase.run.store"]


def test_a_copied_store_reads_and_writes_its_own_files_and_the_original_is_untouched(task, tmp_path, caplog):
    here, copy = tmp_path / "store", tmp_path / "store_copy"
    paused_store(task, here)
    original = tree(here)
    shutil.copytree(here, copy)

    # Read-only (`pending`): the copy's own files, and nothing written (but SQLite's WAL index, which readers keep).
    before = tree(copy)
    shown = json.loads(CliRunner().invoke(cli, ["pending", "--store", str(copy), "--json"],
                                          catch_exceptions=False).stdout)
    [prompt] = shown["prompts"]
    assert Path(prompt["prompt"]) == copy / "runs" / "run_1" / "r0-v0-a0.prompt.md"
    assert Path(prompt["candidate"]) == copy / "batches" / "batch_1" / "run_1.cu"
    assert {**tree(copy), "runs.sqlite3-shm": None} == {**before, "runs.sqlite3-shm": None}

    # The first writable open rewrites the copy's paths, and says so once.
    with caplog.at_level(logging.WARNING, logger="skillbase.run.store"):
        store = RunStore.open(copy)
        assert store.recorded_root() == str(copy)
        assert store.get_batch("batch_1").settings["candidates"] == str(copy / "batches" / "batch_1")
        store.close()
        RunStore.open(copy).close()
    assert notes(caplog) == [f"note: the run store at {copy} was moved or copied from {here}: its paths now "
                             "point here"]
    assert_points_into(copy, here)
    assert str(task) in held_text(copy)           # a path outside the store's folder is left as it was
    assert tree(here) == original

    # Packed and unpacked elsewhere: the paths point into the folder it lands in.
    trip = tmp_path / "trip.tar.gz"
    pack_store(trip, copy)
    with tarfile.open(trip) as tar:
        assert json.load(tar.extractfile("skillbase-store/pack.json"))["store"] == str(copy)
    there = tmp_path / "elsewhere" / "store"
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="skillbase.run.store"):
        unpack_store(trip, there)
    assert notes(caplog) == []                    # landing in another folder is what unpack is for: no note
    assert_points_into(there, copy)
    assert RunStore.open(there, read_only=True).recorded_root() == str(there)
    assert tree(here) == original


def test_a_moved_store_follows_its_folder(task, tmp_path, caplog):
    here, moved = tmp_path / "store", tmp_path / "renamed"
    paused_store(task, here)
    here.rename(moved)
    [prompt] = list_pending(moved)              # read-only: translated, nothing written
    assert prompt.prompt_path == moved / "runs" / "run_1" / "r0-v0-a0.prompt.md" and prompt.prompt_path.is_file()
    assert f"{here}/" in held_text(moved)
    with caplog.at_level(logging.WARNING, logger="skillbase.run.store"):
        RunStore.open(moved).close()
    assert len(notes(caplog)) == 1
    assert_points_into(moved, here)
    assert not here.exists()


def test_a_store_written_before_its_folder_was_recorded_gets_it_and_a_copy_of_one_is_followed(task, tmp_path):
    here, copy = tmp_path / "store", tmp_path / "store_copy"
    paused_store(task, here)
    with sqlite3.connect(here / "runs.sqlite3") as db:
        db.execute("DELETE FROM meta WHERE key=?", (ROOT,))
    shutil.copytree(here, copy)

    # In its own folder: the row is added, nothing else changes.
    held = held_text(here)
    store = RunStore.open(here)
    assert store.recorded_root() == str(here)
    store.close()
    assert held_text(here).replace(f"INSERT INTO \"meta\" VALUES('{ROOT}','{here}');\n", "") == held

    # Its copy: the old folder is the one its paused run's prompt sits in.
    [prompt] = list_pending(copy)
    assert prompt.prompt_path == copy / "runs" / "run_1" / "r0-v0-a0.prompt.md"
    RunStore.open(copy).close()
    assert_points_into(copy, here)
    assert RunStore.open(copy, read_only=True).recorded_root() == str(copy)
