"""``gpuweave crosscheck gavel|pollux|sia|fgd [--data DIR] [--out DIR]``: our policies on a peer simulator's traces,
ours beside the peer's results, written to ``comparison.csv`` like ``gpuweave repro``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from gpuweave.cli.output import ProgressBar, quiet_option, show_progress

NAME = "crosscheck"


def command(
    peer: str = typer.Argument(..., help="Peer simulator: gavel, pollux, sia or fgd."),
    data: Optional[Path] = typer.Option(
        None, "--data", help="Peer data directory (default: the project's shared copy, ../shared/data/...)."
    ),
    out: Optional[Path] = typer.Option(
        None, "--out", help="Output directory (default ./gpuweave-out/crosscheck/PEER)."
    ),
    workloads: Optional[str] = typer.Option(
        None,
        "--workloads",
        help="fgd, pollux, sia: comma list of workloads (default: every one the peer's result files hold; sia: "
        "TRACE/WORKLOAD or WORKLOAD).",
    ),
    policies: Optional[str] = typer.Option(
        None,
        "--policies",
        help="fgd: comma list of policies, FGD's names or ours (Random or random, FGD or fgd...); pollux: Pollux's "
        "names (tiresias, optimus, pollux; default all but pollux, about 10 minutes a workload); sia: Sia's names "
        "(gavel, sia; default both).",
    ),
    seeds: Optional[str] = typer.Option(
        None,
        "--seeds",
        help="fgd: comma list of seeds; FGD's mean is taken over the same seeds. pollux: the seeds of our pollux "
        "(per-job JCTs averaged).",
    ),
    quiet: bool = quiet_option(),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison rows as JSON."),
) -> None:
    """Run our policies on the peer's traces and print ours beside the peer's results."""
    from gpuweave.cli.repro import print_comparison, print_rows_json
    from gpuweave.repro.crosscheck import run_crosscheck

    out_dir = out or Path("gpuweave-out") / "crosscheck" / peer
    with ProgressBar(show_progress(quiet or as_json)) as bar:
        hook = bar.task(f"crosscheck {peer}")
        options: dict[str, object] = {"workloads": workloads, "policies": policies, "seeds": seeds}
        if peer in ("fgd", "sia"):  # peers whose runs are counted: many experiments on the full data
            options["progress"] = hook
        rows = run_crosscheck(peer, data, out_dir, options)
    if as_json:
        print_rows_json(rows, out_dir)
        return
    print_comparison(rows, f"crosscheck {peer}: ours beside the peer's", out_dir)
