"""`skillbase evidence` builds a source's ptxas report for the arch its task spec needs unless told otherwise:
`--arch` defaults to none (the spec's `arch:`, else the GPU's, else sm_90), as the rest of the evidence path
does. An sm_90a kernel (it executes wgmma.fence) does not assemble for sm_90, so its ptxas facts appear
only when the spec's arch is followed; a Blackwell task (sm_100a) conflicted with the old default (sm_90)
outright. nvcc really runs, compile-only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillbase.cli import cli

SM90A_TASK = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "sm90a" / "scale.cu"


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))   # no ptxas log served from an earlier build


@pytest.mark.nvcc
def test_a_source_with_an_sm90a_spec_gets_ptxas_facts_without_arch():
    assert "arch: sm_90a" in SM90A_TASK.with_name("scale.task.yaml").read_text()
    result = CliRunner().invoke(cli, ["evidence", str(SM90A_TASK)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    record = document["ptxas"]["scale_kernel"]
    assert record["registers"] > 0 and record["spill_store_bytes"] == 0, record
    assert not [n for n in document.get("notes", []) if "nvcc" in n or "ptxas" in n], document["notes"]


@pytest.mark.nvcc
def test_a_task_of_another_chip_is_built_for_its_arch_without_arch(tmp_path):
    """The old `--arch sm_90` default refused this source (sm_90 asked, sm_100a needed)."""
    kernel = tmp_path / "scale.cu"
    kernel.write_text(SM90A_TASK.read_text().replace('asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");', ""))
    assert "asm" not in kernel.read_text()
    spec = SM90A_TASK.with_name("scale.task.yaml").read_text()
    kernel.with_name("scale.task.yaml").write_text(spec.replace("arch: sm_90a", "arch: sm_100a"))
    result = CliRunner().invoke(cli, ["evidence", str(kernel)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["ptxas"]["scale_kernel"]["registers"] > 0


def test_an_arch_of_another_chip_than_the_task_s_is_one_error():
    result = CliRunner().invoke(cli, ["evidence", str(SM90A_TASK), "--arch", "sm_80"])
    assert result.exit_code != 0
    assert result.exception.message == "arch sm_80 was asked for but the task needs sm_90a"
    assert "--arch sm_90a" in result.exception.hint


def test_the_help_says_what_the_default_arch_is():
    result = CliRunner().invoke(cli, ["evidence", "--help"], catch_exceptions=False)
    assert "task spec beside the source" in " ".join(result.output.split())
    assert "[default: sm_90]" not in result.output
