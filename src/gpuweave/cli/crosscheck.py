"""``gpuweave crosscheck gavel|pollux [--data DIR] [--out DIR]``: our policies on a peer simulator's traces,
ours beside the peer's results, written to ``comparison.csv`` like ``gpuweave repro``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from gpuweave.cli.output import ProgressBar, quiet_option, show_progress

NAME = "crosscheck"


def command(
    peer: str = typer.Argument(..., help="Peer simulator: gavel or pollux."),
    data: Optional[Path] = typer.Option(
        None, "--data", help="Peer data directory (default: the project's shared copy, ../shared/data/...)."
    ),
    out: Optional[Path] = typer.Option(
        None, "--out", help="Output directory (default ./gpuweave-out/crosscheck/PEER)."
    ),
    quiet: bool = quiet_option(),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison rows as JSON."),
) -> None:
    """Run our policies on the peer's traces and print ours beside the peer's results."""
    from gpuweave.cli.repro import print_comparison, print_rows_json
    from gpuweave.repro.crosscheck import run_crosscheck

    out_dir = out or Path("gpuweave-out") / "crosscheck" / peer
    with ProgressBar(show_progress(quiet or as_json)) as bar:
        bar.task(f"crosscheck {peer}")
        rows = run_crosscheck(peer, data, out_dir)
    if as_json:
        print_rows_json(rows, out_dir)
        return
    print_comparison(rows, f"crosscheck {peer}: ours beside the peer's", out_dir)
