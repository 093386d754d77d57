"""The command line as a user meets it: every command answers --help, the reference pages match the
code, every setting the code reads is documented, and the bundled examples can be copied out."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillbase import config, docgen
from skillbase.cli import cli

REPO = Path(__file__).resolve().parents[2]
COMMANDS = [path for path, _ in docgen._commands(cli, __import__("click").Context(cli, info_name="skillbase"), [])]


def test_the_command_tree_is_what_the_reference_lists():
    assert ["advise"] in COMMANDS and ["bench", "run"] in COMMANDS and ["examples", "copy"] in COMMANDS
    assert len(COMMANDS) >= 30


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_every_command_answers_help(path):
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Usage: ")


def test_generated_reference_pages_are_current():
    # In a fresh interpreter: click caches each command's help option from the first context that
    # asks, so a page rendered after other tests invoked commands could differ from a user's.
    out = subprocess.run([sys.executable, "-m", "skillbase.docgen", "--check"], capture_output=True, text=True,
                         cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr


def _package_sources():
    for folder in ("skillbase", "engine", "agents"):
        yield from (REPO / folder).rglob("*.py")


def test_every_setting_the_code_reads_is_in_the_config_table():
    documented = {v.name for v in config.VARIABLES} | set(config.TEST_VARIABLES)
    read = {}
    for path in _package_sources():
        for name in re.findall(r"\bSKILLBASE_[A-Z_]+[A-Z]\b", path.read_text()):
            read.setdefault(name, path.relative_to(REPO))
    missing = {name: str(where) for name, where in read.items() if name not in documented}
    assert not missing, f"read but not in skillbase.config.VARIABLES: {missing}"


def test_settings_are_read_only_through_config():
    offenders = []
    for path in _package_sources():
        if path.name == "config.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"environ(\.get)?\W+[\"']SKILLBASE_", line) or re.search(r"getenv\([\"']SKILLBASE_", line):
                offenders.append(f"{path.relative_to(REPO)}:{number}")
    assert not offenders, offenders


def test_config_env_refuses_an_unlisted_name():
    with pytest.raises(KeyError, match="not a skillbase setting"):
        config.env("SKILLBASE_NOT_A_SETTING")


def test_empty_variables_count_as_unset(monkeypatch, tmp_path):
    monkeypatch.setenv("SKILLBASE_CACHE", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert config.cache_root() == tmp_path / "skillbase"
    monkeypatch.setenv("SKILLBASE_STORE", "")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert config.store_location() == tmp_path / "data" / "skillbase"
    assert config.bench_results_root() == tmp_path / "data" / "skillbase" / "results"


def test_examples_are_listed_and_copied_without_overwriting(tmp_path):
    listed = CliRunner().invoke(cli, ["examples", "list"])
    assert listed.exit_code == 0 and "naive_sgemm" in listed.output and "vector_add" in listed.output
    first = CliRunner().invoke(cli, ["examples", "copy", "vector_add", str(tmp_path)])
    assert first.exit_code == 0, first.output
    copied = tmp_path / "vector_add"
    assert (copied / "vector_add.cu").read_text() == (REPO / "examples" / "vector_add" / "vector_add.cu").read_text()
    (copied / "vector_add.cu").write_text("// my edits\n")
    again = CliRunner().invoke(cli, ["examples", "copy", "vector_add", str(tmp_path)])
    assert again.exit_code != 0 and "not overwriting" in str(again.exception)
    assert (copied / "vector_add.cu").read_text() == "// my edits\n"
    forced = CliRunner().invoke(cli, ["examples", "copy", "vector_add", str(tmp_path), "--force"])
    assert forced.exit_code == 0 and (copied / "vector_add.cu").read_text().startswith("// vector_add")
    unknown = CliRunner().invoke(cli, ["examples", "copy", "vector_ad", str(tmp_path)])
    assert unknown.exit_code != 0 and "did you mean `vector_add`" in unknown.exception.hint
