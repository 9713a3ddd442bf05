"""Registry listings for ``cluster policies``, ``mig algos``, ``packs algos`` and ``kernel modes``.

One rich table (name, what it does, listed facts, options with defaults) or, with ``--json``,
:meth:`gpuweave.registry.Registry.listing`. O(entries).
"""

from __future__ import annotations

import json
from typing import Callable, Iterable

import typer

from gpuweave.registry import Entry, Option, Registry
from gpuweave.tables import print_table

JSON_OPTION_HELP = "Print the registry listing as JSON."


def options_text(options: Iterable[Option]) -> str:
    """``name=default`` for each option, one per line."""
    return "\n".join(f"{o.name}={o.default!r}" for o in options)


def print_listing(
    registry: Registry,
    title: str,
    as_json: bool,
    meta_columns: tuple[str, ...] = (),
    shown_name: Callable[[Entry], str] = lambda entry: entry.name,
) -> None:
    """Print ``registry`` as a table titled ``title`` (meta_columns: facts from each entry's meta), or as JSON."""
    if as_json:
        typer.echo(json.dumps(registry.listing(), indent=2))
        return
    from rich.table import Table

    table = Table(title=title)
    table.add_column("name", no_wrap=True)
    for column in meta_columns:
        table.add_column(column)
    table.add_column("what")
    table.add_column("options (default)", overflow="fold")
    for entry in registry.entries().values():
        facts = [str(entry.meta.get(column, "")) for column in meta_columns]
        table.add_row(shown_name(entry), *facts, entry.help, options_text(entry.options))
    print_table(table)
