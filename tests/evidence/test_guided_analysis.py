"""Nsight Compute's own guided analysis, read from real H200 reports into the evidence and shown by
`advise` beside skillbase's advice (issue 19: users trust ncu's findings; comparing both is the
quickest way to see what skillbase adds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from profile_kit import plain_report, report

from skillbase.commands.advise import advise
from skillbase.evidence import load_ncu_csv, load_ncu_report
from skillbase.evidence.aggregate import plain_message
from skillbase.evidence.model import Evidence, rule_summary

PROFILES = Path(__file__).resolve().parents[1] / "fixtures" / "profiles"
UNCOALESCED = PROFILES / "uncoalesced_access"
pytestmark = pytest.mark.skipif(not report("uncoalesced_access").is_file(), reason="no profiler fixtures")


def test_plain_message_reads_ncus_links_as_its_csv_export_does():
    raw = ("Start by analyzing DRAM in the @section:MemoryWorkloadAnalysis:Memory Workload Analysis@ section. "
           "See the @url:CUDA Best Practices Guide:https://docs.nvidia.com/cuda/x.html#occupancy@ for  more.")
    assert plain_message(raw) == ("Start by analyzing DRAM in the Memory Workload Analysis section. See the "
                                  "CUDA Best Practices Guide (https://docs.nvidia.com/cuda/x.html#occupancy) for more.")
    assert plain_message("") is None and plain_message(None) is None


def test_a_report_keeps_what_ncu_said_with_its_focus_metrics():
    evidence = load_ncu_report(plain_report("uncoalesced_access"))
    rules = evidence.focus().ncu_rules
    uncoalesced = next(r for r in rules if r["rule"] == "UncoalescedGlobalAccess")
    assert uncoalesced["name"] == "Uncoalesced Global Accesses" and uncoalesced["type"] == "OPT"
    assert "14680064 excessive sectors (78% of the total 18874368 sectors)" in uncoalesced["message"]
    assert "@" not in uncoalesced["message"] and "CUDA Programming Guide" in uncoalesced["message"]
    assert uncoalesced["focus_metrics"] == [{"metric": "derived__memory_l2_theoretical_sectors_global_excessive",
                                             "value": 14680064.0, "severity": "default",
                                             "info": "Reduce the number of excessive wavefronts in L2"}]
    access = next(r for r in rules if r["rule"] == "MemoryCacheAccessPattern")
    assert {m["severity"] for m in access["focus_metrics"]} == {"default", "low", "high"}
    again = Evidence.from_json(evidence.to_json())             # the schema accepts every new field
    assert again.focus().ncu_rules == rules


def test_guided_analysis_ranks_findings_before_information():
    guided = load_ncu_report(plain_report("uncoalesced_access")).guided_analysis()
    kinds = [g["type"] for g in guided]
    assert kinds == sorted(kinds, key=["ERR", "WRN", "OPT", "INF"].index) and kinds[-1] == "INF" and "OPT" in kinds
    hints = [g["speedup_pct"] for g in guided if g["type"] == "OPT"]
    assert hints == sorted(hints, reverse=True) and hints[0] > 90
    summaries = [g["summary"] for g in guided]
    assert "Memory Cache Access Pattern: L2 Global Load Access Pattern" in summaries   # a title when ncu gave one
    # no title: the message's first sentence, which must not be cut at "80.0%" or "13.2 cycles"
    assert ("Issue Slot Utilization: Every scheduler is capable of issuing one instruction per cycle, but for this "
            "workload each scheduler only issues an instruction every 13.2 cycles") in summaries


def test_the_csv_export_carries_the_same_messages():
    report = load_ncu_report(plain_report("uncoalesced_access")).focus().ncu_rules
    csv = load_ncu_csv(UNCOALESCED / "raw.csv", details=UNCOALESCED / "details.csv").focus().ncu_rules
    said = {(r["rule"], r["message"]) for r in csv if r["message"]}
    assert said and said <= {(r["rule"], r["message"]) for r in report}


def test_rule_summary_without_message_or_title_is_the_name():
    assert rule_summary({"rule": "SOLFPRoofline", "name": "Roofline Analysis", "title": "Roofline Analysis"}) == \
        "Roofline Analysis"
    assert rule_summary({"rule": "X", "type": "OPT"}) == "X"


def test_advise_shows_ncus_findings_beside_its_own():
    runner = CliRunner()
    text = runner.invoke(advise, ["--report", str(report("uncoalesced_access")), "--top", "3"])
    assert text.exit_code == 0, text.output
    section = text.output[text.output.index("Nsight Compute's guided analysis says"):]
    lines = section.splitlines()
    assert lines[1].startswith("  OPT High Pipe Utilization: Low Utilization") and "(est. 95% local)" in lines[1]
    assert "4 more" in section                                # 7 OPT findings, 3 shown; INF never listed
    data = json.loads(runner.invoke(advise, ["--report", str(report("uncoalesced_access")), "--json"]).output)
    assert [g["rule"] for g in data["ncu_guided_analysis"]][:2] == ["HighPipeUtilization", "MemoryCacheAccessPattern"]
    assert all(g["message"] for g in data["ncu_guided_analysis"])
