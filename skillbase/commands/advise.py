"""`skillbase advise`: rank expert skills for a kernel from its profile, with the evidence behind each.

Input is a saved ncu report (`--report`, optionally with `--source K.cu` for static features), an
evidence JSON (`--evidence`), or a kernel source `K.cu` that is profiled first (GPU machines
only). Heavy modules (rich, the ncu reader) are imported only when used: `advise --report` must
finish in well under a second.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from skillbase.commands.options import json_option, extra_rules_option
from skillbase.errors import EnvironmentProblem, InputError, SkillbaseError

# the facts that make up the header's "class chain", in reading order
CHAIN = ("bottleneck", "bottleneck_confidence", "memory_unit", "compute_pipe", "latency_subtype",
         "cudamaster_class", "occupancy_limited", "roofline_side", "instruction_bound")


@click.command("advise")
@extra_rules_option
@click.argument("source_cu", required=False, type=click.Path(dir_okay=False))
@click.option("--report", type=click.Path(dir_okay=False), help="A saved Nsight Compute report (.ncu-rep or raw CSV).")
@click.option("--evidence", "evidence_path", type=click.Path(dir_okay=False), help="An evidence JSON document.")
@click.option("--source", "source_path", type=click.Path(dir_okay=False), help="The kernel source, for static features (with --report).")
@click.option("--kernel", default=None, help="Focus on this kernel (substring or regex of its name).")
@click.option("--top", type=click.IntRange(1), default=5, show_default=True, help="How many candidates to show.")
@click.option("--why-not", "why_not", default=None, metavar="SKILL", help="Explain why SKILL was not proposed (or ranked low).")
@click.option("--all", "show_all", is_flag=True, help="Show every rule, fired or not, with its failed predicates.")
@click.option("--thresholds", type=click.Path(dir_okay=False), default=None, help="Thresholds file (default: ncu's).")
@click.option("--rules-dir", "rules_dirs", multiple=True, type=click.Path(file_okay=False), help="Use this rules folder instead of the built-in one.")
@json_option
def advise(extra_rules, source_cu, report, evidence_path, source_path, kernel, top, why_not, show_all, thresholds, rules_dirs,
           as_json):
    """Rank expert skills for a kernel: `advise --report R.ncu-rep`, `--evidence E.json` or `K.cu`."""
    from skillbase.engine import Engine

    given = [x for x in (source_cu, report, evidence_path) if x]
    if len(given) != 1:
        raise InputError("give exactly one of K.cu, --report R.ncu-rep or --evidence E.json",
                         "e.g. `skillbase advise --report tests/fixtures/profiles/naive_gemm/report.ncu-rep`")
    if source_path and not report:
        raise InputError("--source goes with --report", "the evidence JSON already carries static features; K.cu is read directly")
    evidence = load_input(source_cu, report, evidence_path, source_path, kernel)
    engine = Engine.load(list(rules_dirs) or None, thresholds, extra_rules=extra_rules)
    result = engine.evaluate(evidence, kernel=kernel if evidence_path else None)
    why = why_not_report(engine, result, why_not) if why_not else None
    if as_json:
        data = result.to_json()
        data["candidates"] = data["candidates"][:top]
        if why is not None:
            data["why_not"] = why
        click.echo(json.dumps(data, indent=1))
        return
    render(result, top, why, show_all)


# ---- input ------------------------------------------------------------------------------------


def _exists(path: str, what: str) -> Path:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: no such {what}", "check the path")
    return p


def load_input(source_cu: str | None, report: str | None, evidence_path: str | None, source_path: str | None,
               kernel: str | None) -> Any:
    if evidence_path:
        from skillbase.engine.cases import load_evidence

        return _guarded(load_evidence, _exists(evidence_path, "evidence file"), what="evidence")
    if report:
        path = _exists(report, "report")
        if source_path:
            _exists(source_path, "source file")
        evidence = _load_report(path, kernel)
        if source_path:
            _attach_static(evidence, Path(source_path))
        return evidence
    cu = _exists(source_cu, "kernel source")
    from skillbase.profiling import profile_evidence

    try:
        profiled = profile_evidence(cu, kernel=kernel, write=False)
    except EnvironmentProblem as problem:
        # Profiling needs a GPU and ncu; advice from a saved profile does not.
        raise EnvironmentProblem(f"cannot profile {cu} here: {problem.message}",
                                 "run on a GPU machine with ncu, or pass --report R.ncu-rep / --evidence E.json") from None
    return profiled.evidence


def _load_report(path: Path, kernel: str | None) -> Any:
    try:
        from skillbase.evidence import load_any
    except ImportError:
        raise EnvironmentProblem("reading ncu reports needs skillbase.evidence, which is not installed",
                                 "pass --evidence E.json instead") from None
    return _guarded(load_any, path, kernel, what="report")


def _attach_static(evidence: Any, source: Path) -> None:
    try:
        from skillbase.evidence import static_features
    except ImportError:
        raise EnvironmentProblem("static features need skillbase.evidence.static.features (tree-sitter-cuda)",
                                 "drop --source, or install the package with its dependencies") from None
    features = _guarded(static_features, source, what="source")
    if isinstance(evidence, dict):
        evidence["static"] = features
    else:
        evidence.static = features


def _guarded(function, *args, what: str) -> Any:
    """Call a loader; anything but our own errors becomes a one-line InputError (never a traceback)."""
    try:
        return function(*args)
    except SkillbaseError:
        raise
    except Exception as error:
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InputError(f"{args[0]}: cannot read this {what} ({detail})",
                         "is the file complete and of the right kind (.ncu-rep, raw CSV, evidence JSON)?") from None


# ---- why-not ----------------------------------------------------------------------------------


def why_not_report(engine: Any, result: Any, skill: str) -> dict[str, Any]:
    """Rules that could propose `skill`, whether each fired, and its false / missing leaves."""
    rules = [r for r in engine.propose_rules if any(p.skill == skill for p in r.proposes)]
    if not rules:
        from skillbase.engine.expressions import _did_you_mean

        proposable = {p.skill for r in engine.propose_rules for p in r.proposes}
        raise InputError(f"no rule proposes `{skill}`", _did_you_mean(skill, proposable))
    candidate = next((c for c in result.candidates if c.skill == skill), None)
    out = {"skill": skill, "proposed": candidate is not None,
           "rank": candidate.rank if candidate else None, "rules": []}
    for rule in rules:
        decision = result.decision(rule.id)
        out["rules"].append({"rule": rule.id, "fired": decision.fired, "result": _state(decision.result),
                             "source": decision.source, "summary": decision.summary, "because": decision.because,
                             "failed": [leaf.to_json() for leaf in decision.failed_leaves()]})
    return out


def _state(result: bool | None) -> str:
    return "missing" if result is None else ("true" if result else "false")


# ---- human output -----------------------------------------------------------------------------


def _fmt(value: Any) -> str:
    from skillbase.engine.vocabulary import MISSING

    if value is MISSING or value == "missing":
        return "missing"
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def render(result: Any, top: int, why: dict[str, Any] | None, show_all: bool) -> None:
    from rich.table import Table
    from rich.text import Text

    from skillbase import ui

    console = ui.console(highlight=False)
    facts = result.facts
    console.print(Text.assemble(("focus ", "bold"), (str(result.kernel), "bold cyan"), f"  ({result.focus_reason})"))
    chain = [f"{name}={_fmt(facts[name])}" for name in CHAIN if name in facts]
    chain += [f"{name}={_fmt(v)}" for name, v in facts.items() if name not in CHAIN]
    console.print(Text.assemble(("bottleneck ", "bold"), (_fmt(facts.get("bottleneck", "unknown")), "bold magenta"),
                                ("  " + " → ".join(chain[1:] if chain and chain[0].startswith("bottleneck=") else chain), "dim")))
    console.print(Text(f"thresholds {result.thresholds['path']} ({result.thresholds['digest'][:19]})", style="dim"))
    for problem in result.problems:
        console.print(Text(f"note: {problem}", style="yellow"))
    shown = result.candidates[:top]
    if not shown:
        console.print("no skill proposed: no propose rule fired (use --all to see every rule's failed predicates)")
    else:
        table = Table(title_justify="left", show_lines=False)
        for column, justify in (("#", "right"), ("skill", "left"), ("score", "right"), ("est. time saved", "right"), ("reason", "left")):
            table.add_column(column, justify=justify, overflow="fold")
        for c in shown:
            skill = c.skill + (f" ({c.demoted} before)" if c.demoted else "")
            speedup = f"{100 * c.speedup:.0f}%" if c.speedup is not None else "—"
            table.add_row(str(c.rank), skill, f"{c.score:.2f}", speedup, c.because)
        console.print(table)
        for c in shown:
            console.print(Text.assemble((f"{c.rank}. {c.skill}", "bold"), f"  rules: {', '.join(c.rules)}"))
            rows = Table(show_header=True, box=None, padding=(0, 2), pad_edge=False)
            for column in ("  evidence", "observed", "threshold", "metric"):
                rows.add_column(column, overflow="fold")
            seen = set()
            for row in c.focus:
                key = (row.name, row.op, _fmt(row.threshold))
                if key in seen:
                    continue
                seen.add(key)
                if row.op is not None:
                    bar = f"{row.op} {_fmt(row.threshold)}" + (f" ({row.threshold_name})" if row.threshold_name else "")
                else:  # a compound leaf: show what the value took part in
                    bar = f"in `{row.expression}`"
                metric = row.metric or ""
                if metric.startswith("derived:"):
                    metric = "derived"
                rows.add_row(f"  {row.name}", _fmt(row.observed), bar, metric)
            console.print(rows)
    if why is not None:
        _render_why(console, why)
    if show_all:
        _render_all(console, result)


def _render_why(console: Any, why: dict[str, Any]) -> None:
    from rich.text import Text

    state = f"proposed at rank {why['rank']}" if why["proposed"] else "not proposed"
    console.print(Text.assemble(("why not ", "bold"), (why["skill"], "bold cyan"), f": {state}"))
    for rule in why["rules"]:
        mark = ("fired", "green") if rule["fired"] else (rule["result"], "red")
        console.print(Text.assemble(f"  {rule['rule']} ", (mark[0], mark[1]), f"  {rule['source']}"))
        for leaf in rule["failed"]:
            observed = ", ".join(f"{k}={_fmt(v)}" for k, v in leaf["observed"].items())
            console.print(f"    {leaf['path']}: {leaf['expression']} -> {leaf['result']}" + (f"  ({observed})" if observed else ""))


def _render_all(console: Any, result: Any) -> None:
    from rich.text import Text

    console.print(Text("every rule", style="bold"))
    for decision in result.decisions:
        mark = ("fired", "green") if decision.fired else (_state(decision.result), "red" if decision.result is False else "yellow")
        extra = ""
        if decision.fired and decision.derived:
            extra = "  " + ", ".join(f"{k}={_fmt(v)}" for k, v in decision.derived.items())
        console.print(Text.assemble(f"  {decision.kind:7} {decision.rule} ", (mark[0], mark[1]), extra))
        # A rule that fired shows the predicates (and threshold values) that made it fire, so a
        # derived class can be audited against the active thresholds file; one that did not, why.
        leaves = decision.leaves if decision.fired else decision.failed_leaves()
        for leaf in leaves:
            observed = ", ".join(f"{k}={_fmt(v)}" for k, v in leaf.observed.items())
            console.print(f"      {leaf.path}: {leaf.expression} -> {_state(leaf.result)}" + (f"  ({observed})" if observed else ""))
