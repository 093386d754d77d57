"""Click commands attached to existing groups: `skills search`, `skills new` and `rules new`.

    skills.add_command(search_cmds.search)        # skillbase skills search "QUERY" [--k N] [--json]
    skills.add_command(search_cmds.new_skill)     # skillbase skills new ID [--category C]
    rules.add_command(search_cmds.new_rule)       # skillbase rules new ID [--kind propose] [--skill S]

`skills search` needs the optional extra (`pip install 'skillbase[search]'`); without it the command
fails with one line naming the extra. The others work without it (`skills new` then looks for
near duplicates lexically). Heavy imports happen inside the commands.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from skillbase.commands.options import json_option
from skillbase.errors import InputError

_skills_dir = click.option(
    "--skills-dir", "skills_dirs", multiple=True, type=click.Path(file_okay=False),
    help="Extra skill folder (<category>/<id>/skill.yaml inside); repeatable. Also $SKILLBASE_SKILL_PATH.")


def _group_dirs(ctx: click.Context) -> tuple[str, ...]:
    """--skills-dir given to the `skills` group (it stores them in ctx.obj)."""
    obj = ctx.obj
    return tuple(obj.get("skills_dirs", ())) if isinstance(obj, dict) else ()


def _env_dirs() -> list[str]:
    from skillbase.corpus.load import ENV_SKILL_PATH

    from skillbase.config import env_paths

    return env_paths(ENV_SKILL_PATH)


# -- skills search ---------------------------------------------------------------------------------

@click.command("search")
@click.argument("query", nargs=-1, required=True)
@click.option("--k", "k", type=click.IntRange(1, 500), default=5, show_default=True, help="How many skills to show.")
@click.option("--rebuild", is_flag=True, help="Rebuild the cached index even if the corpus did not change.")
@_skills_dir
@json_option
@click.pass_context
def search(ctx: click.Context, query: tuple[str, ...], k: int, rebuild: bool, skills_dirs: tuple[str, ...],
           as_json: bool) -> None:
    """Find skills by meaning: sentence embeddings (all-MiniLM-L6-v2) in a faiss index, plus exact
    words. The index is cached and rebuilt when the corpus changes. Needs skillbase[search]."""
    import time

    from skillbase.corpus import search as engine

    engine.require_extra()
    from skillbase.corpus.load import load_corpus

    dirs = _group_dirs(ctx) + skills_dirs
    corpus = load_corpus(dirs, strict=False)
    start = time.perf_counter()
    index = engine.SkillIndex.for_corpus(corpus, rebuild=rebuild)
    ready = time.perf_counter() - start
    text = " ".join(query)
    hits = index.search(text, k)
    if as_json:
        click.echo(json.dumps({"query": text, "k": k, "index": {"key": index.key, "built": index.built,
                                                                   "seconds": round(ready, 3), "reused": index.reused,
                                                                   "sections": len(index.rows)},
                               "hits": [h.to_json() for h in hits]}, indent=2))
    else:
        if index.built:
            click.echo(f"(index built for {len(corpus)} skills in {ready:.1f}s; cached)", err=True)
        width = max((len(h.skill_id) for h in hits), default=2)
        for rank, hit in enumerate(hits, 1):
            origin = "" if hit.origin == "built-in" else f"  [{hit.origin}]"
            click.echo(f"{rank:>2}. {hit.score:5.2f}  {hit.skill_id.ljust(width)}  {hit.title}{origin}")
    for problem in corpus.problems:
        if problem.severity == "error":
            click.echo(f"warning: skipped {problem}", err=True)


# -- skills new ------------------------------------------------------------------------------------

def _skill_target(explicit: tuple[str, ...], group: tuple[str, ...]) -> Path:
    from skillbase.config import builtin_skills_dir
    from skillbase.corpus.scaffold import source_checkout_dir

    for candidates, where in ((explicit, "--skills-dir"), (group, "skills --skills-dir"), (tuple(_env_dirs()), "$SKILLBASE_SKILL_PATH")):
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


@click.command("new")
@click.argument("skill_id")
@click.option("--category", default=None, help="The id's prefix (mem, smem, cmp, ... or your own); default: the prefix.")
@click.option("--title", default=None, help="A short imperative title (also used for the near-duplicate check).")
@click.option("--summary", default=None, help="One sentence (also used for the near-duplicate check).")
@click.option("--no-similar", is_flag=True, help="Skip the near-duplicate check.")
@_skills_dir
@json_option
@click.pass_context
def new_skill(ctx: click.Context, skill_id: str, category: str | None, title: str | None, summary: str | None,
              no_similar: bool, skills_dirs: tuple[str, ...], as_json: bool) -> None:
    """Scaffold skills/<category>/<id>/skill.yaml from the schema, and warn about near duplicates.

    The new skill goes to the one --skills-dir given (here or to `skills`), else the one folder in
    $SKILLBASE_SKILL_PATH, else the built-in corpus of a source checkout."""
    from skillbase.corpus.load import load_corpus
    from skillbase.corpus.scaffold import new_skill as scaffold, todo_problems

    group = _group_dirs(ctx)
    target = _skill_target(skills_dirs, group)
    corpus = load_corpus([*group, *skills_dirs, *([target] if target.is_dir() else [])], strict=False)
    made = scaffold(corpus, skill_id, category, target, title=title, summary=summary, check_similar=not no_similar)
    todos = todo_problems(made.path)
    if as_json:
        click.echo(json.dumps({"path": str(made.path), "near_duplicates": [h.to_json() for h in made.near],
                               "method": made.method, "threshold": made.threshold,
                               "todo_lines": [line for line, _ in todos]}, indent=2))
        return
    click.echo(f"created {made.path}")
    for hit in made.near:
        click.echo(f"warning: near duplicate of {hit.skill_id} ({made.method} similarity {hit.score:.2f} >= "
                   f"{made.threshold:.2f}): {hit.title} [{hit.path}]", err=True)
    if made.near:
        click.echo("  extend that skill instead, or say in what_it_does how yours differs and list it in related",
                   err=True)
    if made.method == "lexical" and not no_similar:
        click.echo("note: near duplicates were checked by name only; pip install 'skillbase[search]' checks meaning",
                   err=True)
    flag = "" if target.resolve() == _builtin_resolved() else f" --skills-dir {target}"
    click.echo(f"next: fill the {len(todos)} TODO line(s), then `skillbase skills{flag} validate` "
               "(docs/writing-skills.md)")


def _builtin_resolved() -> Path:
    from skillbase.config import builtin_skills_dir

    return builtin_skills_dir().resolve()


# -- rules new -------------------------------------------------------------------------------------

@click.command("new")
@click.argument("rule_id")
@click.option("--kind", type=click.Choice(["propose", "derive"]), default="propose", show_default=True)
@click.option("--skill", default=None, help="The skill a propose rule proposes (default: the id's prefix, if a skill).")
@click.option("--rules-dir", "rules_dir", type=click.Path(file_okay=False), default=None,
              help="Your rules folder (gets <kind>/<id>.yaml); default: the built-in rules of a source checkout.")
@_skills_dir
@json_option
def new_rule(rule_id: str, kind: str, skill: str | None, rules_dir: str | None, skills_dirs: tuple[str, ...],
             as_json: bool) -> None:
    """Scaffold rules/<kind>/<id>.yaml and its cases file, checked against the schemas."""
    from skillbase.corpus.load import skill_ids
    from skillbase.config import builtin_rules_dir
    from skillbase.corpus.scaffold import new_rule as scaffold, source_checkout_dir

    if rules_dir is None:
        if not source_checkout_dir(builtin_rules_dir()):
            raise InputError("where should the new rule go? the built-in rules are installed read-only",
                             hint="pass --rules-dir ./my-rules")
        target = builtin_rules_dir()
    else:
        target = Path(rules_dir).expanduser()
    path, cases = scaffold(rule_id, kind, target, skill=skill, skill_ids=skill_ids(skills_dirs))
    if as_json:
        click.echo(json.dumps({"rule": str(path), "cases": str(cases)}, indent=2))
        return
    click.echo(f"created {path}\ncreated {cases}")
    flag = "" if target.resolve() == builtin_rules_dir().resolve() else f" --rules-dir {target}"
    env = ""
    if skills_dirs:   # the rule validator finds user skills through $SKILLBASE_SKILL_PATH
        from skillbase.corpus.load import ENV_SKILL_PATH

        env = f"{ENV_SKILL_PATH}={os.pathsep.join([*_env_dirs(), *skills_dirs])} "
    click.echo(f"next: write `when` and the cases, then `{env}skillbase rules validate{flag}` and "
               f"`{env}skillbase rules test{flag} --rule {rule_id}` (docs/writing-rules.md)")
