"""Which metrics ncu can collect by name, and which only come with a section.

`ncu --metrics` refuses the whole run when one name is not a metric of the device's chip, yet
several values the rules read exist only as section outputs: `launch__*` (LaunchStats, Occupancy),
`sm__maximum_warps_per_active_cycle_pct` (Occupancy), `memory_*` and `derived__memory_*`
(SourceCounters). So the engine's list is split: names in the chip's catalogue
(`ncu --query-metrics`, cached per ncu version) go to `--metrics`, and the others select the
sections that produce them.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from skillbase.config import cache_root
from skillbase.files import write_text_atomically

# The section that produces each family of non-catalogue names (checked on an H200, ncu 2025.3.1).
SECTION_FOR_PREFIX = (
    ("launch__", "LaunchStats"),
    ("sm__maximum_warps", "Occupancy"),
    ("smsp__maximum_warps", "Occupancy"),
    ("memory_", "SourceCounters"),
    ("derived__memory", "SourceCounters"),
    ("inst_", "SourceCounters"),
    ("derived__", "MemoryWorkloadAnalysis_Tables"),
    ("sass__", "InstructionStats"),
)


def _cache_file(ncu: str) -> Path:
    root = cache_root()
    key = hashlib.sha256((ncu + str(Path(ncu).stat().st_mtime if Path(ncu).exists() else "")).encode()).hexdigest()[:12]
    return root / "ncu" / f"metrics-{key}.txt"


def parse_catalogue(text: str) -> set[str]:
    """Base metric names from `ncu --query-metrics` output (first column of each table row)."""
    names = set()
    for line in text.splitlines():
        first = line.split(maxsplit=1)[0] if line.strip() else ""
        if "__" in first and not first.startswith("-"):
            names.add(first)
    return names


def catalogue(ncu: str) -> set[str] | None:
    """The device chip's metric names, or None when ncu cannot list them (then nothing is filtered out)."""
    cache = _cache_file(ncu)
    if cache.is_file():
        return set(cache.read_text().split())
    try:
        out = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = parse_catalogue(out.stdout)
    if out.returncode != 0 or not names:
        return None
    cache.parent.mkdir(parents=True, exist_ok=True)
    # Written aside, then renamed: another worker (--workers-per-gpu) reading it meanwhile sees all of it,
    # never a truncated catalogue that would send known metrics to sections.
    write_text_atomically(cache, "\n".join(sorted(names)))
    return names


def split_metrics(metrics: list[str], known: set[str] | None) -> tuple[list[str], list[str]]:
    """(names for --metrics, sections needed for the rest)."""
    direct, sections = [], []
    for name in sorted(set(metrics)):
        base = name.split(".", 1)[0]
        if known is not None and base in known:
            direct.append(name)
            continue
        section = next((s for prefix, s in SECTION_FOR_PREFIX if base.startswith(prefix)), None)
        if section is not None:
            if section not in sections:
                sections.append(section)
        elif known is None:
            direct.append(name)   # no catalogue: trust the name (ncu will say if it is wrong)
    return direct, sections
