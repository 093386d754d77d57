"""The skill corpus (long-term memory): load, validate and look up `skills/<category>/<id>/skill.yaml`.

A skill folder is named by its id and sits in the folder of its category (the id's prefix):
`skills/mem/mem.coalesce/skill.yaml`, with `examples/` beside it. The built-in corpus ships in the
package; users add folders of the same shape with `extra_dirs` (or `$SKILLBASE_SKILL_PATH`,
separated like `PATH`). Every file is checked against `skillbase/schemas/skill.schema.json` when it
is loaded; each problem is one line naming the file (and line) and the fix.

    corpus = load_corpus()                 # raises InputError on the first problem
    corpus.get("mem.coalesce").data        # the parsed YAML
    skill_ids()                            # the set the rule validator checks `skill:` against
    validate_corpus()                      # every problem and warning, for `skills validate` and CI
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from skillbase.errors import InputError
from skillbase.config import env_paths

BUILTIN_ORIGIN = "built-in"
SKILL_FILE = "skill.yaml"
EXAMPLE_FILES = ("before.cu", "after.cu", "task.yaml")   # an example is complete with these three
ENV_SKILL_PATH = "SKILLBASE_SKILL_PATH"

# The 67 canonical ids (shared/SKILLS.md). Evaluations outside the project refer to them: never
# rename or reuse one; retire it with `status: deprecated`.
CANONICAL_IDS: tuple[str, ...] = (
    # global memory
    "mem.coalesce", "mem.aos_to_soa", "mem.vectorize", "mem.readonly_path", "mem.smem_tiling",
    "mem.transpose_via_smem", "mem.constant_broadcast", "mem.recompute_vs_lut", "mem.kernel_fusion",
    "mem.reduce_precision_storage", "mem.eliminate_local", "mem.cp_async_pipeline",
    "mem.register_prefetch", "mem.l2_persistence", "mem.l2_tile_rasterization", "mem.cache_hints",
    # shared memory
    "smem.pad", "smem.swizzle", "smem.wider_access", "smem.register_cache",
    # compute and instruction-level parallelism
    "cmp.register_tiling", "cmp.unroll", "cmp.reduce_unroll", "cmp.ilp_multi_acc",
    "cmp.strength_reduction", "cmp.fast_math", "cmp.fp64_to_fp32", "cmp.fma_contract",
    "cmp.hoist_invariants", "cmp.tensor_core_mma", "cmp.mixed_precision_bf16", "cmp.use_library",
    "cmp.thread_coarsening", "cmp.warp_tiling",
    # control flow and synchronisation
    "cf.reduce_divergence", "cf.branch_elimination",
    "sync.reduce_barriers", "sync.reduce_membar", "sync.cooperative_groups",
    # launch configuration and occupancy
    "launch.block_size", "launch.fill_gpu", "launch.tail_effect", "launch.grid_stride",
    "occ.launch_bounds_regs", "occ.smem_budget", "occ.achieved_gap", "occ.decrease_coarsen",
    # reductions and atomics
    "red.warp_shuffle", "red.hierarchical_atomics", "red.parallelize_row",
    "atom.warp_aggregated", "atom.smem_privatization",
    # algorithms
    "alg.split_k_stream_k", "alg.persistent_kernel", "alg.spmv_csr_vector_merge",
    "alg.stencil_temporal_blocking", "alg.online_softmax_flash", "alg.single_pass_scan_lookback",
    "alg.fewer_passes",
    # host and system
    "sys.cuda_graphs", "sys.streams_overlap",
    # Hopper (sm_90 / sm_90a)
    "hop.tma_load", "hop.wgmma", "hop.clusters_dsmem", "hop.warp_specialization_setmaxnreg", "hop.fp8",
    # tuning
    "tune.parameter_sweep",
)

# Skills whose application changes state outside one launcher call; the harness forbids that
# while timing, so they must never be applied automatically (corpus validation enforces it).
ADVICE_ONLY_IDS: frozenset[str] = frozenset({"mem.l2_persistence", "sys.cuda_graphs", "sys.streams_overlap"})

# The fix to suggest when a field is missing or malformed (semgrep-style: every error says how to fix it).
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


# -- data model ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Problem:
    """One finding about one file, printed on one line: `path[:line]: message (hint)`."""

    path: str
    message: str
    hint: str | None = None
    line: int | None = None
    severity: str = "error"          # error | warning

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}" + (f" ({self.hint})" if self.hint else "")

    def to_json(self) -> dict:
        return {"path": self.path, "line": self.line, "severity": self.severity,
                "message": self.message, "hint": self.hint}


@dataclass(frozen=True)
class Skill:
    """A validated skill: its parsed YAML (`data`), where it lives and where it came from."""

    id: str
    data: dict[str, Any]
    folder: Path
    origin: str                      # "built-in" or the user folder it was found in
    display_path: str                # the path shown in messages (relative where possible)

    @property
    def path(self) -> Path:
        return self.folder / SKILL_FILE

    @property
    def category(self) -> str:
        return self.data["category"]

    @property
    def status(self) -> str:
        return self.data["status"]

    @property
    def version(self) -> int:
        return self.data["version"]

    @property
    def title(self) -> str:
        return self.data["title"]

    @property
    def summary(self) -> str:
        return " ".join(self.data["summary"].split())

    @property
    def auto_apply(self) -> bool:
        return bool(self.data["automation"]["auto_apply"])

    @property
    def mechanical(self) -> dict | None:
        return self.data["automation"].get("mechanical")

    @property
    def examples_dir(self) -> Path:
        return self.folder / "examples"

    @property
    def has_example(self) -> bool:
        """True when a before/after pair exists (the task spec is checked by `validate`)."""
        return all((self.examples_dir / name).is_file() for name in ("before.cu", "after.cu"))

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def to_json(self) -> dict:
        return {"id": self.id, "title": self.title, "category": self.category, "status": self.status,
                "version": self.version, "summary": self.summary, "auto_apply": self.auto_apply,
                "mechanical": (self.mechanical or {}).get("kind"), "has_example": self.has_example,
                "origin": self.origin, "path": str(self.path)}


@dataclass
class Corpus:
    """All skills by id, plus the problems found while loading (empty when loaded strictly)."""

    skills: dict[str, Skill] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    broken: set[str] = field(default_factory=set)     # folder names of skill files that failed to load

    def __contains__(self, skill_id: object) -> bool:
        return skill_id in self.skills

    def __iter__(self) -> Iterator[Skill]:
        return iter(self.skills[i] for i in sorted(self.skills))

    def __len__(self) -> int:
        return len(self.skills)

    def get(self, skill_id: str) -> Skill | None:
        return self.skills.get(skill_id)

    def require(self, skill_id: str) -> Skill:
        """The skill, or an InputError with a did-you-mean."""
        skill = self.skills.get(skill_id)
        if skill is None:
            raise InputError(f"unknown skill '{skill_id}'" + _did_you_mean(skill_id, self.skills),
                             hint="`skillbase skills list` shows every id")
        return skill

    def ids(self) -> set[str]:
        return set(self.skills)

    def missing_canonical(self) -> list[str]:
        """Canonical ids with no skill in the corpus, in catalogue order."""
        return [i for i in CANONICAL_IDS if i not in self.skills]

    @property
    def digest(self) -> str:
        """sha256 over every skill file (id order): a run records which corpus it decided with."""
        h = hashlib.sha256()
        for skill in self:
            h.update(skill.id.encode() + b"\0" + _read_bytes(skill.path) + b"\0")
        return h.hexdigest()


# -- loading ---------------------------------------------------------------------------------------

def skill_dirs(extra_dirs: Iterable[str | Path] = ()) -> list[tuple[Path, str]]:
    """(folder, origin) pairs to search: the built-in corpus, `$SKILLBASE_SKILL_PATH`, then `extra_dirs`."""
    from skillbase.config import builtin_skills_dir

    dirs: list[tuple[Path, str]] = [(builtin_skills_dir(), BUILTIN_ORIGIN)]
    env = env_paths(ENV_SKILL_PATH)
    seen = {dirs[0][0].resolve()}
    for entry in [*env, *extra_dirs]:
        folder = Path(entry).expanduser()
        if folder.resolve() in seen:
            continue
        seen.add(folder.resolve())
        dirs.append((folder, str(entry)))
    return dirs


def load_corpus(extra_dirs: Iterable[str | Path] = (), *, strict: bool = True) -> Corpus:
    """Load and validate every skill. Strict: the first problem raises a one-line InputError
    (with a count of the others); otherwise the problems are kept in `corpus.problems` and the
    files that had them are left out."""
    corpus = Corpus()
    where: dict[str, str] = {}
    for root, origin in skill_dirs(extra_dirs):
        if not root.is_dir():
            corpus.problems.append(Problem(str(root), "skill folder does not exist",
                                           f"create it or remove it from {ENV_SKILL_PATH} / --skills-dir"))
            continue
        for path in sorted(root.glob(f"*/*/{SKILL_FILE}")):
            display = _display(path, root, origin)
            skill, problems = _load_one(path, display, origin)
            corpus.problems.extend(problems)
            if skill is None:
                corpus.broken.add(path.parent.name)
                continue
            if skill.id in corpus.skills:
                if corpus.skills[skill.id].origin == BUILTIN_ORIGIN:
                    message = (f"skill id '{skill.id}' is a built-in skill ({where[skill.id]}): "
                               "a user skill cannot replace it")
                    hint = "rename yours (id and folder), or propose the change to the built-in skill"
                else:
                    message = f"duplicate skill id '{skill.id}', already defined in {where[skill.id]}"
                    hint = "ids are unique across all skill folders: rename one (or delete the copy)"
                corpus.problems.append(Problem(display, message, hint))
                continue
            corpus.skills[skill.id] = skill
            where[skill.id] = display
        for stray in sorted(root.glob(f"*/{SKILL_FILE}")) + sorted(root.glob(SKILL_FILE)):
            corpus.problems.append(Problem(_display(stray, root, origin), "skill file outside a skill folder",
                                           "move it to <category>/<id>/skill.yaml"))
    errors = [p for p in corpus.problems if p.severity == "error"]
    if strict and errors:
        more = f"; {len(errors) - 1} more problem(s): run `skillbase skills validate`" if len(errors) > 1 else ""
        first = errors[0]
        raise InputError(f"{first}{more}" if not first.hint else
                         f"{Problem(first.path, first.message, None, first.line)}{more}", hint=first.hint)
    return corpus


def skill_ids(extra_dirs: Iterable[str | Path] = ()) -> set[str]:
    """Ids of every loadable skill (lenient: a broken file elsewhere does not hide the others)."""
    return load_corpus(extra_dirs, strict=False).ids()


def validate_corpus(extra_dirs: Iterable[str | Path] = (), *, canonical: bool = True,
                    examples: bool = True) -> tuple[Corpus, list[Problem]]:
    """Every problem in the corpus: per-file schema and naming problems, duplicates, unknown
    `related` ids, advice-only skills marked automatic, missing canonical ids (errors) and
    missing or incomplete examples (an incomplete folder is an error, a missing one a warning)."""
    corpus = load_corpus(extra_dirs, strict=False)
    problems = list(corpus.problems)
    for skill in corpus:
        for other in skill.data.get("related") or []:
            if other not in corpus and other not in corpus.broken:
                problems.append(Problem(skill.display_path, f"related skill '{other}' does not exist"
                                        + _did_you_mean(other, corpus.skills), "fix the id or remove it"))
        if skill.id in ADVICE_ONLY_IDS and skill.auto_apply:
            problems.append(Problem(skill.display_path, "automation.auto_apply must be false for this skill",
                                    "it changes state outside one launcher call, which the harness forbids while timing"))
        if examples:
            problems.extend(_example_problems(skill))
    if canonical:
        missing = [i for i in corpus.missing_canonical() if i not in corpus.broken]
        if missing:
            problems.append(Problem("skills/", f"{len(missing)} canonical skill(s) missing: {', '.join(missing)}",
                                    "add skills/<category>/<id>/skill.yaml for each (see shared SKILLS.md)"))
    return corpus, problems


def _example_problems(skill: Skill) -> list[Problem]:
    folder = skill.examples_dir
    rel = skill.display_path.rsplit("/", 1)[0] + "/examples"
    if not folder.is_dir():
        return [Problem(rel, "no examples/ folder", "add before.cu, after.cu and task.yaml", severity="warning")]
    missing = [name for name in EXAMPLE_FILES if not (folder / name).is_file()]
    if missing:
        return [Problem(rel, f"example incomplete: missing {', '.join(missing)}",
                        "an example needs before.cu, after.cu and task.yaml")]
    return []


# One parse + validation per file version (path, size, mtime): loading twice in a process is free.
_CACHE: dict[tuple[str, int, int, str], tuple[Skill | None, list[Problem]]] = {}


def _load_one(path: Path, display: str, origin: str) -> tuple[Skill | None, list[Problem]]:
    try:
        stat = path.stat()
    except OSError as error:
        return None, [Problem(display, f"cannot read ({error.strerror})")]
    key = (str(path), stat.st_size, stat.st_mtime_ns, display)
    if key not in _CACHE:
        _CACHE[key] = _parse_and_check(path, display, origin)
    return _CACHE[key]


def _parse_and_check(path: Path, display: str, origin: str) -> tuple[Skill | None, list[Problem]]:
    data, lines, problem = _parse_yaml(path, display)
    if problem is not None:
        return None, [problem]
    if not isinstance(data, dict):
        return None, [Problem(display, "a skill file must be a YAML mapping of its headings",
                              "start with `id: <category>.<name>`; see skills/mem/mem.coalesce/skill.yaml")]
    validator = _validator()
    if validator is not None:
        problems = [_schema_problem(error, display, lines) for error in validator.iter_errors(data)]
    else:   # no jsonschema (a bare GPU image): still insist on every heading
        problems = [Problem(display, f"field '{key}' is required", FIELD_HINTS.get(key), 1)
                    for key in schema()["required"] if key not in data]
    problems.sort(key=lambda p: (p.line or 0, p.message))
    problems.extend(_naming_problems(data, path, display, lines))
    if problems:
        return None, problems
    return Skill(id=data["id"], data=data, folder=path.parent, origin=origin, display_path=display), []


def _naming_problems(data: dict, path: Path, display: str, lines: dict[str, int]) -> list[Problem]:
    skill_id = data.get("id")
    if not isinstance(skill_id, str):
        return []
    folder, category_folder = path.parent.name, path.parent.parent.name
    prefix = skill_id.split(".", 1)[0]
    problems = []
    if skill_id != folder:
        problems.append(Problem(display, f"id '{skill_id}' does not match its folder '{folder}'",
                                f"rename the folder to {skill_id}/ or fix the id", lines.get("id")))
    if prefix != category_folder:
        problems.append(Problem(display, f"skill '{skill_id}' is in category folder '{category_folder}/'",
                                f"move it to {prefix}/{skill_id}/", lines.get("id")))
    if isinstance(data.get("category"), str) and data["category"] != prefix:
        problems.append(Problem(display, f"category '{data['category']}' is not the id's prefix '{prefix}'",
                                f"write category: {prefix}", lines.get("category")))
    return problems


# -- YAML with line numbers ------------------------------------------------------------------------

def _parse_yaml(path: Path, display: str) -> tuple[Any, dict[str, int], Problem | None]:
    import yaml

    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return None, {}, Problem(display, f"cannot read ({error})")
    loader = loader_cls(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = " ".join(str(error.problem or error.context or "invalid YAML").split())
        return None, {}, Problem(display, f"invalid YAML: {problem}", "fix the indentation, quotes or colons",
                                 line=mark.line + 1 if mark else None)
    except yaml.YAMLError as error:
        return None, {}, Problem(display, f"invalid YAML: {str(error).splitlines()[0]}")
    finally:
        loader.dispose()
    lines: dict[str, int] = {}
    if node is not None:
        _walk(node, "", lines)
    return data, lines, None


def _walk(node: Any, path: str, lines: dict[str, int]) -> None:
    import yaml

    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            _walk(value_node, f"{path}.{key_node.value}" if path else str(key_node.value), lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, child in enumerate(node.value):
            _walk(child, f"{path}[{index}]", lines)


# -- schema errors as one line with a fix ----------------------------------------------------------

_VALIDATOR = None


def schema() -> dict:
    from skillbase.config import schemas_dir

    return json.loads((schemas_dir() / "skill.schema.json").read_text(encoding="utf-8"))


def _validator():
    """The compiled schema validator, or None when jsonschema is not installed (then only the
    required headings are checked; `skills validate` in CI always has jsonschema)."""
    global _VALIDATOR
    if _VALIDATOR is None:
        try:
            import jsonschema      # imported on first validation only: keeps CLI start-up fast
        except ImportError:
            return None
        _VALIDATOR = jsonschema.Draft202012Validator(schema())
    return _VALIDATOR


def _dotted(parts: Iterable[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _line_of(lines: dict[str, int], dotted: str) -> int | None:
    while dotted:
        if dotted in lines:
            return lines[dotted]
        cut = max(dotted.rfind("."), dotted.rfind("["))
        dotted = dotted[:cut] if cut > 0 else ""
    return lines.get("")


def _hint_for(dotted: str) -> str | None:
    # the most specific named part: 'when_to_apply.evidence[0].provenance' -> 'provenance'
    for part in reversed(dotted.replace("[", ".[").split(".")):
        if part and not part.startswith("[") and part in FIELD_HINTS:
            return FIELD_HINTS[part]
    return None


def _schema_problem(error: Any, display: str, lines: dict[str, int]) -> Problem:
    where = _dotted(error.absolute_path)
    kind, value, instance = error.validator, error.validator_value, error.instance
    field_name = f"field '{where}'" if where else "the file"
    hint = _hint_for(where)
    if kind == "required":
        missing = [k for k in value if isinstance(instance, dict) and k not in instance]
        name = _dotted([*error.absolute_path, missing[0]]) if missing else where
        return Problem(display, f"field '{name}' is required", FIELD_HINTS.get(missing[0] if missing else "")
                       or _hint_for(name), _line_of(lines, where))
    if kind == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = [k for k in instance if k not in allowed] if isinstance(instance, dict) else []
        name = extra[0] if extra else "?"
        full = _dotted([*error.absolute_path, name])
        return Problem(display, f"unknown field '{full}'" + _did_you_mean(name, allowed),
                       f"allowed here: {', '.join(allowed)}", _line_of(lines, full))
    if kind == "type":
        wanted = value if isinstance(value, list) else [value]
        words = " or ".join(_TYPE_WORDS.get(w, w) for w in wanted)
        extra = ""
        if isinstance(instance, dict) and "string" in wanted:
            extra = " (a ': ' inside plain text makes YAML read a mapping: quote the text)"
        return Problem(display, f"{field_name} must be {words}, got {_TYPE_WORDS.get(_json_type(instance), _json_type(instance))}"
                       + extra, hint, _line_of(lines, where))
    if kind in ("enum", "const"):
        options = value if kind == "enum" else [value]
        return Problem(display, f"{field_name} is {instance!r}, expected {' or '.join(map(str, options))}"
                       + _did_you_mean(str(instance), [str(o) for o in options]), hint, _line_of(lines, where))
    if kind == "oneOf" and where.endswith("mechanical"):
        kinds = ("parameter_sweep", "compile_flags")
        if isinstance(instance, dict) and instance.get("kind") not in kinds:
            return Problem(display, f"field '{where}.kind' is {instance.get('kind')!r}, expected "
                           f"{' or '.join(kinds)}" + _did_you_mean(str(instance.get("kind")), kinds),
                           FIELD_HINTS["mechanical"], _line_of(lines, where + ".kind"))
        branch = [e for e in error.context if isinstance(instance, dict) and
                  (e.schema.get("properties", {}).get("kind", {}).get("const") == instance.get("kind")
                   or e.validator == "const")]
        deepest = [e for e in error.context if e.validator != "const" and e.validator != "type"] or branch
        if deepest:
            return _schema_problem(deepest[0], display, lines)
    if kind == "anyOf" and where.startswith("references"):
        return Problem(display, f"{field_name} needs a url or a where", FIELD_HINTS["references"],
                       _line_of(lines, where))
    if kind in ("minItems", "minLength"):
        return Problem(display, f"{field_name} is empty or too short", hint, _line_of(lines, where))
    if kind == "maxLength":
        return Problem(display, f"{field_name} is longer than {value} characters",
                       hint or "shorten it", _line_of(lines, where))
    if kind == "pattern":
        return Problem(display, f"{field_name} is {instance!r}, which does not match {value}", hint,
                       _line_of(lines, where))
    message = " ".join(str(error.message).split())
    if len(message) > 160:
        message = message[:157] + "..."
    return Problem(display, f"{field_name}: {message}", hint, _line_of(lines, where))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {dict: "object", list: "array", str: "string", float: "number"}.get(type(value), type(value).__name__)


# -- small helpers ---------------------------------------------------------------------------------

def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def suggest(word: str, choices: Iterable[str]) -> str | None:
    """The closest of `choices` to `word`, or None."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def _display(path: Path, root: Path, origin: str) -> str:
    rel = path.relative_to(root).as_posix()
    if origin == BUILTIN_ORIGIN:
        return f"skills/{rel}"
    return f"{origin.rstrip('/')}/{rel}"


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""
