"""``gpuweave demo``: the showcase on bundled data only (what `make demo` runs).

Runs every registered demo section (cluster policies first, then MIG, packs, kernels as those parts
land), prints each section's comparison table, and writes one self-contained HTML report.
"""

from __future__ import annotations

import time
from pathlib import Path

from gpuweave.tables import print_table


def run_demo(out_dir: Path, seed: int = 0, quick: bool = False, only: list[str] | None = None) -> Path:
    from rich.console import Console
    from rich.table import Table

    from gpuweave.demo.sections import DemoContext, demo_sections

    # Comparison tables are wide: keep at least 120 columns so numbers are not folded into unreadable cells.
    from gpuweave.errors import InputError
    from gpuweave.files import prepare_output_dir
    from gpuweave.report.html import render_sections_report

    console = Console(width=max(Console().width, 120))
    known = [name for name, _ in demo_sections()]
    unknown = [name for name in (only or []) if name not in known]
    if unknown:
        raise InputError(f"unknown demo section '{unknown[0]}' (known: {', '.join(known)})", field="only")
    prepare_output_dir(out_dir, field="out")
    (out_dir / "report.html").unlink(missing_ok=True)  # a run that fails halfway must not leave an old report
    sections = []
    for name, fn in demo_sections():
        if only and name not in only:
            continue
        t0 = time.perf_counter()
        with console.status(f"demo: {name} ..."):
            section = fn(DemoContext(out_dir=out_dir / name, seed=seed, quick=quick))
        sections.append(section)
        table = Table(title=f"{section.title}  ({time.perf_counter() - t0:.1f} s)")
        columns = list(section.table[0]) if section.table else []
        for col in columns:
            table.add_column(str(col), overflow="fold")
        for row in section.table:
            table.add_row(*(_cell(row.get(c)) for c in columns))
        print_table(table, console)
        if section.text:
            console.print(section.text)
    report = render_sections_report(sections, out_dir, title="gpuweave demo")
    console.print(f"[bold]report:[/bold] {report}")
    return report


def _cell(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v)
