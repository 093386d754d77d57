"""What every face of skillbase draws with: one way to make a rich Console (full width on a
terminal, 160 columns when piped or logged: rich's 80-column fallback squeezes tables into
unreadable cells in CI logs and device transcripts), and matplotlib figures as inline SVG.
"""

from __future__ import annotations

import io
import sys


def console(stderr: bool = False, piped_width: int = 160, **options):
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else piped_width
    return Console(stderr=stderr, width=width, **options)


def figure_svg(figure) -> str:
    """A matplotlib figure as inline SVG markup, for self-contained HTML pages."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    return buffer.getvalue()[buffer.getvalue().index("<svg"):]
