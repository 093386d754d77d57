"""`skillbase skills`: list, show and validate the skill corpus (a thin layer over `skillbase.corpus.load`).

`skills show ID` renders a skill under its fixed headings (like `ruff rule X`) and names the
rules that propose it; `skills list --json` is the machine-readable catalogue; `skills validate`
is what CI runs (schema, naming, duplicates, canonical coverage, examples).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import click

from skillbase import ui
from skillbase.commands.options import json_option

from skillbase.errors import SkillbaseError

STATUSES = ("experimental", "stable", "deprecated")


class ValidationFailed(SkillbaseError):
    """`skills validate` found errors: exit 1, like a linter (2 stays for bad input)."""

    exit_code = 1

# (key, heading) in the order every skill is rendered.
HEADINGS = (
    ("summary", "Summary"), ("what_it_does", "What it does"), ("why_it_helps", "Why it helps"),
    ("when_to_apply", "When to apply"), ("when_not_to_apply", "When not to apply"), ("how", "How"),
    ("parameters", "Parameters"), ("anti_patterns", "Anti-patterns"), ("known_problems", "Known problems"),
    ("expected_gain", "Expected gain"), ("risks", "Risks"), ("references", "References"),
    ("automation", "Automation"), ("related", "Related"), ("changelog", "Changelog"),
)

skills_dir_option = click.option(
    "--skills-dir", "skills_dirs", multiple=True, type=click.Path(file_okay=False),
    help="Extra skill folder (<category>/<id>/skill.yaml inside); repeatable. Also $SKILLBASE_SKILL_PATH.")


@click.group("skills")
@skills_dir_option
@click.pass_context
def skills(ctx: click.Context, skills_dirs: tuple[str, ...]) -> None:
    """List, show and validate skills (the long-term memory)."""
    ctx.ensure_object(dict)
    ctx.obj["skills_dirs"] = skills_dirs


def _dirs(ctx: click.Context) -> tuple[str, ...]:
    return tuple((ctx.obj or {}).get("skills_dirs", ()))


@skills.command("list")
@click.option("--category", default=None, help="Only this category (the id's prefix: mem, smem, cmp, ...).")
@click.option("--status", type=click.Choice(STATUSES), default=None, help="Only skills in this state.")
@json_option
@click.pass_context
def list_skills(ctx: click.Context, category: str | None, status: str | None, as_json: bool) -> None:
    """The catalogue: id, category, status, auto-apply, example, origin."""
    from skillbase.corpus.load import load_corpus, suggest
    from skillbase.errors import InputError

    corpus = load_corpus(_dirs(ctx), strict=False)
    if category is not None:
        categories = {s.category for s in corpus}
        if category not in categories:
            close = suggest(category, categories)
            raise InputError(f"no skills in category '{category}'" + (f"; did you mean '{close}'?" if close else ""),
                             hint=f"categories: {', '.join(sorted(categories))}")
    rows = [s for s in corpus if (category is None or s.category == category)
            and (status is None or s.status == status)]
    if as_json:
        click.echo(json.dumps([s.to_json() for s in rows], indent=2))
    else:
        table = [("id", "category", "status", "auto-apply", "example", "origin")]
        for s in rows:
            auto = "yes" if s.auto_apply else "no (advice)"
            if s.mechanical:
                auto += f", {s.mechanical['kind']}"
            table.append((s.id, s.category, s.status, auto, "yes" if s.has_example else "no", s.origin))
        widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
        for index, row in enumerate(table):
            click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
            if index == 0:
                click.echo("  ".join("-" * w for w in widths))
        click.echo(f"\n{len(rows)} skill(s)")
    for problem in corpus.problems:
        if problem.severity == "error":
            click.echo(f"warning: skipped {problem}", err=True)


@skills.command("show")
@click.argument("skill_id")
@json_option
@click.pass_context
def show(ctx: click.Context, skill_id: str, as_json: bool) -> None:
    """One skill under its fixed headings, and the rules that propose it."""
    from skillbase.corpus.load import load_corpus

    corpus = load_corpus(_dirs(ctx), strict=False)
    skill = corpus.require(skill_id)
    rules = proposing_rules(skill.id)
    if as_json:
        click.echo(json.dumps({**skill.data, "origin": skill.origin, "path": str(skill.path),
                               "has_example": skill.has_example, "proposed_by": rules}, indent=2))
        return
    click.echo(render(skill, rules))


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
        click.echo(json.dumps({"skills": len(corpus), "errors": [p.to_json() for p in errors],
                               "warnings": [p.to_json() for p in warnings]}, indent=2))
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


# -- rendering --------------------------------------------------------------------------------------

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
    import os
    import sys
    import time

    from skillbase.corpus.load import load_corpus
    from skillbase.engine import Engine
    from skillbase.harness.runtime import require_gpu
    from skillbase.corpus.verify import example_folders, prebuild, to_markdown, verify_example, write_results

    require_gpu()
    corpus = load_corpus(_dirs(ctx))
    folders = example_folders(corpus, tuple(skill_ids))
    engine = None if no_profile else Engine.load()
    console = ui.console(stderr=True)
    prebuild(folders, jobs or os.cpu_count() or 1, say=lambda m: console.print(f"[dim]{m}[/dim]"))
    command = ("skillbase skills verify " + " ".join(sys.argv[3:] if len(sys.argv) > 3 else skill_ids)).strip()
    results = []
    started = time.monotonic()

    def say(message: str) -> None:   # elapsed seconds on every line: where a long verify spends its time
        console.print(f"  [dim]{time.monotonic() - started:7.1f}s {message}[/dim]")

    for index, (skill_id, folder) in enumerate(folders, 1):
        console.print(f"[{index}/{len(folders)}] {skill_id}")
        try:
            results.append(verify_example(skill_id, folder, engine, preset=preset, profile=not no_profile,
                                          say=say,
                                          keep_profile=Path(keep_profiles) if keep_profiles else None))
        except SkillbaseError as error:   # one broken example must not stop the others
            from skillbase.corpus.verify import ExampleResult
            results.append(ExampleResult(skill=skill_id, before_us=None, after_us=None, speedup=None, spread=None,
                                         verdict="failed: error", rank=None, top3=[], reason=error.message,
                                         date="", gpu=None))
        console.print(f"  -> {results[-1].verdict}: {results[-1].reason}; rank {results[-1].rank}")
        if out_path:   # after every example, so an interrupted session keeps what it measured
            write_results(results, Path(out_path), command)
    if as_json:
        from dataclasses import asdict
        click.echo(json.dumps([asdict(r) for r in results], indent=2))
    else:
        click.echo(to_markdown(results, command.strip()))


def proposing_rules(skill_id: str, rules_dirs: tuple[Path, ...] = ()) -> list[dict]:
    """Proposal rules naming `skill_id`: [{rule, score, summary, path}], read straight from the YAML
    (no vocabulary type-checking needed just to list them)."""
    import yaml

    from skillbase.config import builtin_rules_dir

    found = []
    for folder in (builtin_rules_dir() / "propose", *rules_dirs):
        for path in sorted(Path(folder).glob("*.yaml")):
            if path.name.endswith(".cases.yaml"):
                continue
            try:
                data = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            except (OSError, yaml.YAMLError):
                continue
            if not isinstance(data, dict):
                continue
            for proposal in data.get("proposes") or []:
                if isinstance(proposal, dict) and proposal.get("skill") == skill_id:
                    found.append({"rule": data.get("id", path.stem), "score": proposal.get("score"),
                                  "summary": " ".join(str(data.get("summary", "")).split()), "path": str(path)})
    return found


def _fill(text: str, first: str, rest: str) -> str:
    # never split URLs, metric names or hyphenated terms
    return textwrap.fill(" ".join(str(text).split()), width=100, initial_indent=first, subsequent_indent=rest,
                         break_long_words=False, break_on_hyphens=False)


def _wrap(text: str, indent: str = "  ") -> str:
    return _fill(text, indent, indent)


def _bullets(items, indent: str = "  ") -> list[str]:
    return [_fill(i, f"{indent}- ", f"{indent}  ") for i in items]


def render(skill, rules: list[dict]) -> str:
    """The skill as text, one heading per section in the fixed order (Ruff's `rule` style)."""
    d = skill.data
    mech = (skill.mechanical or {}).get("kind", "none")
    out = [f"{skill.id}: {skill.title}",
           f"category {skill.category} · status {skill.status} · version {skill.version} · "
           f"auto-apply {'yes' if skill.auto_apply else 'no'} · mechanical {mech} · origin {skill.origin}",
           str(skill.path)]
    for key, heading in HEADINGS:
        value = d.get(key)
        if value in (None, [], {}) and key in ("related", "changelog"):
            continue
        out += ["", f"## {heading}"]
        if key in ("summary", "what_it_does", "why_it_helps"):
            out.append(_wrap(value))
        elif key == "when_to_apply":
            out.append("  Evidence:")
            for e in value.get("evidence", []):
                line = f"{e['metric']} {e['condition']} [{e['provenance']}]"
                if e.get("note"):
                    line += f": {e['note']}"
                out += _bullets([line], "    ")
            if value.get("static_signs"):
                out.append("  Static signs:")
                out += _bullets(value["static_signs"], "    ")
        elif key == "how":
            for number, step in enumerate(value, 1):
                out.append(_fill(step["step"], f"  {number}. ", "     "))
                if step.get("code"):
                    out.append(textwrap.indent(step["code"].rstrip("\n"), "       | "))
        elif key == "parameters":
            if not value:
                out.append("  (none)")
            for p in value:
                extra = []
                if p.get("values") is not None:
                    extra.append("values " + ", ".join(map(str, p["values"])))
                if p.get("default") is not None:
                    extra.append(f"default {p['default']}")
                out += _bullets([f"{p['name']}: {p['meaning']}" + (f" ({'; '.join(extra)})" if extra else "")])
        elif key == "expected_gain":
            out.append(_wrap(f"{value['typical']} [{value['provenance']}]"))
            if value.get("formula"):
                out.append(f"  formula: {value['formula']}")
            if value.get("note"):
                out.append(_wrap(value["note"]))
        elif key == "risks":
            out += _bullets([f"{k}: {v}" for k, v in value.items()])
        elif key == "references":
            out += _bullets([f"{r['title']}" + (f" <{r['url']}>" if r.get("url") else f" ({r['where']})")
                             for r in value])
        elif key == "automation":
            out.append(f"  auto_apply: {'yes' if value['auto_apply'] else 'no'}; mechanical: {mech}")
            m = value.get("mechanical") or {}
            for t in m.get("tunables", []):
                out += _bullets([f"tunable {t['name']}" + (f" in {t['values']}" if t.get("values") else "")
                                 + (f": {t['how']}" if t.get("how") else "")], "    ")
            if m.get("flags"):
                out.append(f"    flags: {' '.join(m['flags'])}")
            out.append(_wrap(value["note"]))
        elif key == "related":
            out.append("  " + ", ".join(value))
        elif key == "changelog":
            out += _bullets([f"v{c['version']}" + (f" ({c['date']})" if c.get("date") else "") + f": {c['change']}"
                             for c in value])
        elif isinstance(value, list):
            out += _bullets(value) if value else ["  (none)"]
        else:
            out.append(_wrap(value))
    out += ["", "## Proposed by"]
    if rules:
        out += _bullets([f"{r['rule']} (score {r['score']}): {r['summary']}" for r in rules])
    else:
        out.append("  (no rule proposes this skill yet)")
    out += ["", "## Examples"]
    if skill.examples_dir.is_dir():
        out.append("  " + ", ".join(sorted(p.name for p in skill.examples_dir.iterdir() if p.is_file()))
                   + f"  ({skill.examples_dir})")
    else:
        out.append("  (none yet)")
    return "\n".join(out)


# `skills search` and `skills new` (semantic search and scaffolding) live with their library code.
from skillbase.commands.search_cmds import new_skill as _new_skill, search as _search  # noqa: E402

skills.add_command(_search)
skills.add_command(_new_skill)
