"""Loaded by every Python process of tests/run/test_batch_ray.py's Ray cluster (this folder is on the
PYTHONPATH the cluster starts with): a process that opens a file, lists a folder or connects to a
SQLite database under $SKILLBASE_TEST_OFF_LIMITS is refused (PermissionError) and noted, one line
per try, in $SKILLBASE_TEST_OFF_LIMITS_NOTES. The test puts the driver's run stores there: the jobs
on the cluster must never touch them."""

import os
import sys

_LIMIT = os.environ.get("SKILLBASE_TEST_OFF_LIMITS")
_NOTES = os.environ.get("SKILLBASE_TEST_OFF_LIMITS_NOTES")
_EVENTS = {"open", "sqlite3.connect", "os.listdir", "os.scandir", "shutil.copyfile", "shutil.copytree"}


def _guard(event: str, args: tuple) -> None:
    if event not in _EVENTS or not args or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    path = os.path.abspath(os.fsdecode(args[0]))
    if path == _LIMIT or path.startswith(_LIMIT + os.sep):
        with open(_NOTES, "a") as notes:
            notes.write(f"{os.getpid()} {event} {path}\n")
        raise PermissionError(f"off limits to the cluster's processes: {path}")


if _LIMIT and _NOTES:
    sys.addaudithook(_guard)
