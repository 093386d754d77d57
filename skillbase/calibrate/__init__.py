"""Classification thresholds from a population of profiles (Otsu), with provenance (docs/calibration.md).

    from skillbase import calibrate as cal
    pop = cal.check_population(cal.load_population(paths, Engine.load()))
    calibration = cal.calibrate(pop, engine.thresholds)

The parts: `otsu` (the method), `population` (the kernels and their quantities, the refusals),
`calibration` (the cuts and the thresholds file), `compare` (two files on one population),
`pipeline` (what `skillbase calibrate` runs).
"""

from skillbase.calibrate.calibration import (
    Calibration,
    QuantityResult,
    calibrate,
    method_text,
    render_thresholds,
    write_thresholds,
)
from skillbase.calibrate.compare import CLASS_FACTS, compare, load_expectations, rank_of
from skillbase.calibrate.otsu import OtsuResult, multi_otsu, otsu
from skillbase.calibrate.pipeline import CalibrationRun, calibrate_and_compare
from skillbase.calibrate.population import (
    MIN_KERNELS,
    QUANTITIES,
    Member,
    Population,
    Quantity,
    calibrated_threshold_names,
    check_population,
    check_selection,
    expand_paths,
    load_population,
    member_label,
)

__all__ = ["CLASS_FACTS", "MIN_KERNELS", "QUANTITIES", "Calibration", "CalibrationRun", "Member", "OtsuResult",
           "Population", "Quantity", "QuantityResult", "calibrate", "calibrate_and_compare",
           "calibrated_threshold_names", "check_population", "check_selection", "compare", "expand_paths",
           "load_expectations", "load_population", "member_label", "method_text", "multi_otsu", "otsu", "rank_of",
           "render_thresholds", "write_thresholds"]
