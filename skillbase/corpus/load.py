"""Finding and loading the skill corpus (long-term memory): `skills/<category>/<id>/skill.yaml`.

A skill folder is named by its id and sits in the folder of its category (the id's prefix):
`skills/mem/mem.coalesce/skill.yaml`, with `examples/` beside it. The built-in corpus ships in the
package; users add folders of the same shape with `extra_dirs` (or `$SKILLBASE_SKILL_PATH`,
separated like `PATH`). Every file is checked (corpus/validate.py) when it is loaded; each problem
is one line naming the file (and line) and the fix.

    corpus = load_corpus()                 # raises InputError on the first problem
    corpus.get("mem.coalesce").data        # the parsed YAML
    skill_ids()                            # the set the rule validator checks `skill:` against
    validate_corpus()                      # every problem and warning, for `skills validate` and CI
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from skillbase.config import builtin_skills_dir, env_paths
from skillbase.corpus.model import BUILTIN_ORIGIN, SKILL_FILE, Corpus, Skill
from skillbase.corpus.validate import corpus_problems, file_problems
from skillbase.datafile.problems import Problem
from skillbase.datafile.yamldoc import YamlSyntaxError, load_yaml
from skillbase.errors import InputError

ENV_SKILL_PATH = "SKILLBASE_SKILL_PATH"


# -- loading ---------------------------------------------------------------------------------------

def skill_dirs(extra_dirs: Iterable[str | Path] = ()) -> list[tuple[Path, str]]:
    """(folder, origin) pairs to search: the built-in corpus, `$SKILLBASE_SKILL_PATH`, then `extra_dirs`."""
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
            corpus.problems.append(Problem(str(root), None, "skill folder does not exist",
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
                corpus.problems.append(Problem(display, None, message, hint))
                continue
            corpus.skills[skill.id] = skill
            where[skill.id] = display
        for stray in sorted(root.glob(f"*/{SKILL_FILE}")) + sorted(root.glob(SKILL_FILE)):
            corpus.problems.append(Problem(_display(stray, root, origin), None, "skill file outside a skill folder",
                                           "move it to <category>/<id>/skill.yaml"))
    errors = [p for p in corpus.problems if p.severity == "error"]
    if strict and errors:
        more = f"; {len(errors) - 1} more problem(s): run `skillbase skills validate`" if len(errors) > 1 else ""
        first = errors[0]
        # the hint goes to the error's own hint line, not into its message
        raise InputError(f"{first.where}: {first.message}{more}", hint=first.hint)
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
    return corpus, corpus.problems + corpus_problems(corpus, canonical=canonical, examples=examples)


# One parse + validation per file version (path, size, mtime): loading twice in a process is free.
_CACHE: dict[tuple[str, int, int, str], tuple[Skill | None, list[Problem]]] = {}


def _load_one(path: Path, display: str, origin: str) -> tuple[Skill | None, list[Problem]]:
    try:
        stat = path.stat()
    except OSError as error:
        return None, [Problem(display, None, f"cannot read ({error.strerror})")]
    key = (str(path), stat.st_size, stat.st_mtime_ns, display)
    if key not in _CACHE:
        _CACHE[key] = _parse_and_check(path, display, origin)
    return _CACHE[key]


def _parse_and_check(path: Path, display: str, origin: str) -> tuple[Skill | None, list[Problem]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return None, [Problem(display, None, f"cannot read ({error})")]
    try:
        doc = load_yaml(path, text)
    except YamlSyntaxError as error:
        return None, [Problem(display, error.line, f"invalid YAML: {' '.join(error.problem.split())}", error.hint)]
    problems = file_problems(doc, path, display)
    if problems:
        return None, problems
    return Skill(id=doc.data["id"], data=doc.data, folder=path.parent, origin=origin, display_path=display), []


def _display(path: Path, root: Path, origin: str) -> str:
    rel = path.relative_to(root).as_posix()
    if origin == BUILTIN_ORIGIN:
        return f"skills/{rel}"
    return f"{origin.rstrip('/')}/{rel}"
