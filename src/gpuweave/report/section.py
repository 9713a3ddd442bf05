"""What a report is made of: numbered figures with captions and data, and titled sections (demo, grains, sweeps)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(slots=True)
class Figure:
    """One plot of a report: the PNG, a caption of whole sentences saying what it shows and what to look at, and
    the CSV with the data drawn (the report links to it). The report numbers figures in order of appearance."""

    path: Path
    caption: str
    csv: Path | None = None


@dataclass(slots=True)
class DemoSection:
    """One titled block of a report: a text, a table and figures.

    ``summary`` is one sentence for the report's summary paragraph (who won by how much); ``runs`` are result
    directories whose configs and code fingerprints go in the appendix; ``config`` is what the section ran when
    it has no result directory. ``images`` (plain PNG paths, captioned by their file names) is kept for callers
    from before figures had captions."""

    title: str
    table: list[dict[str, object]]
    images: list[Path] = field(default_factory=list)
    text: str = ""
    figures: list[Figure] = field(default_factory=list)
    summary: str = ""
    runs: list[Path] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
