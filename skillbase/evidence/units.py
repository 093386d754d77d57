"""Convert ncu values to base units (ns, byte, hz, X/s, percent 0-100) and parse ncu number text.

`ncu --print-units base` already writes base units, but exports made without it (or by an older
ncu) scale to `usecond`, `Kbyte`, `Gbyte/s`, `cycle/nsecond`…; rules compare against thresholds in
base units, so every value is normalised here once.
"""

from __future__ import annotations

import math

_SI = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 1024.0, "Mi": 1024.0**2, "Gi": 1024.0**3, "Ti": 1024.0**4}
# time units as written by ncu (and their short spellings), as a factor to nanoseconds
_TIME_NS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6,
            "second": 1e9, "s": 1e9, "sec": 1e9}
# countable words that ncu may prefix with K/M/G in auto-scaled output
_COUNT_WORDS = ("byte", "sector", "inst", "cycle", "request", "warp", "thread", "block",
                "hz", "B", "transaction", "wavefront")
_MISSING = {"", "n/a", "N/A", "na", "no data", "-", "(!)", "nan", "NaN"}


def parse_number(text: str) -> float | None:
    """`"298,208"` -> 298208.0; `"12.5%"` -> 12.5; `"n/a"` / text -> None (never raises)."""
    text = text.strip()
    if text in _MISSING:
        return None
    if text.endswith("%"):
        text = text[:-1].strip()
    cleaned = text.replace(",", "").replace("\u202f", "").replace("\u00a0", "")
    try:
        value = float(cleaned)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _count_factor(word: str) -> tuple[float, str] | None:
    """'Kbyte' -> (1e3, 'byte'); 'MiB' -> (1048576, 'byte'); 'Ghz' -> (1e9, 'hz'); unknown -> None."""
    if word in ("B", "byte", "bytes"):
        return 1.0, "byte"
    for prefix, factor in _BINARY.items():
        if word in (prefix + "B", prefix + "byte"):
            return factor, "byte"
    for prefix, factor in _SI.items():
        if not prefix:
            continue
        if word.startswith(prefix):
            rest = word[len(prefix):]
            if rest in ("B",):
                return factor, "byte"
            if rest.lower() == "hz":
                return factor, "hz"
            if rest in _COUNT_WORDS:
                return factor, rest
    if word.lower() == "hz":
        return 1.0, "hz"
    return None


def to_base(value: float, unit: str) -> tuple[float, str]:
    """Scale VALUE in UNIT to ncu's base unit; returns (value, base_unit). Unknown units pass through."""
    unit = (unit or "").strip()
    if not unit or unit == "%":
        return value, unit
    if unit in _TIME_NS:
        return value * _TIME_NS[unit], "ns"
    if "/" in unit:
        numerator, _, denominator = unit.partition("/")
        factor, base_num = 1.0, numerator
        counted = _count_factor(numerator)
        if counted:
            factor, base_num = counted
        if denominator in _TIME_NS:
            # per time unit -> per second
            per_second = 1e9 / _TIME_NS[denominator]
            base = "hz" if base_num == "cycle" else f"{base_num}/s"
            return value * factor * per_second, base
        return value * factor, f"{base_num}/{denominator}"
    counted = _count_factor(unit)
    if counted:
        return value * counted[0], counted[1]
    return value, unit
