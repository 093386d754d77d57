"""Every JSON document a command prints with `--json`, in one table: its kind, its version and its
published JSON Schema (`skillbase/schemas/<kind>.schema.json`, shipped in the wheel).

A library result type builds its document with `versioned(kind, body)`, which puts the
`schema_version` first; a test validates each command's real output against its schema. Bump a
version when a key changes meaning or goes away (adding a key does not need one).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from skillbase.errors import ERROR_SCHEMA_VERSION

DOCUMENTS: dict[str, int] = {
    "advise": 1, "explain": 1, "runs": 1, "run-summary": 1, "check": 1, "profile": 1, "init": 1, "report": 1,
    "evidence": 1, "bench-list": 1, "bench-run": 1, "bench-report": 1, "skills-list": 1, "skills-show": 1,
    "skills-validate": 1, "skills-new": 1, "skills-search": 1, "skills-verify": 1, "rules-list": 1, "rules-show": 1,
    "rules-test": 1,
    "rules-validate": 1, "rules-new": 1, "calibrate": 1, "config": 1, "lint": 1, "doctor": 1, "examples-list": 1,
    "examples-copy": 1, "error": ERROR_SCHEMA_VERSION,
    "pending": 1, "batch": 1, "bench-optimize-report": 1, "store-pack": 1, "kernelbench-import": 1,
    "kernelbench-score": 1, "kernelbench-report": 1, "redecide": 1,
}


def versioned(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """`body` as the document `kind`: `schema_version` first, then the body's keys."""
    return {"schema_version": DOCUMENTS[kind], **body}


def schema_path(kind: str) -> Path:
    """The published JSON Schema of document `kind`."""
    if kind not in DOCUMENTS:
        raise KeyError(f"{kind} is not a document kind (add it to skillbase.documents.DOCUMENTS)")
    return Path(str(resources.files("skillbase"))) / "schemas" / f"{kind}.schema.json"
