"""Where the built-in corpus lives, found from any working directory (installed or editable)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def _package_dir(package: str) -> Path:
    return Path(str(resources.files(package)))


def builtin_rules_dir() -> Path:
    """The shipped `rules/` folder: vocabulary, derivation and proposal rules, their cases."""
    return _package_dir("skillbase.builtin_rules")


def builtin_skills_dir() -> Path:
    """The shipped `skills/` folder: one `<category>/<id>/skill.yaml` per skill."""
    return _package_dir("skillbase.builtin_skills")


def schemas_dir() -> Path:
    """JSON Schemas published with the package (evidence, task spec, skill, rule, cases)."""
    return _package_dir("skillbase") / "schemas"
