"""``gpuweave demo``: the showcase on bundled data only (what `make demo` runs).

Runs every registered demo section (cluster policies first, then ANDREAS, MIG, packs, kernels, live), prints
each section's comparison table (fitted to the terminal, words never broken) and writes one self-contained
HTML report whose summary paragraph collects each section's one-sentence result.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from gpuweave.errors import InputError
from gpuweave.files import prepare_output_dir

SUMMARY = (
    "Every scheduler family of gpuweave on bundled data only, each judged by its own simulator or planner under "
    "the same rules for all its contenders."
)


def run_demo(
    out_dir: Path,
    seed: int = 0,
    quick: bool = False,
    only: list[str] | None = None,
    *,
    on_section: Callable[[str, object, float], None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Run the sections into ``out_dir`` and write ``report.html``; ``progress(name)`` is called before each
    section and ``on_section(name, section, seconds)`` after it (the CLI prints tables there)."""
    # imported here, not at the top: gpuweave.demo.sections imports this module (and numpy stays out of importing it)
    from gpuweave.demo.sections import DemoContext, demo_sections
    from gpuweave.report.html import render_sections_report

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
        if progress is not None:
            progress(name)
        t0 = time.perf_counter()
        section = fn(DemoContext(out_dir=out_dir / name, seed=seed, quick=quick))
        sections.append(section)
        if on_section is not None:
            on_section(name, section, time.perf_counter() - t0)
    return render_sections_report(sections, out_dir, title="gpuweave demo", summary=SUMMARY)
