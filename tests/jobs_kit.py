"""A GPU-job function for the executor tests, importable by name in a spawned worker (tests/ is on
sys.path): it says when it ran, in which process, under which CUDA_VISIBLE_DEVICES."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any


def rendezvous_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """Mark this job started in `marks`, wait (up to `wait_s`) until `meet` jobs have started there, then
    hold `hold_s` seconds. Two jobs that both met ran at the same time, whatever the timing of the host."""
    marks = Path(payload["marks"])
    started = time.time()
    (marks / str(payload["token"])).touch()
    deadline = time.monotonic() + payload.get("wait_s", 0.0)
    while len(list(marks.iterdir())) < payload.get("meet", 1) and time.monotonic() < deadline:
        time.sleep(0.01)
    met = len(list(marks.iterdir())) >= payload.get("meet", 1)
    time.sleep(payload.get("hold_s", 0.0))
    return {"token": payload["token"], "pid": os.getpid(), "device": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "start": started, "end": time.time(), "met": met}
