"""`skillbase advise`: ranked skills with their evidence, --json, --why-not, --all, --thresholds,
and one-line errors for every kind of bad input (CliRunner and `skillbase.cli.main`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from toy_rules import M, evidence, make_ruleset

from skillbase.errors import EnvironmentProblem, InputError

REPO = Path(__file__).resolve().parents[2]
PROFILES = REPO / "tests" / "fixtures" / "profiles"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def setup(tmp_path):
    root = make_ruleset(tmp_path / "rules")
    ev = tmp_path / "k.evidence.json"
    ev.write_text(json.dumps(evidence({M["dram"]: 90.0, M["sm"]: 20.0, M["ls"]: 8.0, M["cpi"]: 10.0})))
    return root, ev


def run(*args):
    from skillbase.cli import cli

    return CliRunner().invoke(cli, ["advise", *args])


def run_main(capsys, *args) -> tuple[int, str, str]:
    from skillbase.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["advise", *args])
        raise SystemExit(0)
    out = capsys.readouterr()
    return exit_info.value.code, out.out, out.err


def test_human_output_header_table_and_focus_rows(setup):
    root, ev = setup
    result = run("--evidence", str(ev), "--rules-dir", str(root))
    assert result.exit_code == 0, result.output
    out = result.output
    assert "focus k" in out and "the only kernel" in out
    assert "bottleneck MEMORY" in out and "hot=true" in out
    assert out.index("mem.coalesce") < out.index("mem.smem_tiling") < out.index("mem.vectorize")
    assert "100%" in out  # clamped speedup of the best mem.coalesce proposal
    assert "stall_ls_share" in out and "> 0.3 (threshold_stall_share)" in out
    assert "ncu-defaults.yaml" in out


def test_top_limits_candidates(setup):
    root, ev = setup
    data = json.loads(run("--evidence", str(ev), "--rules-dir", str(root), "--json", "--top", "2").output)
    assert [c["skill"] for c in data["candidates"]] == ["mem.coalesce", "mem.smem_tiling"]
    assert data["facts"] == {"bottleneck": "MEMORY", "hot": True}
    assert data["thresholds"]["digest"].startswith("sha256:")
    assert len(data["decisions"]) == 5 and data["candidates"][0]["focus"][0]["rule"] == "x.coalesce"


def test_why_not_lists_false_and_missing_leaves(tmp_path, setup):
    root, _ = setup
    ev = tmp_path / "cold.json"
    ev.write_text(json.dumps(evidence({M["dram"]: 5.0})))
    result = run("--evidence", str(ev), "--rules-dir", str(root), "--why-not", "mem.coalesce")
    assert result.exit_code == 0, result.output
    assert "why not mem.coalesce: not proposed" in result.output
    assert "when: dram_pct > 10 -> false" in result.output
    assert "when.all[0]: hot -> missing" in result.output
    data = json.loads(run("--evidence", str(ev), "--rules-dir", str(root), "--why-not", "mem.coalesce",
                          "--json").output)
    assert {r["rule"] for r in data["why_not"]["rules"]} == {"x.coalesce", "x.coalesce-weak"}


def test_why_not_unknown_skill_is_an_input_error(setup, capsys):
    root, ev = setup
    code, _, err = run_main(capsys, "--evidence", str(ev), "--rules-dir", str(root), "--why-not", "mem.coalese")
    assert code == 2 and "no rule proposes `mem.coalese`" in err and "did you mean `mem.coalesce`" in err


def test_all_shows_every_rule_with_failed_predicates(tmp_path, setup):
    root, _ = setup
    ev = tmp_path / "cold.json"
    ev.write_text(json.dumps(evidence({M["dram"]: 5.0, M["sm"]: 1.0})))
    out = run("--evidence", str(ev), "--rules-dir", str(root), "--all").output
    assert "no skill proposed" in out
    for rule in ("a.hot", "bottleneck.memory", "x.coalesce", "x.coalesce-weak", "x.tile"):
        assert rule in out
    assert "when.all[0]: sol_max >= threshold_sol_high -> false" in out


def test_thresholds_option(setup, tmp_path):
    root, ev = setup
    strict = tmp_path / "strict.yaml"
    strict.write_text('sol_high: {value: 99, provenance: test}\nstall_share: {value: 0.3, provenance: test}\n')
    data = json.loads(run("--evidence", str(ev), "--rules-dir", str(root), "--json", "--thresholds",
                          str(strict)).output)
    assert data["facts"] == {} and data["thresholds"]["path"] == str(strict)


@pytest.mark.parametrize("args, message", [
    (["--evidence", "/nonexistent/e.json"], "no such evidence file"),
    (["--report", "/nonexistent/r.ncu-rep"], "no such report"),
    ([], "give exactly one of"),
    (["--thresholds", "/nonexistent/t.yaml"], "thresholds file not found"),
])
def test_bad_input_is_one_line(setup, capsys, args, message):
    root, ev = setup
    if args and args[0] == "--thresholds":
        args = ["--evidence", str(ev), *args]
    result = run(*args, "--rules-dir", str(root))
    assert isinstance(result.exception, InputError) and message in result.exception.message
    code, out, err = run_main(capsys, *args, "--rules-dir", str(root))
    assert code == 2 and err.startswith("error: ") and message in err and "Traceback" not in err


def test_corrupt_evidence_and_report(tmp_path, setup, capsys):
    root, _ = setup
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = run_main(capsys, "--evidence", str(bad), "--rules-dir", str(root))
    assert code == 2 and err.startswith("error: ") and "Traceback" not in err
    report = tmp_path / "broken.ncu-rep"
    report.write_bytes(b"\x00\x01 definitely not a report")
    code, _, err = run_main(capsys, "--report", str(report), "--rules-dir", str(root))
    assert code in (2, 3) and err.startswith("error: ") and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2


def test_rule_set_with_a_yaml_error(setup, capsys):
    root, ev = setup
    (root / "propose" / "x.tile.yaml").write_text("id: x.tile\n  kind: propose\n")
    code, _, err = run_main(capsys, "--evidence", str(ev), "--rules-dir", str(root))
    assert code == 2 and "x.tile.yaml:2:" in err and "rules validate" in err


def test_kernel_source_without_gpu_is_an_environment_problem(tmp_path, capsys, monkeypatch):
    import shutil

    if shutil.which("nvidia-smi"):
        pytest.skip("a GPU machine would really profile")
    cu = tmp_path / "k.cu"
    cu.write_text("__global__ void k(float* x) { x[threadIdx.x] = 0; }\n")
    result = run(str(cu))
    assert isinstance(result.exception, EnvironmentProblem)
    code, _, err = run_main(capsys, str(cu))
    assert code == 3 and err.startswith("error: ") and "--report" in err and len(err.strip().splitlines()) == 2


def test_unknown_kernel_lists_kernels(setup, capsys):
    root, ev = setup
    code, _, err = run_main(capsys, "--evidence", str(ev), "--rules-dir", str(root), "--kernel", "nope")
    assert code == 2 and "no kernel matches `nope`" in err and "kernels present: k" in err


def test_real_report_with_builtin_rules():
    report = PROFILES / "naive_gemm" / "report.ncu-rep.xz"
    if not report.is_file():
        pytest.skip("profiler fixture not present")
    result = run("--report", str(report), "--json")
    assert result.exit_code == 0, result.exception or result.output
    data = json.loads(result.output)
    assert data["focus_kernel"] == "sgemm_naive"
    assert data["facts"].get("bottleneck") and data["candidates"]
