"""No skill that moves the bytes it moves now can save more than the time above the task's floor (issues 15/16, H51).

The LLM run's round-1 evidence (results/nvidia-h200/optimize/llm-run-2026-12-02/README.md, "What round 1 of batch 3
teaches the engine"): `mem.register_prefetch.load-use` claimed 29 % on leaky_relu at 77 % of its memory floor under
ncu, `occ.launch_bounds_regs.register-limited` 37.5 % on rms_norm at 74 %. Each proposing rule says in a `# floor:`
comment whether its estimate is capped at `memory_floor_headroom`; a capped estimate is the uncapped one where the
floor is unknown and never more than the headroom where it is known.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from skillbase.engine import Engine
from skillbase.engine.expressions import Expression
from skillbase.evidence import Evidence

RULES = Path(__file__).resolve().parents[2] / "rules"
FIXTURES = sorted(path.name[: -len(".evidence.json")] for path in (RULES / "fixtures").glob("*.evidence.json"))
FLOOR_COMMENT = re.compile(r"^# floor: (capped at memory_floor_headroom|not capped): \S.*$", re.MULTILINE)


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine.load()


def _floor_decision(rule) -> str:
    found = FLOOR_COMMENT.findall(Path(rule.file).read_text())
    assert len(found) == 1, f"{rule.file}: one `# floor: capped at memory_floor_headroom|not capped: <why>` line"
    return found[0]


def _evidence(name: str, without_work_model: bool = False) -> Evidence:
    raw = json.loads((RULES / "fixtures" / f"{name}.evidence.json").read_text())
    if without_work_model:   # what `advise --report` without --preset sees
        raw["roofline"] = None
    return Evidence.from_json(json.dumps(raw))


def _estimates(engine: Engine, evidence: Evidence, **overrides) -> dict[tuple[str, str], float | None]:
    result = engine.evaluate(evidence, overrides=overrides or None)
    return {(d.rule, p["skill"]): p["time_saved_fraction"]
            for d in result.decisions if d.kind == "propose" and d.fired for p in d.proposals}


def test_every_proposing_rule_says_whether_the_floor_caps_it_and_the_estimate_agrees(engine):
    capped = 0
    for rule in engine.propose_rules:
        decision = _floor_decision(rule)
        reads = [isinstance(p.speedup, Expression) and "memory_floor_headroom" in p.speedup.symbols
                 for p in rule.proposes]
        if decision == "not capped":
            assert not any(reads), f"{rule.id} says it is not capped but reads memory_floor_headroom"
        else:
            assert all(reads), f"{rule.id} says it is capped but an estimate does not read memory_floor_headroom"
            capped += 1
    assert capped >= 100   # latency, occupancy, launch, register, divergence and instruction skills


@pytest.mark.parametrize(("fixture", "rule", "skill", "uncapped"), [
    ("llm_leaky_relu_prefetch_near_floor", "mem.register_prefetch.load-use", "mem.register_prefetch", 0.2884),
    ("llm_rms_norm_register_limited_near_floor", "occ.launch_bounds_regs.register-limited", "occ.launch_bounds_regs",
     0.375),
])
def test_the_run_s_over_claims_are_cut_to_the_time_above_the_floor(engine, fixture, rule, skill, uncapped):
    evidence = _evidence(fixture)
    share = engine.vocabulary.view(evidence, engine.thresholds)["memory_floor_share"]
    assert 0.7 < share < 0.8
    near = engine.evaluate(evidence)
    assert near.candidates[0].skill == skill   # still the first proposal: capped, not silenced
    assert near.candidates[0].time_saved_fraction == pytest.approx(1 - share)
    assert near.candidates[0].time_saved_fraction < uncapped
    bare = engine.evaluate(_evidence(fixture, without_work_model=True))   # no work model: no bound, as before
    assert bare.candidates[0].skill == skill
    assert bare.candidates[0].time_saved_fraction == pytest.approx(uncapped, abs=5e-4)
    assert "`memory_floor_headroom` is unknown; the estimate reads its default 1.0" in bare.decision(rule).notes


@pytest.mark.parametrize("fixture", FIXTURES)
def test_a_capped_estimate_is_the_uncapped_one_within_the_headroom(engine, fixture):
    # The uncapped estimate is the same expression with the headroom pinned to 1 (no bound). On every fixture
    # profile, with its own floor (or none) and random ones, each capped estimate is min(uncapped, headroom), and
    # an uncapped rule's estimate does not move with the floor.
    rng = random.Random()
    capped = {r.id for r in engine.propose_rules if _floor_decision(r) != "not capped"}
    evidence = _evidence(fixture)
    for share in [None, rng.uniform(0.05, 0.95), rng.uniform(0.7, 0.99)]:
        pinned = {} if share is None else {"memory_floor_share": share}
        estimates = _estimates(engine, evidence, **pinned)
        unbound = _estimates(engine, evidence, **pinned, memory_floor_headroom=1.0)
        assert estimates.keys() == unbound.keys()
        view = engine.vocabulary.view(evidence, engine.thresholds, overrides=pinned or None)
        headroom = view["memory_floor_headroom"]
        for key, value in estimates.items():
            if value is None or unbound[key] is None:
                assert value == unbound[key], key
            elif key[0] in capped:
                assert value == pytest.approx(min(unbound[key], headroom)), (key, share)
            else:
                assert value == pytest.approx(unbound[key]), (key, share)
