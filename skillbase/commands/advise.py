"""`skillbase advise`: rank expert skills for a kernel from its profile, with the evidence behind each.

Parses options, calls `skillbase.advise.advise` (and `why_not`), renders. Input is a saved ncu
report (`--report`, optionally with `--source K.cu` for static features), an evidence JSON
(`--evidence`), or a kernel source `K.cu` that is profiled first (GPU machines only). rich is
imported only when rendering: `advise --report` must finish in well under a second.
"""

from __future__ import annotations

import json
from typing import Any

import click

from skillbase.commands.options import extra_rules_option, json_option
from skillbase.commands.render import fmt_value
from skillbase.engine.trace import result_name
from skillbase.errors import InputError

# the facts that make up the header's "class chain", in reading order
CHAIN = ("bottleneck", "bottleneck_confidence", "memory_unit", "compute_pipe", "latency_subtype",
         "cudamaster_class", "occupancy_limited", "roofline_side", "instruction_bound")


@click.command("advise")
@extra_rules_option
@click.argument("source_cu", required=False, type=click.Path(dir_okay=False))
@click.option("--report", type=click.Path(dir_okay=False), help="A saved Nsight Compute report (.ncu-rep or raw CSV).")
@click.option("--evidence", "evidence_path", type=click.Path(dir_okay=False), help="An evidence JSON document.")
@click.option("--source", "source_path", type=click.Path(dir_okay=False),
              help="The kernel source, for static features (with --report).")
@click.option("--kernel", default=None, help="Focus on this kernel (substring or regex of its name).")
@click.option("--preset", default=None,
              help="Size preset of the kernel's task: the one K.cu is profiled at (default: the spec's first scored), "
                   "or the one --report was taken at (with --source: adds the task's work model).")
@click.option("--top", type=click.IntRange(1), default=5, show_default=True, help="How many candidates to show.")
@click.option("--why-not", "why_not", default=None, metavar="SKILL",
              help="Explain why SKILL was not proposed (or ranked low).")
@click.option("--all", "show_all", is_flag=True, help="Show every rule, fired or not, with its failed predicates.")
@click.option("--thresholds", type=click.Path(dir_okay=False), default=None, help="Thresholds file (default: ncu's).")
@click.option("--rules-dir", "rules_dirs", multiple=True, type=click.Path(file_okay=False),
              help="Use this rules folder instead of the built-in one.")
@json_option
def advise(extra_rules, source_cu, report, evidence_path, source_path, kernel, preset, top, why_not, show_all,
           thresholds, rules_dirs, as_json):
    """Rank expert skills for a kernel: `advise --report R.ncu-rep`, `--evidence E.json` or `K.cu`."""
    from skillbase.advise import advise as advise_kernel
    from skillbase.advise import why_not as why_not_skill

    given = [x for x in (source_cu, report, evidence_path) if x]
    if len(given) != 1:
        raise InputError("give exactly one of K.cu, --report R.ncu-rep or --evidence E.json",
                         "e.g. `skillbase advise --report naive_sgemm/naive_sgemm.h200.ncu-rep.xz` "
                         "(after `skillbase examples copy naive_sgemm`)")
    if source_path and not report:
        raise InputError("--source goes with --report",
                         "the evidence JSON already carries static features; K.cu is read directly")
    advice = advise_kernel(report=report, evidence=evidence_path, source=source_cu or source_path, kernel=kernel,
                           thresholds=thresholds, rules_dirs=list(rules_dirs), extra_rules=extra_rules, preset=preset)
    result = advice.result
    why = why_not_skill(advice, why_not) if why_not else None
    if as_json:
        from skillbase.api import advice_json

        click.echo(json.dumps(advice_json(advice, top=top, why_not_skill=why_not), indent=1))
        return
    render(result, top, why, show_all, advice.evidence.notes, advice.evidence.guided_analysis())


# ---- human output -----------------------------------------------------------------------------


def render(result: Any, top: int, why: dict[str, Any] | None, show_all: bool, evidence_notes=(),
           guided: list[dict[str, Any]] = ()) -> None:
    from rich.table import Table
    from rich.text import Text

    from skillbase import ui

    console = ui.console(highlight=False)
    facts = result.facts
    console.print(Text.assemble(("focus ", "bold"), (str(result.kernel), "bold cyan"), f"  ({result.focus_reason})"))
    chain = [f"{name}={fmt_value(facts[name])}" for name in CHAIN if name in facts]
    chain += [f"{name}={fmt_value(v)}" for name, v in facts.items() if name not in CHAIN]
    rest = chain[1:] if chain and chain[0].startswith("bottleneck=") else chain
    bottleneck = fmt_value(facts.get("bottleneck", "unknown"))
    console.print(Text.assemble(("bottleneck ", "bold"), (bottleneck, "bold magenta"),
                                ("  " + " → ".join(rest), "dim")))
    console.print(Text(f"thresholds {result.thresholds['path']} ({result.thresholds['digest'][:19]})", style="dim"))
    for problem in [*evidence_notes, *result.problems]:
        console.print(Text(f"note: {problem}", style="yellow"))
    shown = result.candidates[:top]
    if not shown:
        console.print("no skill proposed: no propose rule fired (use --all to see every rule's failed predicates)")
    else:
        table = Table(title_justify="left", show_lines=False)
        columns = (("#", "right"), ("skill", "left"), ("score", "right"), ("est. time saved", "right"),
                   ("reason", "left"))
        for column, justify in columns:
            table.add_column(column, justify=justify, overflow="fold")
        for c in shown:
            skill = c.skill + (" (the task constrains it)" if c.demoted == "task"
                               else f" ({c.demoted} before)" if c.demoted else "")
            saved = f"{100 * c.time_saved_fraction:.0f}%" if c.time_saved_fraction is not None else "—"
            reason = f"{c.constraint} Otherwise: {c.because}" if c.constraint else c.because
            table.add_row(str(c.rank), skill, f"{c.score:.2f}", saved, reason)
        console.print(table)
        for c in shown:
            console.print(Text.assemble((f"{c.rank}. {c.skill}", "bold"), f"  rules: {', '.join(c.rules)}"))
            rows = Table(show_header=True, box=None, padding=(0, 2), pad_edge=False)
            for column in ("  evidence", "observed", "threshold", "metric"):
                rows.add_column(column, overflow="fold")
            seen = set()
            for row in c.focus:
                key = (row.name, row.op, fmt_value(row.threshold))
                if key in seen:
                    continue
                seen.add(key)
                if row.op is not None:
                    named = f" ({row.threshold_name})" if row.threshold_name else ""
                    bar = f"{row.op} {fmt_value(row.threshold)}{named}"
                else:  # a compound leaf: show what the value took part in
                    bar = f"in `{row.expression}`"
                metric = row.metric or ""
                if metric.startswith("derived:"):
                    metric = "derived"
                rows.add_row(f"  {row.name}", fmt_value(row.observed), bar, metric)
            console.print(rows)
    _render_guided(console, guided, top)
    if why is not None:
        _render_why(console, why)
    if show_all:
        _render_all(console, result)


def _render_guided(console: Any, guided: list[dict[str, Any]], top: int) -> None:
    """ncu's own findings beside skillbase's: the quickest way to see what the rules add."""
    from rich.text import Text

    findings = [g for g in guided if g["type"] != "INF"]
    if not findings:
        return
    console.print(Text("Nsight Compute's guided analysis says", style="bold"))
    for finding in findings[:top]:
        estimate = (f"  (est. {finding['speedup_pct']:.0f}% {finding['speedup_type'] or ''})".replace(" )", ")")
                    if finding.get("speedup_pct") is not None else "")
        console.print(Text.assemble(f"  {finding['type']} ", (finding["summary"], ""), (estimate, "dim")))
    if len(findings) > top:
        console.print(Text(f"  … {len(findings) - top} more (--top, or --json for every result with its message)",
                           style="dim"))


def _render_why(console: Any, why: dict[str, Any]) -> None:
    from rich.text import Text

    state = f"proposed at rank {why['rank']}" if why["proposed"] else "not proposed"
    console.print(Text.assemble(("why not ", "bold"), (why["skill"], "bold cyan"), f": {state}"))
    for rule in why["rules"]:
        mark = ("fired", "green") if rule["fired"] else (rule["result"], "red")
        console.print(Text.assemble(f"  {rule['rule']} ", (mark[0], mark[1]), f"  {rule['source']}"))
        for leaf in rule["failed"]:
            observed = ", ".join(f"{k}={fmt_value(v)}" for k, v in leaf["observed"].items())
            console.print(f"    {leaf['path']}: {leaf['expression']} -> {leaf['result']}"
                          + (f"  ({observed})" if observed else ""))


def _render_all(console: Any, result: Any) -> None:
    from rich.text import Text

    console.print(Text("every rule", style="bold"))
    for decision in result.decisions:
        colour = "red" if decision.result is False else "yellow"
        mark = ("fired", "green") if decision.fired else (result_name(decision.result), colour)
        extra = ""
        if decision.fired and decision.derived:
            extra = "  " + ", ".join(f"{k}={fmt_value(v)}" for k, v in decision.derived.items())
        console.print(Text.assemble(f"  {decision.kind:7} {decision.rule} ", (mark[0], mark[1]), extra))
        # A rule that fired shows the predicates (and threshold values) that made it fire, so a
        # derived class can be audited against the active thresholds file; one that did not, why.
        leaves = decision.leaves if decision.fired else decision.failed_leaves()
        for leaf in leaves:
            observed = ", ".join(f"{k}={fmt_value(v)}" for k, v in leaf.observed.items())
            console.print(f"      {leaf.path}: {leaf.expression} -> {result_name(leaf.result)}"
                          + (f"  ({observed})" if observed else ""))
