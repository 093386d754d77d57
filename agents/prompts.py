"""Versioned prompt templates (`agents/prompts/<role>.v<N>.md`) and their rendering.

Templates use `{name}` placeholders; rendering replaces only the names it is given, so CUDA code
full of braces passes through untouched. A run records the template's name and version, and the
digest of the rendered prompt, so a changed prompt is always visible in `explain`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources

from skillbase.errors import InputError

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
_NAME = re.compile(r"^(?P<role>[a-z_]+)\.v(?P<version>\d+)\.md$")


@dataclass(frozen=True)
class PromptTemplate:
    role: str
    version: int
    text: str

    @property
    def name(self) -> str:
        return f"{self.role}.v{self.version}"

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:12]

    def placeholders(self) -> set[str]:
        return set(_PLACEHOLDER.findall(self.text))

    def render(self, **values: str) -> str:
        missing = self.placeholders() - set(values)
        if missing:
            raise InputError(f"prompt {self.name} needs values for {sorted(missing)}")
        return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), self.text)


def load_prompt(role: str, version: int | None = None) -> PromptTemplate:
    """The given version of a role's template, or its newest."""
    folder = resources.files("skillbase.agents") / "prompts"
    found: dict[int, str] = {}
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match and match["role"] == role:
            found[int(match["version"])] = entry.read_text(encoding="utf-8")
    if not found:
        raise InputError(f"no prompt template for role {role!r} in {folder}")
    chosen = version if version is not None else max(found)
    if chosen not in found:
        raise InputError(f"prompt {role}.v{chosen} does not exist (have: {', '.join(f'v{v}' for v in sorted(found))})")
    return PromptTemplate(role=role, version=chosen, text=found[chosen])
