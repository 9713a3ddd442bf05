"""``gpuweave demo``: the showcase on bundled data only (what `make demo` runs; logic in gpuweave.demo)."""

from __future__ import annotations

from pathlib import Path

import typer

from gpuweave.checks import SEED

NAME = "demo"


def command(
    out: Path = typer.Option(Path("gpuweave-out/demo"), "--out", "-o", help="Where the report goes."),
    seed: int = typer.Option(0, "--seed", min=SEED.lo, max=SEED.hi),
    quick: bool = typer.Option(False, "--quick", help="Smaller instances (used by the tests)."),
    only: list[str] = typer.Option(None, "--only", help="Run only these sections (e.g. cluster, mig, live)."),
) -> None:
    """Run the showcase on bundled data and write an HTML report."""
    from gpuweave.demo import run_demo

    run_demo(out, seed=seed, quick=quick, only=only or None)
