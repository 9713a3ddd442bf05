"""Kernel timelines (Fig. 8 / Fig. 12 style): one panel per run, one row per service, kernels coloured by
priority, gap fillers hatched; house style of :mod:`gpuweave.plotting`, the legend under the panels.

:func:`write_kernels_csv` writes the kernels inside a time window as ``kernels.csv`` (panel, service, priority,
task, start_ms, end_ms, filler); :func:`plot_timeline_rows` draws from those rows, so a report's timeline comes
from the run's CSV; :func:`plot_timelines` draws from records in memory through the same rows. O(kernels drawn).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpuweave.checks import RESULT, parse
from gpuweave.errors import InputError
from gpuweave.files import csv_dicts, read_input_text
from gpuweave.kernel.ids import parse_priority
from gpuweave.kernel.sim import KernelRecord
from gpuweave.plotting import PALETTE, figure, legend_below, plot_text, save

#: palette index per priority: the highest priority (0) vermillion, then blue, green, orange, ...
PRIORITY_ORDER = (3, 0, 2, 1, 4, 5, 6, 7)
KERNEL_COLUMNS = ("panel", "service", "priority", "task", "start_ms", "end_ms", "filler")


def kernel_rows(panels: list[tuple[str, list[KernelRecord]]], window: tuple[float, float]) -> list[dict[str, str]]:
    """The kernels of each ``(title, kernels)`` panel that overlap ``window`` (ms), as CSV rows of text."""
    t0, t1 = window
    return [
        {
            "panel": title,
            "service": k.service,
            "priority": str(k.priority),
            "task": str(k.task),
            "start_ms": f"{k.start:.6f}",
            "end_ms": f"{k.end:.6f}",
            "filler": str(int(k.filler)),
        }
        for title, kernels in panels
        for k in kernels
        if k.end >= t0 and k.start <= t1
    ]


def write_kernels_csv(panels: list[tuple[str, list[KernelRecord]]], window: tuple[float, float], path) -> Path:
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=KERNEL_COLUMNS)
        writer.writeheader()
        writer.writerows(kernel_rows(panels, window))
    return Path(path)


def read_kernels_csv(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a run's ``kernels.csv`` (a BOM and CRLF line ends are accepted), ``start_ms`` and ``end_ms`` as
    checked finite numbers and ``priority`` as 0-9; InputError naming the row and field on a missing or repeated
    column, a bad number or priority, or a file that is not readable text."""
    import io

    text = read_input_text(path, what="kernels.csv of a run")  # decoded as utf-8-sig: a BOM is dropped
    header, records = csv_dicts(io.StringIO(text, newline=""), file=path)
    missing = [c for c in KERNEL_COLUMNS if c not in header]
    if missing:
        raise InputError("missing column", file=path, field=missing[0])
    rows: list[dict[str, Any]] = []
    for number, record in enumerate(records, start=1):
        row: dict[str, Any] = dict(record)
        for column in ("start_ms", "end_ms"):
            row[column] = parse(row.get(column) or "", RESULT, file=path, row=number, field=column)
        try:
            row["priority"] = parse_priority(row.get("priority") or "")
        except InputError as exc:
            raise InputError(exc.message, file=path, row=number, field="priority") from None
        rows.append(row)
    return rows


def plot_timeline_rows(
    rows: Sequence[dict[str, Any]], window: tuple[float, float], path: str | Path, services: list[str] | None = None
) -> Path:
    """Draw ``kernels.csv`` rows over ``window`` (ms): one panel per ``panel`` value, in order of appearance."""
    from matplotlib.patches import Patch

    t0, t1 = window
    titles = list(dict.fromkeys(r["panel"] for r in rows)) or [""]
    names = services or sorted({r["service"] for r in rows})
    fig, axes = figure(len(titles), 1, height=1.3 + 0.75 * len(names) * len(titles), sharex=True)
    prios: set[int] = set()
    for ax, title in zip(axes[:, 0], titles):
        ax.grid(True, axis="x")
        for r in rows:
            if r["panel"] != title or r["service"] not in names:
                continue
            start, end, prio = float(r["start_ms"]), float(r["end_ms"]), int(r["priority"])
            prios.add(prio)
            ax.broken_barh(
                [(start, end - start)],
                (names.index(r["service"]) - 0.35, 0.7),
                facecolors=_colour(prio),
                edgecolor="black",
                linewidth=0.3,
                hatch="//" if r["filler"] in ("1", "True", "true") else None,
            )
        ax.set_xlim(t0, t1)
        ax.set_yticks(range(len(names)), [plot_text(n) for n in names])
        ax.set_ylim(-0.6, len(names) - 0.4)
        ax.set_title(plot_text(title), fontsize="small")
    axes[-1, 0].set_xlabel("time (ms)")
    handles = [Patch(facecolor=_colour(p), label=f"priority {p}") for p in sorted(prios)]
    handles.append(Patch(facecolor="white", edgecolor="black", hatch="//", label="gap filler"))
    legend_below(fig, handles)
    return save(fig, path)


def plot_timelines(
    panels: list[tuple[str, list[KernelRecord]]],
    window: tuple[float, float],
    path: str | Path,
    services: list[str] | None = None,
) -> Path:
    """Draw one panel per ``(title, kernels)`` over ``window`` (ms) into ``path``."""
    names = services or sorted({k.service for _, ks in panels for k in ks})
    return plot_timeline_rows(kernel_rows(panels, window), window, path, names)


def _colour(priority: int) -> str:
    return PALETTE[PRIORITY_ORDER[priority % len(PRIORITY_ORDER)]]
