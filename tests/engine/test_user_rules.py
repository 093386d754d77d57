"""User rule folders add to the built-in rules (--extra-rules / $SKILLBASE_RULES_PATH) without shadowing them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillbase.cli import cli
from skillbase.engine.evaluate import RULES_PATH_ENV

RULES = Path(__file__).resolve().parents[2] / "rules"
FIXTURE = RULES / "fixtures" / "uncoalesced_access.evidence.json"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    monkeypatch.setenv(RULES_PATH_ENV, "")          # restored after each test (the option extends it)
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))


def _user_rule(folder: Path, rule_id: str) -> Path:
    (folder / "propose").mkdir(parents=True)
    source = RULES / "propose" / "mem.coalesce.global-loads.yaml"
    text = source.read_text().replace("id: mem.coalesce.global-loads", f"id: {rule_id}")
    (folder / "propose" / f"{rule_id}.yaml").write_text(text)
    shutil.copy(RULES / "propose" / "mem.coalesce.global-loads.cases.yaml",
                folder / "propose" / f"{rule_id}.cases.yaml")
    return folder


def test_a_user_rule_adds_to_the_built_in_set(tmp_path):
    folder = _user_rule(tmp_path / "mine", "usr.coalesce.sectors")
    result = CliRunner().invoke(cli, ["advise", "--evidence", str(FIXTURE), "--extra-rules", str(folder), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    top = data["candidates"][0]
    assert top["skill"] == "mem.coalesce" and "usr.coalesce.sectors" in top["rules"]
    assert "mem.coalesce.global-loads" in top["rules"]          # the built-in rule is still there
    validated = CliRunner().invoke(cli, ["rules", "validate", "--extra-rules", str(folder)])
    assert validated.exit_code == 0, validated.output


def test_the_environment_list_works_like_the_option(tmp_path, monkeypatch):
    folder = _user_rule(tmp_path / "mine", "usr.coalesce.env")
    monkeypatch.setenv(RULES_PATH_ENV, str(folder))
    data = json.loads(CliRunner().invoke(cli, ["advise", "--evidence", str(FIXTURE), "--json"]).output)
    assert "usr.coalesce.env" in data["candidates"][0]["rules"]


def test_a_user_rule_may_not_reuse_a_built_in_id(tmp_path):
    folder = _user_rule(tmp_path / "mine", "mem.coalesce.global-loads")
    result = CliRunner().invoke(cli, ["rules", "validate", "--extra-rules", str(folder)])
    assert result.exit_code != 0
    assert "duplicate rule id `mem.coalesce.global-loads`" in result.output and "rename yours" in result.output


def test_the_option_does_not_leak_into_later_commands(tmp_path, monkeypatch):
    import os

    monkeypatch.delenv(RULES_PATH_ENV, raising=False)
    folder = _user_rule(tmp_path / "mine", "usr.coalesce.once")
    assert CliRunner().invoke(cli, ["rules", "validate", "--extra-rules", str(folder)]).exit_code == 0
    assert RULES_PATH_ENV not in os.environ
    data = json.loads(CliRunner().invoke(cli, ["advise", "--evidence", str(FIXTURE), "--json"]).output)
    assert "usr.coalesce.once" not in data["candidates"][0]["rules"]
