"""One titled block of a report: a table, images and a short text (what the demo and the grain reports render)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(slots=True)
class DemoSection:
    title: str
    table: list[dict[str, object]]
    images: list[Path] = field(default_factory=list)
    text: str = ""
