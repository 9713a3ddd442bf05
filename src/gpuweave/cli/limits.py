"""``gpuweave limits [--json]``: the input limits, their defaults and current values (:mod:`gpuweave.limits`)."""

from __future__ import annotations

import json

import typer

NAME = "limits"


def command(as_json: bool = typer.Option(False, "--json", help="Print the limits as JSON.")) -> None:
    """List the input limits: each is checked before work starts; raise one with `gpuweave --limit NAME=VALUE`."""
    from rich.table import Table

    from gpuweave.limits import ENV, limits_table
    from gpuweave.tables import print_table

    rows = limits_table()
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title=f"input limits (raise with gpuweave --limit NAME=VALUE or {ENV})")
    for column in ("name", "value", "unit", "bounds"):
        table.add_column(column, justify="right" if column == "value" else "left")
    for row in rows:
        shown = f"{row['value']:,}" + ("" if row["value"] == row["default"] else f" (default {row['default']:,})")
        table.add_row(str(row["name"]), shown, str(row["unit"]), str(row["what"]))
    print_table(table)
