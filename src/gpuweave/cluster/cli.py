"""``gpuweave simulate`` and ``gpuweave policies``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Optional

import typer

from gpuweave.registry import Option


def register(cli) -> None:
    @cli.app.command("simulate")
    def simulate_cmd(
        config: Optional[Path] = typer.Argument(None, help="Run config YAML (see docs); flags below override it."),
        policy: Optional[str] = typer.Option(None, "--policy", "-p", help="Cluster policy (gpuweave policies)."),
        cluster: Optional[str] = typer.Option(None, "--cluster", "-c", help="Bundled cluster name or cluster YAML."),
        trace: Optional[str] = typer.Option(None, "--trace", "-t", help="Trace file in the gpuweave schema."),
        jobs: Optional[int] = typer.Option(None, "--jobs", help="Generated jobs when no trace is given."),
        rate: Optional[float] = typer.Option(None, "--rate", help="Generated arrival rate, jobs/hour."),
        seed: Optional[int] = typer.Option(None, "--seed"),
        out: Optional[Path] = typer.Option(
            None, "--out", "-o", help="Result directory (default gpuweave-out/runs/POLICY-KEY)."
        ),
        report: bool = typer.Option(False, "--report", help="Also write report.html into the result directory."),
    ) -> None:
        """Simulate a trace on a cluster under one policy; write jobs.csv, allocations.csv, timeseries.csv, summary.json."""
        from rich.console import Console

        from gpuweave.cluster.config import load_config, parse_config
        from gpuweave.cluster.run import run_simulation
        from gpuweave.errors import InputError
        from gpuweave.files import prepare_output_dir

        data = load_config(config).model_dump() if config else {}
        for key, value in (
            ("policy", policy),
            ("cluster", cluster),
            ("trace", trace),
            ("jobs", jobs),
            ("rate_per_hour", rate),
            ("seed", seed),
        ):
            if value is not None:
                data[key] = value
        if "policy" not in data:
            raise InputError("no policy given: pass --policy NAME or a config with 'policy:'", field="policy")
        cfg = parse_config(data, config or "<command line>")
        out_dir = out or Path("gpuweave-out") / "runs" / f"{cfg.policy}-{cfg.key()}"
        prepare_output_dir(out_dir, field="out", create=False)  # fail before simulating, not after
        summary = run_simulation(cfg, out_dir)
        console = Console()
        console.print(_summary_table(cfg.policy, summary))
        if report:
            from gpuweave.report.html import render_report

            path = render_report([out_dir], out_dir / "report", title=f"gpuweave: {cfg.policy}")
            console.print(f"report: {path}")
        console.print(f"results: {out_dir}")

    @cli.app.command("policies")
    def policies_cmd(as_json: bool = typer.Option(False, "--json", help="Print the registry listing as JSON.")) -> None:
        """List the registered cluster policies: trigger, what they do, options."""
        from gpuweave.cluster.policies import POLICIES

        if as_json:
            typer.echo(json.dumps(POLICIES.listing(), indent=2))
            return
        from rich.console import Console
        from rich.table import Table

        table = Table(title="cluster policies (options go in the run config's policy_options)")
        table.add_column("name")
        table.add_column("trigger")
        table.add_column("what")
        table.add_column("options (default)", overflow="fold")
        for entry in POLICIES.entries().values():
            table.add_row(entry.name, entry.meta["trigger"], entry.help, options_text(entry.options))
        Console().print(table)


def options_text(options: Iterable[Option]) -> str:
    """``name=default`` for each option, one per line."""
    return "\n".join(f"{o.name}={o.default!r}" for o in options)


def _summary_table(policy: str, summary: dict):
    from rich.table import Table

    table = Table(title=f"summary: {policy}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for k, v in summary.items():
        table.add_row(k, f"{v:.4g}" if isinstance(v, float) else str(v))
    return table
