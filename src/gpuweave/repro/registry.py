"""Registry and runner for paper reproductions.

The contract is :class:`Reproducer`: ``fn(ctx: ReproContext) -> list[ComparisonRow]``, registered with
:func:`register_reproduction` on the shared :class:`~gpuweave.registry.Registry` :data:`REPRODUCTIONS`.
It computes its numbers (never copies them), may write extra files (CSV, Markdown, PNG) into ``ctx.out_dir``,
and returns one row per number the paper states (``paper`` set) or per number of ours worth showing (``paper``
None). The runner writes ``comparison.csv`` with the
columns ``experiment,metric,paper,ours,unit,note`` and prints ours beside the paper's.

A run that fails leaves no ``comparison.csv``: files are written into a staging directory and moved into
place only on success.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from gpuweave.errors import InputError
from gpuweave.limits import check_limit
from gpuweave.registry import Entry, Option, Registry
from gpuweave.staging import staged_directory
from gpuweave.units import number_text

COMPARISON_COLUMNS = ["experiment", "metric", "paper", "ours", "unit", "note"]

# Modules that register reproductions when imported. A module that does not exist yet is skipped.
REPRODUCTION_MODULES = [
    "gpuweave.repro.far",
    "gpuweave.repro.packs",
    "gpuweave.repro.andreas",
    "gpuweave.repro.hadar",
    "gpuweave.repro.fikit",
]


@dataclass(frozen=True, slots=True)
class ComparisonRow:
    experiment: str
    metric: str
    paper: float | None
    ours: float | None
    unit: str = ""
    note: str = ""

    @property
    def difference(self) -> float | None:
        if self.paper is None or self.ours is None:
            return None
        return self.ours - self.paper


@dataclass(slots=True)
class ReproContext:
    """What a reproduction is given. ``reps`` is None for the quick default (CI); the paper's count is a flag."""

    out_dir: Path
    reps: int | None = None
    seed: int = 0
    full: bool = False
    options: dict[str, object] = field(default_factory=dict)

    def reps_or(self, quick_default: int) -> int:
        return self.reps if self.reps is not None else quick_default


class Reproducer(Protocol):
    """What every reproduction is: a context in, one comparison row per number out."""

    def __call__(self, ctx: ReproContext) -> list[ComparisonRow]: ...


REPRODUCTIONS: Registry[Reproducer] = Registry("reproduction", REPRODUCTION_MODULES)


@dataclass(frozen=True, slots=True)
class Reproduction:
    """A registered reproduction as the callers see it."""

    name: str
    title: str
    paper: str
    fn: Reproducer
    options: dict[str, type] = field(default_factory=dict)  # extra CLI flags: --n-max 20 -> options["n_max"]=20

    @classmethod
    def of(cls, entry: Entry[Reproducer]) -> Reproduction:
        m = entry.meta
        return cls(name=entry.name, title=entry.help, paper=m["paper"], fn=entry.impl, options=m["option_types"])


def register_reproduction(
    name: str, *, title: str, paper: str, options: dict[str, type] | None = None
) -> Callable[[Reproducer], Reproducer]:
    """Decorator: ``@register_reproduction("far", title=..., paper=..., options={"n_max": int})``.

    ``options`` declares extra command-line flags of this reproduction (``--n-max 20`` for ``n_max``); their
    parsed values reach the function in ``ctx.options``.
    """
    types = dict(options or {})
    listed = tuple(Option(key, typ.__name__, None) for key, typ in types.items())
    return REPRODUCTIONS.register(name, help=title, options=listed, paper=paper, option_types=types)


def all_reproductions() -> dict[str, Reproduction]:
    return {name: Reproduction.of(entry) for name, entry in REPRODUCTIONS.entries().items()}


def get_reproduction(name: str) -> Reproduction:
    return Reproduction.of(REPRODUCTIONS.get(name))


def _fmt(x: float | None) -> str:
    if x is None:
        return ""
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return str(x)
    return f"{x:.6g}"


def _cell(x: float | None) -> str:
    """A number as the console's tables show it (:func:`gpuweave.units.number_text`); empty for None."""
    return "" if x is None else number_text(x)


def write_comparison(rows: list[ComparisonRow], path: Path) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(COMPARISON_COLUMNS)
        for r in rows:
            writer.writerow([r.experiment, r.metric, _fmt(r.paper), _fmt(r.ours), r.unit, r.note])


def run_reproduction(name: str, ctx: ReproContext) -> list[ComparisonRow]:
    """Run one reproduction into ``ctx.out_dir`` atomically and return its rows."""
    repro = get_reproduction(name)
    if ctx.reps is not None and ctx.reps < 1:
        raise InputError(f"--reps/--seeds must be at least 1, got {ctx.reps}", field="reps")
    if ctx.reps is not None:
        check_limit("reps", ctx.reps, "--reps/--seeds", field="reps")
    with staged_directory(ctx.out_dir) as staging:
        staged_ctx = ReproContext(
            out_dir=staging, reps=ctx.reps, seed=ctx.seed, full=ctx.full, options=dict(ctx.options)
        )
        rows = repro.fn(staged_ctx)
        if not rows:
            raise RuntimeError(f"reproduction {name!r} produced no comparison rows")
        write_comparison(rows, staging / "comparison.csv")
    return rows


#: a note shown in a console comparison table is cut to this many characters (at a space); the CSV has it whole
NOTE_CHARS = 60


def comparison_cells(rows: list[ComparisonRow], *, notes: bool = True) -> tuple[list[str], list[list[str]]]:
    """Columns and cells of ours beside the paper's, with the difference, for a console table; ``notes`` adds
    each row's note cut at a space to :data:`NOTE_CHARS` characters (comparison.csv has them whole)."""
    columns = ["experiment", "metric", "paper", "ours", "diff", "unit", *(["note"] if notes else [])]
    cells = []
    for r in rows:
        row = [r.experiment, r.metric, _cell(r.paper), _cell(r.ours), _cell(r.difference), r.unit]
        cells.append(row + ([_cut(r.note, NOTE_CHARS)] if notes else []))
    return columns, cells


def _cut(text: str, limit: int) -> str:
    """``text`` on one line, cut after the last whole word that fits in ``limit`` characters (then "…")."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    fits = text[: limit - 1]
    head = fits.rsplit(" ", 1)[0] if " " in fits else text.split(" ", 1)[0]  # a first word too long stays whole
    return head.rstrip(" ,;:") + " …"


def parse_extra_options(repro: Reproduction, args: list[str]) -> dict[str, object]:
    """Turn ``["--n-max", "20"]`` into ``{"n_max": 20}`` using the reproduction's declared option types."""
    out: dict[str, object] = {}
    i = 0
    while i < len(args):
        flag = args[i]
        if not flag.startswith("--"):
            raise InputError(f"unexpected argument '{flag}' for reproduction '{repro.name}'")
        name = flag[2:].replace("-", "_")
        value: str | None = None
        if "=" in name:
            name, value = name.split("=", 1)
        if name not in repro.options:
            known = ", ".join("--" + k.replace("_", "-") for k in repro.options) or "none"
            raise InputError(f"unknown option '{flag}' for reproduction '{repro.name}' (its options: {known})")
        typ = repro.options[name]
        if typ is bool and value is None:
            out[name] = True
            i += 1
            continue
        if value is None:
            if i + 1 >= len(args):
                raise InputError(f"option '{flag}' needs a value")
            value = args[i + 1]
            i += 1
        try:
            out[name] = typ(value)
        except ValueError:
            raise InputError(f"option '{flag}' expects {typ.__name__}, got '{value}'") from None
        i += 1
    return out
