"""The round's decision with a coder: the engine's proposals first, then, when every one is tried or
cannot be applied, the coder's free choice, so that a profiled run stops at its --rounds budget and not
because the rules ran out of names (the first LLM bench run stopped row_tanh after one round with half
its roofline left). Without a profile (compile-only) or without a coder (--agent none) nothing is added."""

from __future__ import annotations

from pathlib import Path

import pytest
from profile_kit import plain_report

from skillbase.agents.coder import FREE_CHOICE
from skillbase.corpus.load import load_corpus
from skillbase.engine import Engine
from skillbase.evidence import build_evidence, load_ncu_report
from skillbase.run.loop import choose
from skillbase.run.mechanical import MechanicalApplier
from skillbase.run.session import make_decide
from skillbase.run.types import LoopState, Outcome, Tried, tabu_key

PROFILES = Path(__file__).resolve().parents[1] / "fixtures" / "profiles"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vector_add" / "vector_add.cu"
KERNELS = ("streaming_copy", "naive_gemm", "tiny_grid")
pytestmark = pytest.mark.skipif(not all((PROFILES / k / "report.ncu-rep.xz").is_file() for k in KERNELS),
                                reason="no profiler fixtures")


@pytest.fixture(scope="module")
def parts():
    return Engine.load(), load_corpus()


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("agent", ["external", "openai"])
def test_a_coder_gets_its_free_choice_once_the_engines_proposals_are_tabu(parts, kernel, agent):
    engine, corpus = parts
    evidence = load_ncu_report(plain_report(kernel))
    state = LoopState(best_source="// the kernel\n")
    candidates, _ = make_decide(agent, engine, corpus, mechanical=None)(evidence, state)
    proposed = [c for c in candidates if c.skill != FREE_CHOICE]
    assert proposed, f"the engine proposes nothing for {kernel}"
    assert candidates[-1].skill == FREE_CHOICE and candidates[-1].score == 0.0
    assert "no further proposal" in candidates[-1].because
    assert choose(candidates, [], "k0").skill == proposed[0].skill           # the engine's first, as before
    every_proposal_tabu = [tabu_key(c.skill, c.params, "k0") for c in proposed]
    assert choose(candidates, every_proposal_tabu, "k0").skill == FREE_CHOICE
    # On another kernel (an accepted round changed it) the engine's proposals are open again.
    assert choose(candidates, every_proposal_tabu, "k1").skill == proposed[0].skill


def test_a_rejected_free_choice_does_not_close_the_next_rounds(parts):
    engine, corpus = parts
    evidence = load_ncu_report(plain_report("streaming_copy"))
    decide = make_decide("external", engine, corpus, mechanical=None)
    first, _ = decide(evidence, LoopState(best_source="k"))
    tried = [Tried(skill=FREE_CHOICE, status=Outcome.REJECTED)]
    second, _ = decide(evidence, LoopState(best_source="k", tried=tried))
    tabu = [tabu_key(c.skill, c.params, "k0") for c in first]                  # everything of round 0
    assert choose(second, tabu, "k0").skill == FREE_CHOICE


def test_no_free_choice_without_a_profile_or_without_a_coder(parts):
    engine, corpus = parts
    unprofiled = build_evidence(source=EXAMPLE)        # compile-only: the source's features, no profile
    assert unprofiled.focus() is None
    candidates, _ = make_decide("external", engine, corpus, mechanical=None)(unprofiled, LoopState(best_source="k"))
    assert FREE_CHOICE not in [c.skill for c in candidates]
    profiled = load_ncu_report(plain_report("naive_gemm"))
    source = "__global__ void k(float* x) { x[0] = 1.f; }\n"
    mechanical = MechanicalApplier(lambda skill: corpus.get(skill).mechanical if corpus.get(skill) else None)
    candidates, _ = make_decide("none", engine, corpus, mechanical)(profiled, LoopState(best_source=source))
    assert FREE_CHOICE not in [c.skill for c in candidates]
