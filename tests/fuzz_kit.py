"""The fuzz suite's kit (tests/fuzz/, issue 22): every generated input must end in a normal result or ONE
SkillbaseError (a one-line message), within a per-case time limit, without changing or losing any
file it was not asked to write. Anything else (a traceback, a hang, a changed file) fails the test.

Sizes: by default each target tries a few dozen inputs (the suite takes about a minute on 2 cores);
SKILLBASE_FUZZ_SCALE=N multiplies every count by N for a longer run. The counts of inputs tried and
of failures are printed at the end of the session ("fuzz figures").
"""

from __future__ import annotations

import collections
import hashlib
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings

from skillbase.errors import SkillbaseError

SCALE = max(1, int(os.environ.get("SKILLBASE_FUZZ_SCALE", "1") or "1"))
PER_CASE_S = 10
TRIED: collections.Counter[str] = collections.Counter()
OUTCOMES: collections.Counter[str] = collections.Counter()


def examples(n: int) -> settings:
    """Hypothesis settings for a target: n inputs (times the scale), no example database in the
    checkout, no per-example deadline (the alarm below is the hang guard)."""
    return settings(max_examples=n * SCALE, deadline=None, database=None, derandomize=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang(f"no answer within {PER_CASE_S} s")


def survive(target: str, call: Callable[[], Any]) -> Any:
    """Run one case: its result, or the SkillbaseError it raised (one line, with a message); any other
    exception or a hang fails. Counts the case for the figures."""
    TRIED[target] += 1
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(PER_CASE_S)
    try:
        result = call()
        OUTCOMES[f"{target}: ok"] += 1
        return result
    except SkillbaseError as error:
        assert error.message and "\n" not in error.message.strip(), f"not one line: {error.message!r}"
        OUTCOMES[f"{target}: refused"] += 1
        return error
    except Hang:
        OUTCOMES[f"{target}: HANG"] += 1
        raise
    except BaseException:
        OUTCOMES[f"{target}: TRACEBACK"] += 1
        raise
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def snapshot(root: Path) -> dict[str, str]:
    """Every file under `root` with the digest of its content (to prove nothing changed or vanished)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.name.endswith(("-wal", "-shm")):
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def unchanged(before: dict[str, str], after: dict[str, str]) -> None:
    changed = sorted(name for name in before if after.get(name) != before[name])
    assert not changed, f"changed or lost: {changed}"
