"""Evidence model: schema round-trip, validation errors, focus selection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillbase.errors import InputError
from skillbase.evidence.model import SCHEMA_FILE, Evidence, KernelRecord

RULE_FIXTURES = Path(__file__).resolve().parents[2] / "rules" / "fixtures"


def make(durations: dict[str, float]) -> Evidence:
    return Evidence(kernels=[KernelRecord(name=n, duration_ns=d, metrics={"gpu__time_duration.sum": d},
                                          demangled=f"{n}(float *, int)") for n, d in durations.items()])


def test_schema_is_2020_12_with_id():
    schema = json.loads(SCHEMA_FILE.read_text())
    assert schema["$schema"].endswith("2020-12/schema")
    assert schema["$id"].endswith("evidence.schema.json")


def test_round_trip_preserves_everything():
    ev = make({"hot": 970.0, "cold": 30.0})
    ev.select_kernel()
    ev.static = {"file": {"path": "k.cu", "parse_errors": []}, "kernels": {"hot": {"line": 3, "params": []}}}
    ev.ptxas = {"hot": {"registers": 40, "shared_bytes": 0, "arch": "sm_90"}}
    ev.roofline = {"dram_bytes": 1e6, "fp32_flops": 2e6}
    ev.notes.append("a note")
    text = ev.to_json()
    back = Evidence.from_json(text)
    assert back.to_dict() == ev.to_dict()
    assert back.focus().name == "hot"


def test_dominant_kernel_and_reason():
    ev = make({"a": 10.0, "b": 970.0, "c": 20.0})
    chosen = ev.select_kernel()
    assert chosen.name == "b" and ev.focus_kernel == "b"
    assert ev.focus_reason == "97% of GPU time (1 of 3 kernels)"
    assert abs(sum(k.time_share for k in ev.kernels) - 1.0) < 1e-9


def test_single_kernel_reason():
    ev = make({"only": 5.0})
    ev.select_kernel()
    assert "only kernel" in ev.focus_reason and "100%" in ev.focus_reason


def test_select_by_substring_regex_and_demangled():
    ev = make({"reduce_interleaved": 900.0, "reduce_final": 100.0, "copy": 5.0})
    assert ev.select_kernel("final").name == "reduce_final"
    assert "selected by --kernel" in ev.focus_reason
    assert ev.select_kernel("^cop").name == "copy"
    assert ev.select_kernel("reduce_final(float *, int)").name == "reduce_final"
    # several matches: the dominant among them
    assert ev.select_kernel("reduce").name == "reduce_interleaved"
    assert "dominant of 2 matches" in ev.focus_reason


def test_unknown_kernel_lists_kernels_present():
    ev = make({"alpha": 1.0, "beta": 2.0})
    with pytest.raises(InputError) as err:
        ev.select_kernel("gamma")
    assert "beta, alpha" in err.value.message and "\n" not in err.value.message


def test_minority_share_never_rounds_to_100_or_0():
    ev = make({"big": 999.0, "tiny": 0.01})
    ev.select_kernel("tiny")
    assert "0.00%" in ev.focus_reason or "0.0" in ev.focus_reason
    ev.select_kernel("big")
    assert "100%" not in ev.focus_reason


@pytest.mark.parametrize("text, fragment", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "JSON object"),
    ('{"schema_version": 2, "producer": {"tool": "x", "source_kind": "manual"}, "device": {}, "kernels": []}',
     "schema_version"),
    ('{"schema_version": 1, "producer": {"tool": "x", "source_kind": "manual"}, "device": {}, '
     '"kernels": [{"name": "k", "launches": 1, "metrics": {"m": "fast"}}]}', "kernels/0/metrics/m"),
    ('{"schema_version": 1, "producer": {"tool": "x", "source_kind": "manual"}, "device": {}, "kernels": [], '
     '"surprise": 1}', "surprise"),
])
def test_invalid_documents_are_one_line_input_errors(text, fragment):
    with pytest.raises(InputError) as err:
        Evidence.from_json(text, where="x.json")
    assert fragment in err.value.message and "\n" not in err.value.message


def test_to_json_refuses_invalid_content():
    ev = make({"k": 1.0})
    ev.kernels[0].metrics["bad"] = "text"  # type: ignore[assignment]
    with pytest.raises(InputError):
        ev.to_json()


@pytest.mark.skipif(not RULE_FIXTURES.is_dir(), reason="no rules/fixtures in this checkout")
def test_rule_fixtures_are_valid_evidence():
    files = sorted(RULE_FIXTURES.glob("*.evidence.json"))
    assert files
    for path in files:
        ev = Evidence.from_json(path.read_text(), where=str(path))
        assert ev.focus() is not None, path
