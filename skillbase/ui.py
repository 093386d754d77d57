"""One way to make a rich Console: full width on a terminal, 160 columns when piped or logged.

Rich falls back to 80 columns without a terminal, which squeezes tables into unreadable cells in
CI logs and device transcripts; a fixed generous width keeps them readable there.
"""

from __future__ import annotations

import sys


def console(stderr: bool = False, piped_width: int = 160, **options):
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else piped_width
    return Console(stderr=stderr, width=width, **options)
