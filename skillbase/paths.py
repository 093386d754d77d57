"""Where the built-in corpus lives (found from any working directory, installed or editable), and
where skillbase keeps its caches."""

from __future__ import annotations

import os
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


def env_paths(variable: str) -> list[str]:
    """The non-empty entries of a path-list environment variable ($SKILLBASE_SKILL_PATH, ...)."""
    return [p for p in os.environ.get(variable, "").split(os.pathsep) if p]


def cache_root() -> Path:
    """`$SKILLBASE_CACHE`, else `~/.cache/skillbase`: builds, candidates, profiles, peaks, indexes."""
    root = os.environ.get("SKILLBASE_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "skillbase"
