"""``gpuweave cluster run`` (a live run) and ``gpuweave cluster compare`` (per-job JCT live/sim)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def register(cli) -> None:
    cluster_app = getattr(cli, "cluster", None)
    if cluster_app is None:
        cluster_app = typer.Typer(help="Cluster specs, live runs and comparisons.", no_args_is_help=True)
        cli.app.add_typer(cluster_app, name="cluster")
        cli.cluster = cluster_app

    @cluster_app.command("run")
    def run_cmd(
        config: Path = typer.Argument(..., help="Run config YAML (the simulate config plus an executor section)."),
        executor: Optional[str] = typer.Option(None, "--executor", "-e", help="local or ray (default: the config's)."),
        address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address (default: a local Ray)."),
        out: Path = typer.Option(..., "--out", "-o", help="Result directory (also holds the journal and checkpoints)."),
    ) -> None:
        """Run a trace for real under a policy: workers, checkpoints, preemption, moves; write simulator results."""
        from rich.console import Console

        from gpuweave.live.launch import run_live

        summary = run_live(config, executor, address, out)
        console = Console()
        for key in ("jobs", "completed", "avg_jct_s", "makespan_s", "restarts"):
            value = summary[key]
            console.print(f"{key}: {value:.4g}" if isinstance(value, float) else f"{key}: {value}")
        console.print(f"results: {out}")

    @cluster_app.command("compare")
    def compare_cmd(
        sim_run: Path = typer.Argument(..., help="Result directory of `gpuweave simulate`."),
        live_run: Path = typer.Argument(..., help="Result directory of `gpuweave cluster run`."),
    ) -> None:
        """Print each job's JCT in the simulated and the live run, and the ratio live/sim."""
        from rich.console import Console
        from rich.table import Table

        from gpuweave.cluster.results import fmt
        from gpuweave.live.results import compare_jct

        table = Table(title=f"JCT: {live_run} (live) vs {sim_run} (sim)")
        for column in ("job", "sim JCT s", "live JCT s", "live/sim"):
            table.add_column(column, justify="left" if column == "job" else "right")
        for job_id, sim, live, ratio in compare_jct(sim_run, live_run):
            table.add_row(
                job_id, fmt(sim and round(sim, 2)), fmt(live and round(live, 2)), fmt(ratio and round(ratio, 3))
            )
        Console().print(table)
