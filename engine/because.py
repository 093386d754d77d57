"""`because` templates: the sentence a rule prints when it fires, filled with observed values.

A template is text with `{name}` or `{name:spec}` fields; `{{` and `}}` are literal braces. A name
is a bare vocabulary name: no indexing, no attributes, no conversions, because `str.format` would
walk `{x.__class__...}` all the way to `os.environ` and rule folders are shared between users.
A spec is one of a few number formats (`.2f`, `.0%`, `,`, `g`...); the engine formats each value
itself and cuts it to a bounded length, so `{x:>1000000000}` cannot build a gigabyte string.
The same parser checks a template when its rule loads (`rules validate`) and again when it is
rendered, so a template that never went through validation still cannot reach into objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from skillbase.errors import InputError

MAX_TEMPLATE_CHARS = 1000
MAX_VALUE_CHARS = 120
MAX_RENDERED_CHARS = 2000
# optional thousands separator, optional precision 0-6, optional type: `,` `.2f` `.0%` `,.0f` `g` `d` `e`
_SPEC = re.compile(r",?(?:\.[0-6])?[dfeg%]?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SPEC_HINT = "write {name} or {name:SPEC} with SPEC one of .Nf .N% .Ne g d , (N from 0 to 6); {{ and }} for braces"


class TemplateError(InputError):
    """A `because` template outside the grammar above."""


@dataclass(frozen=True)
class Field:
    name: str
    spec: str


def parse(template: str) -> list[str | Field]:
    """The template's literal texts and fields, in order; TemplateError names the first bad field."""
    if not isinstance(template, str):
        raise TemplateError("`because` must be a string", SPEC_HINT)
    if len(template) > MAX_TEMPLATE_CHARS:
        raise TemplateError(f"`because` is {len(template)} characters long (at most {MAX_TEMPLATE_CHARS})",
                            "say why in one or two sentences")
    parts: list[str | Field] = []
    text: list[str] = []
    index = 0
    while index < len(template):
        char = template[index]
        if char in "{}" and template[index + 1: index + 2] == char:
            text.append(char)
            index += 2
            continue
        if char == "}":
            raise TemplateError("`because` has a `}` without its `{`", SPEC_HINT)
        if char != "{":
            text.append(char)
            index += 1
            continue
        end = template.find("}", index)
        if end < 0:
            raise TemplateError("`because` has a `{` without its `}`", SPEC_HINT)
        body = template[index + 1: end]
        name, _, spec = body.partition(":")
        if not name:
            raise TemplateError("`because` uses a positional `{}`", "name the value: {mem_pct:.0f}")
        if not _NAME.fullmatch(name):
            raise TemplateError(f"`because` field `{{{body[:40]}}}` is not a bare name",
                                "a field is a vocabulary name, without [index], .attribute or !conversion")
        if not _SPEC.fullmatch(spec):
            raise TemplateError(f"`because` field `{{{body[:40]}}}` has an unsupported format `{spec[:20]}`",
                                SPEC_HINT)
        if text:
            parts.append("".join(text))
            text = []
        parts.append(Field(name, spec))
        index = end + 1
    if text:
        parts.append("".join(text))
    return parts


def names(template: str) -> list[str]:
    """The names a valid template reads, each once, in order of first use."""
    out: list[str] = []
    for part in parse(template):
        if isinstance(part, Field) and part.name not in out:
            out.append(part.name)
    return out


def format_value(value: Any, spec: str) -> str:
    """One value as the template asks; a spec that does not fit the value's type prints it plainly."""
    try:
        if spec and isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                text = format(value, spec)
            except ValueError:   # `d` of a float, say: the plain value is still worth printing
                text = str(value)
        else:
            text = str(value)
    except ValueError:   # an int too long for str() (Python's digit limit)
        text = "<a very large number>"
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def fill(template: str, values: dict[str, Any], absent: Any = None) -> str:
    """`template` with each field's value (`absent` for a name not in `values`), bounded in length.
    A template outside the grammar renders as a note saying so, never by str.format."""
    try:
        parts = parse(template)
    except TemplateError as error:
        return f"(because template not rendered: {error.message})"
    out = "".join(part if isinstance(part, str) else format_value(values.get(part.name, absent), part.spec)
                  for part in parts)
    return out if len(out) <= MAX_RENDERED_CHARS else out[: MAX_RENDERED_CHARS - 1] + "…"
