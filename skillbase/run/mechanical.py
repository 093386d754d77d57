"""Mechanical skill application: parameter sweeps over annotated tunables, and compile flags.

These need no LLM (`optimize --agent none`). A tunable is a `#define` or `constexpr` constant
annotated on the line above it:

    // skillbase: tunable BLOCK_X in {8, 16, 32, 64}
    #define BLOCK_X 16

    // skillbase: tunable UNROLL in {1, 2, 4, 8}
    constexpr int UNROLL = 4;

A sweep proposes other values of the annotated constants (a bounded, deterministic grid); each
variant is an ordinary candidate that the harness builds, verifies and times like any other.
`MechanicalApplier` is the loop's applier for `--agent none`: it applies the skills whose YAML
declares `automation.mechanical` (a parameter sweep, or compile flags).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass

from skillbase.errors import InputError
from skillbase.run.types import ApplyRequest, Candidate, LoopState, Produced

SWEEP = "tune.parameter_sweep"

_ANNOTATION = re.compile(r"//\s*skillbase:\s*tunable\s+(?P<name>[A-Za-z_]\w*)\s+in\s+\{(?P<values>[^}]*)\}")
_DEFINE = re.compile(r"^(?P<head>\s*#\s*define\s+(?P<name>[A-Za-z_]\w*)\s+)(?P<value>[^\s/]+)(?P<tail>.*)$")
_CONSTEXPR = re.compile(r"^(?P<head>\s*(?:static\s+)?constexpr\s+[\w:<> ]+?\s+(?P<name>[A-Za-z_]\w*)\s*=\s*)"
                        r"(?P<value>[^;]+?)(?P<tail>\s*;.*)$")


@dataclass(frozen=True)
class Tunable:
    name: str
    values: tuple[str, ...]
    current: str
    line: int          # 1-based line of the definition


def find_tunables(source: str, path: str = "<source>") -> list[Tunable]:
    """Annotated tunables in a source; an annotation not followed by its definition is an error."""
    lines = source.splitlines()
    found: list[Tunable] = []
    for index, line in enumerate(lines):
        match = _ANNOTATION.search(line)
        if not match:
            continue
        name = match["name"]
        values = tuple(v.strip() for v in match["values"].split(",") if v.strip())
        if not values:
            raise InputError(f"{path}:{index + 1}: tunable {name} lists no values",
                             hint="write e.g. // skillbase: tunable BLOCK in {64, 128, 256}")
        definition = lines[index + 1] if index + 1 < len(lines) else ""
        parsed = _DEFINE.match(definition) or _CONSTEXPR.match(definition)
        if not parsed or parsed["name"] != name:
            raise InputError(f"{path}:{index + 2}: the line after the tunable annotation must define {name}",
                             hint=f"put `#define {name} <value>` or `constexpr int {name} = <value>;` right below it")
        found.append(Tunable(name=name, values=values, current=parsed["value"].strip(), line=index + 2))
    return found


def apply_values(source: str, values: dict[str, str]) -> str:
    """The source with the given tunables set; other lines stay byte-identical."""
    lines = source.splitlines(keepends=True)
    tunables = {t.name: t for t in find_tunables(source)}
    for name, value in values.items():
        if name not in tunables:
            raise InputError(f"{name} is not an annotated tunable (have: {', '.join(sorted(tunables)) or 'none'})")
        index = tunables[name].line - 1
        line = lines[index]
        ending = "\n" if line.endswith("\n") else ""
        parsed = _DEFINE.match(line.rstrip("\n")) or _CONSTEXPR.match(line.rstrip("\n"))
        lines[index] = f"{parsed['head']}{value}{parsed['tail']}{ending}"
    return "".join(lines)


def sweep_grid(tunables: list[Tunable], limit: int = 24) -> list[dict[str, str]]:
    """A deterministic, bounded list of settings other than the current one.

    Single-parameter moves come first (cheap and most informative), then joint settings, in the order
    the annotations list their values; the list is cut at `limit` so compile time stays bounded.
    """
    current = {t.name: t.current for t in tunables}
    ordered: list[dict[str, str]] = []
    for tunable in tunables:
        for value in tunable.values:
            if value != tunable.current:
                ordered.append({**current, tunable.name: value})
    for combination in itertools.product(*(t.values for t in tunables)):
        setting = dict(zip(current, combination, strict=False))
        if sum(setting[n] != current[n] for n in current) >= 2:
            ordered.append(setting)
    unique: list[dict[str, str]] = []
    for setting in ordered:
        if setting not in unique:
            unique.append(setting)
    return unique[:limit]


def changed(setting: dict[str, str], tunables: list[Tunable]) -> dict[str, str]:
    """Only the parameters a setting moves away from their current values (for tabu keys and logs)."""
    current = {t.name: t.current for t in tunables}
    return {name: value for name, value in setting.items() if current.get(name) != value}


class MechanicalApplier:
    """`--agent none`: the skills whose YAML declares a mechanical application.

    `automation.mechanical` of kind `compile_flags` adds its flags; kind `parameter_sweep` sweeps the
    kernel's annotated tunables (those it names, or all for `*`), each setting an ordinary candidate.
    """

    can_repair = False

    def __init__(self, mechanical_of: Callable[[str], dict | None], sweep_limit: int = 24):
        self.mechanical_of = mechanical_of       # skill id -> its automation.mechanical, or None
        self.sweep_limit = sweep_limit

    def _tunables(self, skill: str, source: str) -> list[Tunable]:
        spec = self.mechanical_of(skill) or {}
        names = {t.get("name") for t in spec.get("tunables", [])}
        found = find_tunables(source)
        return found if "*" in names else [t for t in found if t.name in names]

    def applicable(self, skill: str, source: str) -> bool:
        kind = (self.mechanical_of(skill) or {}).get("kind")
        if kind == "compile_flags":
            return True
        if kind == "parameter_sweep":
            return bool(self._tunables(skill, source))
        return False

    def sweep_offer(self, proposed: list[Candidate], source: str) -> Candidate | None:
        """Without an LLM the sweep is always on offer when the kernel declares tunables, even when
        no rule proposed it (it then ranks last)."""
        if any(c.skill == SWEEP for c in proposed) or not self.applicable(SWEEP, source):
            return None
        return Candidate(skill=SWEEP, score=0.0, time_saved_fraction=None, rules=(),
                         because="the kernel declares tunables (mechanical mode offers a sweep)")

    def variants(self, skill: str, params: dict, state: LoopState) -> list[dict]:
        spec = self.mechanical_of(skill) or {}
        if spec.get("kind") != "parameter_sweep":
            return [params]
        tunables = self._tunables(skill, state.best_source)
        limit = min(self.sweep_limit, spec.get("limit") or self.sweep_limit)
        return [changed(s, tunables) for s in sweep_grid(tunables, limit)]

    def produce(self, request: ApplyRequest, state: LoopState) -> Produced:
        spec = self.mechanical_of(request.skill) or {}
        if spec.get("kind") == "parameter_sweep":
            return Produced(source=apply_values(state.best_source, request.params), flags=state.best_flags)
        flags = tuple(dict.fromkeys(state.best_flags + tuple(spec.get("flags", ()))))
        return Produced(source=state.best_source, flags=flags)
