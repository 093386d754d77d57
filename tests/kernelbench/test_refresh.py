"""`skillbase kernelbench import --refresh`: task folders of an earlier import get today's adapter files
(kb_task.py, problem.json) when the specs they would get are their own, and nothing else of theirs
changes (model.cu above all); a folder whose specs would change is refused and left byte for byte as it
was; `kernelbench optimize` on old folders warns once with the command that updates them."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from skillbase.cli import cli
from skillbase.documents import schema_path
from skillbase.kernelbench.importer import ImportedTask, import_problems, imported_tasks, refresh_command
from skillbase.kernelbench.task_files import ADAPTER_VERSION

# Three small problems in KernelBench's format: one per level-1 file, one at level 2.
PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """{doc}"""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return {body}


batch_size = 16
dim = {dim}


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''
PROBLEMS = {"level1/1_Scale.py": ("y = 3x", "x * 3.0"), "level1/2_Tanh.py": ("y = tanh(x)", "torch.tanh(x)"),
            "level2/1_Tanh_Scale.py": ("y = 2 tanh(x)", "torch.tanh(x) * 2.0")}
MARK = "\nreference.device = True\n"


def write_problems(root: Path, dim: int = 40) -> None:
    for name in PROBLEMS:
        write_problem(root, name, dim)


def write_problem(root: Path, name: str, dim: int) -> None:
    doc, body = PROBLEMS[name]
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(PROBLEM.format(doc=doc, body=body, dim=dim))


def make_old(task: Path) -> None:
    """The task folder as an import before the adapter was numbered wrote it: no device mark, no version."""
    source = (task / "kb_task.py").read_text()
    assert source.count(MARK) == 1
    (task / "kb_task.py").write_text(source.replace(MARK, "\n"))
    facts = json.loads((task / "problem.json").read_text())
    assert facts.pop("adapter") == ADAPTER_VERSION
    (task / "problem.json").write_text(json.dumps(facts, indent=1) + "\n")


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (hidden ones included: a partial file left behind would show), by path."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def refresh_json(*argv) -> dict:
    result = CliRunner().invoke(cli, ["kernelbench", "import", *map(str, argv), "--refresh", "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    jsonschema.validate(document, json.loads(schema_path("kernelbench-import").read_text()))
    assert document["refresh"] is True
    return document


def statuses(document: dict) -> dict[str, tuple[str, str | None]]:
    return {p["problem"]: (p["status"], p["reason"]) for p in document["problems"]}


def test_refresh_rewrites_old_adapters_keeps_model_cu_and_refuses_a_changed_spec(tmp_path):
    source, out = tmp_path / "kb_src", tmp_path / "tasks"
    write_problems(source)
    first = import_problems(source / "level1", out)
    assert [p.status for p in first.problems] == ["imported", "imported"]
    scale, tanh = out / "level1_1_Scale", out / "level1_2_Tanh"
    current = snapshot(scale)     # what today's import writes
    for task in (scale, tanh):
        make_old(task)
        (task / "model.cu").write_bytes(os.urandom(4096))      # the run's kernel: never touched
    # 2_Tanh's problem changed size since: its specs would change, so its folder must stay as it is.
    write_problem(source, "level1/2_Tanh.py", dim=56)
    old_scale, old_tanh = snapshot(scale), snapshot(tanh)

    document = refresh_json(source, "--out", out)
    assert statuses(document) == {
        "level1/1_Scale.py": ("refreshed", None),
        "level1/2_Tanh.py": ("refused", document["problems"][1]["reason"]),
        "level2/1_Tanh_Scale.py": ("imported", None)}      # no folder yet: imported as without --refresh
    reason = document["problems"][1]["reason"]
    assert reason.startswith("specs changed: import with --force into a new folder") and "\n" not in reason
    assert "model.task.yaml differs" in reason and "torch.task.yaml differs" in reason
    assert document["problems"][1]["task_dir"] is None and not document["problems"][1]["imported"]
    assert (document["imported"], document["rejected"]) == (2, 1)
    assert snapshot(tanh) == old_tanh
    refreshed = snapshot(scale)
    assert refreshed["model.cu"] == old_scale["model.cu"]
    assert refreshed == {**current, "model.cu": old_scale["model.cu"]}     # nothing else added, left or lost
    assert MARK in refreshed["kb_task.py"].decode()
    assert json.loads(refreshed["problem.json"])["adapter"] == ADAPTER_VERSION
    for spec in ("model.task.yaml", "torch.task.yaml"):
        assert refreshed[spec] == old_scale[spec]

    again = refresh_json(source, "--out", out)
    assert [p["status"] for p in again["problems"]] == ["unchanged", "refused", "unchanged"]
    assert snapshot(scale) == refreshed and snapshot(tanh) == old_tanh
    # The text report says the same, one line per problem and the counts.
    result = CliRunner().invoke(cli, ["kernelbench", "import", str(source / "level1"), "--out", str(out),
                                      "--refresh"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"unchanged level1/1_Scale.py -> {scale}  (already current)",
        f"refused   level1/2_Tanh.py: {reason}",
        f"0 imported, 0 refreshed, 1 unchanged, 1 refused, 0 skipped; tasks in {out}"]


def test_optimize_on_old_folders_warns_once_with_the_command_that_updates_them(tmp_path, caplog):
    source, out = tmp_path / "kb_src", tmp_path / "tasks"
    write_problems(source)
    assert all(p.imported for p in import_problems(source, out).problems)
    tasks = sorted(out.iterdir())
    for task in tasks[:2]:        # level1_1_Scale, level1_2_Tanh old; level2_1_Tanh_Scale current
        make_old(task)
    done = subprocess.run([sys.executable, "-m", "skillbase", "kernelbench", "optimize", str(out), "--agent",
                           "external", "--no-gpu", "--rounds", "1", "--store", str(tmp_path / "store"), "--json"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, done.stderr
    assert warnings[0].startswith(f"warning: 2 of 3 task(s) under {out} have an older adapter than this skillbase "
                                  f"writes (problem.json's adapter < {ADAPTER_VERSION})")
    command = warnings[0].split("update them with: ", 1)[1]
    assert command == shlex.join(["skillbase", "kernelbench", "import", str(source / "level1"), "--refresh", "--out",
                                  str(out), "--problems", "1_Scale", "--problems", "2_Tanh"])
    # The command does what it says: both refreshed, nothing else imported or rewritten.
    level2 = snapshot(out / "level2_1_Tanh_Scale")
    document = refresh_json(*shlex.split(command)[3:])
    assert [(p["problem"], p["status"]) for p in document["problems"]] == [
        ("level1/1_Scale.py", "refreshed"), ("level1/2_Tanh.py", "refreshed")]
    assert snapshot(out / "level2_1_Tanh_Scale") == level2
    with caplog.at_level("WARNING", logger="skillbase"):
        assert len(imported_tasks(out)) == 3
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


def test_the_refresh_command_reads_only_the_old_tasks_problems(tmp_path):
    def task(source: str | None, problem: str) -> ImportedTask:
        return ImportedTask(tmp_path / "tasks" / "x", problem, 1, 0, source)

    one = task("/kb/KernelBench/level1/2_ReLU.py", "level1/2_ReLU.py")
    assert refresh_command(tmp_path / "t", [one]) == \
        f"skillbase kernelbench import /kb/KernelBench/level1/2_ReLU.py --refresh --out {tmp_path / 't'}"
    two = [one, task("/kb/KernelBench/level2/1_Conv.py", "level2/1_Conv.py")]
    assert refresh_command(Path("t"), two) == \
        "skillbase kernelbench import /kb/KernelBench --refresh --out t --problems 2_ReLU --problems 1_Conv"
    # Two checkouts (their common folder would be /), or a source not recorded: PATH for the user to fill.
    apart = [one, task("/other/KernelBench/level1/3_Sum.py", "level1/3_Sum.py")]
    assert refresh_command(Path("t"), apart) == \
        "skillbase kernelbench import PATH --refresh --out t --problems 2_ReLU --problems 3_Sum"
    assert refresh_command(Path("t"), [task(None, "level1/2_ReLU.py")]) == \
        "skillbase kernelbench import PATH --refresh --out t"


def test_refresh_with_force_is_a_one_line_usage_error(tmp_path):
    done = subprocess.run([sys.executable, "-m", "skillbase", "kernelbench", "import", str(tmp_path), "--refresh",
                           "--force", "--out", str(tmp_path / "out")], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.splitlines() == [
        "error: --refresh keeps each task folder's specs and model.cu, --force replaces the whole folder: give one "
        "of the two"]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("missing", ["model.task.yaml", "torch.task.yaml"])
def test_a_folder_without_a_spec_is_refused_and_left_as_it_is(tmp_path, missing):
    source, out = tmp_path / "kb_src", tmp_path / "tasks"
    write_problem(source, "level1/1_Scale.py", dim=40)
    (task,) = [p.task_dir for p in import_problems(source, out).problems]
    make_old(task)
    (task / missing).unlink()
    before = snapshot(task)
    (result,) = import_problems(source, out, refresh=True).problems
    assert result.status == "refused" and f"{missing} is missing" in result.reason
    assert snapshot(task) == before
