"""Every setting skillbase reads from the environment or a configuration file, and every default
path, in one place.

`VARIABLES` is the table of the settings: each has a `SKILLBASE_*` variable and a key in the
configuration file (`[tool.skillbase]` of a `pyproject.toml`, or a `skillbase.toml`, the nearest one
found upward from the working directory, as ruff finds its own). A command's options can be given
defaults there too (`[tool.skillbase.advise]`, `top = 10`). Precedence: a command-line option, then
the variable, then the file, then the default. `docs/config.md` is generated from this table and a
test checks that no code reads a variable this table does not list.
Paths: the built-in data shipped in the wheel (rules, skills, bench suite, examples, schemas), the
user's cache (platformdirs: `~/.cache/skillbase` on Linux) and data folder (`~/.local/share/skillbase`:
the run store and bench results).
"""

from __future__ import annotations

import logging
import os
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import platformdirs

from skillbase.datafile.problems import did_you_mean
from skillbase.errors import EnvironmentProblem, InputError

APP = "skillbase"
CONFIG_FILES = ("skillbase.toml", ".skillbase.toml", "pyproject.toml")   # looked for in this order per folder
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Variable:
    name: str
    meaning: str
    default: str
    kind: str = "text"   # text | path | paths | int | number | flag: how a file value is read

    @property
    def key(self) -> str:
        """Its key in the configuration file: SKILLBASE_RULES_PATH -> rules-path."""
        return self.name.removeprefix("SKILLBASE_").lower().replace("_", "-")


VARIABLES: tuple[Variable, ...] = (
    Variable("SKILLBASE_STORE", "the run store folder (`--store` overrides it)",
             "`<data>/` (`~/.local/share/skillbase`)", "path"),
    Variable("SKILLBASE_CACHE", "the cache folder: builds, candidates, profiles, parsed rules, search index; "
             "created 0700, refused if another user owns it or others may write into it",
             "`~/.cache/skillbase` ($XDG_CACHE_HOME honoured)", "path"),
    Variable("SKILLBASE_NO_CACHE", "`1` bypasses the parsed-rule cache (every `advise` re-parses the rules)", "unset",
             "flag"),
    Variable("SKILLBASE_RULES_PATH", "extra rule folders, `:`-separated (`--extra-rules` adds to them)", "none",
             "paths"),
    Variable("SKILLBASE_SKILL_PATH", "extra skill folders, `:`-separated (`--skills-dir` adds to them)", "none",
             "paths"),
    Variable("SKILLBASE_BENCH_DIR", "the bench suite folder (`--dir` overrides it)",
             "the suite shipped in the package", "path"),
    Variable("SKILLBASE_BENCH_RESULTS", "where bench results are written and read (`--results` overrides it)",
             "`<data>/results`", "path"),
    Variable("SKILLBASE_VENDOR_INCLUDE", "extra `-I` folders for kernels that include vendor headers, `:`-separated",
             "the CUDA toolkit's", "paths"),
    Variable("SKILLBASE_VENDOR_LIB", "extra `-L` (and rpath) folders for kernels that link vendor libraries",
             "the CUDA toolkit's", "paths"),
    Variable("SKILLBASE_MODEL", "the model for `--agent openai` (`--model` overrides it)", "gpt-4.1"),
    Variable("SKILLBASE_LLM_TIMEOUT", "seconds per LLM request", "180", "number"),
    Variable("SKILLBASE_LLM_RETRIES", "retries of a failed LLM request", "3", "int"),
    Variable("SKILLBASE_TIMING_SHARED_SLOTS", "experiment (issue 16): `1` times baseline and candidate on one shared "
             "set of buffer slots instead of a set each (`TimePlan.shared_slots`; an explicit `time_plan` wins)",
             "unset", "flag"),
    Variable("SKILLBASE_GPU_LOCK_LOG", "debugging: a file each exclusive section of the per-GPU lock is appended to "
             "(`LOCK PID START END`, epoch seconds), to check that timed phases never overlapped", "unset", "path"),
)
# Read only by the test suite (documented there, not settings of the tool).
TEST_VARIABLES = ("SKILLBASE_UPDATE_GOLDEN", "SKILLBASE_NVCC_JOBS", "SKILLBASE_EXAMPLES_REPORT")


def env(name: str) -> str | None:
    """A listed setting's value: its variable, else its key in the configuration file (as text:
    folders joined with `:`, relative paths resolved against the file's folder); empty counts as unset."""
    if name not in _NAMES:
        raise KeyError(f"{name} is not a skillbase setting (add it to config.VARIABLES)")
    return os.environ.get(name) or _file_value(_NAMES[name])


def env_paths(name: str) -> list[str]:
    """The non-empty entries of a path-list setting ($SKILLBASE_SKILL_PATH, ...)."""
    return [p for p in (env(name) or "").split(os.pathsep) if p]


_NAMES = {v.name: v for v in VARIABLES}
_KEYS = {v.key: v for v in VARIABLES}


# -- the configuration file ----------------------------------------------------------------------

@dataclass(frozen=True)
class ConfigFile:
    """The settings table of one file: `settings` by key, `commands` the option tables by command path."""

    path: Path
    settings: dict[str, Any]
    commands: dict[tuple[str, ...], dict[str, Any]]

    def table_name(self, command: tuple[str, ...]) -> str:
        """How the file names a command's table: `tool.skillbase.advise` (pyproject) or `advise`."""
        return ".".join(("tool", "skillbase", *command) if self.path.name == "pyproject.toml" else command)

    def resolve(self, value: str) -> str:
        """A path in the file, relative to the file's folder (as ruff reads its own paths)."""
        path = Path(value).expanduser()
        return str(path if path.is_absolute() else (self.path.parent / path).resolve())


@dataclass(frozen=True)
class Effective:
    """One setting as `skillbase config` shows it: its value and where that came from."""

    key: str
    variable: str | None
    value: Any
    source: str          # "environment", "file" or "default"
    where: str | None    # the variable's name or the file's path

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "variable": self.variable, "value": self.value, "source": self.source,
                "where": self.where}


def find_config_file(start: Path | None = None) -> Path | None:
    """The nearest `skillbase.toml`, `.skillbase.toml` or `pyproject.toml` with a `[tool.skillbase]`
    table, from `start` (the working directory) upward."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        for name in CONFIG_FILES:
            candidate = folder / name
            if candidate.is_file() and (name != "pyproject.toml" or _has_tool_table(candidate)):
                return candidate
    return None


def _has_tool_table(path: Path) -> bool:
    # env() asks on every call: parse a project's pyproject.toml once per version of the file
    stamp = (path, path.stat().st_mtime_ns)
    if stamp not in _has_table:
        _has_table[stamp] = "skillbase" in _read_toml(path).get("tool", {})
    return _has_table[stamp]


_has_table: dict[tuple[Path, int], bool] = {}


_parsed: dict[tuple[Path, int], ConfigFile] = {}


def load_config_file(start: Path | None = None) -> ConfigFile | None:
    """The configuration file that applies here, parsed and checked (None when there is none)."""
    path = find_config_file(start)
    if path is None:
        return None
    stamp = (path, path.stat().st_mtime_ns)
    if stamp not in _parsed:
        data = _read_toml(path)
        table = data.get("tool", {}).get("skillbase", {}) if path.name == "pyproject.toml" else data
        _parsed[stamp] = _check(path, table)
        log.debug("configuration file %s", path)
    return _parsed[stamp]


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not valid TOML: {error}", "fix the file, or move it aside") from None


def _check(path: Path, table: dict[str, Any]) -> ConfigFile:
    settings, commands = {}, {}
    for key, value in table.items():
        if isinstance(value, dict):
            _command_tables(path, (key,), value, commands)
        elif key in _KEYS:
            settings[key] = _typed(path, _KEYS[key], value)
        else:
            raise InputError(f"{path}: `{key}` is not a skillbase setting",
                             did_you_mean(key, _KEYS) or f"the settings are: {', '.join(sorted(_KEYS))}")
    return ConfigFile(path, settings, commands)


def _command_tables(path: Path, where: tuple[str, ...], table: dict[str, Any], out: dict) -> None:
    # [tool.skillbase.rules.test] nests a group's sub-command; plain values are that command's options
    options = {k: v for k, v in table.items() if not isinstance(v, dict)}
    if options:
        out[where] = options
    for key, value in table.items():
        if isinstance(value, dict):
            _command_tables(path, (*where, key), value, out)


def _typed(path: Path, variable: Variable, value: Any) -> Any:
    kinds = {"text": str, "path": str, "paths": (list, str), "int": int, "number": (int, float), "flag": bool}
    if isinstance(value, bool) and variable.kind != "flag" or not isinstance(value, kinds[variable.kind]):
        example = {"paths": '["my_rules", "~/rules"]', "flag": "true", "int": "3", "number": "180"}.get(
            variable.kind, '"…"')
        raise InputError(f"{path}: `{variable.key}` should be {variable.kind.replace('text', 'a string')}, "
                         f"not {value!r}", f"e.g. {variable.key} = {example}")
    if variable.kind == "paths" and isinstance(value, list) and not all(isinstance(v, str) for v in value):
        raise InputError(f"{path}: `{variable.key}` should be a list of folders", f'e.g. {variable.key} = ["rules"]')
    return value


def _file_value(variable: Variable) -> str | None:
    found = load_config_file()
    if found is None or variable.key not in found.settings:
        return None
    value = found.settings[variable.key]
    if variable.kind == "flag":
        return "1" if value else None
    if variable.kind == "path":
        return found.resolve(value)
    if variable.kind == "paths":
        entries = value if isinstance(value, list) else value.split(os.pathsep)
        return os.pathsep.join(found.resolve(v) for v in entries if v) or None
    return str(value)


def settings_document(start: Path | None = None) -> dict[str, Any]:
    """`skillbase config --json`: the file that applies (if any) and every effective setting."""
    found = load_config_file(start)
    from skillbase.documents import versioned

    return versioned("config", {"file": str(found.path) if found else None, "looked_for": list(CONFIG_FILES),
                                "settings": [s.as_dict() for s in effective_settings(start)]})


def effective_settings(start: Path | None = None) -> list[Effective]:
    """Every setting of `VARIABLES` and every command option the file sets, with where it came from."""
    found = load_config_file(start)
    shown = []
    for v in VARIABLES:
        if os.environ.get(v.name):
            shown.append(Effective(v.key, v.name, os.environ[v.name], "environment", v.name))
        elif found is not None and v.key in found.settings:
            shown.append(Effective(v.key, v.name, _file_value(v), "file", str(found.path)))
        else:
            shown.append(Effective(v.key, v.name, None, "default", v.default))
    if found is not None:
        for command, options in found.commands.items():
            shown += [Effective(f"{'.'.join(command)}.{k}", None, value, "file", str(found.path))
                      for k, value in options.items()]
    return shown


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


def private_dir(path: Path) -> Path:
    """`path`, created private to the user (0700) when absent. Refused (EnvironmentProblem) when it
    belongs to someone else or others may write into it: the caches hold code that runs (built
    libraries) and parsed rules, under names anyone can compute from public files."""
    import stat

    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.lstat()
    except OSError as error:
        raise EnvironmentProblem(f"cannot create the cache folder {path} ({error.strerror or error})",
                                 hint="set SKILLBASE_CACHE to a writable folder") from None
    others_write = stat.S_IMODE(info.st_mode) & 0o022
    foreign = hasattr(os, "getuid") and info.st_uid != os.getuid()
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode) or others_write or foreign:
        raise EnvironmentProblem(f"the cache folder {path} is not private to you (owner uid {info.st_uid}, mode "
                                 f"{stat.S_IMODE(info.st_mode):o}); files planted there would run as your code",
                                 hint=f"chmod 700 {path}, or set SKILLBASE_CACHE to a folder of your own")
    return path


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


def timing_shared_slots() -> bool:
    """$SKILLBASE_TIMING_SHARED_SLOTS / `timing-shared-slots`: the shared-slots timing experiment is on."""
    return (env("SKILLBASE_TIMING_SHARED_SLOTS") or "0") != "0"
