"""``gpuweave crosscheck gavel|pollux [--data DIR] [--out DIR]``: our policies on a peer simulator's traces,
ours beside the peer's results, written to ``comparison.csv`` like ``gpuweave repro``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from gpuweave.tables import print_table

NAME = "crosscheck"


def command(
    peer: str = typer.Argument(..., help="Peer simulator: gavel or pollux."),
    data: Optional[Path] = typer.Option(
        None, "--data", help="Peer data directory (default: the project's shared copy, ../shared/data/...)."
    ),
    out: Optional[Path] = typer.Option(
        None, "--out", help="Output directory (default ./gpuweave-out/crosscheck/PEER)."
    ),
) -> None:
    """Run our policies on the peer's traces and print ours beside the peer's results."""
    from rich.console import Console

    from gpuweave.repro.crosscheck import run_crosscheck
    from gpuweave.repro.registry import comparison_table

    out_dir = out or Path("gpuweave-out") / "crosscheck" / peer
    rows = run_crosscheck(peer, data, out_dir)
    console = Console()
    table = comparison_table(rows, f"crosscheck {peer}: ours beside the peer's", notes=console.width >= 120)
    print_table(table, console)
    console.print(f"wrote {out_dir / 'comparison.csv'}")
