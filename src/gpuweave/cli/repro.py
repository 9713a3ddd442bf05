"""``gpuweave repro list|run NAME`` and ``gpuweave repro NAME``: a paper reproduction, ours beside the paper's."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from gpuweave.checks import SEED
from gpuweave.cli.output import ProgressBar, print_json, print_table, quiet_option, show_progress
from gpuweave.repro.registry import all_reproductions

NAME = "repro"
app = typer.Typer(help="Reproduce a paper's experiments: ours beside the paper's numbers.")
EXTRA_ARGS = {"allow_extra_args": True, "ignore_unknown_options": True}


@app.command("list")
def list_reproductions(as_json: bool = typer.Option(False, "--json", help="Print the reproductions as JSON.")) -> None:
    """List the registered reproductions."""
    from rich.console import Console

    repros = all_reproductions().values()
    if as_json:
        print_json([{"name": r.name, "paper": r.paper, "what": r.title, "options": list(r.options)} for r in repros])
        return
    print_table(Console(), "reproductions", ("name", "paper", "what"), [(r.name, r.paper, r.title) for r in repros])


@app.command("run")
def run(
    name: str = typer.Argument(..., help="Reproduction name (see `gpuweave repro list`)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Output directory (default ./gpuweave-out/repro/NAME)."),
    reps: Optional[int] = typer.Option(None, "--reps", "--seeds", help="Repetitions/seeds (default: quick CI size)."),
    seed: int = typer.Option(0, "--seed", min=SEED.lo, max=SEED.hi, help="Base random seed."),
    full: bool = typer.Option(False, "--full", help="Paper-sized run (slow)."),
    quiet: bool = quiet_option(),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison rows as JSON."),
) -> None:
    """Run reproduction NAME (also available as `gpuweave repro NAME`)."""
    _run(name, out, reps, seed, full, [], quiet, as_json)


def run_named(
    ctx: typer.Context,
    out: Optional[Path] = typer.Option(None, "--out", help="Output directory."),
    reps: Optional[int] = typer.Option(None, "--reps", "--seeds", help="Repetitions/seeds (default: quick)."),
    seed: int = typer.Option(0, "--seed", min=SEED.lo, max=SEED.hi, help="Base random seed."),
    full: bool = typer.Option(False, "--full", help="Paper-sized run (slow)."),
    quiet: bool = quiet_option(),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison rows as JSON."),
) -> None:
    """`gpuweave repro NAME ...`, the reproduction named by the command itself, with its extra options."""
    _run(ctx.info_name, out, reps, seed, full, list(ctx.args), quiet, as_json)  # type: ignore[arg-type]  # invoked: named


def print_comparison(rows, title: str, out_dir: Path) -> None:
    """Ours beside the paper's (or the peer's) with the difference; notes, cut to one line, on a terminal of
    120+ columns; then where comparison.csv (every row and note in full) is."""
    from rich.console import Console

    from gpuweave.repro.registry import NOTE_CHARS, comparison_cells

    console = Console()
    notes = console.width >= 120
    columns, cells = comparison_cells(rows, notes=notes)
    caption = (
        f"notes are cut to {NOTE_CHARS} characters here" if notes else "notes: a terminal of 120+ columns shows them"
    ) + "; comparison.csv has every row and note in full"
    print_table(console, title, columns, cells, right=("paper", "ours", "diff"), caption=caption, key=2)
    console.print(f"wrote {out_dir / 'comparison.csv'}", markup=False, highlight=False)


def _run(
    name: str,
    out: Optional[Path],
    reps: Optional[int],
    seed: int,
    full: bool,
    extra: list[str],
    quiet: bool,
    as_json: bool,
) -> None:

    from gpuweave.repro.registry import ReproContext, get_reproduction, parse_extra_options, run_reproduction

    repro = get_reproduction(name)
    options = parse_extra_options(repro, extra)
    out_dir = out or Path("gpuweave-out") / "repro" / name
    ctx = ReproContext(out_dir=out_dir, reps=reps, seed=seed, full=full, options=options)
    with ProgressBar(show_progress(quiet or as_json)) as bar:
        bar.task(f"repro {name}")
        rows = run_reproduction(name, ctx)
    if as_json:
        print_rows_json(rows, out_dir)
        return
    print_comparison(rows, f"{repro.paper}: {repro.title}", out_dir)


def _shortcut_help(repro) -> str:
    extra = ", ".join("--" + k.replace("_", "-") for k in repro.options)
    return f"{repro.paper}: {repro.title}" + (f" (extra options: {extra})" if extra else "")


# `gpuweave repro far ...` as a shortcut for `gpuweave repro run far ...`, one command per reproduction.
for _repro in all_reproductions().values():
    app.command(_repro.name, help=_shortcut_help(_repro), context_settings=EXTRA_ARGS)(run_named)


def print_rows_json(rows, out_dir: Path) -> None:
    """Comparison rows as JSON (what comparison.csv holds, with the difference), and where the CSV is."""
    keys = ("experiment", "metric", "paper", "ours", "unit", "note")
    payload = [{**{k: getattr(r, k) for k in keys}, "difference": r.difference} for r in rows]
    print_json({"comparison": str(out_dir / "comparison.csv"), "rows": payload})
