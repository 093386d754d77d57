"""Splitting the engine's metric list into ncu --metrics names and the sections that carry the rest."""

from __future__ import annotations

from pathlib import Path

from skillbase.engine import Engine
from skillbase.harness.ncu_metrics import parse_catalogue, split_metrics

CATALOGUE = Path(__file__).resolve().parents[1] / "fixtures" / "ncu-metrics-gh100.txt"


def test_catalogue_parses_the_real_gh100_listing():
    names = parse_catalogue(CATALOGUE.read_text())
    assert len(names) > 3000
    assert "sm__throughput" in names and "dram__bytes_read" in names
    assert "Metric" not in names and not any(n.startswith("---") for n in names)


def test_every_engine_metric_is_collectable_by_name_or_section():
    known = parse_catalogue(CATALOGUE.read_text())
    metrics = Engine.load().required_ncu_metrics()
    direct, sections = split_metrics(metrics, known)
    assert all(m.split(".")[0] in known for m in direct)
    leftover = [m for m in metrics if m not in direct]
    # Every name ncu would refuse in --metrics comes from a section instead.
    assert leftover and {"LaunchStats", "Occupancy", "SourceCounters"} <= set(sections)
    assert "launch__grid_size" in leftover and "sm__throughput.avg.pct_of_peak_sustained_elapsed" in direct


def test_without_a_catalogue_names_are_trusted_but_section_families_still_map():
    direct, sections = split_metrics(["sm__throughput.avg.pct_of_peak_sustained_elapsed", "launch__block_size"], None)
    assert direct == ["sm__throughput.avg.pct_of_peak_sustained_elapsed"] and sections == ["LaunchStats"]
