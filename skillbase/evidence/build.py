"""Loading evidence (ncu report, raw CSV, evidence JSON) and building it from a source (static
features, ptxas). Heavy imports (ncu_report, tree-sitter, jsonschema) happen inside the functions
that need them, so importing this module is cheap.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from skillbase.errors import InputError
from skillbase.evidence.model import Evidence, KernelRecord
from skillbase.evidence.static.features import static_features


def load_ncu_report(path: str | Path, kernel: str | None = None) -> Evidence:
    from skillbase.evidence.ncu_rep import load_ncu_report as load

    return load(path, kernel)


def load_ncu_csv(path: str | Path, kernel: str | None = None, details: str | Path | None = None) -> Evidence:
    from skillbase.evidence.ncu_csv import load_ncu_csv as load

    return load(path, kernel, details)


def parse_ptxas(text: str) -> dict[str, dict[str, Any]]:
    from skillbase.evidence.ptxas import parse_ptxas as parse

    return parse(text)


def load_evidence_json(path: str | Path) -> Evidence:
    """An evidence document written by `skillbase evidence` (or any producer of the schema)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot read as UTF-8 text ({error})") from None
    return Evidence.from_json(text, where=str(path))


def load_any(path: str | Path, kernel: str | None = None) -> Evidence:
    """Dispatch on suffix, then on content: `.ncu-rep`, raw-page `.csv`, evidence `.json`."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.is_dir():
        raise InputError(f"{path}: is a folder; give a .ncu-rep, a raw-page .csv or an evidence .json")
    suffix = path.suffix.lower()
    if suffix != ".ncu-rep" and suffix not in (".csv", ".json"):
        with path.open("rb") as handle:
            head = handle.read(4096)
        if head.startswith(b"NVR"):
            suffix = ".ncu-rep"
        elif head.lstrip().startswith(b"{"):
            suffix = ".json"
        elif b'"ID",' in head or b"==PROF==" in head:
            suffix = ".csv"
        else:
            raise InputError(f"{path}: not a .ncu-rep, an ncu CSV export or an evidence JSON",
                             hint="ncu -i REPORT.ncu-rep --page raw --csv --print-units base > raw.csv")
    if suffix == ".ncu-rep":
        return load_ncu_report(path, kernel)
    if suffix == ".csv":
        return load_ncu_csv(path, kernel)
    evidence = load_evidence_json(path)
    if kernel:
        evidence.select_kernel(kernel)
    return evidence


# -- ptxas through nvcc -------------------------------------------------------------------------

def _cache_dir() -> Path:
    from skillbase.config import cache_root

    return cache_root() / "ptxas"


def _local_includes(source: Path, text: str) -> bytes:
    """Bytes of `#include "x.h"` files beside the source, so that editing a header misses the cache."""
    out = b""
    for name in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, flags=re.M):
        candidate = source.parent / name
        if candidate.is_file():
            out += name.encode() + b"\0" + candidate.read_bytes()
    return out


def ptxas_for_source(source: str | Path, arch: str = "sm_90", extra_flags: tuple[str, ...] = ()) -> tuple[str | None, str | None]:
    """(ptxas -v text, note): compile-only with nvcc, cached by source hash; nvcc absent -> (None, note)."""
    source = Path(source)
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None, "nvcc not found on PATH: ptxas resources (registers, spills) omitted"
    text = source.read_text(encoding="utf-8", errors="replace")
    flags = [f"-arch={arch}", "-O3", "-Xptxas", "-v", *extra_flags]
    digest = hashlib.sha256(text.encode() + _local_includes(source, text) + " ".join([nvcc, *flags]).encode()).hexdigest()[:24]
    cached = _cache_dir() / f"{digest}.txt"
    if cached.is_file():
        return cached.read_text(), None
    with tempfile.TemporaryDirectory(prefix="skillbase-ptxas-") as tmp:
        command = [nvcc, *flags, "-I", str(source.parent.resolve()), "-c", "-o", str(Path(tmp) / "k.o"),
                   str(source.resolve())]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp)
        except subprocess.TimeoutExpired:
            return None, f"nvcc timed out on {source.name}: ptxas resources omitted"
        except OSError as error:
            return None, f"nvcc could not run ({error.strerror}): ptxas resources omitted"
    if result.returncode != 0:
        first = next((line for line in result.stderr.splitlines() if "error" in line), result.stderr.strip()[:200])
        return None, f"nvcc failed on {source.name}: {first.strip()}"
    log = result.stderr + result.stdout
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(log)
    except OSError:
        pass  # a read-only cache only costs a recompile next time
    return log, None


# -- assembling one document --------------------------------------------------------------------

def build_evidence(report: str | Path | None = None, evidence: Evidence | str | Path | None = None,
                   source: str | Path | None = None, ptxas_text: str | None = None, kernel: str | None = None,
                   arch: str = "sm_90") -> Evidence:
    """One evidence document from a profile (REPORT or EVIDENCE) plus the SOURCE's static features and
    ptxas report (PTXAS_TEXT, or compiled from SOURCE with nvcc when available)."""
    if isinstance(evidence, Evidence):
        result = evidence
        if kernel:
            result.select_kernel(kernel)
    elif evidence is not None:
        result = load_any(evidence, kernel)
    elif report is not None:
        result = load_any(report, kernel)
    else:
        result = Evidence()
        result.producer["source_kind"] = "static"
        result.producer["source_path"] = str(source) if source else None

    if source is not None:
        result.static = static_features(source)
        if ptxas_text is None:
            ptxas_text, note = ptxas_for_source(source, arch)
            if note:
                result.notes.append(note)
    if ptxas_text is not None:
        result.ptxas = parse_ptxas(ptxas_text) or None
        if result.ptxas is None:
            result.notes.append("the ptxas log names no entry function (was it built with -Xptxas -v?)")

    if not result.kernels and result.static:
        _focus_from_source(result, kernel)
    _align_names(result)
    return result


def _focus_from_source(evidence: Evidence, kernel: str | None) -> None:
    """Without a profile the focus comes from the source: the named kernel, the only one, or the first launched."""
    names = list(evidence.static["kernels"])
    if kernel:
        matches = [n for n in names if n == kernel] or [n for n in names if kernel in n]
        if not matches:
            try:
                pattern = re.compile(kernel)
                matches = [n for n in names if pattern.search(n)]
            except re.error:
                matches = []
        if not matches:
            raise InputError(f"no kernel matches {kernel!r}; kernels in the source: {', '.join(names)}")
        evidence.focus_kernel, evidence.focus_reason = matches[0], f"selected by --kernel {kernel!r} (static analysis only)"
        return
    if len(names) == 1:
        evidence.focus_kernel, evidence.focus_reason = names[0], "the only kernel in the source (no profile)"
        return
    launched = [launch["kernel"] for launcher in (evidence.static.get("launchers") or {}).values()
                for launch in launcher["launches"] if launch["kernel"] in names]
    chosen = launched[0] if launched else names[0]
    how = "first kernel its launcher starts" if launched else "first kernel in the file"
    evidence.focus_kernel, evidence.focus_reason = chosen, f"{how}, 1 of {len(names)} (no profile)"


def _align_names(evidence: Evidence) -> None:
    """Make `static.kernels[focus]` and `ptxas[focus]` resolve for the focus kernel's name.

    ncu, ptxas and the source name a kernel differently; they are matched by mangled name when
    known, else by base function name, and the focus name is added as an alias key.
    """
    from skillbase.evidence.names import base_name

    focus_name = evidence.focus_kernel
    if not focus_name:
        return
    record = evidence.focus()
    base = record.base_name if record else base_name(focus_name)
    if evidence.static and focus_name not in evidence.static["kernels"]:
        if base in evidence.static["kernels"]:
            evidence.static["kernels"][focus_name] = evidence.static["kernels"][base]
        else:
            evidence.notes.append(f"the source defines no kernel named {base!r} "
                                  f"(it has {', '.join(evidence.static['kernels'])})")
    if evidence.ptxas and focus_name not in evidence.ptxas:
        match = None
        if record and record.mangled:
            match = next((v for v in evidence.ptxas.values() if v.get("mangled") == record.mangled), None)
        if match is None:
            candidates = [v for k, v in evidence.ptxas.items() if base_name(v.get("mangled") or k) == base]
            match = candidates[0] if len(candidates) == 1 else None
        if match is not None:
            evidence.ptxas[focus_name] = match
        else:
            evidence.notes.append(f"ptxas reports no kernel matching {focus_name!r}")
