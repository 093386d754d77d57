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
    return "\n".join(parts)


def config_reference() -> str:
    lines = ["# Configuration", "",
             "Generated from `skillbase/config.py` by `python -m skillbase.docgen`; a test fails when it is stale.",
             "Empty values count as unset. Command-line options win over variables.", "",
             "| variable | what it sets | default |", "|---|---|---|"]
    lines += [f"| `{v.name}` | {v.meaning} | {v.default} |" for v in config.VARIABLES]
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
