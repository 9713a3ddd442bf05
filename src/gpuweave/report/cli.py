"""``gpuweave report RUN_DIR...``: plots and a self-contained HTML report of one or several runs."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer


def register(cli) -> None:
    @cli.app.command("report")
    def report_cmd(
        run_dirs: List[Path] = typer.Argument(..., help="Run directories (written by `gpuweave simulate`)."),
        out: Optional[Path] = typer.Option(None, "--out", help="Output directory (default ./gpuweave-out/report)."),
        title: str = typer.Option("gpuweave report", "--title", help="Report title."),
    ) -> None:
        """Write report.html (images embedded) and the plot PNGs for RUN_DIR..."""
        from gpuweave.report.html import render_report

        out_dir = out or Path("gpuweave-out") / "report"
        path = render_report(run_dirs, out_dir, title=title)
        typer.echo(f"wrote {path}")
