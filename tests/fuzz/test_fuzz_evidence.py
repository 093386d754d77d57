"""Fuzzed evidence: mutated evidence JSON documents evaluated by the built-in rules, and mutated
`.ncu-rep` bytes read by the report loader; each is advice or one InputError, in time."""

from __future__ import annotations

import copy
import functools
import json
import math

from fuzz_kit import examples, survive
from hypothesis import given
from hypothesis import strategies as st
from profile_kit import plain_report

from skillbase.evidence import load_evidence_json, load_ncu_report

REPORT = plain_report("naive_gemm")   # the bytes mutated here are the plain report's
WEIRD = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(), st.floats(-1e3, 1e3),
                  st.text(max_size=20),
                  st.sampled_from([10**400, -0.0, 1e308, "NaN", "inf", "", [], {}, [[[]]], {"a": {"b": None}}]))


@functools.cache
def document() -> dict:
    return json.loads(load_ncu_report(REPORT).to_json())


@functools.cache
def engine():
    from skillbase.engine import Engine

    return Engine.load()


def leaves(value, prefix=()):
    if isinstance(value, dict) and value:
        for key, child in value.items():
            yield from leaves(child, (*prefix, key))
    elif isinstance(value, list) and value:
        for index, child in enumerate(value):
            yield from leaves(child, (*prefix, index))
    yield prefix


@examples(150)
@given(data=st.data())
def test_mutated_evidence_is_advice_or_one_input_error(tmp_path_factory, data):
    evidence = copy.deepcopy(document())
    places = [p for p in leaves(evidence) if p]
    # mostly metric values (the schema lets them through, so the engine meets them), sometimes anything
    values = [p for p in places if len(p) == 4 and p[0] == "kernels" and p[2] == "metrics"]
    for _ in range(data.draw(st.integers(1, 6))):
        path = data.draw(st.sampled_from(values if data.draw(st.integers(0, 4)) else places))
        holder = evidence
        try:
            for step in path[:-1]:
                holder = holder[step]
            holder[path[-1]] = data.draw(WEIRD)
        except (KeyError, IndexError, TypeError):
            continue
    try:   # Python writes NaN/Infinity (not JSON): the loader must refuse them
        text = json.dumps(evidence, allow_nan=True)
    except (ValueError, OverflowError):
        return
    path = tmp_path_factory.mktemp("ev") / "e.json"
    path.write_text(text)
    loaded = survive("evidence json", lambda: load_evidence_json(path))
    if not isinstance(loaded, Exception):
        result = survive("evidence evaluate", lambda: engine().evaluate(loaded))
        if not isinstance(result, Exception):
            json.dumps(result.to_json(), allow_nan=False)   # what `advise --json` prints stays JSON
            assert all(math.isfinite(c.score) for c in result.candidates)


@examples(60)
@given(cuts=st.lists(st.tuples(st.integers(0, 2**31), st.binary(min_size=1, max_size=16)), max_size=6),
       truncate=st.one_of(st.none(), st.integers(0, 2**31)))
def test_mutated_ncu_reports_load_or_are_one_error(tmp_path_factory, cuts, truncate):
    data = bytearray(REPORT.read_bytes())
    for offset, chunk in cuts:
        offset %= len(data)
        data[offset: offset + len(chunk)] = chunk
    if truncate is not None:
        data = data[: truncate % (len(data) + 1)]
    path = tmp_path_factory.mktemp("rep") / "r.ncu-rep"
    path.write_bytes(bytes(data))
    survive("ncu-rep bytes", lambda: load_ncu_report(path))
