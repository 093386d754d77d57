"""`skillbase calibrate PROFILES… [--out FILE]`: Otsu thresholds from a population of saved profiles.

Reads every kernel of the given profiles (.ncu-rep, raw-page .csv, evidence .json; folders are
searched for *.ncu-rep and *.evidence.json), computes the quantities the derivation rules compare
with thresholds, and prints the calibrated cut next to ncu's default for each. `--out FILE`
writes a thresholds file (the format of rules/thresholds/ncu-defaults.yaml, with provenance);
`--compare` also reports the kernels whose class changes and, with `--expect TABLE`, how often
`advise` ranks the expected skill in its top 3 under each file. See docs/calibration.md.
Parses options, calls `skillbase.calibrate.pipeline.calibrate_and_compare`, renders.
"""

from __future__ import annotations

import json
from typing import Any

import click

from skillbase.commands.options import json_option
from skillbase.commands.render import fmt_value
from skillbase.errors import InputError


@click.command("calibrate")
@click.argument("profiles", nargs=-1, type=click.Path())
@click.option("--out", "out", type=click.Path(dir_okay=False), default=None,
              help="Write the calibrated thresholds file here ('-' prints it).")
@click.option("--min", "min_kernels", type=click.IntRange(1), default=30, show_default=True,
              help="Refuse populations with fewer kernels. Lowering it is for experiments only.")
@click.option("--mixed", is_flag=True,
              help="Pool profiles from different GPUs, ncu versions or clock-control settings.")
@click.option("--drop-incomplete", is_flag=True,
              help="Leave out kernels that lack a calibrated quantity instead of refusing.")
@click.option("--focus-only", is_flag=True,
              help="One kernel per report (the one advise looks at) instead of every kernel.")
@click.option("--only", default=None, metavar="NAMES",
              help="Calibrate only these thresholds or quantities (comma-separated, e.g. sol_low,sol_high); "
                   "the rest keep ncu's values.")
@click.option("--compare", is_flag=True,
              help="Also evaluate the population under both files: class changes and advise hit rates.")
@click.option("--expect", "expect_path", type=click.Path(dir_okay=False), default=None,
              help="Expected skill per profile (Markdown table name|…|skill or YAML name: skill); implies --compare.")
@click.option("--against", type=click.Path(dir_okay=False), default=None,
              help="The baseline thresholds file (default: ncu's, rules/thresholds/ncu-defaults.yaml).")
@click.option("--thresholds", "use_path", type=click.Path(dir_okay=False), default=None,
              help="Compare this existing thresholds file instead of calibrating a new one (implies --compare).")
@click.option("--ncu-version", default=None, help="The ncu version, for profiles that do not record it.")
@click.option("--clock-control", default=None,
              help="ncu's --clock-control setting, for profiles that do not record it.")
@click.option("--rules-dir", "rules_dirs", multiple=True, type=click.Path(file_okay=False),
              help="Use this rules folder instead of the built-in one.")
@json_option
def calibrate(profiles, out, min_kernels, mixed, drop_incomplete, focus_only, only, compare, expect_path, against,
              use_path, ncu_version, clock_control, rules_dirs, as_json):
    """Calibrate rule thresholds with Otsu's method over saved profiles (at least 30 kernels)."""
    from skillbase.calibrate.pipeline import calibrate_and_compare

    if use_path and out:
        raise InputError("--thresholds compares an existing file; it cannot be combined with --out")
    print_only = out == "-"    # the file goes to stdout: nothing written, nothing compared
    run = calibrate_and_compare(
        profiles, out=None if print_only else out, thresholds=use_path, against=against, expect=expect_path,
        compare_files=(compare or bool(expect_path) or bool(use_path)) and not print_only,
        only=only.split(",") if only else None, min_kernels=min_kernels, mixed=mixed,
        drop_incomplete=drop_incomplete, focus_only=focus_only, ncu_version=ncu_version,
        clock_control=clock_control, rules_dirs=rules_dirs)
    if print_only:
        click.echo(run.thresholds_text, nl=False)
        return
    data = run.to_json()
    if as_json:
        click.echo(json.dumps(data, indent=1, default=str))
        return
    render(data, run.population, out)


# ---- human output -----------------------------------------------------------------------------


def render(data: dict[str, Any], population: Any, out: str | None) -> None:
    from rich.table import Table
    from rich.text import Text

    from skillbase import ui

    console = ui.console(highlight=False)
    cal = data.get("calibration")
    if cal:
        p = cal["provenance"]
        console.print(Text.assemble(("population ", "bold"), f"{p['kernels']} kernels from {p['reports']} reports  ",
                                    (f"{p['population_digest'][:19]}  ", "dim"),
                                    f"gpu {p['gpu']}, ncu {p['ncu_version']}, clock control {p['clock_control']}, "
                                    f"{p['date']}"))
    else:
        console.print(Text.assemble(("population ", "bold"), f"{len(population.members)} kernels"))
    for note in population.notes:
        console.print(Text(f"note: {note}", style="yellow"))
    if population.duplicates:
        first = population.duplicates[0]
        more = f" and {len(population.duplicates) - 1} more" if len(population.duplicates) > 1 else ""
        console.print(Text(f"note: {len(population.duplicates)} duplicate measurement(s) counted once, "
                           f"e.g. {first}{more}", style="yellow"))
    if cal:
        table = Table(title="thresholds: calibrated vs ncu", title_justify="left")
        for column, justify in (("threshold", "left"), ("quantity", "left"), ("method", "left"), ("n", "right"),
                                ("ncu", "right"), ("calibrated", "right"), ("class sizes", "left"), ("η", "right"),
                                ("note", "left")):
            table.add_column(column, justify=justify, overflow="fold")
        for q in cal["quantities"]:
            otsu = q["otsu"] or {}
            sizes = "/".join(map(str, otsu.get("class_sizes", []))) or "—"
            eta = f"{otsu['separability']:.2f}" if otsu else "—"
            if not q["thresholds"]:
                cuts = ", ".join(fmt_value(t) for t in otsu.get("thresholds", [])) or "—"
                table.add_row("(none)", q["quantity"], q["method"], str(q["n"]), "—", cuts, sizes, eta,
                              q["note"] or "reported only")
                continue
            for name in q["thresholds"]:
                table.add_row(name, q["quantity"], q["method"], str(q["n"]), fmt_value(q["ncu_default"].get(name)),
                              fmt_value(q["calibrated"].get(name)), sizes, eta, q["note"])
        console.print(table)
        console.print(Text("η = between-class / total variance (Otsu's separability, 1 = perfectly separated "
                           "classes)", style="dim"))
    comp = data.get("compare")
    if comp:
        console.print(Text.assemble(("compare ", "bold"), f"A {comp['a']['path']}  vs  B {comp['b']['path']}"))
        counts = ", ".join(f"{k} {v}" for k, v in comp["changed_counts"].items())
        console.print(f"{comp['changed_class']} of {comp['kernels']} kernels change class (bottleneck or CUDAMaster "
                      f"class); changes per fact: {counts}")
        if comp["changed"]:
            table = Table(title_justify="left")
            table.add_column("kernel", overflow="fold")
            table.add_column("fact")
            table.add_column("A (baseline)")
            table.add_column("B")
            for change in comp["changed"]:
                for fact, (a, b) in change["changes"].items():
                    table.add_row(change["id"], fact, fmt_value(a), fmt_value(b))
            console.print(table)
        adv = comp["advise"]
        if adv["expected_kernels"]:
            k = adv["top"]
            table = Table(title=f"advise: expected skill in the top {k}", title_justify="left")
            for column in ("kernel", "expected", "rank A", "rank B", f"top {k} A", f"top {k} B"):
                table.add_column(column, overflow="fold")
            for row in adv["kernels"]:
                table.add_row(row["id"], ", ".join(row["expected"]), fmt_value(row["rank_default"]),
                              fmt_value(row["rank_calibrated"]), ", ".join(row["top_default"]),
                              ", ".join(row["top_calibrated"]))
            console.print(table)
            n = adv["expected_kernels"]
            console.print(f"top-{k} hits: A {adv['default'][f'top{k}']}/{n}, B {adv['calibrated'][f'top{k}']}/{n}; "
                          f"top-1 hits: A {adv['default']['top1']}/{n}, B {adv['calibrated']['top1']}/{n}")
            if adv["unmatched"]:
                console.print(Text(f"note: {len(adv['unmatched'])} expectation(s) match no profile: "
                                   + ", ".join(adv["unmatched"][:8]), style="yellow"))
        if comp.get("ablation"):
            k = adv["top"]
            table = Table(title="one quantity calibrated at a time (the others at ncu's values)", title_justify="left")
            for column in ("quantity", "thresholds", "kernels changing class", f"top-{k} hits", "top-1 hits", "helps"):
                table.add_column(column, overflow="fold")
            n = adv["expected_kernels"]
            for row in comp["ablation"]:
                table.add_row(row["quantity"], ", ".join(f"{t}={fmt_value(v)}" for t, v in row["thresholds"].items()),
                              str(row["changed_class"]), f"{row[f'top{k}']}/{n} (ncu {row[f'top{k}_default']})",
                              f"{row['top1']}/{n} (ncu {row['top1_default']})",
                              "yes" if row["keep"] == "calibrated" else "no")
            console.print(table)
        style = "bold green" if comp["keep"] == "calibrated" else "bold yellow"
        console.print(Text.assemble(("verdict ", "bold"), (comp["keep"], style), f"  {comp['reason']}"))
    if data.get("written"):
        console.print(f"wrote {data['written']}  (use it with `skillbase advise --thresholds {data['written']}`)")
    elif cal and not out:
        console.print(Text("nothing written: pass --out FILE to write the thresholds file", style="dim"))
