"""The `skillbase` command: a thin click layer over the library.

Sub-commands live in `skillbase/commands/<name>.py` and are imported only when invoked, so that
start-up stays fast (`advise` from a saved report must finish in well under a second).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import click

from skillbase import __version__
from skillbase.errors import SkillbaseError

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
    "runs": ("skillbase.commands.runs:runs", "List optimization runs in the store."),
    "explain": ("skillbase.commands.explain:explain", "Replay a run's decisions and evidence from the store."),
    "report": ("skillbase.commands.report:report", "Write a run's Markdown and HTML report."),
    "bench": ("skillbase.commands.bench:bench", "Run and score the MSKernelBench-style suite."),
    "calibrate": ("skillbase.commands.calibrate:calibrate", "Derive classification thresholds from profiles (Otsu)."),
    "examples": ("skillbase.commands.examples:examples", "List the bundled example kernels and copy one out."),
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
def cli() -> None:
    """Make CUDA kernels faster the way an expert does, and show the reasoning."""


def main(argv: list[str] | None = None) -> None:
    """Console entry point: user errors become one line on stderr and a non-zero exit."""
    try:
        # Without standalone mode click returns ctx.exit(n)'s code instead of exiting: pass it on.
        code = cli.main(args=argv, prog_name="skillbase", standalone_mode=False)
        if isinstance(code, int) and code != 0:
            sys.exit(code)
    except SkillbaseError as error:
        click.echo(f"error: {error.message}", err=True)
        if error.hint:
            click.echo(f"hint: {error.hint}", err=True)
        sys.exit(error.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except click.exceptions.Exit as error:
        sys.exit(error.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)


if __name__ == "__main__":
    main()
