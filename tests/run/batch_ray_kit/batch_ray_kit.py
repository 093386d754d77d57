"""A job function for tests/run/test_batch_ray.py (the Ray workers import it by name)."""

from pathlib import Path


def peek_payload(payload: dict) -> str:
    """Read one file: what a job that opened the driver's store would do."""
    return Path(payload["path"]).read_text()
