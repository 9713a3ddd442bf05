"""``gpuweave sweep SWEEP.yaml``: run a grid of cluster simulations, MIG plans or packs plans locally or on Ray."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from gpuweave.cli.output import print_json, quiet_option, show_progress
from gpuweave.executors import executor_names, spoken
from gpuweave.units import column

NAME = "sweep"

#: metrics of a cluster sweep in the console table (all of them are in sweep.csv); other grains show their
#: aggregate metrics (gpuweave.sweep.spec.GRAINS)
TABLE_METRICS = ("runs", "avg_jct_s", "p99_jct_s", "makespan_s", "utilization", "energy_kwh")


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _print_aggregate(spec, rows: list[dict]) -> None:
    """Means over seeds, as the report's table shows them: a column of times in the unit its largest value calls
    for, named in the header (:func:`gpuweave.units.column`: ``avg jct (min)``, the unit of the report's chart of
    the same means), the headers' words apart so they can wrap (``relative response time``)."""
    from rich.console import Console

    from gpuweave.cli.output import print_table
    from gpuweave.report.markup import format_value
    from gpuweave.sweep.spec import GRAINS

    cluster = spec.grain == "cluster"
    metrics = TABLE_METRICS if cluster else ("runs", *GRAINS[spec.grain].aggregate_metrics)
    shown = [c for c in rows[0] if c in spec.grid or c in metrics]
    columns = {c: column(c if c not in spec.grid else "", [row[c] for row in rows]) for c in shown}
    headers = [c if c in spec.grid else columns[c].header.replace("_", " ") for c in shown]
    right = [h for c, h in zip(shown, headers) if not isinstance(rows[0][c], str)]
    cells = [[columns[c].text(row[c]) if _number(row[c]) else format_value(row[c]) for c in shown] for row in rows]
    key = sum(1 for c in shown if c in spec.grid) or 1  # a split table repeats the grid values that name a row
    print_table(Console(), f"sweep {spec.name}: means over seeds", headers, cells, right=right, key=key)


def command(
    spec_path: Path = typer.Argument(..., metavar="SWEEP.yaml", help="Sweep file: grain, base, grid, out."),
    executor: str = typer.Option(
        "local", "--executor", help=f"Where cells run: {spoken(executor_names(sweeps=True))}."
    ),
    address: Optional[str] = typer.Option(
        None, "--address", help="Ray cluster address to join (e.g. auto, ray://host:10001); default: local Ray."
    ),
    workers: Optional[int] = typer.Option(
        None, "--workers", help="Worker processes (local) or CPUs of a local Ray (default: all CPUs)."
    ),
    out: Optional[Path] = typer.Option(None, "--out", help="Output directory (overrides the file's out)."),
    progress: bool = typer.Option(
        True, "--progress/--no-progress", help="Show a progress bar on stderr (only on a terminal)."
    ),
    quiet: bool = quiet_option(),
    as_json: bool = typer.Option(
        False, "--json", help="Print the sweep's summary (what sweep_summary.json holds) as JSON."
    ),
) -> None:
    """Run every cell of SWEEP.yaml (finished cells are reused) and write sweep.csv/.parquet and a report."""
    from gpuweave.files import prepare_output_dir
    from gpuweave.sweep.executors import make_executor
    from gpuweave.sweep.spec import check_inputs, load_sweep
    from gpuweave.sweep.sweep import run_sweep

    spec = load_sweep(spec_path, out=out)
    check_inputs(spec)
    prepare_output_dir(spec.out, field="out", create=False)
    with make_executor(executor, workers=workers, address=address) as ex:
        df = run_sweep(spec, ex, progress=progress and show_progress(quiet or as_json))
    summary = df.attrs["summary"]
    if as_json:
        print_json(summary)
        if summary["failed"]:
            raise typer.Exit(1)
        return
    if summary["aggregate"]:
        _print_aggregate(spec, summary["aggregate"])
    typer.echo(
        f"{summary['cells']} cells: {summary['executed']} run, {summary['cached']} reused, {summary['failed']} failed"
    )
    for failure in summary["failures"]:
        typer.echo(f"failed cell {failure['cell']} (key {failure['key']}): {failure['error']}", err=True)
    out_dir = Path(summary["out"])
    for name in ("sweep.csv", "sweep.parquet", "sweep_summary.json"):
        typer.echo(f"wrote {out_dir / name}")
    if summary["report"]:
        typer.echo(f"wrote {summary['report']}")
    if summary["failed"]:
        raise typer.Exit(1)
