"""`skillbase skills list | show | validate` through click's CliRunner and the real entry point."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from skillbase.cli import cli, main
from skillbase.config import builtin_skills_dir
from skillbase.corpus.model import HEADINGS


@pytest.fixture(autouse=True)
def _no_user_dirs(monkeypatch):
    monkeypatch.delenv("SKILLBASE_SKILL_PATH", raising=False)


def run(*args: str):
    return CliRunner().invoke(cli, ["skills", *args], catch_exceptions=False)


@pytest.mark.parametrize("sub", [[], ["list"], ["show"], ["validate"]])
def test_help(sub):
    result = CliRunner().invoke(cli, ["skills", *sub, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


def test_list_table_has_the_columns_and_every_skill():
    result = run("list")
    assert result.exit_code == 0
    header = result.output.splitlines()[0].split()
    assert header == ["id", "category", "status", "auto-apply", "example", "origin"]
    count = len(list(builtin_skills_dir().glob("*/*/skill.yaml")))
    assert f"{count} skill(s)" in result.output
    assert "mem.coalesce" in result.output


def test_list_json_is_the_catalogue():
    result = run("list", "--json")
    rows = json.loads(result.output)["skills"]
    by_id = {row["id"]: row for row in rows}
    row = by_id["mem.coalesce"]
    assert row["category"] == "mem" and row["status"] == "stable" and row["origin"] == "built-in"
    assert isinstance(row["auto_apply"], bool) and isinstance(row["has_example"], bool)
    assert [r["id"] for r in rows] == sorted(by_id)


def test_list_filters_by_category_and_status():
    rows = json.loads(run("list", "--category", "mem", "--json").output)["skills"]
    assert rows and {r["category"] for r in rows} == {"mem"}
    rows = json.loads(run("list", "--status", "deprecated", "--json").output)["skills"]
    assert all(r["status"] == "deprecated" for r in rows)


def test_list_unknown_category_suggests(capsys):
    with pytest.raises(SystemExit) as info:
        main(["skills", "list", "--category", "mme"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "error: no skills in category 'mme'; did you mean 'mem'?" in err


def test_show_renders_the_headings_in_order():
    result = run("show", "mem.coalesce")
    assert result.exit_code == 0
    out = result.output
    assert out.startswith("mem.coalesce: ")
    positions = [out.index(f"## {title}\n") for key, title in HEADINGS if key not in ("related", "changelog")]
    assert positions == sorted(positions)
    assert "## Proposed by" in out and "## Examples" in out
    assert "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio" in out


def test_show_lists_the_rules_that_propose_the_skill():
    from skillbase.config import builtin_rules_dir

    proposing = []
    for path in sorted((builtin_rules_dir() / "propose").glob("*.yaml")):
        if path.name.endswith(".cases.yaml"):
            continue
        data = yaml.safe_load(path.read_text()) or {}
        if any(p.get("skill") == "mem.coalesce" for p in data.get("proposes") or []):
            proposing.append(data["id"])
    out = run("show", "mem.coalesce").output
    for rule in proposing:
        assert rule in out
    if not proposing:
        assert "(no rule proposes this skill yet)" in out


def test_show_json_has_the_data_and_the_rules():
    data = json.loads(run("show", "mem.coalesce", "--json").output)
    assert data["id"] == "mem.coalesce" and data["origin"] == "built-in"
    assert isinstance(data["proposed_by"], list) and isinstance(data["how"], list)


def test_show_unknown_id_is_one_line_with_did_you_mean(capsys):
    with pytest.raises(SystemExit) as info:
        main(["skills", "show", "mem.colaesce"])
    assert info.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "error: unknown skill 'mem.colaesce'; did you mean 'mem.coalesce'?"


def test_validate_json_reports_counts():
    result = CliRunner().invoke(cli, ["skills", "validate", "--json"])
    report = json.loads(result.output)
    assert report["skills"] >= 1
    assert isinstance(report["errors"], list) and isinstance(report["warnings"], list)


def test_validate_builtin_corpus_has_no_schema_errors():
    result = CliRunner().invoke(cli, ["skills", "validate", "--json", "--no-canonical"])
    report = json.loads(result.output)
    schema_errors = [e for e in report["errors"] if "example" not in e["message"]]
    assert not schema_errors, schema_errors


def test_validate_fails_with_exit_1_on_a_broken_user_skill(tmp_path, capsys):
    bad = tmp_path / "usr" / "usr.broken" / "skill.yaml"
    bad.parent.mkdir(parents=True)
    bad.write_text("id: usr.broken\ntitle: Broken\n")
    with pytest.raises(SystemExit) as info:
        main(["skills", "--skills-dir", str(tmp_path), "validate", "--no-canonical"])
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert f"error: {bad}:1: field 'category' is required" in err


def test_user_skill_shows_its_origin(tmp_path):
    data = yaml.safe_load((builtin_skills_dir() / "mem" / "mem.coalesce" / "skill.yaml").read_text())
    data.update(id="usr.mine", category="usr")
    data.pop("related", None)
    path = tmp_path / "usr" / "usr.mine" / "skill.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    rows = json.loads(run("--skills-dir", str(tmp_path), "list", "--category", "usr", "--json").output)["skills"]
    assert [(r["id"], r["origin"]) for r in rows] == [("usr.mine", str(tmp_path))]
