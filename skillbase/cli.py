"""The `skillbase` command: a thin click layer over the library.

Sub-commands live in `skillbase/commands/<name>.py` and are imported only when invoked, so that
start-up stays fast (`advise` from a saved report must finish in well under a second).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import logging
import os
import sys

import click

from skillbase import __version__, config, ui
from skillbase.errors import SkillbaseError, error_document

log = logging.getLogger(__name__)

# name -> "module:attribute"; each module defines one click command or group.
COMMANDS: dict[str, tuple[str, str]] = {
    "advise": ("skillbase.commands.advise:advise", "Rank expert skills for a kernel from its evidence."),
    "evidence": ("skillbase.commands.evidence:evidence", "Convert a profile (and source) into an evidence JSON."),
    "rules": ("skillbase.commands.rules:rules", "Validate, test and inspect the rule set."),
    "skills": ("skillbase.commands.skills:skills", "List, show, validate, verify, search and scaffold skills."),
    "init": ("skillbase.commands.init:init", "Draft a task spec from a kernel's launcher."),
    "check": ("skillbase.commands.check:check", "Build, verify and time a kernel against its spec."),
    "profile": ("skillbase.commands.profile:profile", "Profile a kernel with ncu and write its evidence."),
    "doctor": ("skillbase.commands.doctor:doctor", "Check the GPU, driver, nvcc, ncu and Python extras."),
    "optimize": ("skillbase.commands.optimize:optimize", "Optimize a kernel round by round, verified and recorded."),
    "resume": ("skillbase.commands.optimize:resume", "Continue a paused or interrupted run."),
    "stop": ("skillbase.commands.optimize:stop", "End a paused or interrupted run by hand, with a reason."),
    "pending": ("skillbase.commands.pending:pending", "List paused runs: their prompts and where candidates go."),
    "redecide": ("skillbase.commands.redecide:redecide", "Re-decide paused runs' rounds with the current rules."),
    "store": ("skillbase.commands.store:store", "Pack the run store into one file for a trip, and unpack it."),
    "runs": ("skillbase.commands.runs:runs", "List optimization runs in the store."),
    "explain": ("skillbase.commands.explain:explain", "Replay a run's decisions and evidence from the store."),
    "report": ("skillbase.commands.report:report", "Write a run's Markdown and HTML report."),
    "bench": ("skillbase.commands.bench:bench", "Run and score the MSKernelBench-style suite."),
    "calibrate": ("skillbase.commands.calibrate:calibrate", "Derive classification thresholds from profiles (Otsu)."),
    "examples": ("skillbase.commands.examples:examples", "List the bundled example kernels and copy one out."),
    "mcp": ("skillbase.commands.mcp:mcp", "Serve skillbase's tools to coding agents over MCP (stdio or HTTP)."),
    "lint": ("skillbase.commands.lint:lint", "Statically check kernel sources (no GPU): text, JSON, SARIF or GitHub."),
    "config": ("skillbase.commands.config:config", "Show every setting, its value and where it came from."),
    "kernelbench": ("skillbase.commands.kernelbench:kernelbench", "Import KernelBench problems as tasks."),
}


class LazyGroup(click.Group):
    """A group whose sub-commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in COMMANDS if _available(name))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS or not _available(name):
            return None
        target, _ = COMMANDS[name]
        module_name, attribute = target.split(":")
        return getattr(importlib.import_module(module_name), attribute)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Use the short help from COMMANDS so that `--help` imports nothing heavy.
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _available(name: str) -> bool:
    module_name = COMMANDS[name][0].split(":")[0]
    return importlib.util.find_spec(module_name) is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="skillbase")
@click.option("-q", "--quiet", is_flag=True, help="Print errors only (and the document asked for with --json).")
@click.option("-v", "--verbose", is_flag=True, help="Print debug lines on stderr (settings, files read, timings).")
@click.pass_context
def cli(ctx: click.Context, quiet: bool, verbose: bool) -> None:
    """Make CUDA kernels faster the way an expert does, and show the reasoning.

    Shell completion (bash; zsh and fish likewise): eval "$(_SKILLBASE_COMPLETE=bash_source skillbase)"
    """
    if quiet and verbose:
        raise click.UsageError("give -q or -v, not both")
    ui.set_verbosity(quiet=quiet, verbose=verbose)
    if quiet:
        # the exit status and the error are the whole answer (main prints the error after this
        # context closes); a --json document is still data
        devnull = ctx.with_resource(open(os.devnull, "w"))
        ctx.with_resource(contextlib.redirect_stderr(devnull))
        if not (ctx.obj or {}).get("json"):
            ctx.with_resource(contextlib.redirect_stdout(devnull))
    ctx.default_map = _command_defaults(ctx)
    log.debug("skillbase %s, python %s, command %s", __version__, sys.version.split()[0], ctx.invoked_subcommand)


def _command_defaults(ctx: click.Context) -> dict | None:
    """The configuration file's command tables as click's default_map: each option key (`top`,
    `extra-rules`) becomes its parameter's name; folders are relative to the file. Click then
    gives a flag, then its variable, then these, then the built-in default."""
    found = config.load_config_file()
    if found is None:
        return None
    defaults: dict = {}
    for path, options in found.commands.items():
        command, group_ctx = ctx.command, ctx
        for depth, name in enumerate(path):
            sub = command.get_command(group_ctx, name) if isinstance(command, click.Group) else None
            if sub is None:
                known = command.list_commands(group_ctx) if isinstance(command, click.Group) else []
                where = " ".join(path[:depth]) or "skillbase"
                raise SkillbaseError(f"{found.path}: [{found.table_name(path[:depth + 1])}]: `{where}` has no command "
                                     f"`{name}`", f"the commands are: {', '.join(known)}")
            command, group_ctx = sub, click.Context(sub, info_name=name, parent=group_ctx)
        table = defaults
        for name in path:
            table = table.setdefault(name, {})
        params = {opt.lstrip("-"): p for p in command.params if isinstance(p, click.Option) for opt in p.opts}
        for key, value in options.items():
            param = params.get(key) or params.get(key.replace("_", "-"))
            if param is None:
                raise SkillbaseError(f"{found.path}: `skillbase {' '.join(path)}` has no option --{key}",
                                     f"its options: {', '.join(sorted(o for o in params if len(o) > 1))}")
            if isinstance(param.type, click.Path):
                value = [found.resolve(v) for v in value] if isinstance(value, list) else found.resolve(value)
            table[param.name] = value
            log.debug("%s: `skillbase %s --%s` defaults to %r", found.path, " ".join(path), key, value)
    return defaults


def _wants_json(argv: list[str]) -> bool:
    """`--json` among the options (not after `--`): errors then come as a JSON object on stdout."""
    options = argv[:argv.index("--")] if "--" in argv else argv
    return ("--json" in options or "--format=json" in options
            or any(a == "--format" and b == "json" for a, b in zip(options, options[1:], strict=False)))


def _fail(message: str, hint: str | None, exit_code: int, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(error_document(message, hint, exit_code), indent=1))
    else:
        click.echo(f"error: {message}", err=True)
        if hint:
            click.echo(f"hint: {hint}", err=True)
    sys.exit(exit_code)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: user errors become one line on stderr (a JSON object on stdout with
    --json) and the exit code of `skillbase.errors.EXIT_CODES`."""
    argv = sys.argv[1:] if argv is None else list(argv)
    as_json = _wants_json(argv)
    try:
        # Without standalone mode click returns ctx.exit(n)'s code instead of exiting: pass it on.
        code = cli.main(args=argv, prog_name="skillbase", standalone_mode=False, obj={"json": as_json})
        if isinstance(code, int) and code != 0:
            sys.exit(code)
    except SkillbaseError as error:
        _fail(error.message, error.hint, error.exit_code, as_json)
    except click.exceptions.Abort:
        _fail("interrupted", None, 130, as_json)   # click turns Ctrl-C into Abort
    except click.ClickException as error:
        if not as_json:
            error.show()
            sys.exit(error.exit_code)
        hint = f"see `{error.ctx.command_path} --help`" if getattr(error, "ctx", None) else None
        _fail(error.format_message(), hint, error.exit_code, as_json)
    except click.exceptions.Exit as error:
        sys.exit(error.exit_code)
    except KeyboardInterrupt:
        _fail("interrupted", None, 130, as_json)
    except BrokenPipeError:
        sys.exit(0)


if __name__ == "__main__":
    main()
