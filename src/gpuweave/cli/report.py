"""``gpuweave report RUN_DIR...``: plots and a self-contained HTML report of one or several runs of one kind."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from gpuweave.cli.output import ProgressBar, quiet_option, show_progress

NAME = "report"


def command(
    run_dirs: List[Path] = typer.Argument(
        ...,
        help="Result directories of one kind: cluster, mig, packs or kernel runs written with --out, or "
        "reproduction/crosscheck directories (comparison.csv).",
    ),
    out: Optional[Path] = typer.Option(None, "--out", help="Output directory (default ./gpuweave-out/report)."),
    title: str = typer.Option("gpuweave report", "--title", help="Report title."),
    tolerance: Optional[float] = typer.Option(
        None, "--tolerance", help="Reproductions: relative difference from the paper's number still a match (0.1)."
    ),
    labels: Optional[List[str]] = typer.Option(
        None,
        "--label",
        help="A run's label in tables and legends, one --label per run directory, in their order (default: the "
        "policy plus what differs, e.g. 'hadar (sim)', 'hadar (live, ray)').",
    ),
    quiet: bool = quiet_option(),
) -> None:
    """Write report.html (one self-contained file: figures, their data, contents) and the PNGs and CSVs."""
    from gpuweave.errors import InputError
    from gpuweave.report.grains import report_runs

    if labels and len(labels) != len(run_dirs):
        raise InputError(
            f"{len(labels)} --label for {len(run_dirs)} run directories: give one --label per run directory, "
            "in the same order",
            field="label",
        )
    out_dir = out or Path("gpuweave-out") / "report"
    with ProgressBar(show_progress(quiet)) as bar:
        bar.task(f"report: {len(run_dirs)} run(s)")
        path = report_runs(run_dirs, out_dir, title=title, tolerance=tolerance, labels=labels or None)
    typer.echo(f"wrote {path}")
