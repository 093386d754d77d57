"""`skillbase skills`: list, show, validate, verify, search and scaffold skills (over `skillbase.corpus`).

`skills show ID` renders a skill under its fixed headings (like `ruff rule X`) and names the
rules that propose it; `skills list --json` is the machine-readable catalogue; `skills validate`
is what CI runs (schema, naming, duplicates, canonical coverage, examples); `skills search` needs
the optional extra (`pip install 'skillbase[search]'`); `skills new` scaffolds a skill folder.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import click

from skillbase import ui
from skillbase.commands.options import json_option, skills_dir_option
from skillbase.errors import SkillbaseError

STATUSES = ("experimental", "stable", "deprecated")


class ValidationFailed(SkillbaseError):
    """`skills validate` found errors: exit 1, like a linter (2 stays for bad input)."""

    exit_code = 1


@click.group("skills")
@skills_dir_option
@click.pass_context
def skills(ctx: click.Context, skills_dirs: tuple[str, ...]) -> None:
    """List, show, validate, verify, search and scaffold skills (the long-term memory)."""
    ctx.ensure_object(dict)
    ctx.obj["skills_dirs"] = skills_dirs


def _dirs(ctx: click.Context, *more: str) -> tuple[str, ...]:
    """--skills-dir given to the group (kept in ctx.obj), then those given to the command."""
    return tuple((ctx.obj or {}).get("skills_dirs", ())) + more


@skills.command("list")
@click.option("--category", default=None, help="Only this category (the id's prefix: mem, smem, cmp, ...).")
@click.option("--status", type=click.Choice(STATUSES), default=None, help="Only skills in this state.")
@json_option
@click.pass_context
def list_skills(ctx: click.Context, category: str | None, status: str | None, as_json: bool) -> None:
    """The catalogue: id, category, status, auto-apply, example, origin."""
    from skillbase.corpus.load import load_corpus

    corpus = load_corpus(_dirs(ctx), strict=False)
    rows = corpus.select(category, status)
    if as_json:
        from skillbase.corpus.show import catalogue_json

        click.echo(json.dumps(catalogue_json(rows), indent=2))
    else:
        table = [("id", "category", "status", "auto-apply", "example", "origin")]
        for s in rows:
            auto = ("yes" if s.auto_apply else "no (advice)") + (f", {s.mechanical['kind']}" if s.mechanical else "")
            table.append((s.id, s.category, s.status, auto, "yes" if s.has_example else "no", s.origin))
        widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
        for index, row in enumerate(table):
            click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
            if index == 0:
                click.echo("  ".join("-" * w for w in widths))
        click.echo(f"\n{len(rows)} skill(s)")
    _warn_skipped(corpus)


def _warn_skipped(corpus) -> None:
    for problem in corpus.problems:
        if problem.severity == "error":
            click.echo(f"warning: skipped {problem}", err=True)


@skills.command("show")
@click.argument("skill_id")
@json_option
@click.pass_context
def show(ctx: click.Context, skill_id: str, as_json: bool) -> None:
    """One skill under its fixed headings, and the rules that propose it."""
    from skillbase.corpus import show as shown
    from skillbase.corpus.load import load_corpus
    from skillbase.engine import Engine

    skill = load_corpus(_dirs(ctx), strict=False).require(skill_id)
    rules = shown.proposed_by(Engine.load(), skill.id)
    click.echo(json.dumps(shown.to_json(skill, rules), indent=2) if as_json else shown.render(skill, rules))


@skills.command("validate")
@click.option("--strict", is_flag=True, help="Treat warnings (e.g. a skill without examples) as errors.")
@click.option("--no-canonical", is_flag=True, help="Do not require every canonical id (for a user folder alone).")
@json_option
@click.pass_context
def validate(ctx: click.Context, strict: bool, no_canonical: bool, as_json: bool) -> None:
    """Check every skill: schema, id = folder, category folder, duplicates, related ids, canonical
    coverage and examples. Exits non-zero on any error."""
    from skillbase.corpus.load import validate_corpus

    corpus, problems = validate_corpus(_dirs(ctx), canonical=not no_canonical)
    errors = [p for p in problems if p.severity == "error" or strict]
    warnings = [p for p in problems if p not in errors]
    if as_json:
        from skillbase.corpus.show import problems_json

        click.echo(json.dumps(problems_json(len(corpus), errors, warnings), indent=2))
    else:
        for problem in errors:
            click.echo(f"error: {problem}", err=True)
        for problem in warnings:
            click.echo(f"warning: {problem}", err=True)
        with_examples = sum(1 for s in corpus if s.has_example)
        click.echo(f"{len(corpus)} skill(s), {with_examples} with examples: "
                   f"{len(errors)} error(s), {len(warnings)} warning(s)")
    if errors:
        raise ValidationFailed(f"the skill corpus has {len(errors)} error(s)",
                               hint="each line above names the file and the fix")


@skills.command("verify")
@click.argument("skill_ids", nargs=-1)
@click.option("--preset", default=None, help="Time this preset only (default: each example's scored presets).")
@click.option("--no-profile", is_flag=True, help="Skip the ncu profile of before.cu (and so the engine's rank).")
@click.option("-o", "--out", "out_path", type=click.Path(dir_okay=False), default=None,
              help="Write the table as Markdown here (and JSON beside it).")
@click.option("--jobs", type=click.IntRange(1, 64), default=None, help="Parallel nvcc builds (default: CPU count).")
@click.option("--keep-profiles", type=click.Path(file_okay=False), default=None,
              help="Copy each before.cu's ncu report here (a population for `skillbase calibrate`).")
@json_option
@click.pass_context
def verify(ctx: click.Context, skill_ids, preset, no_profile, out_path, jobs, keep_profiles, as_json) -> None:
    """On a GPU: check each example's after.cu matches before.cu and is faster, and that advise on
    before.cu ranks the skill in its top 3."""
    from skillbase.corpus.load import load_corpus
    from skillbase.corpus.verify import results_json, to_markdown, verify_examples
    from skillbase.engine import Engine
    from skillbase.harness.runtime import require_gpu

    require_gpu()
    corpus = load_corpus(_dirs(ctx))
    command = ("skillbase skills verify " + " ".join(sys.argv[3:] if len(sys.argv) > 3 else skill_ids)).strip()
    started = time.monotonic()
    with ui.progress("verifying examples") as bar:
        results = verify_examples(
            corpus, tuple(skill_ids), None if no_profile else Engine.load(), preset=preset,
            jobs=jobs or os.cpu_count() or 1, keep_profiles=Path(keep_profiles) if keep_profiles else None,
            out=Path(out_path) if out_path else None, command=command, on_build=bar.note, on_step=bar.note,
            # elapsed seconds on every line: where a long verify spends its time
            on_detail=lambda m: bar.note(f"  {time.monotonic() - started:7.1f}s {m}"),
            # the verdict lines already say what each example did: the count and ETA are the step
            on_progress=lambda done, total, _line: bar.step(done, total))
    click.echo(json.dumps(results_json(results), indent=2) if as_json else to_markdown(results, command))


@skills.command("search")
@click.argument("query", nargs=-1, required=True)
@click.option("--k", "k", type=click.IntRange(1, 500), default=5, show_default=True, help="How many skills to show.")
@click.option("--semantic", is_flag=True,
              help="Search by meaning (sentence embeddings; needs skillbase[search]; loads a model: seconds).")
@click.option("--rebuild", is_flag=True, help="With --semantic: rebuild the cached index even if the corpus did "
                                              "not change.")
@skills_dir_option
@json_option
@click.pass_context
def search(ctx: click.Context, query: tuple[str, ...], k: int, semantic: bool, rebuild: bool,
           skills_dirs: tuple[str, ...], as_json: bool) -> None:
    """Find skills for a problem in your own words: by words (BM25 over the skill cards, no model,
    instant), or with --semantic by meaning (all-MiniLM-L6-v2 embeddings in a faiss index cached on
    disk, plus the words; needs skillbase[search])."""
    from skillbase.corpus import search as skill_search
    from skillbase.corpus.load import load_corpus

    if semantic:
        skill_search.require_extra()     # before loading anything: without the extra, one line naming it
    corpus = load_corpus(_dirs(ctx, *skills_dirs), strict=False)
    notes = ui.console(stderr=True, highlight=False)
    found = skill_search.search(corpus, " ".join(query), k, semantic=semantic, rebuild=rebuild,
                                progress=lambda message: notes.print(f"[dim]{message}[/dim]"))
    if as_json:
        click.echo(json.dumps(found.to_json(), indent=2))
    else:
        if found.method == "semantic" and found.index.built:
            click.echo(f"(index built for {len(corpus)} skills in {found.seconds:.1f}s; cached)", err=True)
        width = max((len(h.skill_id) for h in found.hits), default=2)
        for rank, hit in enumerate(found.hits, 1):
            origin = "" if hit.origin == "built-in" else f"  [{hit.origin}]"
            click.echo(f"{rank:>2}. {hit.score:5.2f}  {hit.skill_id.ljust(width)}  {hit.title}{origin}")
    _warn_skipped(corpus)


@skills.command("new")
@click.argument("skill_id")
@click.option("--category", default=None,
              help="The id's prefix (mem, smem, cmp, ... or your own); default: the prefix.")
@click.option("--title", default=None, help="A short imperative title (also used for the near-duplicate check).")
@click.option("--summary", default=None, help="One sentence (also used for the near-duplicate check).")
@click.option("--no-similar", is_flag=True, help="Skip the near-duplicate check.")
@skills_dir_option
@json_option
@click.pass_context
def new_skill(ctx: click.Context, skill_id: str, category: str | None, title: str | None, summary: str | None,
              no_similar: bool, skills_dirs: tuple[str, ...], as_json: bool) -> None:
    """Scaffold skills/<category>/<id>/skill.yaml from the schema, and warn about near duplicates.

    The new skill goes to the one --skills-dir given (here or to `skills`), else the one folder in
    $SKILLBASE_SKILL_PATH, else the built-in corpus of a source checkout."""
    from skillbase.config import builtin_skills_dir
    from skillbase.corpus.load import load_corpus
    from skillbase.corpus.scaffold import new_skill as scaffold
    from skillbase.corpus.scaffold import skill_target, todo_problems

    target = skill_target(skills_dirs, _dirs(ctx))
    corpus = load_corpus([*_dirs(ctx, *skills_dirs), *([target] if target.is_dir() else [])], strict=False)
    notes = ui.console(stderr=True, highlight=False)
    made = scaffold(corpus, skill_id, category, target, title=title, summary=summary, check_similar=not no_similar,
                    progress=lambda message: notes.print(f"[dim]{message}[/dim]"))
    if as_json:
        click.echo(json.dumps(made.to_json(), indent=2))
        return
    todos = todo_problems(made.path)
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
    flag = "" if target.resolve() == builtin_skills_dir().resolve() else f" --skills-dir {target}"
    click.echo(f"next: fill the {len(todos)} TODO line(s), then `skillbase skills{flag} validate` "
               "(docs/writing-skills.md)")
