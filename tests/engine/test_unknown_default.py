"""A derived name may say what "unknown" means for it (`default:`); nothing else reads a missing value as one (H51).

`memory_floor_headroom` (the share of the call above the task's memory floor) reads 1, no bound, when the work
model is missing, so a rule can cap its estimate at it and still advise on a bare report. Only derived names may
declare a default: a missing metric, feature or fact stays missing, and a leaf that reads one stops its rule.
"""

from __future__ import annotations

import random
import textwrap

import pytest
from toy_rules import VOCABULARY, make_ruleset

from skillbase.engine import MISSING, Engine

HEADROOM = textwrap.dedent("""\
    floor_share:
      type: float
      unit: ratio
      source: {derived: "sm_pct > 0 ? dram_pct / sm_pct : 0"}
      meaning: A stand-in for the floor share, missing when either input is.
    headroom:
      type: float
      unit: ratio
      source: {derived: "1 - floor_share"}
      default: 1
      meaning: The share above the floor; 1 (no bound) when unknown.
    """)

CAPPED = """\
    id: r.capped
    kind: propose
    summary: s
    when: "stall_ls >= 0"
    proposes: [{skill: mem.coalesce, score: 0.5, speedup: "$min([0.3, headroom])"}]
    because: b
    """


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path_factory.mktemp("cache")))


def _problems(tmp_path, vocabulary: str) -> list[str]:
    from skillbase.engine.validate import validate

    root = make_ruleset(tmp_path / "rules", vocabulary=vocabulary)
    return [str(p) for p in validate([root], skill_ids={"mem.coalesce", "mem.vectorize", "mem.smem_tiling",
                                                          "mem.aaa_nospeedup"}).problems]


def _engine(tmp_path) -> Engine:
    root = make_ruleset(tmp_path / "rules", vocabulary=VOCABULARY + HEADROOM, rules={"propose/r.capped.yaml": CAPPED})
    return Engine.load([root], use_cache=False)


def test_a_derived_name_reads_its_default_only_while_unknown(tmp_path):
    engine = _engine(tmp_path)
    unknown = engine.vocabulary.view(None, engine.thresholds, overrides={"sm_pct": 50.0})
    assert unknown["floor_share"] is MISSING           # the name it reads stays missing: no default of its own
    assert unknown["headroom"] == 1.0 and unknown.defaulted == {"headroom"}
    rng = random.Random()
    dram, sm = rng.uniform(1, 60), rng.uniform(61, 100)
    known = engine.vocabulary.view(None, engine.thresholds, overrides={"sm_pct": sm, "dram_pct": dram})
    assert known["headroom"] == pytest.approx(1 - dram / sm) and not known.defaulted


def test_an_estimate_capped_at_the_headroom_is_unchanged_when_the_floor_is_unknown(tmp_path):
    engine = _engine(tmp_path)
    rule = engine.rule("r.capped")

    def decided(values):
        return engine.evaluate(None, overrides=values, rules=[rule]).decision("r.capped")

    bare = decided({"stall_ls": 0.5})
    assert bare.fired and bare.proposals[0]["time_saved_fraction"] == pytest.approx(0.3)
    assert bare.notes == ["`headroom` is unknown; the estimate reads its default 1.0"]
    near = decided({"stall_ls": 0.5, "dram_pct": 82.0, "sm_pct": 100.0})     # 82 % of the floor: 18 % left
    assert near.proposals[0]["time_saved_fraction"] == pytest.approx(0.18) and not near.notes
    far = decided({"stall_ls": 0.5, "dram_pct": 20.0, "sm_pct": 100.0})
    assert far.proposals[0]["time_saved_fraction"] == pytest.approx(0.3)


def test_a_leaf_reading_a_missing_name_without_a_default_still_stops_the_rule(tmp_path):
    engine = _engine(tmp_path)
    decision = engine.evaluate(None, overrides={"sm_pct": 50.0}, rules=[engine.rule("r.capped")]).decision("r.capped")
    assert decision.result is None and not decision.fired   # stall_ls is missing: neither true nor false


@pytest.mark.parametrize(("entry", "needle"), [
    ("type: float\n  unit: percent\n  source: {ncu: gpu__time_duration.sum}\n  default: 0",
     "(ncu) may not have a default: only derived names may"),
    ("type: float\n  unit: ratio\n  source: {derived: \"dram_pct / 100\"}\n  default: \"none\"",
     "default: expected a number"),
    ("type: int\n  unit: count\n  source: {derived: \"registers * 2\"}\n  default: 1.5", "expected an integer"),
    ("type: float\n  unit: ratio\n  source: {derived: \"dram_pct / 100\"}\n  default: -0.5",
     "is negative, but its unit is ratio"),
    ("type: float\n  unit: percent\n  source: {derived: \"dram_pct * 2\"}\n  default: 150", "is not a percentage"),
    ("type: bool\n  unit: none\n  source: {fact: occupancy_limited}\n  default: false",
     "(fact) may not have a default"),
    ("type: float\n  unit: ratio\n  source: {derived: \"dram_pct / 100\"}\n  default: .inf", "must be a finite"),
])
def test_rules_validate_refuses_a_default_of_the_wrong_kind_type_or_unit(tmp_path, entry, needle):
    vocabulary = VOCABULARY + "odd_default:\n  " + entry + "\n  meaning: m.\n"
    problems = _problems(tmp_path, vocabulary)
    found = [p for p in problems if "odd_default" in p]
    assert len(found) == 1 and needle in found[0], problems
    assert "vocabulary.yaml:" in found[0] and "\n" not in found[0]


def test_a_valid_default_validates_clean(tmp_path):
    assert not [p for p in _problems(tmp_path, VOCABULARY + HEADROOM) if "headroom" in p or "floor_share" in p]


def test_the_built_in_vocabulary_gives_a_default_to_the_floor_headroom_and_the_gather_fact_only():
    # A default is a statement of what unknown means; each one is a decision, listed here on purpose: no bound on
    # the floor headroom, and no gather known without the source (the mem.coalesce rules keep firing on counters).
    engine = Engine.load()
    entries = engine.vocabulary.entries
    defaults = {name: entry.default for name, entry in entries.items() if entry.default is not MISSING}
    assert defaults == {"memory_floor_headroom": 1.0, "src_gathers_only_uncoalesced": False}


def test_the_floor_headroom_is_the_time_above_the_floor_and_no_bound_outside_it():
    engine = Engine.load()

    def headroom(**values):
        return engine.vocabulary.view(None, engine.thresholds, overrides=values)["memory_floor_headroom"]

    share = random.Random().uniform(0.01, 0.99)
    assert headroom(memory_floor_share=share) == pytest.approx(1 - share)
    assert headroom() == 1.0                                  # no work model
    assert headroom(memory_floor_share=0.0) == 1.0            # no DRAM peak in the profile: no floor computed
    assert headroom(memory_floor_share=1.3) == 1.0            # measured below the floor: it does not describe the call
    assert headroom(memory_floor_share=1.0) == 0.0
