"""The deterministic rule engine: vocabulary, rules, trace, ranking (`skillbase.engine`).

    from skillbase.engine import Engine
    engine = Engine.load()                 # built-in rules + vocabulary + ncu-default thresholds
    result = engine.evaluate(evidence)     # EvaluationResult: candidates, facts, decisions
    engine.required_ncu_metrics()          # the minimal `ncu --metrics` list

Names are imported lazily so that `import skillbase.engine` stays cheap.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "Engine": "evaluate", "EvaluationResult": "evaluate", "Candidate": "ranking", "Decision": "trace",
    "LeafRecord": "trace", "FocusRow": "trace", "MISSING": "vocabulary", "Vocabulary": "vocabulary",
    "View": "vocabulary", "Thresholds": "vocabulary", "Rule": "rules",
}

__all__ = sorted([*_EXPORTS, "Problem"])


def __getattr__(name: str) -> Any:
    if name == "Problem":
        from skillbase.datafile.problems import Problem

        return Problem
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'skillbase.engine' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
