"""Files replaced whole: new content is written aside, beside the target, and renamed over it.

A reader (another worker, another process, a rerun after a crash) sees the old file or the new one,
never a truncated or half-written one, and a failed write leaves the old file as it was and no
partial file behind. `written_aside` is the one place this is done; the `write_*_atomically`
helpers cover the common case of content already in memory.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PARTIAL_SUFFIX = ".partial"
_serial = itertools.count()   # several partials of one target in one thread (nested, or a stale one left)


def partial_path(target: Path) -> Path:
    """A fresh name for a partial copy of `target`, in its folder: hidden, and unique to this process and
    thread (`--workers-per-gpu` runs jobs as threads of one process)."""
    stem = target.name[:128]   # the partial's name must fit the file system's limit too
    return target.with_name(f".{stem}.{os.getpid()}-{threading.get_ident()}-{next(_serial)}{PARTIAL_SUFFIX}")


def is_partial(path: Path) -> bool:
    """Whether `path` is named like a partial copy (`written_aside`'s, left by a killed process)."""
    return path.name.startswith(".") and path.name.endswith(PARTIAL_SUFFIX)


@contextmanager
def written_aside(target: str | Path, *, mode: int | None = None, fsync: bool = False) -> Iterator[Path]:
    """Yield an empty file's path beside `target`; write the new content there. On a clean exit it is
    renamed over `target` (given `mode` first, and flushed to disk first with `fsync`); on any exception
    it is removed and the exception goes on. Errors of the file system are the caller's to word."""
    target = Path(target)
    while True:
        partial = partial_path(target)
        try:   # created here, exclusively: the name is ours even if a killed process left one like it
            os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else mode))
            break
        except FileExistsError:
            continue
    try:
        yield partial
        if mode is not None:
            os.chmod(partial, mode)   # exactly `mode`, whatever the umask took from it at creation
        if fsync:
            handle = os.open(partial, os.O_RDONLY)
            try:
                os.fsync(handle)
            finally:
                os.close(handle)
        os.replace(partial, target)
    except BaseException:
        try:
            partial.unlink(missing_ok=True)
        except OSError:
            pass   # the original error says more than a failed clean-up
        raise


def write_bytes_atomically(target: str | Path, data: bytes, *, mode: int | None = None, fsync: bool = False) -> None:
    """`data` as the whole of `target`, through `written_aside`."""
    with written_aside(target, mode=mode, fsync=fsync) as partial:
        partial.write_bytes(data)


def write_text_atomically(target: str | Path, text: str, *, encoding: str = "utf-8", mode: int | None = None,
                          fsync: bool = False) -> None:
    """`text` as the whole of `target`, through `written_aside`."""
    write_bytes_atomically(target, text.encode(encoding), mode=mode, fsync=fsync)
