"""Every setting skillbase reads from the environment, and every default path, in one place.

`VARIABLES` is the table of the `SKILLBASE_*` variables (name, meaning, default); `docs/config.md`
is generated from it and a test checks that no code reads a variable this table does not list.
Paths: the built-in data shipped in the wheel (rules, skills, bench suite, examples, schemas), the
user's cache (platformdirs: `~/.cache/skillbase` on Linux) and data folder (`~/.local/share/skillbase`:
the run store and bench results).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import platformdirs

APP = "skillbase"


@dataclass(frozen=True)
class Variable:
    name: str
    meaning: str
    default: str


VARIABLES: tuple[Variable, ...] = (
    Variable("SKILLBASE_STORE", "the run store folder (`--store` overrides it)",
             "`<data>/` (`~/.local/share/skillbase`)"),
    Variable("SKILLBASE_CACHE", "the cache folder: builds, candidates, profiles, parsed rules, search index",
             "`~/.cache/skillbase` ($XDG_CACHE_HOME honoured)"),
    Variable("SKILLBASE_NO_CACHE", "`1` bypasses the parsed-rule cache (every `advise` re-parses the rules)", "unset"),
    Variable("SKILLBASE_RULES_PATH", "extra rule folders, `:`-separated (`--extra-rules` adds to them)", "none"),
    Variable("SKILLBASE_SKILL_PATH", "extra skill folders, `:`-separated (`--skills-dir` adds to them)", "none"),
    Variable("SKILLBASE_BENCH_DIR", "the bench suite folder (`--dir` overrides it)",
             "the suite shipped in the package"),
    Variable("SKILLBASE_BENCH_RESULTS", "where bench results are written and read (`--results` overrides it)",
             "`<data>/results`"),
    Variable("SKILLBASE_VENDOR_INCLUDE", "extra `-I` folders for kernels that include vendor headers, `:`-separated",
             "the CUDA toolkit's"),
    Variable("SKILLBASE_VENDOR_LIB", "extra `-L` (and rpath) folders for kernels that link vendor libraries",
             "the CUDA toolkit's"),
    Variable("SKILLBASE_MODEL", "the model for `--agent openai` (`--model` overrides it)", "gpt-4.1"),
    Variable("SKILLBASE_LLM_TIMEOUT", "seconds per LLM request", "180"),
    Variable("SKILLBASE_LLM_RETRIES", "retries of a failed LLM request", "3"),
)
# Read only by the test suite (documented there, not settings of the tool).
TEST_VARIABLES = ("SKILLBASE_UPDATE_GOLDEN", "SKILLBASE_NVCC_JOBS", "SKILLBASE_EXAMPLES_REPORT")


def env(name: str) -> str | None:
    """A listed variable's value; empty counts as unset."""
    if name not in _NAMES:
        raise KeyError(f"{name} is not a skillbase setting (add it to config.VARIABLES)")
    return os.environ.get(name) or None


def env_paths(name: str) -> list[str]:
    """The non-empty entries of a path-list variable ($SKILLBASE_SKILL_PATH, ...)."""
    return [p for p in (env(name) or "").split(os.pathsep) if p]


_NAMES = frozenset(v.name for v in VARIABLES)


# -- data shipped in the package ---------------------------------------------------------------

def _package_dir(package: str) -> Path:
    return Path(str(resources.files(package)))


def builtin_rules_dir() -> Path:
    """The shipped `rules/` folder: vocabulary, derivation and proposal rules, their cases."""
    return _package_dir("skillbase.builtin_rules")


def builtin_skills_dir() -> Path:
    """The shipped `skills/` folder: one `<category>/<id>/skill.yaml` per skill."""
    return _package_dir("skillbase.builtin_skills")


def builtin_bench_dir() -> Path:
    """The shipped bench suite: `ops/<operator>/` with op.yaml, kernels and task specs."""
    return _package_dir("skillbase.builtin_bench")


def builtin_examples_dir() -> Path:
    """The shipped examples: `<name>/<name>.cu` + `.task.yaml` (+ a saved H200 profile)."""
    return _package_dir("skillbase.builtin_examples")


def schemas_dir() -> Path:
    """JSON Schemas published with the package (evidence, task spec, skill, rule, cases)."""
    return _package_dir("skillbase") / "schemas"


# -- the user's folders ----------------------------------------------------------------------------

def cache_root() -> Path:
    """`$SKILLBASE_CACHE`, else the platform's user cache folder: builds, candidates, profiles, indexes."""
    explicit = env("SKILLBASE_CACHE")
    return Path(explicit).expanduser() if explicit else platformdirs.user_cache_path(APP)


def data_root() -> Path:
    """The platform's user data folder (`~/.local/share/skillbase` on Linux)."""
    return platformdirs.user_data_path(APP)


def store_location(explicit: str | Path | None = None) -> Path:
    """The run store: an explicit path (`--store`), `$SKILLBASE_STORE`, then the user data folder."""
    chosen = explicit or env("SKILLBASE_STORE")
    return Path(chosen).expanduser() if chosen else data_root()


def bench_dir(explicit: str | Path | None = None) -> Path:
    """The bench suite: `--dir`, `$SKILLBASE_BENCH_DIR`, else the suite shipped in the package."""
    chosen = explicit or env("SKILLBASE_BENCH_DIR")
    return Path(chosen).expanduser() if chosen else builtin_bench_dir()


def bench_results_root(explicit: str | Path | None = None) -> Path:
    """Bench results (`<root>/<gpu>/bench/results.json`): `--results`, `$SKILLBASE_BENCH_RESULTS`,
    else `<data>/results` (never inside the installed package)."""
    chosen = explicit or env("SKILLBASE_BENCH_RESULTS")
    return Path(chosen).expanduser() if chosen else data_root() / "results"


def rule_cache_enabled() -> bool:
    return (env("SKILLBASE_NO_CACHE") or "0") == "0"
