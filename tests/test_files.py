"""skillbase.files: a file replaced whole or not at all, by one writer or several threads at once."""

from __future__ import annotations

import os
import random
import stat
import threading
from pathlib import Path

import pytest

from skillbase import files
from skillbase.files import is_partial, write_bytes_atomically, write_text_atomically, written_aside


def _payload(rng: random.Random, low: int = 1, high: int = 1 << 16) -> bytes:
    return rng.randbytes(rng.randint(low, high))


def test_the_target_holds_the_new_bytes_and_nothing_is_left_beside_it(tmp_path):
    rng = random.Random()
    target = tmp_path / "t.bin"
    for _ in range(3):   # first a new file, then replacing an existing one
        data = _payload(rng)
        with written_aside(target) as partial:
            assert partial.parent == tmp_path and is_partial(partial) and partial.read_bytes() == b""
            assert not target.exists() or target.read_bytes() != data   # nothing reaches the target before the end
            with partial.open("wb") as out:
                out.write(data)
        assert target.read_bytes() == data
        assert [p.name for p in tmp_path.iterdir()] == ["t.bin"]


@pytest.mark.parametrize("error", [ValueError("bad"), OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_an_exception_leaves_the_old_target_and_no_partial(tmp_path, error):
    rng = random.Random()
    target = tmp_path / "t.bin"
    old = _payload(rng)
    target.write_bytes(old)
    with pytest.raises(type(error)):
        with written_aside(target) as partial:
            partial.write_bytes(_payload(rng))   # half the work done, then the failure
            raise error
    assert target.read_bytes() == old
    assert [p.name for p in tmp_path.iterdir()] == ["t.bin"]


def test_an_exception_before_any_target_existed_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError):
        with written_aside(tmp_path / "new.bin") as partial:
            partial.write_bytes(b"x")
            raise RuntimeError
    assert list(tmp_path.iterdir()) == []


def test_a_failed_rename_leaves_the_old_target_and_no_partial(tmp_path, monkeypatch):
    target = tmp_path / "t.bin"
    target.write_bytes(b"old")

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError, match="No space"):
        write_bytes_atomically(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.bin"]


def test_threads_writing_one_target_at_once_leave_one_whole_version(tmp_path):
    """Writers interleave chunk by chunk while a reader polls: every read, and the end, is one whole payload."""
    rng = random.Random()
    target = tmp_path / "shared.bin"
    writers, rounds = 6, 8
    payloads = [[_payload(rng, 1 << 12, 1 << 18) for _ in range(rounds)] for _ in range(writers)]
    every = {p for mine in payloads for p in mine}
    start = threading.Barrier(writers + 1)
    done = threading.Event()
    seen, failures = [], []

    def write(mine: list[bytes]) -> None:
        try:
            start.wait()
            for data in mine:
                with written_aside(target) as partial, partial.open("wb") as out:
                    for at in range(0, len(data), 4096):
                        out.write(data[at:at + 4096])
                        out.flush()
                        os.sched_yield()   # let the other writers in between chunks
        except BaseException as failure:   # a thread's failure would otherwise vanish
            failures.append(failure)

    def read() -> None:
        start.wait()
        while not done.is_set():
            try:
                seen.append(target.read_bytes())
            except FileNotFoundError:
                pass

    threads = [threading.Thread(target=write, args=(mine,)) for mine in payloads]
    reader = threading.Thread(target=read)
    for thread in (*threads, reader):
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    reader.join()
    assert not failures
    assert target.read_bytes() in {mine[-1] for mine in payloads}   # one writer's last version, whole
    assert seen and all(data in every for data in seen)
    assert [p.name for p in tmp_path.iterdir()] == ["shared.bin"]


def test_partial_names_differ_between_threads_and_calls(tmp_path):
    target = tmp_path / ("k" * 250)   # near the file system's name limit: the partial's name must still fit
    names: list[str] = []
    lock = threading.Lock()

    def name() -> None:
        with lock:
            names.append(files.partial_path(target).name)

    threads = [threading.Thread(target=name) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    names += [files.partial_path(target).name for _ in range(4)]
    assert len(set(names)) == len(names)
    assert all(len(n.encode()) <= 255 and is_partial(Path(n)) for n in names)
    write_bytes_atomically(target, b"fits")
    assert target.read_bytes() == b"fits"


def test_a_stale_partial_of_the_same_name_is_not_reused(tmp_path, monkeypatch):
    """A killed process's leftover with the name this thread would pick: the write goes to a fresh one."""
    target = tmp_path / "t.bin"
    stale = tmp_path / ".t.bin.stale.partial"
    stale.write_bytes(b"left by a killed process")
    picks = iter([stale, tmp_path / ".t.bin.fresh.partial"])
    monkeypatch.setattr(files, "partial_path", lambda _target: next(picks))
    write_bytes_atomically(target, b"new")
    assert target.read_bytes() == b"new"
    assert stale.read_bytes() == b"left by a killed process"


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644])
def test_mode_is_applied_whatever_the_umask(tmp_path, mode):
    target = tmp_path / "t.bin"
    target.write_bytes(b"old")
    target.chmod(0o600 if mode != 0o600 else 0o644)
    old_umask = os.umask(0o077)   # would strip the group and other bits from a plain write
    try:
        write_bytes_atomically(target, b"new", mode=mode)
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(target.stat().st_mode) == mode


def test_without_mode_the_file_gets_what_a_plain_write_would(tmp_path):
    plain = tmp_path / "plain.bin"
    plain.write_bytes(b"x")
    write_bytes_atomically(tmp_path / "aside.bin", b"x")
    assert stat.S_IMODE((tmp_path / "aside.bin").stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)


def test_fsync_flushes_the_new_file_before_it_is_renamed(tmp_path, monkeypatch):
    target = tmp_path / "t.bin"
    data = random.Random().randbytes(5000)
    synced = []
    real = os.fsync

    def fsync(fd: int) -> None:
        info = os.fstat(fd)
        synced.append((info.st_ino, info.st_size, target.exists()))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    write_bytes_atomically(target, data)
    assert synced == []   # only when asked
    write_bytes_atomically(target, data, fsync=True)
    assert synced == [(target.stat().st_ino, len(data), True)]   # the very file now named target, whole
    target.unlink()
    synced.clear()
    write_bytes_atomically(target, data, fsync=True)
    assert synced == [(target.stat().st_ino, len(data), False)]   # before the rename: target not there yet


def test_text_is_written_in_the_encoding_asked(tmp_path):
    text = "µs ≤ 3 — Ω"
    write_text_atomically(tmp_path / "u.txt", text)
    write_text_atomically(tmp_path / "l.txt", "µs", encoding="latin-1")
    assert (tmp_path / "u.txt").read_bytes() == text.encode("utf-8")
    assert (tmp_path / "l.txt").read_bytes() == "µs".encode("latin-1")


def test_a_partial_left_in_a_store_is_not_taken_for_a_run_file(tmp_path):
    """A killed writer's leftover in a run folder is not shipped back as one of the run's files."""
    from skillbase.run.transfer import _files

    kept = tmp_path / "runs" / "run_1" / "waiting.json"
    kept.parent.mkdir(parents=True)
    kept.write_text("{}")
    files.partial_path(kept).write_text("{\"half")
    assert list(_files(tmp_path)) == ["runs/run_1/waiting.json"]
