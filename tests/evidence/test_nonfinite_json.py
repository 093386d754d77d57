"""NaN and Infinity in an evidence JSON (issue 22): Python's json reads them, JSON has not; a NaN metric
compares false with every threshold and would silently change the advice, so the file is refused."""

from __future__ import annotations

import json

import pytest
from profile_kit import plain_report

from skillbase.errors import InputError
from skillbase.evidence import load_evidence_json, load_ncu_report

REPORT = plain_report("naive_gemm")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_values_are_refused_with_a_hint(tmp_path, constant):
    document = json.loads(load_ncu_report(REPORT).to_json())
    name = next(iter(document["kernels"][0]["metrics"]))
    document["kernels"][0]["metrics"][name] = "PLACEHOLDER"
    path = tmp_path / "e.json"
    path.write_text(json.dumps(document).replace('"PLACEHOLDER"', constant))
    with pytest.raises(InputError, match=f"{constant.lstrip('-')} is not a JSON value") as caught:
        load_evidence_json(path)
    assert "null" in caught.value.hint


def test_deeply_nested_json_is_an_input_error(tmp_path):
    path = tmp_path / "e.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError):
        load_evidence_json(path)
