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
    """`skillbase ARGS` in this process: its exit code, stdout and stderr. `main` exits only with a code to
    report (or through ctx.exit); a command that returns normally succeeded, as the console script would."""
    def run(*args: str) -> subprocess.CompletedProcess:
        code = 0
        try:
            main(list(args))
        except SystemExit as exited:
            code = exited.code if isinstance(exited.code, int) else (0 if exited.code is None else 1)
        out = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out.out, out.err)
    return run
