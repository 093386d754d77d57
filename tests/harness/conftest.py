"""Fixtures the harness's CLI tests share."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from skillbase.cli import main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """A bench suite folder holding one operator (relu)."""
    root = tmp_path_factory.mktemp("suite")
    shutil.copytree(REPO / "bench" / "ops" / "relu", root / "ops" / "relu")
    return root


@pytest.fixture
def skillbase(capsys):
    """`skillbase ARGS` in this process: its exit code, stdout and stderr."""
    def run(*args: str) -> subprocess.CompletedProcess:
        with pytest.raises(SystemExit) as exited:
            main(list(args))
        out = capsys.readouterr()
        return subprocess.CompletedProcess(args, exited.value.code, out.out, out.err)
    return run
