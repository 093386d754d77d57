"""The advice dev set's split (tools/measure/advice/devset.yaml): drawn once over the first 20 progressions and
never changed; progressions added later carry `split: tune` and join the tune half only."""

from __future__ import annotations

import copy
import math
import random
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "measure" / "advice"))
import devset  # noqa: E402

# The halves as drawn (seed 20261201) and reported on 2026-12-02 (README.md beside devset.yaml,
# results/nvidia-h200/advice-eval*.md). The test half's figures are comparable only while these stay as they are.
DRAWN_TUNE = ["softmax-llmc", "encoder-llmc", "layernorm-llmc", "transpose-nvblog", "histogram-psmarter",
              "trimat-llmc", "nbody-harrism", "stencil-psmarter", "sgemm-siboehm", "reduce-liuxiandong"]
DRAWN_TEST = ["layernorm-backward-llmc", "hgemm-wmma-brucelee", "fused-residual-llmc", "sgemm-leimao", "hgemm-leimao",
              "elementwise-liuxiandong", "spmv-psmarter", "conv2d-psmarter", "reduce-cudasamples", "hgemm-mma-brucelee"]
TEST_STEPS = 37


def _progressions() -> list[dict]:
    return devset.load()["progressions"]


def test_the_drawn_halves_are_the_seeded_shuffle_of_the_first_twenty():
    data = devset.load()
    drawn = [p["id"] for p in data["progressions"] if "split" not in p]
    assert len(drawn) == 20
    assert all("split" not in p for p in data["progressions"][:20]), "the drawn progressions come first"
    shuffled = list(drawn)
    random.Random(data["split"]["seed"]).shuffle(shuffled)
    cut = math.ceil(len(shuffled) / 2)
    assert data["split"]["seed"] == 20261201
    assert devset.drawn_split() == {"tune": shuffled[:cut], "test": shuffled[cut:]}


def test_the_test_half_is_exactly_as_drawn():
    halves = devset.split()
    assert halves["test"] == DRAWN_TEST
    assert halves["tune"][: len(DRAWN_TUNE)] == DRAWN_TUNE
    test_steps = devset.steps("test")
    assert len(test_steps) == TEST_STEPS and {s.prog for s in test_steps} == set(DRAWN_TEST)


def test_added_progressions_join_the_tune_half_only():
    added = [p for p in _progressions() if "split" in p]
    assert len(added) >= 8
    assert {p["split"] for p in added} == {"tune"}
    tune = devset.split()["tune"]
    assert tune == DRAWN_TUNE + [p["id"] for p in added]
    added_ids = {p["id"] for p in added}
    added_steps = [s for s in devset.steps() if s.prog in added_ids]
    assert added_steps and {s.half for s in added_steps} == {"tune"}


def test_every_progression_is_in_exactly_one_half():
    halves = devset.split()
    ids = [p["id"] for p in _progressions()]
    assert len(ids) == len(set(ids))
    assert not set(halves["tune"]) & set(halves["test"])
    assert sorted(halves["tune"] + halves["test"]) == sorted(ids)


def _with(change) -> dict:
    data = copy.deepcopy(devset.load())
    change(data)
    return data


def _added(data: dict) -> dict:
    return next(p for p in data["progressions"] if "split" in p)


def _drawn(data: dict, prog: str) -> dict:
    return next(p for p in data["progressions"] if p["id"] == prog)


@pytest.mark.parametrize("change, message", [
    (lambda d: _added(d).update(split="test"), "join the tune half only"),
    (lambda d: _drawn(d, "spmv-psmarter").update(split="tune"), "was drawn into a half"),
    (lambda d: _added(d).pop("split"), "is in neither half"),
])
def test_a_split_that_would_move_or_grow_the_test_half_is_refused(change, message):
    with pytest.raises(ValueError, match=message):
        devset.split(_with(change))


def test_labels_are_canonical_skill_ids_and_texts_are_our_own():
    skills = {p.name for p in (REPO / "skills").glob("*/*") if p.is_dir()}
    for prog in _progressions():
        for step in prog["steps"][:-1]:
            where = f"{prog['id']}/{step['version']}"
            assert {step["next_label"], *(step.get("also") or ())} <= skills, where
            assert step["evidence"] and step["why"], where
            assert len(step["why"].split()) <= 20, where
            quotes = re.findall(r"'([^']+)'", step["evidence"]) + re.findall(r"'([^']+)'", step["why"])
            assert all(len(q.split()) <= 8 for q in quotes), where
        assert "next_label" not in prog["steps"][-1], f"{prog['id']}: the last version has no next step"
