"""Registry listings for ``cluster policies``, ``mig algos``, ``packs algos`` and ``kernel modes``.

One rich table (name, what it does, listed facts, options with defaults) or, with ``--json``,
:meth:`gpuweave.registry.Registry.listing`. O(entries).
"""

from __future__ import annotations

import json
from typing import Callable, Iterable

import typer

from gpuweave.registry import Entry, Option, Registry

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
    from rich.console import Console

    from gpuweave.cli.output import print_table

    rows = [
        (
            shown_name(entry),
            *(str(entry.meta.get(c, "")) for c in meta_columns),
            entry.help,
            options_text(entry.options),
        )
        for entry in registry.entries().values()
    ]
    print_table(Console(), title, ("name", *meta_columns, "what", "options (default)"), rows)
