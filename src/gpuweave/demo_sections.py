"""Registry of the sections ``gpuweave demo`` runs, one per scheduler family.

A section is ``fn(ctx: DemoContext) -> DemoSection``; it runs on bundled data only, writes its
files into ``ctx.out_dir`` and returns a title, a table (list of dicts), image paths and a short text for
the console and the HTML report. Register with ``@register_demo_section("name", order=N)``.
Modules listed in :data:`DEMO_MODULES` are imported to register their sections; a module that does not
exist yet is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from gpuweave.plugins import import_if_present

DEMO_MODULES = [
    "gpuweave.cluster.demo",
    "gpuweave.repro.andreas.demo",
    "gpuweave.mig.demo",
    "gpuweave.packs.demo",
    "gpuweave.kernel.demo",
]


@dataclass(slots=True)
class DemoContext:
    out_dir: Path
    seed: int = 0
    quick: bool = False


@dataclass(slots=True)
class DemoSection:
    title: str
    table: list[dict[str, object]]
    images: list[Path] = field(default_factory=list)
    text: str = ""


_SECTIONS: dict[str, tuple[int, Callable[[DemoContext], DemoSection]]] = {}


def register_demo_section(name: str, *, order: int) -> Callable:
    def deco(fn: Callable[[DemoContext], DemoSection]):
        _SECTIONS[name] = (order, fn)
        return fn

    return deco


def demo_sections() -> list[tuple[str, Callable[[DemoContext], DemoSection]]]:
    for module in DEMO_MODULES:
        import_if_present(module)
    return [(name, fn) for name, (order, fn) in sorted(_SECTIONS.items(), key=lambda kv: (kv[1][0], kv[0]))]
