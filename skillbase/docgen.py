"""Reference pages generated from the code, so they cannot drift: `docs/cli.md` (every command's
`--help`) and `docs/config.md` (every setting in `skillbase.config.VARIABLES`).

    python -m skillbase.docgen            # rewrite both pages
    python -m skillbase.docgen --check    # exit 1 when a page is stale (CI runs the test instead)
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from skillbase import config


def _commands(group: click.Group, ctx: click.Context, prefix: list[str]):
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        path = [*prefix, name]
        yield path, command
        if isinstance(command, click.Group):
            sub_ctx = click.Context(command, info_name=name, parent=ctx)
            yield from _commands(command, sub_ctx, path)


def cli_reference() -> str:
    from skillbase.cli import cli

    # The CLI's own help names (-h, --help) in every context: click caches a command's help option
    # from the first context that asks, so a context without them would print another page.
    names = cli.context_settings["help_option_names"]
    root = click.Context(cli, info_name="skillbase", terminal_width=100, max_content_width=100,
                         help_option_names=names)
    parts = ["# Command reference", "",
             "Generated from the code by `python -m skillbase.docgen`; a test fails when it is stale.", "",
             "```", cli.get_help(root), "```", ""]
    for path, command in _commands(cli, root, []):
        ctx = click.Context(command, info_name=" ".join(["skillbase", *path]), terminal_width=100,
                            max_content_width=100, help_option_names=names)
        parts += [f"## skillbase {' '.join(path)}", "", "```", command.get_help(ctx), "```", ""]
    return "\n".join(parts + exit_codes_section())


def documents_section() -> list[str]:
    """Every `--json` document and its schema (from `skillbase.documents.DOCUMENTS`)."""
    from skillbase.documents import DOCUMENTS

    lines = ["## JSON documents", "",
             "What `--json` prints (`lint --format json` likewise) is one of these documents; each starts with its "
             "`schema_version` and is described by a JSON Schema shipped in the package "
             "(`skillbase/schemas/<kind>.schema.json`; `evidence` is the evidence document).", "",
             "| document | version | schema |", "|---|---|---|"]
    return lines + [f"| `{kind}` | {version} | `skillbase/schemas/{kind}.schema.json` |"
                    for kind, version in DOCUMENTS.items()]


def exit_codes_section() -> list[str]:
    """The one place the exit codes are documented (from `skillbase.errors.EXIT_CODES`)."""
    from skillbase.errors import EXIT_CODES

    lines = ["## Exit codes", "",
             "Every command exits with one of these. With `--json`, a failure (codes 2, 3, 130) prints a JSON "
             "object on stdout instead of text on stderr: "
             '`{"schema_version": 1, "error": {"message", "hint", "kind", "exit_code"}}` '
             "(`skillbase/schemas/error.schema.json`); `kind` is the name below.", "",
             "| code | kind | meaning |", "|---|---|---|"]
    lines += [f"| {e.code} | `{e.kind}` | {e.meaning} |" for e in EXIT_CODES]
    return [*lines, "", *documents_section(), "",
            "## Shell completion", "",
            "click's completion, for bash (zsh and fish: `zsh_source`, `fish_source`):", "",
            "```", 'eval "$(_SKILLBASE_COMPLETE=bash_source skillbase)"   # in ~/.bashrc', "```", ""]


def config_reference() -> str:
    lines = ["# Configuration", "",
             "Generated from `skillbase/config.py` by `python -m skillbase.docgen`; a test fails when it is stale.",
             "Empty values count as unset. Precedence: a command-line option, then the variable, then the "
             "configuration file, then the default. `skillbase config` shows each setting's value and source.", "",
             "| variable | file key | what it sets | default |", "|---|---|---|---|"]
    lines += [f"| `{v.name}` | `{v.key}` | {v.meaning} | {v.default} |" for v in config.VARIABLES]
    lines += ["", "## The configuration file", "",
              f"The nearest of {', '.join(f'`{n}`' for n in config.CONFIG_FILES)} from the working directory "
              "upward (a `pyproject.toml` counts only with a `[tool.skillbase]` table; as ruff finds its own). "
              "Its keys are the file keys above; a table per command gives defaults to that command's options "
              "(an option's long name, without `--`). Relative folders are relative to the file.", "",
              "```toml", "[tool.skillbase]            # in skillbase.toml: the same keys at the top level",
              'store = "runs"', 'rules-path = ["my_rules"]', "llm-timeout = 300", "",
              "[tool.skillbase.advise]", "top = 10", "",
              "[tool.skillbase.rules.test]  # a group's sub-command", "failed = true", "```", "",
              "An unknown key, command or option is an error that names the file and the nearest match."]
    lines += ["", "Folders (Linux; other systems use their platform's equivalents, via platformdirs):", "",
              "- cache: `~/.cache/skillbase` (`$XDG_CACHE_HOME` honoured; `$SKILLBASE_CACHE` moves it);",
              "- data: `~/.local/share/skillbase` (`$XDG_DATA_HOME` honoured): the run store and bench results.",
              "", "The OpenAI client's own variables are read as it documents them: "
              "`OPENAI_API_KEY`, `OPENAI_BASE_URL`.",
              ""]
    return "\n".join(lines)


PAGES = {"cli.md": cli_reference, "config.md": config_reference}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    docs = Path(__file__).resolve().parents[1] / "docs"
    stale = []
    for name, render in PAGES.items():
        text = render()
        path = docs / name
        if "--check" in argv:
            if not path.is_file() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print(f"stale: {', '.join(stale)}; run `python -m skillbase.docgen`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
