"""What every face of skillbase draws with: one way to make a rich Console (full width on a
terminal, 160 columns when piped or logged: rich's 80-column fallback squeezes tables into
unreadable cells in CI logs and device transcripts), and the parts of the reports' pages (Markdown and
HTML tables, a self-contained HTML page, matplotlib figures as inline SVG).
"""

from __future__ import annotations

import io
import logging
import sys
import time

_quiet = False


def set_verbosity(quiet: bool = False, verbose: bool = False) -> None:
    """The global `-q` / `-v`: quiet silences progress and notes on stderr (errors still print);
    verbose sends the `skillbase.*` loggers' debug lines to stderr."""
    global _quiet
    _quiet = quiet
    logger = logging.getLogger("skillbase")
    logger.setLevel(logging.DEBUG if verbose else logging.ERROR if quiet else logging.WARNING)
    logger.handlers.clear()   # the handler holds the stream: a new one each time (tests swap sys.stderr)
    if verbose:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("debug: %(name)s: %(message)s"))
        logger.addHandler(handler)


def console(stderr: bool = False, piped_width: int = 160, **options):
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else piped_width
    # a stderr console draws progress and notes: -q silences it
    return Console(stderr=stderr, width=width, quiet=stderr and _quiet, **options)


class Progress:
    """Counts and an ETA for long work (bench run, skills verify, bench optimize, resume --all).

    On a terminal: a rich progress bar (description, bar, done/total, elapsed, time left) with the
    work's own lines printed above it. Piped or logged: no bar, one line per step, prefixed with
    `[done/total, ~ETA left]`, so a CI log or a device transcript reads as before. Use it as a
    context manager; `step(done, total, line)` after each item (the total may arrive with the first
    step), `note(line)` for a line that is not a step.

        with ui.progress("verifying examples") as bar:
            verify_examples(..., on_step=bar.note, on_progress=bar.step)
    """

    def __init__(self, description: str, output=None):
        self.description = description
        self.console = output if output is not None else console(stderr=True, highlight=False)
        self.live = None
        self.task = None
        self.started = time.monotonic()

    def __enter__(self) -> Progress:
        if self.console.is_terminal:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as Bar

            self.live = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("eta"), TimeRemainingColumn(), console=self.console)
            self.live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)

    def step(self, done: int, total: int, line: str = "") -> None:
        """DONE of TOTAL items are finished; LINE says what the last one did."""
        if self.live is not None:
            if self.task is None:
                self.task = self.live.add_task(self.description, total=total)
            self.live.update(self.task, completed=done, total=total)
            if line:
                self.live.console.print(line, markup=False, highlight=False)
            return
        if done == 0 and not line:
            return                          # a log line says what was done; nothing yet
        eta = self.eta(done, total)
        self.console.print(f"[{done}/{total}{', ~' + eta + ' left' if eta else ''}] {line}".rstrip(),
                           markup=False, highlight=False)

    def note(self, line: str) -> None:
        (self.live.console if self.live is not None else self.console).print(line, markup=False, highlight=False)

    def eta(self, done: int, total: int) -> str | None:
        """Time left at the mean pace so far, e.g. '3m05s'; None before the first item or after the last."""
        if done <= 0 or done >= total:
            return None
        left = (time.monotonic() - self.started) / done * (total - done)
        minutes, seconds = divmod(int(left + 0.5), 60)
        hours, minutes = divmod(minutes, 60)
        return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


def progress(description: str, output=None) -> Progress:
    """A `Progress` on stderr (silenced by -q; OUTPUT: another rich Console); a bar only on a terminal."""
    return Progress(description, output)


Cell = str | list[str]      # a table cell: one line, or several (drawn one under another)


def markdown_table(header: list[str], rows: list[list[Cell]]) -> list[str]:
    """A GitHub Markdown table's lines; a cell of several lines joins them with <br>, and a `|`
    inside a cell is escaped, so no value can break the table."""
    def cell(value: Cell) -> str:
        text = "<br>".join(value) if isinstance(value, list) else value
        return text.replace("|", "\\|").replace("\n", " ")

    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return out


def html_table(header: list[str] | None, rows: list[list[Cell]], css_class: str | None = None) -> str:
    """An HTML table, every value escaped; a cell of several lines shows them one under another.
    No header (None): a table of key-value rows."""
    import html

    def cell(value: Cell) -> str:
        return "<br>".join(html.escape(v) for v in value) if isinstance(value, list) else html.escape(value)

    head = "<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr></thead>" if header else ""
    body = "".join("<tr>" + "".join(f"<td>{cell(c)}</td>" for c in row) + "</tr>" for row in rows)
    attribute = f" class='{css_class}'" if css_class else ""
    return f"<table{attribute}>{head}<tbody>{body}</tbody></table>"


PAGE_STYLE = ("body{font-family:system-ui,sans-serif;margin:2em}"
              "table{border-collapse:collapse;margin-bottom:2em}"
              "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right;vertical-align:top}"
              "th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}figure{margin:1em 0}")


def html_page(title: str, body: str, style: str = "") -> str:
    """A self-contained HTML page (no external resource) around BODY; TITLE is escaped."""
    import html

    title = html.escape(title)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
            f"<style>{PAGE_STYLE}{style}</style></head><body><h1>{title}</h1>{body}</body></html>\n")


def figure_svg(figure) -> str:
    """A matplotlib figure as inline SVG markup, for self-contained HTML pages."""
    import matplotlib

    buffer = io.StringIO()
    # text stays text (not glyph paths): the page is smaller, searchable, and its labels can be checked
    # and a fixed salt for the SVG's ids: the same run gives the same page
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "skillbase"}):
        figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})  # same run, same page
    return buffer.getvalue()[buffer.getvalue().index("<svg"):]
