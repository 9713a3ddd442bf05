"""``gpuweave repro list|run NAME`` and ``gpuweave repro NAME``: a paper reproduction, ours beside the paper's."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from gpuweave.checks import SEED
from gpuweave.repro.registry import all_reproductions
from gpuweave.tables import print_table

NAME = "repro"
app = typer.Typer(help="Reproduce a paper's experiments: ours beside the paper's numbers.")
EXTRA_ARGS = {"allow_extra_args": True, "ignore_unknown_options": True}


@app.command("list")
def list_reproductions() -> None:
    """List the registered reproductions."""
    from rich.table import Table

    table = Table(title="reproductions")
    table.add_column("name")
    table.add_column("paper")
    table.add_column("what")
    for repro in all_reproductions().values():
        table.add_row(repro.name, repro.paper, repro.title)
    print_table(table)


@app.command("run")
def run(
    name: str = typer.Argument(..., help="Reproduction name (see `gpuweave repro list`)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Output directory (default ./gpuweave-out/repro/NAME)."),
    reps: Optional[int] = typer.Option(None, "--reps", "--seeds", help="Repetitions/seeds (default: quick CI size)."),
    seed: int = typer.Option(0, "--seed", min=SEED.lo, max=SEED.hi, help="Base random seed."),
    full: bool = typer.Option(False, "--full", help="Paper-sized run (slow)."),
) -> None:
    """Run reproduction NAME (also available as `gpuweave repro NAME`)."""
    _run(name, out, reps, seed, full, [])


def run_named(
    ctx: typer.Context,
    out: Optional[Path] = typer.Option(None, "--out", help="Output directory."),
    reps: Optional[int] = typer.Option(None, "--reps", "--seeds", help="Repetitions/seeds (default: quick)."),
    seed: int = typer.Option(0, "--seed", min=SEED.lo, max=SEED.hi, help="Base random seed."),
    full: bool = typer.Option(False, "--full", help="Paper-sized run (slow)."),
) -> None:
    """`gpuweave repro NAME ...`, the reproduction named by the command itself, with its extra options."""
    _run(ctx.info_name, out, reps, seed, full, list(ctx.args))


def _run(name: str, out: Optional[Path], reps: Optional[int], seed: int, full: bool, extra: list[str]) -> None:
    from rich.console import Console

    from gpuweave.repro.registry import (
        ReproContext,
        comparison_table,
        get_reproduction,
        parse_extra_options,
        run_reproduction,
    )

    repro = get_reproduction(name)
    options = parse_extra_options(repro, extra)
    out_dir = out or Path("gpuweave-out") / "repro" / name
    rows = run_reproduction(name, ReproContext(out_dir=out_dir, reps=reps, seed=seed, full=full, options=options))
    console = Console()
    print_table(comparison_table(rows, f"{repro.paper}: {repro.title}", notes=console.width >= 120), console)
    console.print(f"wrote {out_dir / 'comparison.csv'}")


def _shortcut_help(repro) -> str:
    extra = ", ".join("--" + k.replace("_", "-") for k in repro.options)
    return f"{repro.paper}: {repro.title}" + (f" (extra options: {extra})" if extra else "")


# `gpuweave repro far ...` as a shortcut for `gpuweave repro run far ...`, one command per reproduction.
for _repro in all_reproductions().values():
    app.command(_repro.name, help=_shortcut_help(_repro), context_settings=EXTRA_ARGS)(run_named)
