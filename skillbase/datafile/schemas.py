"""JSON Schema checks for rule-set YAML, reported as `file:line: message (fix hint)` problems.

The schemas live in `skillbase/schemas/*.schema.json` (published with the package); jsonschema
is imported only here, and only when files are (re)validated, never on a cached `advise`.
"""

from __future__ import annotations

import difflib
import functools
import json

from skillbase.datafile.problems import Problem
from skillbase.datafile.yamldoc import YamlDoc, join


@functools.cache
def _validator(name: str):
    import jsonschema
    from skillbase.config import schemas_dir

    schema = json.loads((schemas_dir() / f"{name}.schema.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def check(doc: YamlDoc, name: str) -> list[Problem]:
    """Every schema violation in `doc` against schema `name`, one problem each."""
    problems = []
    errors = sorted(_validator(name).iter_errors(doc.data), key=lambda e: [str(p) for p in e.absolute_path])
    seen = set()
    for error in errors:
        # `oneOf`/`anyOf` failures are reported once, at their most specific sub-error
        error = _best(error)
        path = ""
        for part in error.absolute_path:
            path = join(path, part)
        key = (path, error.message)
        if key in seen:
            continue
        seen.add(key)
        top = str(error.absolute_path[0]) if error.absolute_path else None
        where = f"`{path}`: " if path else ""
        problems.append(Problem(str(doc.path), doc.line(path), f"{where}{_message(error)}", _hint(error), path_key=top))
    return problems


def _best(error):
    import jsonschema

    if error.context:
        return jsonschema.exceptions.best_match(error.context)
    return error


def _message(error) -> str:
    if error.validator == "additionalProperties":
        return error.message.replace("Additional properties are not allowed", "unknown key(s)")
    if error.validator == "required":
        return error.message.replace("is a required property", "is required")
    message = error.message
    return message if len(message) <= 160 else message[:157] + "…"


def _hint(error) -> str | None:
    """The fix, in the schema's own words when it gives one (`x-hint`), else from the failed keyword."""
    schema = error.schema if isinstance(error.schema, dict) else {}
    if "x-hint" in schema:
        return schema["x-hint"]
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = list(schema.get("properties", {}))
        extra = [k for k in error.instance if k not in allowed]
        for key in extra:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            if close:
                return f"did you mean `{close[0]}`?"
        return "allowed keys: " + ", ".join(allowed) if allowed else None
    if error.validator == "required":
        return f"add `{error.validator_value[0] if len(error.validator_value) == 1 else ', '.join(error.validator_value)}`"
    if error.validator == "enum":
        return "one of: " + ", ".join(map(str, error.validator_value))
    if error.validator == "type":
        return f"expected {error.validator_value}"
    if error.validator == "pattern":
        return f"must match {error.validator_value}"
    return None
