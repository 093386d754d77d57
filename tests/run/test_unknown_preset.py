"""`optimize --preset` names a size of the task, with or without a GPU: an unknown name is the spec's
one-line error before any run exists (the compile-only path used to accept it and finish a run)."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from skillbase.run.store import RunStore
from tests.cli_kit import run_main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vector_add"


def test_an_unknown_preset_is_refused_before_a_run_exists(tmp_path, capsys):
    task = tmp_path / "task"
    shutil.copytree(EXAMPLE, task)
    kernel = next(task.glob("*.cu"))
    store = tmp_path / "store"
    name = random.choice(["nope", "XL", "large", "s "]).strip() + "x"
    code, out, err = run_main(capsys, "optimize", str(kernel), "--agent", "none", "--rounds", "1", "--no-gpu",
                              "--preset", name, "--store", str(store))
    assert code != 0 and out == ""
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[0].startswith("error: ") and f"no size preset '{name}'" in lines[0], err
    assert "Traceback" not in err
    if (store / "runs.sqlite3").exists():
        assert RunStore.open(store, read_only=True).list_runs() == []
