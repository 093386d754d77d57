"""`skillbase rules`: validate the rule set, run every rule's cases, list the ncu metrics it needs,
and scaffold a new rule with its cases file."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from skillbase.commands.options import extra_rules_option, json_option, skills_dir_option

rules_dir_option = click.option(
    "--rules-dir", "rules_dirs", multiple=True, type=click.Path(file_okay=False),
    help="A rules folder (vocabulary.yaml, derive/, propose/, fixtures/) used instead of the built-in one; repeatable.")
thresholds_option = click.option(
    "--thresholds", type=click.Path(dir_okay=False), default=None,
    help="Thresholds file (default: rules/thresholds/ncu-defaults.yaml).")


@click.group("rules")
def rules() -> None:
    """Validate, test and inspect the rule set."""


@rules.command("validate")
@extra_rules_option
@rules_dir_option
@thresholds_option
@json_option
def validate_command(extra_rules, rules_dirs, thresholds, as_json):
    """Check every rule, the vocabulary and the cases; one line per problem, non-zero exit on errors."""
    from skillbase.corpus.load import skill_ids
    from skillbase.engine.validate import validate

    # the skills a rule may propose: the built-in corpus and the folders of $SKILLBASE_SKILL_PATH
    report = validate(list(rules_dirs) or None, thresholds, skill_ids=skill_ids(), extra_rules=extra_rules)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=1))
    else:
        for problem in report.problems:
            prefix = "" if problem.severity == "error" else "warning: "
            click.echo(f"{prefix}{problem}")
        click.echo(f"{report.rules} rules, {report.vocabulary} vocabulary names: "
                   f"{len(report.errors)} error(s), {len(report.warnings)} warning(s)",
                   err=bool(report.problems))
    if report.errors:
        sys.exit(1)


@rules.command("test")
@extra_rules_option
@click.option("--rule", "rule_ids", multiple=True, help="Only this rule's cases (repeatable).")
@click.option("--failed", "failed_only", is_flag=True, help="Show only failing cases.")
@rules_dir_option
@thresholds_option
@json_option
def test_command(extra_rules, rule_ids, failed_only, rules_dirs, thresholds, as_json):
    """Run every rule's cases: a table of pass/fail with reasons, non-zero exit on any failure."""
    from skillbase.engine.cases import cases_document, run_all
    from skillbase.engine.evaluate import Engine, resolve_dirs
    from skillbase.engine.vocabulary import default_thresholds_path

    dirs = resolve_dirs(list(rules_dirs) or None, extra_rules)
    # build (not load): rules that parse are tested even while others in the set have errors
    engine, load_problems = Engine.build(dirs, Path(thresholds) if thresholds else default_thresholds_path(dirs))
    load_errors = [p for p in load_problems if p.severity == "error"]
    results, case_problems = run_all(engine, list(rule_ids) or None)
    failures = [r for r in results if not r.passed]
    if as_json:
        click.echo(json.dumps(cases_document(results, load_errors, case_problems), indent=1))
    else:
        _print_results(results if not failed_only else failures, load_errors, case_problems)
        click.echo(f"{len(results) - len(failures)} passed, {len(failures)} failed"
                   + (f"; {len(case_problems)} case-file problem(s)" if case_problems else "")
                   + (f"; {len(load_errors)} rule-set error(s) (see `skillbase rules validate`)"
                      if load_errors else ""))
    if failures or case_problems or load_errors:
        sys.exit(1)


def _print_results(results, load_errors, case_problems) -> None:
    from rich.table import Table
    from rich.text import Text

    from skillbase import ui

    console = ui.console(soft_wrap=False, piped_width=200)
    for problem in load_errors + case_problems:
        console.print(Text(f"problem: {problem}", style="yellow"))
    table = Table(show_lines=False, title_justify="left")
    for column in ("rule", "case", "expect", "got", "", "reason"):
        table.add_column(column, overflow="fold")
    for r in results:
        got = "error" if r.fired is None else ("fire" if r.fired else "quiet")
        mark = Text("pass", style="green") if r.passed else Text("FAIL", style="bold red")
        detail = r.case.reason
        if not r.passed:
            detail += "\n" + "\n".join(([r.error] if r.error else []) + [f"  {line}" for line in r.failed_leaves[:6]])
        table.add_row(r.case.rule, r.case.name, r.case.expect, got, mark, detail)
    console.print(table)


@rules.command("list")
@extra_rules_option
@click.option("--kind", type=click.Choice(["derive", "propose", "constrain"]), default=None,
              help="Only rules of this kind.")
@rules_dir_option
@json_option
def list_command(extra_rules, kind, rules_dirs, as_json):
    """List every rule: id, kind, status, what it proposes or derives, its summary."""
    from skillbase.engine import Engine
    from skillbase.engine.catalogue import list_rules

    catalogue = list_rules(Engine.load(list(rules_dirs) or None, extra_rules=extra_rules), kind=kind)
    if as_json:
        click.echo(json.dumps(catalogue, indent=1))
        return
    for rule in catalogue["rules"]:
        target = ", ".join(rule["skills"] or rule["facts"] or rule["demotes"])
        click.echo(f"{rule['id']}  [{rule['kind']}{'' if rule['status'] == 'stable' else ', ' + rule['status']}]"
                   f"  -> {target}")
    click.echo(f"{len(catalogue['rules'])} rules (`skillbase rules show ID` for one)", err=True)


@rules.command("show")
@extra_rules_option
@click.argument("rule_id")
@rules_dir_option
@json_option
def show_command(extra_rules, rule_id, rules_dirs, as_json):
    """Show rule RULE_ID: its condition, the names it reads, what it proposes or derives, its cases, its file."""
    from skillbase.engine import Engine
    from skillbase.engine.catalogue import show_rule

    shown = show_rule(Engine.load(list(rules_dirs) or None, extra_rules=extra_rules), rule_id)
    if as_json:
        click.echo(json.dumps(shown, indent=1))
        return
    rule = shown["rule"]
    lines = [f"{rule['id']}  ({rule['kind']}, {rule['status']})", f"file:     {rule['file']}:{rule['line']}",
             f"summary:  {rule['summary']}", f"when:     {rule['when']}", f"reads:    {', '.join(rule['reads'])}"]
    lines += [f"proposes: {p['skill']} (score {p['score']}, est. time saved {p['time_saved_fraction']})"
              for p in rule["proposes"]]
    lines += [f"derives:  {d['fact']} = {d['value']}" for d in rule["derives"]]
    lines += [f"demotes:  {', '.join(rule['demotes'])}"] if rule["demotes"] else []
    lines += [f"because:  {rule['because']}"] if rule["because"] else []
    lines += [f"ref:      {ref}" for ref in rule["references"]]
    lines.append(f"cases:    {rule['cases_file'] or 'none'}")
    lines += [f"  {c['expect']:<5} {c['name']}: {c['reason']}" for c in rule["cases"]]
    lines += [f"  problem: {p}" for p in rule["case_problems"]]
    click.echo("\n".join(lines))


@rules.command("metrics")
@extra_rules_option
@click.option("--format", "fmt", type=click.Choice(["list", "csv"]), default="list", show_default=True,
              help="list: one metric per line; csv: comma-joined, ready for `ncu --metrics`.")
@rules_dir_option
@thresholds_option
def metrics_command(extra_rules, fmt, rules_dirs, thresholds):
    """The minimal ncu --metrics list the rules read."""
    from skillbase.engine import Engine

    names = Engine.load(list(rules_dirs) or None, thresholds, extra_rules=extra_rules).required_ncu_metrics()
    click.echo(",".join(names) if fmt == "csv" else "\n".join(names))


@rules.command("new")
@click.argument("rule_id")
@click.option("--kind", type=click.Choice(["propose", "derive"]), default="propose", show_default=True)
@click.option("--skill", default=None, help="The skill a propose rule proposes (default: the id's prefix, if a skill).")
@click.option("--rules-dir", "rules_dir", type=click.Path(file_okay=False), default=None,
              help="Your rules folder (gets <kind>/<id>.yaml); default: the built-in rules of a source checkout.")
@skills_dir_option
@json_option
def new_rule(rule_id: str, kind: str, skill: str | None, rules_dir: str | None, skills_dirs: tuple[str, ...],
             as_json: bool) -> None:
    """Scaffold rules/<kind>/<id>.yaml and its cases file, checked against the schemas."""
    from skillbase.config import builtin_rules_dir, env_paths
    from skillbase.corpus.load import ENV_SKILL_PATH, skill_ids
    from skillbase.corpus.scaffold import new_rule as scaffold
    from skillbase.corpus.scaffold import rule_target

    target = rule_target(rules_dir)
    made = scaffold(rule_id, kind, target, skill=skill, skill_ids=skill_ids(skills_dirs))
    path, cases = made
    if as_json:
        click.echo(json.dumps(made.to_json(), indent=2))
        return
    click.echo(f"created {path}\ncreated {cases}")
    flag = "" if target.resolve() == builtin_rules_dir().resolve() else f" --rules-dir {target}"
    # the rule validator finds user skills through $SKILLBASE_SKILL_PATH
    env = f"{ENV_SKILL_PATH}={os.pathsep.join([*env_paths(ENV_SKILL_PATH), *skills_dirs])} " if skills_dirs else ""
    click.echo(f"next: write `when` and the cases, then `{env}skillbase rules validate{flag}` and "
               f"`{env}skillbase rules test{flag} --rule {rule_id}` (docs/writing-rules.md)")
