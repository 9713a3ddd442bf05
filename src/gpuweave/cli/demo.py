"""``gpuweave demo``: the showcase on bundled data only (what `make demo` runs; logic in gpuweave.demo)."""

from __future__ import annotations

from pathlib import Path

import typer

from gpuweave.checks import SEED
from gpuweave.cli.output import JSON_HELP, ProgressBar, print_json, print_table, quiet_option, show_progress

NAME = "demo"


def command(
    out: Path = typer.Option(Path("gpuweave-out/demo"), "--out", "-o", help="Where the report goes."),
    seed: int = typer.Option(0, "--seed", min=SEED.lo, max=SEED.hi),
    quick: bool = typer.Option(False, "--quick", help="Smaller instances (used by the tests)."),
    only: list[str] = typer.Option(None, "--only", help="Run only these sections (e.g. cluster, mig, live)."),
    quiet: bool = quiet_option(),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP + " (every section's table and summary)"),
) -> None:
    """Run the showcase on bundled data and write an HTML report."""
    from rich.console import Console

    from gpuweave.demo import run_demo
    from gpuweave.demo.sections import demo_sections
    from gpuweave.report.markup import table_text

    console = Console()
    done: list[dict] = []
    names = [n for n, _ in demo_sections() if not only or n in only]

    def on_section(name: str, section, seconds: float) -> None:
        done.append({"name": name, "title": section.title, "summary": section.summary, "table": section.table})
        if as_json:
            return
        columns = list(section.table[0]) if section.table else []
        headers, rows = table_text(section.table, columns)  # as the report's table shows it
        print_table(console, f"{section.title}  ({seconds:.1f} s)", headers, rows)
        if section.text:
            console.print(section.text, markup=False, highlight=False)

    with ProgressBar(show_progress(quiet or as_json)) as bar:
        step = bar.task("demo", len(names))
        progress = None if step is None else (lambda name: step(names.index(name)))
        report = run_demo(out, seed=seed, quick=quick, only=only or None, on_section=on_section, progress=progress)
    if as_json:
        print_json({"report": str(report), "sections": done})
    else:
        console.print(f"report: {report}", markup=False, highlight=False)
