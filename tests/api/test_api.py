"""The Python API as a notebook uses it: `import skillbase` is cheap, `skillbase.advise(...)` and the
rest load on first use, each result has `to_json()`, and the external loop runs through `Run`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import gpu_available

import skillbase
from skillbase.errors import EnvironmentProblem, InputError

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "naive_sgemm"
REPORT, SOURCE = EXAMPLE / "naive_sgemm.h200.ncu-rep.xz", EXAMPLE / "naive_sgemm.cu"


def run_python(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout


def test_import_skillbase_loads_nothing_heavy():
    loaded = json.loads(run_python("import skillbase, sys, json; print(json.dumps(sorted(sys.modules)))"))
    heavy = [m for m in loaded if m.startswith(("skillbase.", "numpy", "rich", "click", "mcp", "jsonschema"))]
    assert heavy == []


def test_the_api_names_resolve_on_first_use_and_stay_functions():
    # `skillbase.advise` is also a module: importing it must not hide the function.
    out = run_python("import skillbase\nfrom skillbase.advise import Advice\nimport skillbase.api\n"
                     "print(callable(skillbase.advise), skillbase.advise is skillbase.api.advise, skillbase.Run)")
    assert out.split()[:2] == ["True", "True"] and "skillbase.api.Run" in out
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        skillbase.nonsense  # noqa: B018


def test_advise_from_a_saved_report_with_why_not():
    advice = skillbase.advise(report=REPORT, source=SOURCE)
    assert advice.evidence.focus_kernel == "sgemm_naive" and advice.result.candidates
    document = skillbase.api.advice_json(advice, top=2, why_not_skill="mem.vectorize")
    assert len(document["candidates"]) == 2
    assert document["candidates"][0]["skill"] == advice.result.candidates[0].skill
    assert document["why_not"] == skillbase.why_not(advice, "mem.vectorize")
    json.dumps(document)   # a JSON document as it stands


def test_make_evidence_from_a_report_or_a_source_alone():
    from_report = skillbase.make_evidence(REPORT)
    assert from_report.focus_kernel == "sgemm_naive" and from_report.focus().metrics
    if shutil.which("nvcc"):
        from_source = skillbase.make_evidence(source=SOURCE)   # static features and a compile-only ptxas
        assert from_source.focus_static() and from_source.focus_ptxas()
    with pytest.raises(InputError, match="give a report, a source, or both"):
        skillbase.make_evidence()
    with pytest.raises(InputError, match="missing.ncu-rep: no such file"):
        skillbase.make_evidence(EXAMPLE / "missing.ncu-rep")


def test_skills_and_rules():
    ids = [skill.id for skill in skillbase.skills_list()]
    assert "mem.smem_tiling" in ids and ids == sorted(ids)
    card = skillbase.skills_show("mem.smem_tiling")
    assert card.to_json()["id"] == "mem.smem_tiling" and "mem.smem_tiling" in card.text()
    with pytest.raises(InputError, match="unknown skill"):
        skillbase.skills_show("mem.smem_tilin")
    rule = skillbase.rules_explain("mem.smem_tiling.cache-reuse", report=REPORT).to_json()
    assert rule["decision"]["fired"] is True
    assert "l1_pct" in rule["reads"] and rule["cases"]
    l1 = rule["meanings"]["l1_pct"]      # a name the rule reads, with its vocabulary entry
    assert l1["unit"] == "percent" and l1["source"]["ncu"].startswith("l1tex__throughput") and l1["meaning"]
    with pytest.raises(InputError, match="did you mean"):
        skillbase.rules_explain("mem.smem_tiling.cache-reus")


@pytest.mark.skipif(gpu_available(), reason="a GPU is present: tests/api/test_api_gpu.py runs these")
def test_check_and_profile_need_a_gpu():
    with pytest.raises(EnvironmentProblem, match="GPU"):
        skillbase.check(SOURCE)
    with pytest.raises(EnvironmentProblem, match="ncu|GPU"):   # whichever the machine lacks first
        skillbase.profile(SOURCE)
    with pytest.raises(InputError, match="no such file"):
        skillbase.check(EXAMPLE / "missing.cu")


def test_the_external_loop_through_run(tmp_path):
    task = tmp_path / "sg"
    shutil.copytree(EXAMPLE, task)
    store = tmp_path / "store"
    run = skillbase.Run.start(task / "naive_sgemm.cu", agent="external", gpu=False, rounds=2, store=store,
                              saved_report=task / "naive_sgemm.h200.ncu-rep.xz", progress=lambda message: None)
    assert run.status == "paused"
    waiting = run.pending()
    assert waiting is not None and waiting.kind == "coder" and waiting.round == 0
    assert [p.run for p in skillbase.pending(store)] == [run.ref]
    submission = run.submit((task / "naive_sgemm.cu").read_text(), progress=lambda message: None)
    assert submission.to_json()["verdict"]["status"] == "unverified"   # compile-only: never accepted
    assert submission.next is not None and submission.next.round == 1
    assert [r["round"] for r in run.explain()["rounds"]] == [0, 1]
    markdown, html = run.report(tmp_path / "report")
    assert markdown.is_file() and html.is_file()
    with pytest.raises(InputError, match="empty"):
        run.submit("  \n")
    with pytest.raises(InputError, match="unknown agent"):
        skillbase.Run.start(task / "naive_sgemm.cu", agent="claude", gpu=False, store=store)


def _stored_settings(store: Path, run: skillbase.Run) -> dict:
    from skillbase.run.store import RunStore

    opened = RunStore.open(store, read_only=True)
    try:
        return opened.get_run(run.ref).manifest["settings"]
    finally:
        opened.close()


def test_run_start_records_stop_at_floor_and_refuses_a_share_outside_0_to_1(tmp_path):
    # the run's manifest settings are what its loop and `resume` decide with: the CLI's default when not given
    task = tmp_path / "sg"
    shutil.copytree(EXAMPLE, task)
    store = tmp_path / "store"
    quiet = dict(agent="external", gpu=False, rounds=1, store=store, saved_report=task / "naive_sgemm.h200.ncu-rep.xz",
                 progress=lambda message: None)
    run = skillbase.Run.start(task / "naive_sgemm.cu", stop_at_floor=0.5, **quiet)
    assert _stored_settings(store, run)["stop_at_floor"] == 0.5
    default = skillbase.Run.start(task / "naive_sgemm.cu", **quiet)
    assert _stored_settings(store, default)["stop_at_floor"] == 0.75
    for share in (1.5, -0.1):
        with pytest.raises(InputError, match="is not a share of the roofline floor"):
            skillbase.Run.start(task / "naive_sgemm.cu", stop_at_floor=share, **quiet)
    assert [p.run for p in skillbase.pending(store)] == [run.ref, default.ref]   # a refused share started no run
