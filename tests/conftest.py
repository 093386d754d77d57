"""Shared test setup: GPU tests skip cleanly on machines without an NVIDIA GPU."""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@functools.cache
def gpu_available() -> bool:
    """True when a CUDA device answers `nvidia-smi -L`."""
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


@functools.cache
def nvcc_available() -> bool:
    return shutil.which("nvcc") is not None


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs an NVIDIA GPU (none found by nvidia-smi)")
    skip_nvcc = pytest.mark.skip(reason="needs nvcc on PATH")
    for item in items:
        if "gpu" in item.keywords and not gpu_available():
            item.add_marker(skip_gpu)
        if "nvcc" in item.keywords and not nvcc_available():
            item.add_marker(skip_nvcc)


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
