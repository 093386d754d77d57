"""The one JSON Schema validator: every data file (rules, vocabulary, thresholds, cases, skills,
task specs, evidence) is checked against `skillbase/schemas/<name>.schema.json` through here.

    validator("skill").iter_errors(data)     # the compiled Draft 2020-12 validator, built once
    check(doc, "rule")                        # every violation as a `file:line: message (fix hint)` Problem

The schemas are published with the package. jsonschema is imported only when a file is
(re)validated, never on a cached `advise`.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from skillbase.datafile.problems import Problem, did_you_mean
from skillbase.datafile.yamldoc import YamlDoc, join


@functools.cache
def schema(name: str) -> dict[str, Any]:
    """The parsed `<name>.schema.json` (skill, rule, vocabulary, thresholds, cases, task, evidence)."""
    from skillbase.config import schemas_dir

    return json.loads((schemas_dir() / f"{name}.schema.json").read_text(encoding="utf-8"))


@functools.cache
def validator(name: str):
    """The compiled validator of schema `name` (a jsonschema Draft202012Validator)."""
    import jsonschema

    return jsonschema.Draft202012Validator(schema(name))


def dotted(parts) -> str:
    """A jsonschema error path (`error.absolute_path`) in the trace notation: `how[0].step`."""
    path = ""
    for part in parts:
        path = join(path, part)
    return path


def check(doc: YamlDoc, name: str) -> list[Problem]:
    """Every schema violation in `doc` against schema `name`, one problem each."""
    problems = []
    errors = sorted(validator(name).iter_errors(doc.data), key=lambda e: [str(p) for p in e.absolute_path])
    seen = set()
    for error in errors:
        # `oneOf`/`anyOf` failures are reported once, at their most specific sub-error
        error = _best(error)
        path = dotted(error.absolute_path)
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
    schema_part = error.schema if isinstance(error.schema, dict) else {}
    if "x-hint" in schema_part:
        return schema_part["x-hint"]
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = list(schema_part.get("properties", {}))
        for key in (k for k in error.instance if k not in allowed):
            close = did_you_mean(key, allowed)
            if close:
                return close
        return "allowed keys: " + ", ".join(allowed) if allowed else None
    if error.validator == "required":
        missing = error.validator_value
        return f"add `{missing[0] if len(missing) == 1 else ', '.join(missing)}`"
    if error.validator == "enum":
        return "one of: " + ", ".join(map(str, error.validator_value))
    if error.validator == "type":
        return f"expected {error.validator_value}"
    if error.validator == "pattern":
        return f"must match {error.validator_value}"
    return None
