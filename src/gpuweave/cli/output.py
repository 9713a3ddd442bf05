"""How every command prints: progress bars, JSON and tables that fit the terminal (one place for each).

* :class:`ProgressBar`: a rich progress bar on stderr for work that can take more than a few seconds. It is shown
  only when stdout and stderr are terminals and ``--quiet`` is not given (:func:`show_progress`), so piped or
  captured output never carries bar frames or control codes.
* :func:`print_json`: one JSON document on stdout (infinities and NaN as ``null``), what ``--json`` prints.
  Commands whose ``--json PATH`` writes a file (``mig plan``, ``packs plan``) take ``--json -`` for stdout
  (:func:`is_stdout`): the same document, and nothing else on stdout.
* :func:`fit_tables` / :func:`print_table`: rich tables that fit the console width (80 columns when stdout is not
  a terminal) without breaking a word: each column is at least as wide as its longest word, and when the
  columns cannot all fit, the table is split into several tables that repeat the key column(s) (or, when a
  column cannot fit even beside them, shown as one record per row). Every command that prints a table goes
  through :func:`print_table` (no ``rich.table.Table`` elsewhere in the CLI), so a cell is never cut: long
  texts wrap at spaces, and a table too wide is split.

Complexity: O(cells) per table.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any, Literal

import typer

from gpuweave.units import metric_text, number_text

QUIET_HELP = "No progress bar (it is also off when the output is not a terminal)."
JSON_HELP = "Print the result as JSON instead of a table."
#: the path that means "standard output" for an option that writes a file (``--json -``), as in most Unix tools
STDOUT_PATH = "-"
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
    known in advance, e.g. a reproduction). After the elapsed time comes the time left, as rich estimates it from
    the recent pace (a long simulation whose queue grows slows down, so read it as a lower bound)."""

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
                TimeRemainingColumn,
            )

            self._bar = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("left"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
                # rich's pace is over the last 30 s by default; a long run reports every 1% of its jobs, minutes
                # apart, so the time left stayed unknown. The pace over the last hour instead.
                speed_estimate_period=3600.0,
            )

    @property
    def enabled(self) -> bool:
        return self._bar is not None

    def task(self, label: str, total: int | None = None) -> Callable[..., None] | None:
        if self._bar is None:
            return None
        bar = self._bar
        task = bar.add_task(label, total=total)
        return lambda done, total=None: bar.update(task, completed=done, total=total)

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


def is_stdout(path: Any) -> bool:
    """Whether an output-file option was given as ``-`` (write to stdout; then stdout carries nothing else)."""
    return path is not None and str(path) == STDOUT_PATH


def cell(value: object, spec: str | None = None) -> str:
    """A number for a table cell: :func:`gpuweave.units.number_text` (thousands separators, no scientific notation
    from 10^-3 to 10^15, ``n/a`` when undefined), or formatted with ``spec``. JSON output never goes through here:
    it keeps the raw numbers."""
    if spec is not None and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return format(value, spec)
    return number_text(value)


def metric_cell(name: str, value: object) -> str:
    """A run metric for a summary table (:func:`gpuweave.units.metric_text`): a metric in seconds (a name ending in
    ``_s``) with its unit, and the larger unit its magnitude reaches beside it ("434,404 s (5.028 d)"), as the
    reports' tables show it."""
    return metric_text(name, value)


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
    caption: str | None = None,
    key: int = 1,
) -> list[Any]:
    """Rich tables showing ``rows`` under ``columns`` in at most ``width`` characters, words never broken.

    Every column needs at least its longest word (header included). Columns are taken in order while
    they fit; the rest go to a further table that repeats the first ``key`` columns (what names a row). Cells in
    ``right`` are right-aligned; ``caption`` goes under the last table (wrapped at spaces, like the title).
    When a column cannot fit even beside the key columns alone, the rows are shown as records instead (one block
    per row, each cell under or beside its column's name; :func:`_records`).
    """
    from rich.table import Table
    from rich.text import Text

    text = [["" if v is None else str(v) for v in row] for row in rows]
    need = [max([_longest_word(c)] + [_longest_word(r[i]) for r in text]) for i, c in enumerate(columns)]
    keys = list(range(min(max(key, 1), len(columns))))
    pages: list[list[int]] = []
    for i in range(len(keys), len(columns)):
        page = pages[-1] if pages else None
        if page is not None and _min_width([*keys, *page, i], need) <= width:
            page.append(i)
        else:
            pages.append([i])
    if any(_min_width([*keys, *page], need) > width for page in pages or [[]]):
        return _records(title, columns, text, width, caption)
    natural = [
        max([len(line) for line in c.splitlines()] + [len(x) for r in text for x in r[i].splitlines()] + [1])
        for i, c in enumerate(columns)
    ]
    tables = []
    for n, page in enumerate(pages or [[]]):
        shown = [*keys, *page]
        widths = _widths(shown, need, natural, width)
        suffix = f" ({n + 1}/{len(pages)})" if len(pages) > 1 else ""
        # titles and captions are Text too: a path or a name with "[...]" in it is never read as markup
        table = Table(title=Text((title or "") + suffix) if title or suffix else None)
        for j in shown:
            # fixed widths (rich's own shrinking narrows the widest column first, breaking its words); cells are
            # Text so "[...]" in a name is never read as markup
            justify: Literal["right", "left"] = "right" if columns[j] in right else "left"
            table.add_column(Text(columns[j]), width=widths[j], overflow="fold", justify=justify)
        for row in text:
            table.add_row(*(Text(row[j]) for j in shown))
        tables.append(table)
    if caption:
        tables[-1].caption = Text(caption)
    return tables


def _min_width(shown: list[int], need: list[int]) -> int:
    """The narrowest a table of the ``shown`` columns can be without breaking a word (borders included)."""
    return 1 + sum(need[j] + _COLUMN_OVERHEAD for j in shown)


def _records(title: str | None, columns: Sequence[str], text: list[list[str]], width: int, caption: str | None):
    """The rows as records, for tables that cannot fit even split: per row, each non-empty cell beside its
    column's name (a two-column grid) when the longest word fits beside the longest name, else under it, indented
    by two; rows a blank line apart. Words still wrap at spaces only."""
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    out: list[Any] = [Text(title, style="bold")] if title else []
    label = max((len(c) for c in columns), default=0)
    value = width - label - 1
    longest = max((_longest_word(cell) for row in text for cell in row), default=0)
    beside = value >= longest
    indent = 2 if longest <= width - 2 else 0
    for n, row in enumerate(text):
        if n or title:
            out.append(Text(""))
        cells = [(c, v) for c, v in zip(columns, row) if v]
        if beside:
            grid = Table.grid(padding=(0, 1))
            grid.add_column(width=label, no_wrap=True, style="bold")
            grid.add_column(width=value, overflow="fold")
            for c, v in cells:
                grid.add_row(Text(c), Text(v))
            out.append(grid)
        else:
            for c, v in cells:
                out += [Text(c, style="bold"), Padding(Text(v), (0, 0, 0, indent))]
    if caption:
        out += [Text(""), Text(caption)]
    return out


def print_table(
    console: Any,
    title: str | None,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    right: Sequence[str] = (),
    caption: str | None = None,
    key: int = 1,
) -> None:
    """:func:`fit_tables` at the console's width, printed. Every command's tables go through here."""
    for table in fit_tables(title, columns, rows, console.width, right=right, caption=caption, key=key):
        console.print(table)


def _widths(shown: list[int], need: list[int], natural: list[int], width: int) -> dict[int, int]:
    """Column widths: each at least its longest word, at most its longest line; the space left is shared out by
    water-filling (the largest common cap that fits), so short columns show whole and long ones wrap alike
    rather than one long column squeezing another into a narrow strip."""
    floor = {j: max(need[j], 1) for j in shown}
    room = width - 1 - _COLUMN_OVERHEAD * len(shown)

    def at(cap: int) -> dict[int, int]:
        return {j: max(floor[j], min(natural[j], cap)) for j in shown}

    lo, hi = 0, max([natural[j] for j in shown] + [1])
    while lo < hi:  # the largest cap whose widths fit the room
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if sum(at(mid).values()) <= room else (lo, mid - 1)
    widths = at(lo)
    spare = room - sum(widths.values())
    for j in shown:  # what rounding left over, one column at a time
        grow = min(max(natural[j] - widths[j], 0), max(spare, 0))
        widths[j] += grow
        spare -= grow
    return widths
