"""What scripts, CI and editors read (issue 19): errors as JSON with --json, the exit codes of
`skillbase.errors.EXIT_CODES`, -q / -v, the configuration file and `skillbase config`, `lint` in its
four formats, `rules list` / `rules show`. Everything runs through `skillbase.cli.main`, the console
entry point, on real kernels, real saved profiles and the built-in rules."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from skillbase import config
from skillbase.cli import main
from skillbase.errors import EXIT_CODES, EnvironmentProblem

REPO = Path(__file__).resolve().parents[2]
REPORT = REPO / "examples" / "naive_sgemm" / "naive_sgemm.h200.ncu-rep.xz"
CUBLAS_CHEAT = REPO / "tests" / "cheats" / "sgemm" / "cublas.cu"
CLEAN_KERNEL = REPO / "examples" / "naive_sgemm" / "naive_sgemm.cu"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `skillbase ARGV` as the console script runs it."""
    try:
        main(list(argv))
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(autouse=True)
def no_config_file(tmp_path, monkeypatch):
    """Each test starts in an empty folder with no configuration file above it, and no variables."""
    home = tmp_path / "work"
    home.mkdir()
    monkeypatch.chdir(home)
    for v in config.VARIABLES:
        monkeypatch.delenv(v.name, raising=False)
    assert config.find_config_file() is None
    return home


# ---- errors and exit codes -----------------------------------------------------------------------

def test_an_input_error_with_json_is_a_json_object_on_stdout_and_exit_2(capsys):
    code, out, err = run(capsys, "advise", "--report", "missing.ncu-rep", "--json")
    assert code == 2 and err == ""
    document = json.loads(out)
    assert document == {"schema_version": 1, "error": {"message": "missing.ncu-rep: no such report",
                                                       "hint": document["error"]["hint"], "kind": "input",
                                                       "exit_code": 2}}


def test_the_same_error_without_json_is_two_lines_on_stderr(capsys):
    code, out, err = run(capsys, "advise", "--report", "missing.ncu-rep")
    assert code == 2 and out == ""
    assert err.splitlines()[0] == "error: missing.ncu-rep: no such report"
    assert err.splitlines()[1].startswith("hint: ")


def test_a_usage_error_with_json_names_the_command_help(capsys):
    code, out, _ = run(capsys, "lint", "--format", "json", "--no-such-flag", str(CLEAN_KERNEL))
    error = json.loads(out)["error"]
    assert code == 2 and error["kind"] == "input" and "--no-such-flag" in error["message"]
    assert error["hint"] == "see `skillbase lint --help`"


def test_a_missing_tool_exits_3_with_kind_environment(capsys, monkeypatch):
    def no_gpu(*args, **kwargs):
        raise EnvironmentProblem("no NVIDIA GPU found (nvidia-smi lists none)", "run on a GPU machine")

    monkeypatch.setattr("skillbase.harness.runtime.evaluate", no_gpu)
    code, out, _ = run(capsys, "check", str(CLEAN_KERNEL), "--json")
    assert code == 3 and json.loads(out)["error"]["kind"] == "environment"


def test_an_interrupt_exits_130(capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("skillbase.harness.lint.lint_files", interrupted)
    code, out, err = run(capsys, "lint", str(CLEAN_KERNEL))
    assert code == 130 and err.strip() == "error: interrupted"
    code, out, _ = run(capsys, "lint", "--format", "json", str(CLEAN_KERNEL))
    assert code == 130 and json.loads(out)["error"]["kind"] == "interrupted"


def test_exit_codes_are_documented_once_from_the_table():
    page = (REPO / "docs" / "cli.md").read_text()
    section = page[page.index("## Exit codes"):]
    for exit_code in EXIT_CODES:
        assert f"| {exit_code.code} | `{exit_code.kind}` |" in section
    assert [e.code for e in EXIT_CODES] == [0, 1, 2, 3, 130]


# ---- -q / -v -------------------------------------------------------------------------------------

def test_quiet_prints_nothing_but_keeps_the_exit_code(capsys):
    code, out, err = run(capsys, "-q", "lint", str(CUBLAS_CHEAT))
    assert code == 1 and out == "" and err == ""
    code, out, err = run(capsys, "-q", "rules", "list")   # its count line goes to stderr without -q
    assert code == 0 and out == "" and err == ""


def test_quiet_still_prints_the_document_asked_for_and_errors(capsys):
    code, out, _ = run(capsys, "-q", "rules", "show", "mem.coalesce.global-loads", "--json")
    assert code == 0 and json.loads(out)["rule"]["id"] == "mem.coalesce.global-loads"
    code, out, err = run(capsys, "-q", "advise", "--report", "missing.ncu-rep")
    assert code == 2 and out == "" and err.startswith("error: missing.ncu-rep")


def test_verbose_prints_debug_lines_on_stderr(capsys, no_config_file):
    (no_config_file / "skillbase.toml").write_text('model = "gpt-test"\n')
    code, out, err = run(capsys, "-v", "config")
    assert code == 0 and "gpt-test" in out
    assert f"debug: skillbase.config: configuration file {no_config_file / 'skillbase.toml'}" in err
    (no_config_file / "skillbase.toml").write_text("[advise]\ntop = 2\n")
    code, _, err = run(capsys, "-v", "advise", "--report", str(REPORT), "--json")
    assert code == 0 and "`skillbase advise --top` defaults to 2" in err
    assert "debug: skillbase.cli: skillbase " in err and "command advise" in err
    code, _, err = run(capsys, "-q", "-v", "config")
    assert code == 2 and "not both" in err


# ---- the configuration file ----------------------------------------------------------------------

def test_the_file_is_found_upward_and_pyproject_only_with_its_table(no_config_file):
    deep = no_config_file / "a" / "b"
    deep.mkdir(parents=True)
    (no_config_file / "pyproject.toml").write_text('[tool.skillbase]\nstore = "runs"\n')
    (no_config_file / "a" / "pyproject.toml").write_text('[project]\nname = "other"\n')   # no table: skipped
    assert config.find_config_file(deep) == no_config_file / "pyproject.toml"
    (deep / "skillbase.toml").write_text('store = "here"\n')
    assert config.find_config_file(deep) == deep / "skillbase.toml"
    (no_config_file / "skillbase.toml").write_text('model = "m"\n')   # beats pyproject in the same folder
    assert config.find_config_file(no_config_file) == no_config_file / "skillbase.toml"


def test_precedence_is_variable_then_file_then_default(no_config_file, monkeypatch):
    assert config.env("SKILLBASE_MODEL") is None
    (no_config_file / "skillbase.toml").write_text('model = "from-file"\nrules-path = ["r1", "/abs/r2"]\n'
                                                   'store = "runs"\nllm-retries = 5\n')
    assert config.env("SKILLBASE_MODEL") == "from-file"
    assert config.env_paths("SKILLBASE_RULES_PATH") == [str(no_config_file / "r1"), "/abs/r2"]
    assert config.store_location() == no_config_file / "runs"            # relative to the file's folder
    assert config.store_location("explicit") == Path("explicit")       # an option wins
    monkeypatch.setenv("SKILLBASE_MODEL", "from-env")
    assert config.env("SKILLBASE_MODEL") == "from-env"
    shown = {s.key: s for s in config.effective_settings()}
    assert (shown["model"].source, shown["model"].where) == ("environment", "SKILLBASE_MODEL")
    assert (shown["llm-retries"].source, shown["llm-retries"].value) == ("file", "5")
    assert shown["cache"].source == "default"


def test_command_tables_are_option_defaults_below_the_flag(capsys, no_config_file):
    (no_config_file / "skillbase.toml").write_text("[advise]\ntop = 1\n")
    code, out, _ = run(capsys, "advise", "--report", str(REPORT), "--json")
    assert code == 0 and len(json.loads(out)["candidates"]) == 1
    code, out, _ = run(capsys, "advise", "--report", str(REPORT), "--json", "--top", "3")
    assert code == 0 and len(json.loads(out)["candidates"]) == 3
    code, out, _ = run(capsys, "config", "--json")
    assert {"key": "advise.top", "variable": None, "value": 1, "source": "file",
            "where": str(no_config_file / "skillbase.toml")} in json.loads(out)["settings"]


@pytest.mark.parametrize(("text", "message", "hint"), [
    ('stor = "x"\n', "`stor` is not a skillbase setting", "did you mean `store`?"),
    ("llm-retries = \"three\"\n", "`llm-retries` should be int", "e.g. llm-retries = 3"),
    ("[advice]\ntop = 1\n", "[advice]: `skillbase` has no command `advice`", "the commands are: advise"),
    ("[advise]\ntopp = 1\n", "`skillbase advise` has no option --topp", "its options: all"),
    ("[rules.tset]\nfailed = true\n", "`rules` has no command `tset`", "the commands are: "),
    ("store = \n", "not valid TOML", "fix the file"),
])
def test_a_bad_file_is_one_error_naming_it(capsys, no_config_file, text, message, hint):
    (no_config_file / "skillbase.toml").write_text(text)
    code, out, _ = run(capsys, "config", "--json")
    error = json.loads(out)["error"]
    assert code == 2 and error["message"].startswith(str(no_config_file / "skillbase.toml"))
    assert message in error["message"] and error["hint"].startswith(hint)


# ---- lint ----------------------------------------------------------------------------------------

def test_lint_text_reports_path_line_col_and_exits_1_on_errors(capsys):
    code, out, _ = run(capsys, "lint", str(CUBLAS_CHEAT))
    lines = out.splitlines()
    assert code == 1
    assert f"{CUBLAS_CHEAT}:10:5: error: library-cublas: " in out   # cublasSgemm( starts in column 5
    assert lines[-1] == "1 file(s) checked: 4 error(s), 0 warning(s)"
    code, out, _ = run(capsys, "lint", str(CLEAN_KERNEL))
    assert code == 0 and out.strip() == "1 file(s) checked: 0 error(s), 0 warning(s)"


def test_lint_github_annotations(capsys):
    code, out, _ = run(capsys, "lint", "--format", "github", str(CUBLAS_CHEAT))
    pattern = re.compile(r"^::(error|warning) file=[^,]+,line=\d+,col=\d+,title=skillbase [a-z0-9-]+::\S.*$")
    assert code == 1 and out.splitlines() and all(pattern.match(line) for line in out.splitlines())
    assert out.splitlines()[-1].startswith(f"::error file={CUBLAS_CHEAT.as_posix()},line=10,col=5,")


def test_lint_sarif_has_the_required_structure(capsys):
    code, out, _ = run(capsys, "lint", "--format", "sarif", str(CUBLAS_CHEAT), str(CLEAN_KERNEL))
    log = json.loads(out)
    assert code == 1 and log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    (sarif_run,) = log["runs"]
    rules = sarif_run["tool"]["driver"]["rules"]
    assert sarif_run["tool"]["driver"]["name"] == "skillbase"
    assert [r["id"] for r in rules] == ["host-static-state", "library-cublas"]
    assert len(sarif_run["results"]) == 4
    for result in sarif_run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"] and result["level"] == "error"
        assert result["message"]["text"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"] == CUBLAS_CHEAT.as_posix()
        assert location["region"]["startLine"] >= 1 and location["region"]["startColumn"] >= 1


def test_lint_reads_the_spec_beside_a_kernel_and_allow(capsys, tmp_path):
    kernel = tmp_path / "k.cu"
    kernel.write_text(CUBLAS_CHEAT.read_text())
    _, out, _ = run(capsys, "lint", "--format", "json", str(kernel), "--allow", "cublas")
    document = json.loads(out)
    assert [f["rule"] for f in document["files"][0]["findings"]] == ["host-static-state"]
    code, out, _ = run(capsys, "lint", "--format", "json", str(kernel), "--allow", "cublass")
    assert code == 2 and "did you mean 'cublas'" in json.loads(out)["error"]["hint"]


def test_lint_a_folder_and_a_missing_path(capsys, tmp_path):
    code, out, _ = run(capsys, "lint", "--format", "json", str(CUBLAS_CHEAT.parent))
    document = json.loads(out)
    assert code == 1 and len(document["files"]) == len(list(CUBLAS_CHEAT.parent.glob("*.cu")))
    code, _, err = run(capsys, "lint", str(tmp_path / "nope.cu"))
    assert code == 2 and "no such file or folder" in err


# ---- rules list / show ---------------------------------------------------------------------------

def test_rules_list_and_show(capsys):
    code, out, _ = run(capsys, "rules", "list", "--json")
    listed = json.loads(out)["rules"]
    assert code == 0 and len(listed) > 100
    assert {r["kind"] for r in listed} == {"derive", "propose", "constrain"}
    code, out, _ = run(capsys, "rules", "show", "mem.coalesce.global-loads", "--json")
    rule = json.loads(out)["rule"]
    assert rule["proposes"] == [{"skill": "mem.coalesce", "score": 0.9, "time_saved_fraction":
                                  "$min([coalesce_ld_speedup, memory_floor_headroom])"}]
    assert "bps_ld_global" in rule["reads"] and rule["when"].startswith("(bps_ld_global > 0")
    assert {c["expect"] for c in rule["cases"]} == {"fire", "quiet"}
    assert Path(rule["file"]).name == "mem.coalesce.global-loads.yaml"
    code, out, err = run(capsys, "rules", "show", "mem.coalesce.global-load")
    assert code == 2 and "did you mean `mem.coalesce.global-loads`?" in err
