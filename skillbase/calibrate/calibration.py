"""The calibration (issue 8): Otsu's cuts per quantity of a population, and the thresholds file they make.

The derivation rules classify a kernel by comparing a few quantities (max(SM%, memory%), the
dominant stall share, the occupancy gap, ...) with named constants from the active thresholds
file, by default Nsight Compute's own (60 / 80 / 0.3 ...). `calibrate()` picks, per quantity of a
`Population`, the cut that maximises the between-class variance (`otsu`; two cuts, "multi-Otsu",
where the rules need three classes). `write_thresholds()` writes a file in the format of
`rules/thresholds/ncu-defaults.yaml` with the population's provenance.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillbase import __version__
from skillbase.calibrate.otsu import OtsuResult, multi_otsu
from skillbase.calibrate.population import QUANTITIES, Population, Quantity
from skillbase.datafile.yamldoc import load_yaml
from skillbase.engine.vocabulary import MISSING, Thresholds

__all__ = ["Calibration", "QuantityResult", "calibrate", "method_text", "render_thresholds", "write_thresholds"]


@dataclass
class QuantityResult:
    quantity: Quantity
    n: int
    otsu: OtsuResult | None
    calibrated: dict[str, float]  # threshold name -> value (empty when not calibrated)
    defaults: dict[str, Any]  # threshold name -> ncu default
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        q = self.quantity
        return {"quantity": q.name, "vocabulary": q.vocab, "transform": q.transform, "classes": q.classes,
                "method": method_text(q), "n": self.n, "thresholds": list(q.thresholds),
                "calibrated": self.calibrated, "ncu_default": self.defaults,
                "otsu": self.otsu.to_json() if self.otsu else None, "rules": q.rules, "note": self.note}


def method_text(q: Quantity) -> str:
    of = f"|{q.vocab}|" if q.transform == "abs" else q.vocab
    return (f"multi-Otsu (3 classes) on {of}" if q.classes == 3 else f"Otsu (2 classes) on {of}")


@dataclass
class Calibration:
    population: Population
    results: list[QuantityResult]
    date: str
    defaults_path: str

    @property
    def thresholds(self) -> dict[str, float]:
        return {k: v for r in self.results for k, v in r.calibrated.items()}

    def provenance(self) -> dict[str, Any]:
        p = self.population
        gpus, ncus, clocks = p.meta("gpu"), p.meta("ncu_version"), p.meta("clock_control")
        return {"population_digest": p.digest, "kernels": len(p.members),
                "reports": len({m.report_digest for m in p.members}),
                "gpu": " + ".join(gpus) or "unknown", "ncu_version": " + ".join(ncus) or "unknown",
                "clock_control": " + ".join(clocks) or "unknown", "date": self.date,
                "tool": f"skillbase {__version__}", "ncu_defaults": self.defaults_path}

    def to_json(self) -> dict[str, Any]:
        p = self.population
        return {"provenance": self.provenance(), "thresholds": self.thresholds,
                "quantities": [r.to_json() for r in self.results],
                "members": [{"id": m.id, "path": m.path, "kernel": m.kernel, "focus": m.focus,
                             "values": {k: (None if v is MISSING else v) for k, v in m.values.items()}}
                            for m in p.members],
                "duplicates": p.duplicates, "dropped": p.dropped, "notes": p.notes}


def _today() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.isdigit():
        return _dt.datetime.fromtimestamp(int(epoch), _dt.UTC).date().isoformat()
    return _dt.datetime.now(_dt.UTC).date().isoformat()


def calibrate(population: Population, defaults: Thresholds, only: Sequence[str] | None = None,
              date: str | None = None) -> Calibration:
    """Otsu per quantity. `defaults` is the Thresholds of the file calibrated against (ncu's)."""
    results = []
    for q in QUANTITIES:
        sample = [m.values[q.name] for m in population.members if m.values.get(q.name) is not MISSING]
        default = {t: defaults.values.get(t) for t in q.thresholds}
        selected = only is None or q.name in only or bool(set(q.thresholds) & set(only))
        if not selected:
            results.append(QuantityResult(q, len(sample), None, {}, default,
                                          "not selected (--only): ncu default kept"))
            continue
        if not sample:
            results.append(QuantityResult(q, 0, None, {}, default, "not collected in any profile: ncu default kept"))
            continue
        try:
            result = multi_otsu(sample, q.classes)
        except ValueError as error:
            results.append(QuantityResult(q, len(sample), None, {}, default, f"{error}: ncu default kept"))
            continue
        values = dict(zip(q.thresholds, result.thresholds, strict=False))   # () for a reported-only quantity
        results.append(QuantityResult(q, len(sample), result, values, default))
    return Calibration(population, results, date or _today(), defaults.path)


# -- the thresholds file ------------------------------------------------------------------------

def _yaml_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _number(value: Any) -> str:
    if isinstance(value, str):
        return _yaml_str(value)
    return json.dumps(value)  # true/false, ints, floats (repr: round-trips exactly)


def _short(digest: str) -> str:
    return digest[:19]


def render_thresholds(calibration: Calibration, defaults_path: str | Path) -> str:
    """The thresholds file: every entry of the defaults file, calibrated ones replaced, with provenance."""
    doc = load_yaml(Path(defaults_path))
    base: dict[str, dict[str, Any]] = doc.data or {}
    prov = calibration.provenance()
    by_threshold = {t: r for r in calibration.results for t in r.calibrated}
    population = {k: prov[k] for k in ("population_digest", "kernels", "reports", "gpu", "ncu_version",
                                       "clock_control", "date")}
    lines = [
        "# Thresholds calibrated by `skillbase calibrate` (Otsu's method, issue 8). Same format as",
        "# rules/thresholds/ncu-defaults.yaml; select it with `skillbase advise --thresholds THIS_FILE`.",
        f"# population: {prov['kernels']} kernels from {prov['reports']} reports, digest {prov['population_digest']}",
        "#   (sha256 over the sorted sha256 digests of the report files)",
        f"# gpu: {prov['gpu']}; ncu: {prov['ncu_version']}; clock control: {prov['clock_control']}; "
        f"date: {prov['date']}; tool: {prov['tool']}",
        f"# calibrated: {', '.join(sorted(by_threshold)) or 'nothing'}; every other entry is ncu's default, "
        "copied unchanged.",
    ]
    for note in calibration.population.notes:
        lines.append(f"# note: {note}")
    for name, spec in base.items():
        spec = dict(spec or {})
        default = spec.get("value")
        lines.append(f"{name}:")
        r = by_threshold.get(name)
        if r is None:
            lines.append(f"  value: {_number(default)}")
            lines.append(f"  provenance: {_yaml_str(spec.get('provenance', 'ncu default'))}")
            if spec.get("meaning"):
                lines.append(f"  meaning: {_yaml_str(spec['meaning'])}")
            kept = {"method": "not calibrated: ncu default kept", "ncu_default": default}
            lines.append("  calibration: " + json.dumps(kept))
            continue
        q, o = r.quantity, r.otsu
        value = r.calibrated[name]
        cut = q.thresholds.index(name)
        provenance = (f"skillbase calibrate {prov['date']}: {method_text(q)}, cut {cut + 1} of {len(q.thresholds)}, "
                      f"over {r.n} kernels ({prov['gpu']}, ncu {prov['ncu_version']}, clock control "
                      f"{prov['clock_control']}, population {_short(prov['population_digest'])}); "
                      f"ncu default {_number(default)}")
        lines.append(f"  value: {_number(value)}")
        lines.append(f"  provenance: {_yaml_str(provenance)}")
        if spec.get("meaning"):
            lines.append(f"  meaning: {_yaml_str(spec['meaning'])}")
        block = {"method": method_text(q), "quantity": q.vocab, "transform": q.transform, "ncu_default": default,
                 "ncu_default_provenance": spec.get("provenance", ""), "n": r.n,
                 "separability": round(o.separability, 4), "class_sizes": o.class_sizes,
                 "class_means": [round(x, 4) for x in o.class_means], "population": population}
        lines.append("  calibration: " + json.dumps(block, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def write_thresholds(calibration: Calibration, out: str | Path, defaults_path: str | Path) -> Path:
    out = Path(out)
    text = render_thresholds(calibration, defaults_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    Thresholds.load(out)  # the schema check: a file we cannot read back is a bug, not a user error
    return out
