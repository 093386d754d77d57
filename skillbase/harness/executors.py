"""Which executor runs GPU jobs (`--executor local|ray`): the one module that knows both, so that
the job interface (`jobs.py`) and the Ray executor built on it do not import each other."""

from __future__ import annotations

from collections.abc import Sequence

from skillbase.errors import InputError
from skillbase.harness.jobs import LocalExecutor

EXECUTORS = ("local", "ray")     # --executor


def make_executor(kind: str = "local", gpu_ids: Sequence[str] = (), deadline: float | None = None,
                  address: str | None = None):
    """The executor `--executor` names: `local` (this host's `gpu_ids`) or `ray` (the cluster at
    `address`, default a Ray instance started on this host; connected and its nodes checked now,
    before any work). Call its `close()` when done."""
    if kind == "local":
        if address:
            raise InputError("--address names a Ray cluster", hint="add --executor ray")
        return LocalExecutor(gpu_ids, deadline)
    if kind == "ray":
        from skillbase.harness.ray_executor import RayExecutor

        return RayExecutor(address, deadline)
    raise InputError(f"unknown executor {kind!r}", hint=f"one of: {', '.join(EXECUTORS)}")
