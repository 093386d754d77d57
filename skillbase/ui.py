"""What every face of skillbase draws with: one way to make a rich Console (full width on a
terminal, 160 columns when piped or logged: rich's 80-column fallback squeezes tables into
unreadable cells in CI logs and device transcripts), and matplotlib figures as inline SVG.
"""

from __future__ import annotations

import io
import logging
import sys

_quiet = False


def set_verbosity(quiet: bool = False, verbose: bool = False) -> None:
    """The global `-q` / `-v`: quiet silences progress and notes on stderr (errors still print);
    verbose sends the `skillbase.*` loggers' debug lines to stderr."""
    global _quiet
    _quiet = quiet
    logger = logging.getLogger("skillbase")
    logger.setLevel(logging.DEBUG if verbose else logging.ERROR if quiet else logging.WARNING)
    if verbose and not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("debug: %(name)s: %(message)s"))
        logger.addHandler(handler)


def console(stderr: bool = False, piped_width: int = 160, **options):
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else piped_width
    # a stderr console draws progress and notes: -q silences it
    return Console(stderr=stderr, width=width, quiet=stderr and _quiet, **options)


def figure_svg(figure) -> str:
    """A matplotlib figure as inline SVG markup, for self-contained HTML pages."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    return buffer.getvalue()[buffer.getvalue().index("<svg"):]
