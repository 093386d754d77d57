"""Rendering shared by several commands: one way to print an observed value (advise, calibrate)."""

from __future__ import annotations

from typing import Any

from skillbase.engine.vocabulary import MISSING

__all__ = ["fmt_value"]


def fmt_value(observed: Any) -> str:
    """An observed value or threshold as advise and calibrate print it: `missing`, `—` for none,
    booleans in lower case, floats to 4 significant digits."""
    if observed is MISSING or observed == "missing":
        return "missing"
    if observed is None:
        return "—"
    if isinstance(observed, bool):
        return str(observed).lower()
    if isinstance(observed, float):
        return f"{observed:.4g}"
    return str(observed)
