"""What a prompt's memory says of each earlier round (`loop.round_note`, `appliers.render_memory`): the verdict's
status and speedup, and for a free choice the change the candidate's comments describe.

    python -m pytest -q -p no:cacheprovider tests/run/test_round_note.py
"""

from __future__ import annotations

import random

from agents.appliers import render_memory
from skillbase.agents.coder import FREE_CHOICE
from skillbase.run.loop import NOTE_CHARS, round_note
from skillbase.run.types import LoopState, Outcome, Tried

START = """// spmm_csc (fp32 baseline): C = A B for a sparse M x M matrix A in CSC format.
// A straightforward first version for the skillbase bench.
#include <cuda_runtime.h>
__global__ void k() {}
"""


def verdict(status: str, speedup: float | None, source: str | None = "digest") -> dict:
    return {"status": status, "speedup": speedup, "source": source, "reason": "x"}


def test_the_note_says_what_the_round_measured():
    up, down = random.uniform(1.01, 3.0), random.uniform(0.1, 0.99)
    read = {"digest": START}.__getitem__
    assert round_note("mem.vectorize", verdict("accepted", up), START, read) == f"{up:.2f}x"
    assert round_note("mem.vectorize", verdict("slower", down), START, read) == f"slower {down:.2f}x"
    assert round_note("mem.vectorize", verdict("incorrect", None), START, read) == "incorrect"
    assert round_note("mem.vectorize", {}, START, read) == ""          # nothing judged (no candidate)


def test_a_free_choice_note_quotes_the_change_the_candidate_describes_not_its_reworded_title():
    change = f"Optimization: vectorized 128-bit atomics, {random.randrange(2, 9)} columns per thread"
    candidate = ("// spmm_csc (fp32): C = A B for a sparse M x M matrix A in CSC format.\n"   # the title, reworded
                 f"// {change}\n" + START.split("\n", 2)[2])
    read = {"digest": candidate}.__getitem__
    slower = random.uniform(0.5, 0.99)
    assert round_note(FREE_CHOICE, verdict("slower", slower), START, read) == f"slower {slower:.2f}x: {change}"
    assert round_note("atom.warp_aggregated", verdict("slower", slower), START, read) == f"slower {slower:.2f}x"
    long = "// " + "x" * (2 * NOTE_CHARS) + "\n" + START
    note = round_note(FREE_CHOICE, verdict("slower", slower), START, {"digest": long}.__getitem__)
    assert len(note.split(": ", 1)[1]) == NOTE_CHARS and note.endswith("…")
    assert round_note(FREE_CHOICE, verdict("slower", slower), START, {"digest": START}.__getitem__) == \
        f"slower {slower:.2f}x"                                          # no new comment: the figure alone


def test_a_missing_artifact_leaves_the_description_out_and_does_not_stop_the_run():
    from skillbase.errors import InputError

    def missing(digest):
        raise InputError(f"artifact {digest[:12]} is missing")

    slower = random.uniform(0.5, 0.99)
    assert round_note(FREE_CHOICE, verdict("slower", slower), START, missing) == f"slower {slower:.2f}x"


def test_the_memory_shows_each_round_with_its_note():
    state = LoopState(best_source=START, tried=[Tried("mem.vectorize", Outcome.ACCEPTED, "1.68x"),
                                                Tried(FREE_CHOICE, Outcome.REJECTED, "slower 0.99x: float4 atomics"),
                                                Tried("cmp.unroll", Outcome.REJECTED)])
    assert render_memory(state) == ("- mem.vectorize: accepted (1.68x)\n"
                                     "- free-choice: rejected (slower 0.99x: float4 atomics)\n"
                                     "- cmp.unroll: rejected")
