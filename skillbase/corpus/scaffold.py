"""Scaffolds for authors: a new skill folder (`skillbase skills new`) and a new rule with its cases
file (`skillbase rules new`).

Every scaffold starts with a `# yaml-language-server: $schema=…` line pointing at the JSON Schema
published in `skillbase/schemas/`, so editors with the YAML language server complete and check
fields while you type. Placeholders start with `TODO`: the scaffold is valid as written (so the
commands that check it run from the first minute) and `todo_problems()` lists what is left to fill.

    path, warnings = new_skill(corpus, "mem.my_idea", "mem", target_root)     # skills/<cat>/<id>/skill.yaml
    rule_path, cases_path = new_rule("mem.my_idea.strided", "propose", target_rules_dir, skill="mem.my_idea")
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from skillbase.config import builtin_rules_dir, builtin_skills_dir, env_paths, schemas_dir
from skillbase.corpus import search
from skillbase.corpus.model import BUILTIN_ORIGIN, CANONICAL_IDS, Corpus, did_you_mean_suffix
from skillbase.errors import InputError

SKILL_ID = re.compile(r"^[a-z][a-z0-9]*\.[a-z0-9][a-z0-9_]*$")
CATEGORY = re.compile(r"^[a-z][a-z0-9]*$")
RULE_ID = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
TODO = "TODO"


# -- where the schemas are -------------------------------------------------------------------------

def schema_ref(schema_name: str, for_file: Path) -> str:
    """The `$schema=` value for a file about to be written at `for_file`: a path relative to it when
    the file and the published schema share a project folder (a source checkout), else absolute."""
    schema = (schemas_dir() / schema_name).resolve()
    here = for_file.parent.resolve()
    try:
        common = Path(os.path.commonpath([schema, here]))
    except ValueError:          # different drives
        return schema.as_uri()
    if common != Path(common.anchor) and (common / "pyproject.toml").is_file():
        return os.path.relpath(schema, here).replace(os.sep, "/")
    return str(schema)


def modeline(schema_name: str, for_file: Path) -> str:
    return f"# yaml-language-server: $schema={schema_ref(schema_name, for_file)}"


def source_checkout_dir(folder: Path) -> bool:
    """True when a built-in folder sits in a writable source checkout (not in site-packages)."""
    parent = folder.resolve().parent
    return (parent / "pyproject.toml").is_file() and os.access(folder, os.W_OK)


def skill_target(explicit: Iterable[str], group: Iterable[str] = ()) -> Path:
    """The folder a new skill goes to: the one `--skills-dir` given to `skills new` (else to
    `skills`), else the one folder in $SKILLBASE_SKILL_PATH, else the built-in corpus of a source
    checkout. Several folders at one level, or an installed (read-only) corpus, is an InputError."""
    from skillbase.corpus.load import ENV_SKILL_PATH

    levels = ((tuple(explicit), "--skills-dir"), (tuple(group), "skills --skills-dir"),
              (tuple(env_paths(ENV_SKILL_PATH)), f"${ENV_SKILL_PATH}"))
    for candidates, where in levels:
        if len(candidates) == 1:
            return Path(candidates[0]).expanduser()
        if len(candidates) > 1:
            raise InputError(f"several skill folders in {where}: say which one gets the new skill",
                             hint="pass exactly one --skills-dir to `skills new`")
    builtin = builtin_skills_dir()
    if source_checkout_dir(builtin):
        return builtin
    raise InputError("where should the new skill go? the built-in corpus is installed read-only",
                     hint="pass --skills-dir ./my-skills (and keep it in $SKILLBASE_SKILL_PATH)")


def rule_target(rules_dir: str | Path | None) -> Path:
    """The rules folder a new rule goes to: `rules_dir`, else the built-in rules of a source checkout."""
    if rules_dir is not None:
        return Path(rules_dir).expanduser()
    if not source_checkout_dir(builtin_rules_dir()):
        raise InputError("where should the new rule go? the built-in rules are installed read-only",
                         hint="pass --rules-dir ./my-rules")
    return builtin_rules_dir()


# -- skills ----------------------------------------------------------------------------------------

def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def skill_yaml(skill_id: str, category: str, title: str | None, summary: str | None, for_file: Path) -> str:
    title = title or f"{TODO}: a short imperative title"
    summary = summary or f"{TODO}: one sentence saying what the skill does."
    return f"""{modeline("skill.schema.json", for_file)}
# A skill: one piece of expert CUDA optimization knowledge. Every heading is required (except
# related and changelog), in this order. Write in your own words; figures carry a provenance.
# Replace every TODO, then: skillbase skills validate  (docs/writing-skills.md walks through it)
id: {skill_id}
title: {_quote(title)}
category: {category}
status: experimental          # every new skill starts experimental
version: 1                    # bump on any change of meaning (and add a changelog entry)
summary: {_quote(summary)}
what_it_does: >-
  {TODO}: the transformation, in a few sentences.
why_it_helps: >-
  {TODO}: the hardware reason it is faster.
when_to_apply:
  evidence:                   # what in a profile calls for the skill
    - metric: {TODO}_metric_or_vocabulary_name     # an ncu metric, ptxas.<field>, static.<path> or a vocabulary name
      condition: "> 0"        # the threshold, e.g. '< 16' or '> 0.3'
      provenance: proposal    # ncu | guide | GPA | proposal (ours, to calibrate)
      note: "{TODO}: what the metric says about the kernel."
  static_signs:               # what the source looks like when the skill applies
    - "{TODO}: a sign in the source"
when_not_to_apply:
  - "{TODO}: a case where the skill does not help"
how:
  - step: "{TODO}: the first step"
    # code: |                 # an optional small sketch in CUDA C++
    #   ...
parameters: []                # knobs: [{{name, meaning, type, values, default}}]
anti_patterns: []
known_problems: []
expected_gain:
  typical: "{TODO}: the usual range, e.g. 1.2-2x on memory-bound kernels"
  formula: null               # or an expression over vocabulary names (fraction of runtime saved)
  provenance: proposal
risks:
  numerics: "{TODO}: say 'None.' when there is none"
  alignment: "{TODO}"
  occupancy: "{TODO}"
  portability: "{TODO}"
references:
  - title: "{TODO}: a source for the figures"
    where: "{TODO}: a section, page or file (or use url: https://...)"
automation:
  auto_apply: true            # false when applying it changes state outside one launcher call
  mechanical: null            # or {{kind: parameter_sweep, tunables: [...]}} / {{kind: compile_flags, flags: [...]}}
  note: "{TODO}: why the skill is (or is not) applied automatically."
related: []
"""


@dataclass
class NewSkill:
    path: Path
    near: list[search.Hit]   # near duplicates
    method: str           # semantic | lexical | skipped
    threshold: float | None

    def to_json(self) -> dict:
        """`skills new --json`: the new file, its near duplicates and the lines still marked TODO."""
        from skillbase.documents import versioned

        return versioned("skills-new", {"path": str(self.path), "near_duplicates": [h.to_json() for h in self.near],
                                        "method": self.method, "threshold": self.threshold,
                                        "todo_lines": [line for line, _ in todo_problems(self.path)]})


class NewRule(NamedTuple):
    """A scaffolded rule and its cases file."""

    rule: Path
    cases: Path

    def to_json(self) -> dict:
        """`rules new --json`."""
        from skillbase.documents import versioned

        return versioned("rules-new", {"rule": str(self.rule), "cases": str(self.cases)})


def new_skill(corpus: Corpus, skill_id: str, category: str | None, root: Path, *, title: str | None = None,
              summary: str | None = None, check_similar: bool = True, progress=None) -> NewSkill:
    """Write `root/<category>/<id>/skill.yaml`; refuse an id that exists anywhere in `corpus`.
    `progress(message)` hears what the near-duplicate check waits for on first use (the model load)."""
    if not SKILL_ID.match(skill_id):
        raise InputError(f"'{skill_id}' is not a skill id",
                         hint="write <category>.<name> in lower case with _ between words, e.g. mem.coalesce")
    prefix = skill_id.split(".", 1)[0]
    category = category or prefix
    if not CATEGORY.match(category):
        raise InputError(f"'{category}' is not a category", hint="a lower-case word such as mem, smem, cmp")
    if category != prefix:
        raise InputError(f"skill '{skill_id}' cannot be in category '{category}': the category is the id's prefix",
                         hint=f"use --category {prefix}, or rename the skill to {category}.{skill_id.split('.', 1)[1]}")
    existing = corpus.get(skill_id)
    if existing is not None:
        where = "a built-in skill" if existing.origin == BUILTIN_ORIGIN else f"a skill in {existing.origin}"
        raise InputError(f"skill id '{skill_id}' already exists: {where} ({existing.display_path})",
                         hint="ids are unique across the built-in corpus and every skill folder: pick another id")
    if skill_id in CANONICAL_IDS:
        raise InputError(f"'{skill_id}' is a canonical id (reserved for the built-in corpus)",
                         hint="pick another id")
    folder = root / category / skill_id
    path = folder / "skill.yaml"
    if path.exists():
        raise InputError(f"{path} already exists", hint="edit it, or pick another id")
    near, method, threshold = [], "skipped", None
    if check_similar:
        near, method = search.near_duplicates(corpus, skill_id, title or "", summary or "", progress=progress)
        threshold = search.NEAR_DUPLICATE_THRESHOLD if method == "semantic" else search.LEXICAL_THRESHOLD
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(skill_yaml(skill_id, category, title, summary, path), encoding="utf-8")
    return NewSkill(path, near, method, threshold)


# -- rules -----------------------------------------------------------------------------------------

def rule_yaml(rule_id: str, kind: str, skill: str | None, for_file: Path) -> str:
    head = f"""{modeline("rule.schema.json", for_file)}
# A {kind} rule: `when` is an all/any/not tree of expressions over vocabulary names
# (rules/vocabulary.yaml; `skillbase rules validate` checks every name). Cases live beside it in
# {rule_id}.cases.yaml. Replace every TODO (docs/writing-rules.md walks through it).
id: {rule_id}
kind: {kind}
status: experimental
summary: "{TODO}: one line saying what the rule detects."
when:
  all:
    - "dram_pct >= threshold_sol_high"        # {TODO}: the evidence that calls for it
"""
    if kind == "propose":
        body = f"""proposes:
  - skill: {skill}
    score: 0.5                                # 0..1: how strongly the evidence calls for the skill
    speedup: null                             # or an expression: estimated fraction of runtime saved (0..1)
because: "{TODO}: why, with observed values, e.g. DRAM throughput at {{dram_pct:.0f}}%."
references: []
"""
    else:
        body = f"""derives:
  bottleneck: MEMORY_BANDWIDTH                # {TODO}: fact: value (a new fact needs a vocabulary entry)
because: "{TODO}: why, with observed values, e.g. DRAM throughput at {{dram_pct:.0f}}%."
references: []
"""
    return head + body


def cases_yaml(rule_id: str, for_file: Path) -> str:
    return f"""{modeline("cases.schema.json", for_file)}
# Cases for {rule_id}: at least one that must fire and one that must stay quiet, each with a
# one-line reason. `values` are vocabulary values (anything unnamed is missing); `fixture:` names a
# real profile under rules/fixtures/. Run: skillbase rules test --rule {rule_id}
cases:
  - name: fires-{TODO.lower()}
    expect: fire
    reason: "{TODO}: the kernel this case stands for and why the rule must fire."
    values: {{dram_pct: 90}}
  - name: quiet-{TODO.lower()}
    expect: quiet
    reason: "{TODO}: a kernel the rule must leave alone, and why."
    values: {{dram_pct: 20}}
"""


def builtin_rule_ids() -> dict[str, Path]:
    out = {}
    for sub in ("derive", "propose"):
        for path in (builtin_rules_dir() / sub).glob("*.yaml"):
            if not path.name.endswith(".cases.yaml"):
                out[path.stem] = path
    return out


def new_rule(rule_id: str, kind: str, rules_dir: Path, *, skill: str | None = None,
             skill_ids: Iterable[str] = ()) -> NewRule:
    """Write `rules_dir/<kind>/<id>.yaml` and its cases file; refuse an id a built-in rule (or a
    rule in `rules_dir`) already has, and a propose rule whose skill does not exist."""
    if not RULE_ID.match(rule_id):
        raise InputError(f"'{rule_id}' is not a rule id",
                         hint="lower case, digits, '.', '_' and '-', e.g. mem.coalesce.strided-loads")
    if kind not in ("propose", "derive"):
        raise InputError(f"unknown rule kind '{kind}'", hint="propose or derive")
    builtin = builtin_rule_ids()
    if rule_id in builtin:
        raise InputError(f"rule id '{rule_id}' is already a built-in rule ({builtin[rule_id]})",
                         hint="ids are unique across the built-in rules and yours: pick another id")
    for sub in ("derive", "propose"):
        clash = rules_dir / sub / f"{rule_id}.yaml"
        if clash.exists():
            raise InputError(f"{clash} already exists", hint="edit it, or pick another id")
    known = set(skill_ids)
    if kind == "propose":
        if skill is None:   # convention: a proposal rule's id starts with its skill's id
            skill = next((s for s in sorted(known, key=len, reverse=True) if rule_id.startswith(s + ".")), None)
            if skill is None:
                raise InputError(f"which skill does '{rule_id}' propose?",
                                 hint="pass --skill ID, or start the rule id with the skill id (mem.coalesce.strided)")
        if known and skill not in known:
            raise InputError(f"unknown skill '{skill}'" + did_you_mean_suffix(skill, known),
                             hint="create it first (`skillbase skills new`), or add its folder with --skills-dir")
    elif skill is not None:
        raise InputError("--skill is for propose rules", hint="a derive rule sets facts; drop --skill")
    path = rules_dir / kind / f"{rule_id}.yaml"
    cases = rules_dir / kind / f"{rule_id}.cases.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(rule_yaml(rule_id, kind, skill, path), encoding="utf-8")
    cases.write_text(cases_yaml(rule_id, cases), encoding="utf-8")
    return NewRule(path, cases)


# -- what is left to fill --------------------------------------------------------------------------

def todo_problems(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every line that still holds a scaffold placeholder (outside comments)."""
    out = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return out
    for number, line in enumerate(lines, 1):
        code = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
        if TODO in code:
            out.append((number, line.strip()))
    return out
