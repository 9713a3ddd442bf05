"""Print rich tables that never break a word, in an 80-column terminal or in a pipe.

Problem: rich fits a table to the console by wrapping cells at spaces; when even the longest word of every
column does not fit side by side, its last resort narrows every column evenly and cuts words in the middle
(``best_fit`` printed as ``best_fi`` / ``t``, ``False`` as ``Fals`` / ``e``). Output that is piped (not a
terminal) is 80 columns wide too, so a log or a ``| grep`` gets the broken words.

:func:`print_table` measures the table first: when its narrowest layout fits, rich prints it as usual (cells
wrap at spaces only); when it does not, the table is printed as records instead, one block per row with one
``column: value`` line per cell, wrapped at spaces under the value. A single word longer than the whole
console is the only thing still folded. Complexity: O(cells) to measure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def min_width(table: Table, console: Console) -> int:
    """The narrowest width at which ``table`` prints without breaking a word (rich's own column minimums)."""
    wide = console.options.update_width(100_000)
    columns = sum(table._measure_column(console, wide, column).minimum for column in table.columns)
    return columns + table._extra_width


def as_records(table: Table) -> list:
    """The table as renderables: its title, then per row a grid of ``column: value`` lines (a blank line apart)."""
    from rich.table import Table as RichTable
    from rich.text import Text

    out: list = []
    if table.title:
        out.append(Text(str(table.title), style="bold") if isinstance(table.title, str) else table.title)
    headers = [str(column.header) if column.header is not None else "" for column in table.columns]
    cells = [list(column._cells) for column in table.columns]
    for index in range(table.row_count):
        grid = RichTable.grid(padding=(0, 1))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        for header, column in zip(headers, cells):
            value = column[index] if index < len(column) else ""
            if value not in ("", None):
                grid.add_row(f"{header}:" if header else "", value)
        out.append(grid)
    return out


def print_table(table: Table, console: Console | None = None) -> None:
    """Print ``table`` on ``console`` (default: a new stdout console), as records when it cannot fit."""
    from rich.console import Console as RichConsole

    console = console or RichConsole()
    if min_width(table, console) <= console.width:
        console.print(table)
        return
    for index, renderable in enumerate(as_records(table)):
        if index > 1:
            console.print()
        console.print(renderable)


def cell(value: object, spec: str = ".4g") -> str:
    """A number for a table cell: formatted with ``spec``, or ``n/a`` when it is undefined (None, NaN, infinite),
    so that an undefined value is never printed as if it were a result."""
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "n/a" if value is None else str(value)
    return format(value, spec) if math.isfinite(value) else "n/a"
