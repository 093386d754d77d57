"""What makes a skill file and a corpus valid, as one-line problems that name the file, the line and the fix.

`file_problems` checks one parsed skill.yaml (schema, id = folder, category folder); `corpus_problems`
checks what needs every skill (related ids, advice-only skills, canonical coverage, examples). The
schema is `skillbase/schemas/skill.schema.json`, checked by the one validator in
`skillbase.datafile.schemas`; the wording here is the skill author's (`field 'how' is required`,
with a fix from `FIELD_HINTS`), semgrep-style: every error says how to fix it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillbase.corpus.model import ADVICE_ONLY_IDS, EXAMPLE_FILES, Corpus, Skill, did_you_mean_suffix
from skillbase.datafile.problems import Problem
from skillbase.datafile.schemas import dotted, validator
from skillbase.datafile.yamldoc import YamlDoc

# The fix to suggest when a field is missing or malformed.
FIELD_HINTS: dict[str, str] = {
    "id": "write the canonical id, equal to the folder name, e.g. mem.coalesce",
    "title": "add a short imperative title",
    "category": "write the id's prefix, e.g. mem for mem.coalesce",
    "status": "new skills start as experimental",
    "version": "start at 1 and bump it on any semantic change",
    "summary": "add one sentence saying what the skill does",
    "what_it_does": "describe the transformation in a few sentences",
    "why_it_helps": "give the hardware reason it is faster",
    "when_to_apply": "add evidence: [{metric, condition, provenance}] and static_signs: [...]",
    "evidence": "list {metric: <ncu name or expression>, condition: '< 16', provenance: ncu|guide|GPA|proposal}",
    "static_signs": "list what the source looks like when the skill applies (may be empty)",
    "provenance": "one of ncu, guide, GPA, proposal",
    "when_not_to_apply": "list the cases where the skill does not help",
    "how": "add an ordered list of steps: - step: ... (code: optional sketch)",
    "step": "each item of how is {step: text, code: optional sketch}",
    "parameters": "list {name, meaning, values, default}, or [] when there are none",
    "anti_patterns": "list common mistakes, or []",
    "known_problems": "list known problems, or []",
    "expected_gain": "add {typical: '1.2-2x ...', formula: null or an expression, provenance: ...}",
    "typical": "give the usual range of gains as text",
    "risks": "add numerics, alignment, occupancy and portability (say 'None.' when there is none)",
    "references": "list {title, url} or {title, where}",
    "automation": "add {auto_apply: true|false, mechanical: null, note: why}",
    "auto_apply": "true, or false for skills that change state outside one launcher call",
    "mechanical": "null, {kind: parameter_sweep, tunables: [...]} or {kind: compile_flags, flags: [...]}",
    "note": "say why the skill is (or is not) applied automatically",
    "meaning": "say what the parameter controls",
    "name": "give the parameter a C-identifier name",
    "related": "list ids of other skills",
}

_TYPE_WORDS = {"array": "a list", "object": "a mapping", "string": "text", "integer": "an integer",
               "boolean": "true or false", "null": "null", "number": "a number"}


# -- one file ----------------------------------------------------------------------------------------

def file_problems(doc: YamlDoc, path: Path, display: str) -> list[Problem]:
    """Every problem of one parsed skill file at `path` (shown as `display`): schema, then naming."""
    if not isinstance(doc.data, dict):
        return [Problem(display, None, "a skill file must be a YAML mapping of its headings",
                        "start with `id: <category>.<name>`; see skills/mem/mem.coalesce/skill.yaml")]
    problems = [_schema_problem(error, display, doc) for error in validator("skill").iter_errors(doc.data)]
    problems.sort(key=lambda p: (p.line or 0, p.message))
    return problems + _naming_problems(doc, path, display)


def _naming_problems(doc: YamlDoc, path: Path, display: str) -> list[Problem]:
    data = doc.data
    skill_id = data.get("id")
    if not isinstance(skill_id, str):
        return []
    folder, category_folder = path.parent.name, path.parent.parent.name
    prefix = skill_id.split(".", 1)[0]
    problems = []
    if skill_id != folder:
        problems.append(Problem(display, doc.line("id"), f"id '{skill_id}' does not match its folder '{folder}'",
                                f"rename the folder to {skill_id}/ or fix the id"))
    if prefix != category_folder:
        problems.append(Problem(display, doc.line("id"),
                                f"skill '{skill_id}' is in category folder '{category_folder}/'",
                                f"move it to {prefix}/{skill_id}/"))
    if isinstance(data.get("category"), str) and data["category"] != prefix:
        problems.append(Problem(display, doc.line("category"),
                                f"category '{data['category']}' is not the id's prefix '{prefix}'",
                                f"write category: {prefix}"))
    return problems


def _hint_for(where: str) -> str | None:
    # the most specific named part: 'when_to_apply.evidence[0].provenance' -> 'provenance'
    for part in reversed(where.replace("[", ".[").split(".")):
        if part and not part.startswith("[") and part in FIELD_HINTS:
            return FIELD_HINTS[part]
    return None


def _schema_problem(error: Any, display: str, doc: YamlDoc) -> Problem:
    """One jsonschema error in the skill author's words, at the line of the field it is about."""
    where = dotted(error.absolute_path)
    kind, value, instance = error.validator, error.validator_value, error.instance
    field_name = f"field '{where}'" if where else "the file"
    hint = _hint_for(where)
    if kind == "required":
        missing = [k for k in value if isinstance(instance, dict) and k not in instance]
        name = dotted([*error.absolute_path, missing[0]]) if missing else where
        return Problem(display, doc.line(where), f"field '{name}' is required",
                       FIELD_HINTS.get(missing[0] if missing else "") or _hint_for(name))
    if kind == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = [k for k in instance if k not in allowed] if isinstance(instance, dict) else []
        name = extra[0] if extra else "?"
        full = dotted([*error.absolute_path, name])
        return Problem(display, doc.line(full), f"unknown field '{full}'" + did_you_mean_suffix(name, allowed),
                       f"allowed here: {', '.join(allowed)}")
    if kind == "type":
        wanted = value if isinstance(value, list) else [value]
        words = " or ".join(_TYPE_WORDS.get(w, w) for w in wanted)
        extra = ""
        if isinstance(instance, dict) and "string" in wanted:
            extra = " (a ': ' inside plain text makes YAML read a mapping: quote the text)"
        got = _json_type(instance)
        return Problem(display, doc.line(where),
                       f"{field_name} must be {words}, got {_TYPE_WORDS.get(got, got)}" + extra, hint)
    if kind in ("enum", "const"):
        options = value if kind == "enum" else [value]
        expected = " or ".join(map(str, options))
        return Problem(display, doc.line(where), f"{field_name} is {instance!r}, expected {expected}"
                       + did_you_mean_suffix(str(instance), options), hint)
    if kind == "oneOf" and where.endswith("mechanical"):
        kinds = ("parameter_sweep", "compile_flags")
        if isinstance(instance, dict) and instance.get("kind") not in kinds:
            return Problem(display, doc.line(where + ".kind"), f"field '{where}.kind' is {instance.get('kind')!r}, "
                           f"expected {' or '.join(kinds)}" + did_you_mean_suffix(str(instance.get("kind")), kinds),
                           FIELD_HINTS["mechanical"])
        branch = [e for e in error.context if isinstance(instance, dict) and
                  (e.schema.get("properties", {}).get("kind", {}).get("const") == instance.get("kind")
                   or e.validator == "const")]
        deepest = [e for e in error.context if e.validator != "const" and e.validator != "type"] or branch
        if deepest:
            return _schema_problem(deepest[0], display, doc)
    if kind == "anyOf" and where.startswith("references"):
        return Problem(display, doc.line(where), f"{field_name} needs a url or a where", FIELD_HINTS["references"])
    if kind in ("minItems", "minLength"):
        return Problem(display, doc.line(where), f"{field_name} is empty or too short", hint)
    if kind == "maxLength":
        return Problem(display, doc.line(where), f"{field_name} is longer than {value} characters",
                       hint or "shorten it")
    if kind == "pattern":
        return Problem(display, doc.line(where), f"{field_name} is {instance!r}, which does not match {value}", hint)
    message = " ".join(str(error.message).split())
    if len(message) > 160:
        message = message[:157] + "..."
    return Problem(display, doc.line(where), f"{field_name}: {message}", hint)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {dict: "object", list: "array", str: "string", float: "number"}.get(type(value), type(value).__name__)


# -- the whole corpus --------------------------------------------------------------------------------

def corpus_problems(corpus: Corpus, *, canonical: bool = True, examples: bool = True) -> list[Problem]:
    """What needs every skill: unknown `related` ids, advice-only skills marked automatic, missing
    canonical ids (errors) and missing or incomplete examples (an incomplete folder is an error, a
    missing one a warning)."""
    problems = []
    for skill in corpus:
        for other in skill.related:
            if other not in corpus and other not in corpus.broken:
                problems.append(Problem(skill.display_path, None, f"related skill '{other}' does not exist"
                                        + did_you_mean_suffix(other, corpus.skills), "fix the id or remove it"))
        if skill.id in ADVICE_ONLY_IDS and skill.auto_apply:
            problems.append(Problem(skill.display_path, None, "automation.auto_apply must be false for this skill",
                                    "it changes state outside one launcher call, "
                                    "which the harness forbids while timing"))
        if examples:
            problems.extend(example_problems(skill))
    if canonical:
        missing = [i for i in corpus.missing_canonical() if i not in corpus.broken]
        if missing:
            problems.append(Problem("skills/", None, f"{len(missing)} canonical skill(s) missing: {', '.join(missing)}",
                                    "add skills/<category>/<id>/skill.yaml for each (see shared SKILLS.md)"))
    return problems


def example_problems(skill: Skill) -> list[Problem]:
    folder = skill.examples_dir
    rel = skill.display_path.rsplit("/", 1)[0] + "/examples"
    if not folder.is_dir():
        return [Problem(rel, None, "no examples/ folder", "add before.cu, after.cu and task.yaml", severity="warning")]
    missing = [name for name in EXAMPLE_FILES if not (folder / name).is_file()]
    if missing:
        return [Problem(rel, None, f"example incomplete: missing {', '.join(missing)}",
                        "an example needs before.cu, after.cu and task.yaml")]
    return []
