"""Evidence model: schema round-trip, validation errors, focus selection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillbase.config import schemas_dir
from skillbase.errors import InputError
from skillbase.evidence.model import Evidence, KernelRecord, focus_static_kernel

RULE_FIXTURES = Path(__file__).resolve().parents[2] / "rules" / "fixtures"


def make(durations: dict[str, float]) -> Evidence:
    return Evidence(kernels=[KernelRecord(name=n, duration_ns=d, metrics={"gpu__time_duration.sum": d},
                                          demangled=f"{n}(float *, int)") for n, d in durations.items()])


def test_schema_is_2020_12_with_id():
    schema = json.loads((schemas_dir() / "evidence.schema.json").read_text())
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


def static_of(*kernels: str, launched: tuple[str, ...] = ()) -> dict:
    return {"kernels": {k: {"line": i + 1} for i, k in enumerate(kernels)},
            "launchers": {"launch": {"launches": [{"kernel": k} for k in launched]}}}


def test_without_a_profile_the_source_decides_the_focus():
    assert focus_static_kernel(static_of("only")) == ("only", "the only kernel in the source (no profile)")
    name, reason = focus_static_kernel(static_of("a", "b", launched=("b",)))
    assert name == "b" and reason.startswith("first kernel its launcher starts, 1 of 2")
    assert focus_static_kernel(static_of("a", "b"))[0] == "a"
    assert focus_static_kernel(static_of("rows_kernel", "cols_kernel"), "cols")[0] == "cols_kernel"
    assert focus_static_kernel(static_of("rows_kernel", "cols_kernel"), "^r")[0] == "rows_kernel"
    with pytest.raises(InputError, match="kernels in the source: a, b"):
        focus_static_kernel(static_of("a", "b"), "zzz")


def test_select_kernel_is_the_one_focus_rule_with_or_without_a_profile():
    ev = Evidence(static=static_of("a", "b", launched=("b",)))
    assert ev.select_kernel() is None and ev.focus_kernel == "b" and "no profile" in ev.focus_reason
    ev.select_kernel("a")
    assert ev.focus_kernel == "a" and "static analysis only" in ev.focus_reason
    with pytest.raises(InputError, match="no profiled kernel"):
        Evidence().select_kernel("a")


def test_focus_blocks_resolve_by_name_or_base_name_never_another_kernel():
    ev = make({"hot": 970.0, "cold": 30.0})
    ev.select_kernel()
    ev.static = static_of("hot", "cold")
    ev.ptxas = {"hot": {"registers": 40}, "cold": {"registers": 8}}
    assert ev.focus_static() == {"line": 1} and ev.focus_ptxas() == {"registers": 40}
    ev.focus_kernel = "void hot<128>(float *, int)"
    assert ev.focus_ptxas() == {"registers": 40}
    ev.ptxas = {"other": {"registers": 3}}
    assert ev.focus_ptxas() is None               # issue 15: another kernel's block describes nothing
    ev.focus_kernel = None
    assert ev.focus_ptxas() == {"registers": 3}   # no focus named: the only block
    ev.ptxas = None
    assert ev.focus_ptxas() is None


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
