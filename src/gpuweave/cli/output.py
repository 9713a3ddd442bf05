"""How every command prints: progress bars, JSON and tables that fit the terminal (one place for each).

* :class:`ProgressBar`: a rich progress bar on stderr for work that can take more than a few seconds. It is shown
  only when stdout and stderr are terminals and ``--quiet`` is not given (:func:`show_progress`), so piped or
  captured output never carries bar frames or control codes.
* :func:`print_json`: one JSON document on stdout (infinities and NaN as ``null``), what ``--json`` prints.
* :func:`fit_tables` / :func:`print_table`: rich tables that fit the console width (80 columns when stdout is not
  a terminal) without breaking a word: each column is at least as wide as its longest word, and when the
  columns cannot all fit, the table is split into several tables that repeat the first (key) column. Other
  commands that print tables (hardening of the 80-column rule included) should use this helper.

Complexity: O(cells) per table.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

import typer

QUIET_HELP = "No progress bar (it is also off when the output is not a terminal)."
JSON_HELP = "Print the result as JSON instead of a table."
#: rich draws a column as its text plus one space of padding on each side and one border character
_COLUMN_OVERHEAD = 3


def quiet_option() -> Any:
    return typer.Option(False, "--quiet", "-q", help=QUIET_HELP)


def show_progress(quiet: bool) -> bool:
    """Whether to draw a progress bar: not with --quiet, and only when stdout and stderr are terminals."""
    return not quiet and sys.stdout.isatty() and sys.stderr.isatty()


class ProgressBar:
    """A transient rich progress bar on stderr, or nothing when disabled; use as a context manager.

    ``bar.task(label, total)`` returns a ``callback(done, total=None)`` (None when the bar is off); a total of
    None gives a bar that pulses with the elapsed time until a callback names the total (work whose size is not
    known in advance, e.g. a reproduction)."""

    def __init__(self, enabled: bool) -> None:
        self._bar = None
        if enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            self._bar = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )

    @property
    def enabled(self) -> bool:
        return self._bar is not None

    def task(self, label: str, total: int | None = None) -> Callable[..., None] | None:
        if self._bar is None:
            return None
        task = self._bar.add_task(label, total=total)
        return lambda done, total=None: self._bar.update(task, completed=done, total=total)

    def __enter__(self) -> ProgressBar:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars
        return _json_safe(value.item())
    if hasattr(value, "__fspath__"):
        return str(value)
    return value


def print_json(payload: Any) -> None:
    """One JSON document on stdout (non-finite numbers as null), indented for people and parsers alike."""
    typer.echo(json.dumps(_json_safe(payload), indent=2, allow_nan=False))


def _longest_word(text: str) -> int:
    return max((len(word) for line in text.splitlines() for word in line.split()), default=0)


def fit_tables(
    title: str | None,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    width: int,
    *,
    right: Sequence[str] = (),
) -> list[Any]:
    """Rich tables showing ``rows`` under ``columns`` in at most ``width`` characters, words never broken.

    Every column needs at least its longest word (header included). Columns are taken in order while
    they fit; the rest go to a further table that repeats the first column. Cells in ``right`` are right-aligned.
    """
    from rich.table import Table
    from rich.text import Text

    text = [["" if v is None else str(v) for v in row] for row in rows]
    need = [max([_longest_word(c)] + [_longest_word(r[i]) for r in text]) for i, c in enumerate(columns)]
    pages: list[list[int]] = []
    for i in range(1, len(columns)) if len(columns) > 1 else []:
        page = pages[-1] if pages else None
        used = 1 + sum(need[j] + _COLUMN_OVERHEAD for j in [0, *(page or [])])
        if page is not None and used + need[i] + _COLUMN_OVERHEAD <= width:
            page.append(i)
        else:
            pages.append([i])
    natural = [
        max([len(line) for line in c.splitlines()] + [len(x) for r in text for x in r[i].splitlines()] + [1])
        for i, c in enumerate(columns)
    ]
    tables = []
    for n, page in enumerate(pages or [[]]):
        shown = [0, *page] if columns else []
        widths = _widths(shown, need, natural, width)
        suffix = f" ({n + 1}/{len(pages)})" if len(pages) > 1 else ""
        table = Table(title=(title or "") + suffix if title or suffix else None)
        for j in shown:
            # fixed widths (rich's own shrinking narrows the widest column first, breaking its words); cells are
            # Text so "[...]" in a name is never read as markup
            justify = "right" if columns[j] in right else "left"
            table.add_column(Text(columns[j]), width=widths[j], overflow="fold", justify=justify)
        for row in text:
            table.add_row(*(Text(row[j]) for j in shown))
        tables.append(table)
    return tables


def print_table(
    console: Any, title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]], *, right=()
) -> None:
    """:func:`fit_tables` at the console's width, printed."""
    for table in fit_tables(title, columns, rows, console.width, right=right):
        console.print(table)


def _widths(shown: list[int], need: list[int], natural: list[int], width: int) -> dict[int, int]:
    """Column widths: each its longest word, then the space left given to the columns closest to fitting their
    longest line, so as few cells as possible wrap."""
    widths = {j: max(need[j], 1) for j in shown}
    spare = width - 1 - sum(widths[j] + _COLUMN_OVERHEAD for j in shown)
    for j in sorted(shown, key=lambda j: natural[j] - widths[j]):
        grow = min(max(natural[j] - widths[j], 0), max(spare, 0))
        widths[j] += grow
        spare -= grow
    return widths
