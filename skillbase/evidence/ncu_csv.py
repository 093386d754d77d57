"""Load `ncu -i X.ncu-rep --page raw --csv --print-units base` output (one row per launch).

The traps handled here, all seen in real ncu output: program output and `==PROF==` lines before
the header (the header is the row whose first cell is "ID"); a units row under the header;
thousands separators ("298,208"); "n/a" / "no data" cells; several rows per kernel; non-base
units ("usecond", "Kbyte", "Gbyte/s") when the export forgot `--print-units base`. A CSV of
another shape (another ncu page, another tool) is a one-line InputError saying what to run.
Optionally the `--page details` export of the same report adds ncu's own rule results.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

from skillbase.errors import InputError
from skillbase.evidence.aggregate import Launch, build, compact_rule
from skillbase.evidence.model import Evidence
from skillbase.evidence.units import parse_number, to_base

RAW_COMMAND = "ncu -i REPORT.ncu-rep --page raw --csv --print-units base > raw.csv"
DETAILS_COMMAND = "ncu -i REPORT.ncu-rep --page details --csv --print-units base > details.csv"
REQUIRED = ("ID", "Kernel Name")
_IDENTITY = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
             "Block Size", "Grid Size", "Device", "CC"}
_DIMS = re.compile(r"^\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)$")


def load_ncu_csv(path: str | Path, kernel: str | None = None, details: str | Path | None = None) -> Evidence:
    """Evidence from a raw-page CSV export; DETAILS (a `--page details` CSV) adds ncu rule results."""
    path = Path(path)
    header, units, rows = _read_table(path, ragged=True)
    if "Metric Name" in header and "Metric Value" in header:
        raise InputError(f"{path}: this is an ncu --page details export; skillbase reads the raw page",
                         hint=RAW_COMMAND)
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(f"{path}: not an ncu raw-page CSV (no {' / '.join(repr(m) for m in missing)} column)",
                         hint=RAW_COMMAND)
    if not any("__" in column for column in header):
        raise InputError(f"{path}: the CSV has no ncu metric columns (names like sm__throughput...)",
                         hint=RAW_COMMAND)
    short = next(((number, len(row)) for number, row in rows if len(row) < len(header)), None)
    if short is not None:
        raise InputError(f"{path}:{short[0]}: row has {short[1]} cells, header has {len(header)} "
                         "(truncated or mixed CSV)", hint=RAW_COMMAND)
    launches = [_launch(path, header, units, row, number) for number, row in rows]
    if not launches:
        raise InputError(f"{path}: the CSV has a header but no kernel rows", hint=RAW_COMMAND)
    if details is not None:
        _attach_rules(Path(details), header, rows, launches)
    return build(launches, "ncu-csv", str(path), kernel)


def _read_table(path: Path, ragged: bool = False) -> tuple[list[str], list[str], list[tuple[int, list[str]]]]:
    """(header, units, [(line number, row)]) of the first CSV table whose first cell is "ID"."""
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if not path.is_file():
        raise InputError(f"{path}: not a file")
    data = path.read_bytes()
    if not data.strip():
        raise InputError(f"{path}: empty file", hint=RAW_COMMAND)
    if b"\x00" in data[:4096]:
        raise InputError(f"{path}: binary data, not a CSV export", hint=RAW_COMMAND)
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",') or line.startswith("ID,")), None)
    if start is None:
        raise InputError(f"{path}: no ncu CSV header (a row starting with \"ID\")", hint=RAW_COMMAND)
    try:
        table = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    except csv.Error as error:
        raise InputError(f"{path}: malformed CSV ({error})", hint=RAW_COMMAND) from None
    header = [cell.strip() for cell in table[0]]
    body = table[1:]
    units: list[str] = [""] * len(header)
    if body and body[0] and body[0][0].strip() == "":
        units = [cell.strip() for cell in body[0]]
        body = body[1:]
    rows = []
    for offset, row in enumerate(body):
        line = start + 2 + offset + (1 if units != [""] * len(header) else 0)
        if not row or not row[0].strip():
            continue
        if not row[0].strip().isdigit():
            # Program output after the table (ncu --csv on a live run mixes them): the table ended.
            break
        if len(row) > len(header) or (len(row) < len(header) and not ragged):
            raise InputError(f"{path}:{line}: row has {len(row)} cells, header has {len(header)} "
                             "(truncated or mixed CSV)", hint=RAW_COMMAND)
        rows.append((line, row))
    return header, units, rows


def _dims(text: str) -> list[int] | None:
    match = _DIMS.match(text.strip())
    return [int(g) for g in match.groups()] if match else None


def _launch(path: Path, header: list[str], units: list[str], row: list[str], line: int) -> Launch:
    metrics: dict[str, float] = {}
    strings: dict[str, str] = {}
    # a short row (a truncated export) leaves the missing cells out; extra cells have no column
    cells = dict(zip(header, row, strict=False))
    for column, unit, cell in zip(header, units + [""] * (len(header) - len(units)), row, strict=False):
        if column in _IDENTITY:
            continue
        value = parse_number(cell)
        if value is None:
            if cell.strip() and cell.strip() not in ("n/a", "no data"):
                strings[column] = cell.strip()
            continue
        value, _ = to_base(value, unit)
        metrics[column] = value
    demangled = cells.get("Kernel Name", "").strip()
    if not demangled:
        raise InputError(f"{path}:{line}: empty Kernel Name", hint=RAW_COMMAND)
    function = demangled.split("(")[0].strip() or demangled
    cc = cells.get("CC", "").strip()
    if cc and "device__attribute_compute_capability_major" not in metrics and re.match(r"^\d+\.\d+$", cc):
        major, minor = cc.split(".")
        metrics["device__attribute_compute_capability_major"] = float(major)
        metrics["device__attribute_compute_capability_minor"] = float(minor)
    return Launch(function=function, demangled=demangled, metrics=metrics, strings=strings,
                  grid=_dims(cells.get("Grid Size", "")), block=_dims(cells.get("Block Size", "")))


def _attach_rules(details: Path, raw_header: list[str], raw_rows, launches: list[Launch]) -> None:
    """Attach the rule rows of a --page details export to the launches with the same ID."""
    header, _, rows = _read_table(details, ragged=True)
    # details rows omit their trailing empty rule cells
    rows = [(number, row + [""] * (len(header) - len(row))) for number, row in rows]
    needed = ("ID", "Rule Name", "Rule Type")
    if any(c not in header for c in needed):
        raise InputError(f"{details}: not an ncu --page details CSV (no Rule Name / Rule Type columns)",
                         hint=DETAILS_COMMAND)
    index = {c: i for i, c in enumerate(header)}
    raw_ids = [row[raw_header.index("ID")].strip() for _, row in raw_rows]
    by_id: dict[str, list[dict[str, Any]]] = {}
    for _, row in rows:
        rule = row[index["Rule Name"]].strip()
        if not rule:
            continue
        speedup_type = row[index["Estimated Speedup Type"]].strip().lower() if "Estimated Speedup Type" in index else ""
        speedup = parse_number(row[index["Estimated Speedup"]]) if "Estimated Speedup" in index else None
        by_id.setdefault(row[index["ID"]].strip(), []).append(compact_rule(
            rule, row[index["Rule Type"]].strip() or "NONE", None,
            row[index["Section Name"]].strip() if "Section Name" in index else None,
            speedup, speedup_type if speedup_type in ("local", "global") else None,
            message=row[index["Rule Description"]] if "Rule Description" in index else None))
    if by_id and not set(by_id) & set(raw_ids):
        raise InputError(f"{details}: its launch IDs match none of the raw CSV's; export both from one report",
                         hint=DETAILS_COMMAND)
    for launch_id, launch in zip(raw_ids, launches, strict=True):
        launch.rules = by_id.get(launch_id, [])
