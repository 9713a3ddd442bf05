"""Registry of the sections ``gpuweave demo`` runs, one per scheduler family.

The contract is :class:`DemoSectionFn`: ``fn(ctx: DemoContext) -> DemoSection``; a section runs on bundled data
only, writes its files into ``ctx.out_dir`` and returns a title, a table (list of dicts), image paths and a short
text for the console and the HTML report. Register with ``@register_demo_section("name", order=N)`` on the shared
:class:`~gpuweave.registry.Registry` :data:`DEMO_SECTIONS`; the modules in :data:`DEMO_MODULES` are imported on
the first lookup (a module that does not exist yet is skipped).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gpuweave.registry import Registry
from gpuweave.report.section import DemoSection as DemoSection  # re-exported: the contract's result

DEMO_MODULES = [
    "gpuweave.demo.cluster",
    "gpuweave.demo.andreas",
    "gpuweave.demo.mig",
    "gpuweave.demo.packs",
    "gpuweave.demo.kernel",
    "gpuweave.demo.live",
]


@dataclass(slots=True)
class DemoContext:
    out_dir: Path
    seed: int = 0
    quick: bool = False


class DemoSectionFn(Protocol):
    """What every demo section is: a context in, one :class:`DemoSection` out."""

    def __call__(self, ctx: DemoContext) -> DemoSection: ...


DEMO_SECTIONS: Registry[DemoSectionFn] = Registry("demo section", DEMO_MODULES)


def register_demo_section(name: str, *, order: int) -> Callable[[DemoSectionFn], DemoSectionFn]:
    """Decorator; ``order`` places the section in the demo (ties by name)."""
    return DEMO_SECTIONS.register(name, options=(), order=order)


def demo_sections() -> list[tuple[str, DemoSectionFn]]:
    """(name, section) in demo order."""
    entries = sorted(DEMO_SECTIONS.entries().values(), key=lambda e: (e.meta["order"], e.name))
    return [(e.name, e.impl) for e in entries]
