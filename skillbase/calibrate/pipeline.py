"""The calibrate pipeline behind `skillbase calibrate`: load and check a population, calibrate it
with Otsu, write the thresholds file, and compare it with the baseline file (class changes, advise
hit rates, and with expectations an ablation that calibrates one quantity at a time).

`Engine.load` takes a thresholds *file*, so the calibrated thresholds are compared through
temporary files in a private folder (never beside the user's files).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillbase.calibrate.calibration import Calibration, calibrate, render_thresholds, write_thresholds
from skillbase.calibrate.compare import compare, load_expectations
from skillbase.calibrate.population import MIN_KERNELS, Population, check_population, check_selection, load_population
from skillbase.engine import Engine
from skillbase.errors import InputError

__all__ = ["CalibrationRun", "ablation", "calibrate_and_compare"]


@dataclass
class CalibrationRun:
    population: Population
    base: Engine                           # the rules under the baseline thresholds (ncu's unless `against`)
    calibration: Calibration | None        # None when comparing an existing file
    thresholds_text: str | None            # the calibrated thresholds file's text
    written: str | None = None             # where it was written, as given
    comparison: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.calibration is not None:
            data["calibration"] = self.calibration.to_json()
        if self.written:
            data["written"] = self.written
        if self.comparison is not None:
            data["compare"] = self.comparison
        from skillbase.documents import versioned

        return versioned("calibrate", data)


def calibrate_and_compare(profiles: Sequence[str | Path], *, out: str | Path | None = None,
                          thresholds: str | Path | None = None, against: str | Path | None = None,
                          expect: str | Path | None = None, compare_files: bool = False,
                          only: Sequence[str] | None = None, min_kernels: int = MIN_KERNELS, mixed: bool = False,
                          drop_incomplete: bool = False, focus_only: bool = False, ncu_version: str | None = None,
                          clock_control: str | None = None,
                          rules_dirs: Sequence[str | Path] | None = None) -> CalibrationRun:
    """Calibrate thresholds on `profiles` (files or folders) and, with `compare_files`, compare them.

    `out` writes the calibrated file; `thresholds` compares that existing file instead of
    calibrating one (then there is nothing to write); `against` is the baseline file (default:
    ncu's); `expect` names the expected skill per profile (then the comparison reports advise hit
    rates and an ablation); `only` calibrates just these thresholds or quantities. The population
    checks refuse mixed GPUs or profiler setups (unless `mixed`), partial metrics (unless
    `drop_incomplete`) and fewer than `min_kernels` kernels."""
    if not profiles:
        raise InputError("give the profiles to calibrate on (files or folders)",
                         "e.g. `skillbase calibrate profiles/ --out rules/thresholds/h200.yaml`")
    if thresholds and out:
        raise ValueError("out= writes a calibrated file; with thresholds= nothing is calibrated")
    names = check_selection(only)
    expectations = load_expectations(expect) if expect else None
    dirs = list(rules_dirs) if rules_dirs else None
    base = Engine.load(dirs, against)
    population = load_population(profiles, base, focus_only=focus_only, ncu_version=ncu_version,
                                 clock_control=clock_control)
    population = check_population(population, min_kernels=min_kernels, mixed=mixed, drop_incomplete=drop_incomplete,
                                  only=names, calibrating=not thresholds)
    run = CalibrationRun(population, base, None, None)
    if not thresholds:
        run.calibration = calibrate(population, base.thresholds, only=names)
        run.thresholds_text = render_thresholds(run.calibration, base.thresholds.path)
        if out:
            write_thresholds(run.calibration, out, base.thresholds.path)
            run.written = str(out)
    if not compare_files:
        return run
    if thresholds:
        run.comparison = compare(population, base, Engine.load(dirs, thresholds), expectations)
        return run
    with tempfile.TemporaryDirectory(prefix="skillbase-calibrate-") as tmp:
        path = Path(out) if out else Path(tmp) / "calibrated.yaml"
        if not out:
            path.write_text(run.thresholds_text, encoding="utf-8")
        target = Engine.load(dirs, path, use_cache=False)
        run.comparison = compare(population, base, target, expectations)
        if expectations and run.comparison["advise"]["expected_kernels"]:
            run.comparison["ablation"] = ablation(population, base, run.calibration, expectations, dirs, Path(tmp))
    return run


def ablation(population: Population, base: Engine, calibration: Calibration, expectations: dict[str, list[str]],
             rules_dirs: list[str | Path] | None, tmp: Path) -> list[dict[str, Any]]:
    """advise hit rates with one quantity's thresholds calibrated at a time (the rest at the baseline's)."""
    rows = []
    for result in calibration.results:
        if not result.calibrated:
            continue
        one = calibrate(population, base.thresholds, only=[result.quantity.name], date=calibration.date)
        path = tmp / f"only-{result.quantity.name}.yaml"
        path.write_text(render_thresholds(one, base.thresholds.path), encoding="utf-8")
        comp = compare(population, base, Engine.load(rules_dirs, path, use_cache=False), expectations)
        adv = comp["advise"]
        k = adv["top"]
        rows.append({"quantity": result.quantity.name, "thresholds": result.calibrated,
                     f"top{k}": adv["calibrated"][f"top{k}"], "top1": adv["calibrated"]["top1"],
                     f"top{k}_default": adv["default"][f"top{k}"], "top1_default": adv["default"]["top1"],
                     "changed_class": comp["changed_class"], "keep": comp["keep"]})
    return rows
