"""A small rule set written for the engine tests (vocabulary, thresholds, rules, cases), so that
they do not depend on the built-in rules' contents; `make_ruleset` writes it into a folder."""

from __future__ import annotations

import textwrap
from pathlib import Path

VOCABULARY = """\
dram_pct:
  type: float
  unit: percent
  source: {ncu: gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed}
  meaning: DRAM throughput share of peak.
sm_pct:
  type: float
  unit: percent
  source: {ncu: sm__throughput.avg.pct_of_peak_sustained_elapsed}
  meaning: SM throughput share of peak.
stall_ls:
  type: float
  unit: ratio
  source: {ncu: smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio}
  meaning: Long-scoreboard stall cycles per issue.
cpi:
  type: float
  unit: cycles
  source: {ncu: smsp__average_warp_latency_per_inst_issued.ratio}
  meaning: Cycles per issued instruction.
stall_ls_share:
  type: float
  unit: ratio
  source: {derived: "cpi > 0 ? stall_ls / cpi : 0"}
  meaning: Share of CPI spent on long-scoreboard stalls.
sol_max:
  type: float
  unit: percent
  source: {derived: "$max([dram_pct, sm_pct])"}
  meaning: The busier of compute and memory.
registers:
  type: int
  unit: count
  source: {ptxas: registers}
  meaning: Registers per thread.
block_x:
  type: int
  unit: count
  source: {launch: block.0}
  meaning: Threads per block along x.
smem_static:
  type: int
  unit: bytes
  source: {static: shared.static_bytes}
  meaning: Static shared memory of the kernel.
has_atomics:
  type: bool
  unit: none
  source: {static: atomics.any}
  meaning: The kernel uses atomics.
device_name:
  type: str
  unit: none
  source: {device: name}
  meaning: GPU name.
failed_count:
  type: int
  unit: count
  source: {history: failed}
  meaning: Skills that already failed on this kernel.
bottleneck:
  type: str
  unit: none
  source: {fact: bottleneck}
  meaning: The bottleneck class.
memory_bound:
  type: bool
  unit: none
  source: {derived: "bottleneck == \\"MEMORY\\""}
  meaning: Derived from the bottleneck fact.
hot:
  type: bool
  unit: none
  source: {fact: hot}
  meaning: A second-stratum fact.
threshold_sol_high:
  type: float
  unit: percent
  source: {threshold: sol_high}
  meaning: ncu's 80.
"""

THRESHOLDS = """\
sol_high: {value: 80, provenance: "ncu 2025.3.1 SpeedOfLight.py"}
stall_share: {value: 0.3, provenance: "ncu 2025.3.1 CPIStall.py"}
"""

RULES = {
    "derive/bottleneck.memory.yaml": """\
        id: bottleneck.memory
        kind: derive
        summary: Memory leads at high throughput.
        when:
          all:
            - "sol_max >= threshold_sol_high"
            - "dram_pct >= sm_pct"
        derives: {bottleneck: MEMORY}
        because: "DRAM {dram_pct:.0f}% vs SM {sm_pct:.0f}%."
        """,
    # sorts before bottleneck.* but reads `bottleneck` through the derived name `memory_bound`:
    # stratification must run it after bottleneck.memory
    "derive/a.hot.yaml": """\
        id: a.hot
        kind: derive
        summary: Memory-bound and stalling.
        when: "memory_bound"
        derives:
          hot: {expr: "stall_ls_share > 0.1"}
        because: "memory bound: {memory_bound}"
        """,
    "propose/x.coalesce.yaml": """\
        id: x.coalesce
        kind: propose
        summary: Stalled on memory.
        when:
          all:
            - "hot"
            - any:
                - "stall_ls_share > threshold_stall_share"
                - "registers > 128"
        proposes:
          - {skill: mem.coalesce, score: 0.9, speedup: "stall_ls_share * 2"}
        because: "Long-scoreboard share {stall_ls_share:.2f}, registers {registers}."
        """,
    "propose/x.coalesce-weak.yaml": """\
        id: x.coalesce-weak
        kind: propose
        summary: A weaker reason for the same skill.
        when: "dram_pct > 10"
        proposes:
          - {skill: mem.coalesce, score: 0.5, speedup: 0.1}
          - {skill: mem.vectorize, score: 0.5, speedup: 0.1}
        because: "DRAM at {dram_pct:.0f}%."
        """,
    "propose/x.tile.yaml": """\
        id: x.tile
        kind: propose
        summary: Same score as vectorize, larger speedup.
        when: "dram_pct > 10"
        proposes:
          - {skill: mem.smem_tiling, score: 0.5, speedup: 0.2}
          - {skill: mem.aaa_nospeedup, score: 0.5}
        because: "tile"
        """,
}


def make_ruleset(root: Path, rules: dict[str, str] | None = None, vocabulary: str | None = VOCABULARY,
                 thresholds: str = THRESHOLDS, cases: dict[str, str] | None = None) -> Path:
    """Write a rules folder under `root` and return it."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "derive").mkdir(exist_ok=True)
    (root / "propose").mkdir(exist_ok=True)
    (root / "thresholds").mkdir(exist_ok=True)
    (root / "fixtures").mkdir(exist_ok=True)
    if vocabulary is not None:
        (root / "vocabulary.yaml").write_text(vocabulary)
    (root / "thresholds" / "ncu-defaults.yaml").write_text(thresholds)
    for name, text in (RULES if rules is None else rules).items():
        (root / name).write_text(textwrap.dedent(text))
    for name, text in (cases or {}).items():
        (root / name).write_text(textwrap.dedent(text))
    return root


def evidence(metrics: dict | None = None, **extra) -> dict:
    """A minimal evidence document (the JSON shape of docs/architecture.md section 1)."""
    doc = {"schema_version": 1, "producer": {"tool": "test", "source_kind": "manual"},
           "device": {"name": "NVIDIA H200", "sm_count": 132},
           "kernels": [{"name": "k", "launches": 1, "duration_ns": 1000.0,
                        "launch": {"grid": [1, 1, 1], "block": [256, 1, 1]},
                        "metrics": metrics or {}, "ncu_rules": []}],
           "focus_kernel": "k", "focus_reason": "the only kernel"}
    doc.update(extra)
    return doc


M = {"dram": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
     "sm": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
     "ls": "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
     "cpi": "smsp__average_warp_latency_per_inst_issued.ratio"}


CASES = {
    "derive/bottleneck.memory.cases.yaml": """\
        cases:
          - {name: hot, expect: fire, reason: DRAM at 90% leads SM at 20%., values: {dram_pct: 90, sm_pct: 20}}
          - {name: cold, expect: quiet, reason: Nothing near its peak., values: {dram_pct: 10, sm_pct: 20}}
          - {name: no-sm, expect: quiet, reason: Without SM throughput the rule cannot decide., values: {dram_pct: 90}}
        """,
    "derive/a.hot.cases.yaml": """\
        cases:
          - {name: stalled, expect: fire, reason: Memory-bound facts come from the derive rule.,
             values: {dram_pct: 90, sm_pct: 20, stall_ls: 5, cpi: 10}}
          - {name: compute, expect: quiet, reason: SM leads., values: {dram_pct: 20, sm_pct: 90}}
        """,
    "propose/x.coalesce.cases.yaml": """\
        cases:
          - {name: fixture, expect: fire, reason: The fixture is memory-bound and stalled., fixture: membound}
          - {name: fixture-override, expect: quiet, reason: Same profile without the stalls., fixture: membound,
             values: {stall_ls: 0}}
        """,
    "propose/x.coalesce-weak.cases.yaml": """\
        cases:
          - {name: dram, expect: fire, reason: DRAM above 10%., values: {dram_pct: 11}}
          - {name: idle, expect: quiet, reason: DRAM idle., values: {dram_pct: 1}}
        """,
    "propose/x.tile.cases.yaml": """\
        cases:
          - {name: dram, expect: fire, reason: DRAM above 10%., values: {dram_pct: 11}}
          - {name: idle, expect: quiet, reason: DRAM idle., values: {dram_pct: 1}}
          - {name: wrong, expect: quiet, reason: Deliberately wrong to prove failures show., values: {dram_pct: 50}}
        """,
}

FIXTURE = {"schema_version": 1, "producer": {"tool": "test", "source_kind": "manual"}, "device": {"name": "H200"},
           "kernels": [{"name": "k", "launches": 1, "duration_ns": 5.0, "metrics": {
               "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": 92.0,
               "sm__throughput.avg.pct_of_peak_sustained_elapsed": 10.0,
               "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio": 6.0,
               "smsp__average_warp_latency_per_inst_issued.ratio": 10.0}}],
           "focus_kernel": "k", "focus_reason": "only"}
