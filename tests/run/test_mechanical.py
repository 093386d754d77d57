"""Mechanical application: tunable annotations, sweeps and their errors."""

from __future__ import annotations

import pytest

from skillbase.errors import InputError
from skillbase.run.mechanical import apply_values, changed, find_tunables, sweep_grid

SOURCE = """#include <cuda_runtime.h>
// skillbase: tunable BLOCK_X in {8, 16, 32}
#define BLOCK_X 16  // threads along x
// skillbase: tunable UNROLL in {1, 4}
constexpr int UNROLL = 1;
#define OTHER 7
__global__ void k() {}
"""


def test_find_tunables():
    tunables = find_tunables(SOURCE)
    assert [(t.name, t.values, t.current, t.line) for t in tunables] == [
        ("BLOCK_X", ("8", "16", "32"), "16", 3), ("UNROLL", ("1", "4"), "1", 5)]


def test_apply_values_changes_only_the_named_lines():
    out = apply_values(SOURCE, {"BLOCK_X": "32", "UNROLL": "4"})
    assert "#define BLOCK_X 32  // threads along x" in out
    assert "constexpr int UNROLL = 4;" in out
    assert out.replace("32  //", "16  //").replace("UNROLL = 4", "UNROLL = 1") == SOURCE


def test_sweep_is_bounded_deterministic_and_excludes_the_current_setting():
    tunables = find_tunables(SOURCE)
    grid = sweep_grid(tunables)
    assert grid[0] == {"BLOCK_X": "8", "UNROLL": "1"}
    assert {"BLOCK_X": "16", "UNROLL": "1"} not in grid
    assert len(grid) == 5 and len({tuple(sorted(s.items())) for s in grid}) == 5
    assert sweep_grid(tunables, limit=2) == grid[:2]
    assert changed(grid[-1], tunables) == {"BLOCK_X": "32", "UNROLL": "4"}


@pytest.mark.parametrize("source,message", [
    ("// skillbase: tunable B in {}\n#define B 1\n", "lists no values"),
    ("// skillbase: tunable B in {1, 2}\nint x;\n", "must define B"),
    ("// skillbase: tunable B in {1, 2}\n#define C 1\n", "must define B"),
])
def test_bad_annotations(source, message):
    with pytest.raises(InputError, match=message):
        find_tunables(source, "k.cu")


def test_unknown_tunable():
    with pytest.raises(InputError, match="not an annotated tunable"):
        apply_values(SOURCE, {"OTHER": "8"})
