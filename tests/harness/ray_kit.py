"""Job functions for tests/harness/test_ray_executor.py: compile-only work and deliberate failures.

The Ray workers import this module by name (`ray_kit:...`): the test puts this folder on the
PYTHONPATH the local cluster starts with."""

from __future__ import annotations

import hashlib
import os
import signal
import time
from pathlib import Path


def compile_payload(payload: dict) -> dict:
    """Compile a kernel for sm_90 with nvcc (object file only) and report what ptxas says about it."""
    from skillbase.harness.build import build

    source = Path(payload["kernel"])
    result = build(source, arch="sm_90", compile_only=True)
    return {"kernel": source.name, "source_sha256": hashlib.sha256(source.read_bytes()).hexdigest(),
            "ptxas": result.ptxas}


def where_payload(payload: dict) -> dict:
    """Where the job found its shipped files, and what they hold."""
    path = Path(payload["kernel"])
    return {"path": str(path), "text": path.read_text()}


def hold_gpu_payload(payload: dict) -> dict:
    """Hold the job's GPU for a moment and say which one it was and when."""
    start = time.time()
    time.sleep(payload["seconds"])
    return {"gpu": os.environ.get("CUDA_VISIBLE_DEVICES"), "start": start, "end": time.time()}


def kill_worker_payload(payload: dict) -> str:
    """Kill the Ray worker running this job (this process's parent) on the first `kills` attempts;
    each attempt leaves a file in `marks`, so the test counts them."""
    marks = Path(payload["marks"])
    attempt = len(list(marks.iterdir())) + 1
    (marks / f"attempt-{attempt}").write_text(str(os.getppid()))
    if attempt <= payload["kills"]:
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(60)
    return f"survived attempt {attempt}"


def crash_payload(payload: dict) -> None:
    """A job whose process dies of a segmentation fault (as a driver fault can take it down)."""
    os.kill(os.getpid(), signal.SIGSEGV)
