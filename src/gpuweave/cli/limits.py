"""``gpuweave limits [--json]``: the input limits, their defaults and current values (:mod:`gpuweave.limits`)."""

from __future__ import annotations

import typer

NAME = "limits"


def command(as_json: bool = typer.Option(False, "--json", help="Print the limits as JSON.")) -> None:
    """List the input limits: each is checked before work starts; raise one with `gpuweave --limit NAME=VALUE`."""
    from rich.console import Console

    from gpuweave.cli.output import print_json, print_table
    from gpuweave.limits import ENV, limits_table

    rows = limits_table()
    if as_json:
        print_json(rows)
        return
    cells = []
    for row in rows:
        shown = f"{row['value']:,}" + ("" if row["value"] == row["default"] else f" (default {row['default']:,})")
        cells.append((str(row["name"]), shown, str(row["unit"]), str(row["what"])))
    title = f"input limits (raise with gpuweave --limit NAME=VALUE or {ENV})"
    print_table(Console(), title, ("name", "value", "unit", "bounds"), cells, right=("value",))
