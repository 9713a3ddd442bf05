"""Gantt chart of a MIG schedule: slices on the y-axis, tasks as bars, reconfigurations shaded.

Each task is drawn as one bar spanning the rows of the slices it occupies (the 3-slice instance at S0 also
covers S3, hatched); create/destroy operations are grey (create) and vermillion (destroy) bands on the
instance's rows. House style of :mod:`gpuweave.plotting`: colour-blind-safe task colours, the legend under the
chart so it covers no bar.

Every task is labelled. A task whose name fits inside its box (measured in the drawn figure, not guessed)
has the name there; every other task gets a number (GPU by GPU, slice by slice, then by start time), written
inside its box when the number fits there, else in a white tag in free space near the box with a leader line to
it (one tag, "5\u20137", for a run of such slivers one after another on one instance), and a key under the chart
lists number, name, slices and times. A tag never covers another label and stays inside the axes; of the free
places it prefers one near its box over one covering other boxes. Deterministic: equal schedules give equal
bytes. O(n + #ops) patches; placing the m tags costs O(m * (n + #ops + m) * C) in numpy, for the C (about a
thousand) candidate places of a tag.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuweave.files import IMAGE_SUFFIXES, prepare_output_file
from gpuweave.hardware.catalog import get_mig_geometry
from gpuweave.mig.schedule import Schedule, ScheduledTask
from gpuweave.units import axis_unit, duration_text, plain_number

CREATE_COLOUR = "0.6"
DESTROY_COLOUR = "#D55E00"
#: points of the task names and numbers drawn on the chart
LABEL_FONTSIZE = 7
#: pixels kept free between a label and its box's edge, and between two labels
LABEL_GAP = 2.0
#: how far (pixels, either way) the first search for a tag's place reaches from its box
SEARCH_REACH = (170.0, 130.0)
#: the margin (a share of the font size) of the patch of box colour under a label on a hatched box
BACKING_PAD = 0.15
#: the margin (a share of the font size) of a number's white tag outside its box
TAG_PAD = 0.2
#: tasks too short for their number one after another on one instance share a tag when their boxes are at most
#: RUN_GAP pixels apart and span RUN_WIDTH pixels at most
RUN_GAP, RUN_WIDTH = 3.0, 40.0
#: cost of a tag covering a task box (or an operation band), per tag area covered, in tag heights of distance
COVER_TASK, COVER_BAND = 8.0, 1.5


@dataclass(frozen=True)
class _Box:
    """One task's main box (data coordinates: x time, y rows) and its colour index."""

    task: ScheduledTask
    colour: int
    x0: float
    x1: float
    y0: float
    y1: float


def plot_gantt(schedule: Schedule, path: str | Path, title: str | None = None, label_tasks: bool = True) -> Path:
    """Write the Gantt chart of ``schedule`` to ``path`` (PNG, or the image format its suffix names)."""
    from gpuweave.plotting import save

    path = prepare_output_file(path, field="gantt", suffixes=IMAGE_SUFFIXES)
    return save(gantt_figure(schedule, title=title, label_tasks=label_tasks), path)


def gantt_figure(schedule: Schedule, title: str | None = None, label_tasks: bool = True) -> Any:
    """The chart as a matplotlib Figure, laid out at :data:`gpuweave.plotting.DPI` (what :func:`plot_gantt` saves).

    With ``label_tasks`` its layout is frozen once the labels are placed, so they sit where they were measured."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle

    # imported here: importing gpuweave.mig.gantt does without numpy
    from gpuweave.plotting import DPI, figure, legend_below, plot_text

    geom = get_mig_geometry(schedule.gpu)
    per = geom.num_slices
    rows = per * schedule.gpus
    height = 1.6 + 0.42 * rows
    if label_tasks and schedule.tasks:
        # a second, flat row of axes under the chart holds the key of numbered tasks (removed when none is)
        fig, axes = figure(2, 1, height=height, height_ratios=[1.0, 1e-4])
        key_ax = axes[1, 0]
        key_ax.set_axis_off()
    else:
        fig, axes = figure(height=height)
        key_ax = None
    FigureCanvasAgg(fig)  # a canvas that measures text (fig.canvas.get_renderer()), at the resolution it is saved
    fig.set_dpi(DPI)
    ax = axes[0, 0]
    ax.grid(False)
    names = sorted({t.task for t in schedule.tasks})
    index = {n: i for i, n in enumerate(names)}
    horizon = max([schedule.makespan] + [o.end for o in schedule.operations]) or 1.0

    def rows_of(gpu: int, size: int, start: int) -> tuple[list[int], list[int]]:
        pl = geom.placement(size, start)
        return [gpu * per + s for s in sorted(pl.slices)], [gpu * per + s for s in sorted(pl.occupancy - pl.slices)]

    bands: list[tuple[float, float, float, float]] = []
    for o in schedule.operations:
        own, extra = rows_of(o.gpu_index, o.size, o.start_slice)
        width = max(o.end - o.start, horizon * 0.002)
        colour = CREATE_COLOUR if o.op == "create" else DESTROY_COLOUR
        for r in own + extra:
            ax.add_patch(Rectangle((o.start, r - 0.45), width, 0.9, color=colour, alpha=0.5, lw=0))
            bands.append((o.start, o.start + width, r - 0.45, r + 0.45))
    boxes, held = _draw_tasks(ax, schedule, rows_of, index)
    ax.axvline(schedule.makespan, color="black", ls="--", lw=0.8)
    ax.set_xlim(0, horizon * 1.02)
    ax.set_ylim(rows - 0.5, -0.5)
    ax.set_yticks(range(rows))
    ax.set_yticklabels([f"GPU{r // per} S{r % per}" if schedule.gpus > 1 else f"S{r % per}" for r in range(rows)])
    _time_axis(ax, horizon * 1.02)
    ax.set_title(
        plot_text(
            title or f"{schedule.algo or 'schedule'} on {schedule.gpu}: makespan {duration_text(schedule.makespan)}"
        )
    )
    handles = [
        Patch(color=CREATE_COLOUR, alpha=0.5, label="create instance"),
        Patch(color=DESTROY_COLOUR, alpha=0.5, label="destroy instance"),
        Patch(facecolor="none", edgecolor="0.3", hatch="///", label="slice held, not used"),
        Line2D([0], [0], color="black", ls="--", lw=0.8, label="makespan"),
    ]
    legend_below(fig, handles, ncol=4)
    if key_ax is not None:
        _label_tasks(fig, ax, key_ax, boxes, held, bands, schedule.gpus > 1)
    return fig


def _time_axis(ax: Any, end_s: float) -> None:
    """The x axis in the unit the schedule's length calls for (:func:`gpuweave.units.axis_unit`); the boxes stay in
    seconds (the labels are placed in those coordinates), only the ticks are chosen and written in the unit."""
    unit = axis_unit([end_s])
    ax.set_xlabel(f"time ({unit.symbol})")
    if unit.seconds == 1.0:
        return
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    ticks = [t for t in MaxNLocator(nbins=8).tick_values(0, end_s / unit.seconds) if 0 <= t * unit.seconds <= end_s]
    ax.set_xticks([t * unit.seconds for t in ticks])
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: plain_number(x / unit.seconds)))


def _draw_tasks(
    ax: Any, schedule: Schedule, rows_of: Any, index: dict[str, int]
) -> tuple[list[_Box], list[tuple[float, float, float, float]]]:
    """One box per task over the slices of its instance, hatched outlines over the slices it holds but does not use;
    returns the boxes and the hatched areas (what the labels must keep clear of)."""
    from matplotlib.patches import Rectangle

    from gpuweave.plotting import fill_style

    boxes: list[_Box] = []
    held: list[tuple[float, float, float, float]] = []
    for t in schedule.tasks:
        own, extra = rows_of(t.gpu_index, t.size, t.start_slice)
        lo, hi = min(own), max(own)
        style = fill_style(index[t.task])
        ax.add_patch(Rectangle((t.start, lo - 0.4), t.end - t.start, hi - lo + 0.8, edgecolor="black", lw=0.5, **style))
        boxes.append(_Box(t, index[t.task], t.start, t.end, lo - 0.4, hi + 0.4))
        for r in extra:
            ax.add_patch(
                Rectangle(
                    (t.start, r - 0.4),
                    t.end - t.start,
                    0.8,
                    facecolor="none",
                    edgecolor=style["facecolor"],
                    hatch="///",
                    lw=0.5,
                )
            )
            held.append((t.start, t.end, r - 0.4, r + 0.4))
    return boxes, held


def _label_tasks(
    fig: Any,
    ax: Any,
    key_ax: Any,
    boxes: list[_Box],
    held: list[tuple[float, float, float, float]],
    bands: list[tuple[float, float, float, float]],
    many_gpus: bool,
) -> None:
    """Names in the boxes they fit, numbers (in the box, or in a tag with a leader line) and a key for the rest."""
    from gpuweave.plotting import plot_text, text_colour

    base_height = fig.get_figheight()
    names = [
        ax.text(0, 0, plot_text(b.task.task), ha="center", va="center", fontsize=LABEL_FONTSIZE, clip_on=True)
        for b in boxes
    ]
    for text, b in zip(names, boxes):
        text.set_position(((b.x0 + b.x1) / 2, (b.y0 + b.y1) / 2))
        text.set_color(text_colour(b.colour))
        text.set_bbox(_backing(b.colour))
    numbered: list[int] = []
    for _ in range(4):  # the key's height moves the chart's rows a little; stop when the named set is stable
        fig.draw_without_rendering()
        renderer = fig.canvas.get_renderer()
        fits = [_fits(ax, text, b, renderer) for text, b in zip(names, boxes)]
        now = sorted(
            (i for i, ok in enumerate(fits) if not ok),
            key=lambda i: (boxes[i].task.gpu_index, boxes[i].y0, boxes[i].x0, boxes[i].task.task),
        )
        if now == numbered:  # (the key shows exactly ``numbered``: none at first)
            break
        numbered = now
        _draw_key(fig, key_ax, [boxes[i] for i in numbered], many_gpus, base_height)
    for text, ok in zip(names, fits):
        text.set_visible(ok)
    if not numbered:
        fig.delaxes(key_ax)
        fig.draw_without_rendering()
    # the positions below are measured in this layout: keep it when the figure is saved
    fig.set_layout_engine("none")
    renderer = fig.canvas.get_renderer()
    pad = BACKING_PAD * LABEL_FONTSIZE * renderer.points_to_pixels(1.0)
    taken = [text.get_window_extent(renderer).padded(pad) for text, ok in zip(names, fits) if ok]
    _place_numbers(ax, renderer, boxes, numbered, held, bands, [(t.x0, t.x1, t.y0, t.y1) for t in taken])


def _backing(colour: int) -> dict[str, Any] | None:
    """A patch of the box's colour under a label on a hatched box (the hatch would cross the letters), else None."""
    from gpuweave.plotting import fill_style

    style = fill_style(colour)
    if style["hatch"] is None:
        return None
    return {"boxstyle": f"square,pad={BACKING_PAD}", "facecolor": style["facecolor"], "edgecolor": "none"}


def _fits(ax: Any, text: Any, box: _Box, renderer: Any) -> bool:
    """Whether ``text`` (with its backing's margin), centred in ``box``, stays inside it with :data:`LABEL_GAP`
    pixels to spare."""
    x0, x1, y0, y1 = _pixels(ax, box.x0, box.x1, box.y0, box.y1)
    pad = 2 * BACKING_PAD * LABEL_FONTSIZE * renderer.points_to_pixels(1.0) if _backing(box.colour) else 0.0
    extent = text.get_window_extent(renderer)
    return extent.width + pad + 2 * LABEL_GAP <= x1 - x0 and extent.height + pad + LABEL_GAP <= y1 - y0


def _pixels(ax: Any, x0: float, x1: float, y0: float, y1: float) -> tuple[float, float, float, float]:
    """A data rectangle in display pixels (x0 < x1, y0 < y1 whatever the axes' direction)."""
    (a, b), (c, d) = ax.transData.transform([(x0, y0), (x1, y1)])
    return min(a, c), max(a, c), min(b, d), max(b, d)


def _key_label(number: int, task: ScheduledTask, many_gpus: bool) -> str:
    from gpuweave.plotting import plot_text

    last = task.start_slice + task.size - 1  # an instance computes on consecutive slices
    where = f"S{task.start_slice}" + (f"\u2013S{last}" if last > task.start_slice else "")
    where = f"GPU{task.gpu_index} {where}" if many_gpus else where
    return f"{number}  {plot_text(task.task)}: {where}, {_span(task.start, task.end)} s"


def _span(start: float, end: float) -> str:
    """``start–end`` with enough decimals (2 to 6) that the two differ when they do."""
    digits = 2
    while digits < 6 and round(start, digits) == round(end, digits) and start != end:
        digits += 1
    return f"{start:.{digits}f}\u2013{end:.{digits}f}"


def _draw_key(fig: Any, key_ax: Any, boxes: list[_Box], many_gpus: bool, base_height: float) -> None:
    """The key of the numbered tasks under the chart, in as many columns as the figure's width holds; the figure
    grows by the key's height so the chart keeps its size."""
    from matplotlib.patches import Patch

    from gpuweave.plotting import fill_style

    old = key_ax.get_legend()
    if old is not None:
        old.remove()
    fig.set_figheight(base_height)
    if not boxes:
        return
    handles = [
        Patch(edgecolor="black", lw=0.5, label=_key_label(n, b.task, many_gpus), **fill_style(b.colour))
        for n, b in enumerate(boxes, 1)
    ]
    renderer = fig.canvas.get_renderer()
    width = fig.bbox.width * 0.96
    ncol = len(handles)
    while True:
        legend = key_ax.legend(
            handles=handles,
            loc="upper center",
            bbox_to_anchor=(0.5, 1.0),
            borderaxespad=0.0,
            ncol=ncol,
            frameon=False,
            fontsize="x-small",
            title="Numbered tasks (too short for their name)",
            title_fontsize="x-small",
        )
        extent = legend.get_window_extent(renderer)
        if extent.width <= width or ncol == 1:
            break
        legend.remove()
        ncol = max(1, min(ncol - 1, math.floor(ncol * width / extent.width)))
    fig.set_figheight(base_height + extent.height / fig.dpi + 0.1)


def _place_numbers(
    ax: Any,
    renderer: Any,
    boxes: list[_Box],
    numbered: list[int],
    held: list[tuple[float, float, float, float]],
    bands: list[tuple[float, float, float, float]],
    taken: list[tuple[float, float, float, float]],
) -> None:
    """Each numbered task's number in its box if it fits there; the others in tags at the cheapest free places,
    one tag ("4\u20136") for a run of such tasks one after the other on one instance."""
    import numpy as np

    from gpuweave.plotting import text_colour

    frame = ax.get_window_extent(renderer)
    limits = (frame.x0 + 1, frame.x1 - 1, frame.y0 + 1, frame.y1 - 1)
    tasks = np.array([_pixels(ax, b.x0, b.x1, b.y0, b.y1) for b in boxes] + [_pixels(ax, *r) for r in held])
    tasks = tasks.reshape(-1, 4)
    shaded = np.array([_pixels(ax, *r) for r in bands]).reshape(-1, 4)
    placed = [tuple(r) for r in taken]
    to_data = ax.transData.inverted()
    backing = BACKING_PAD * LABEL_FONTSIZE * renderer.points_to_pixels(1.0)
    texts, outside = [], []
    for n, i in enumerate(numbered, 1):
        b = boxes[i]
        text = ax.text(
            (b.x0 + b.x1) / 2,
            (b.y0 + b.y1) / 2,
            str(n),
            ha="center",
            va="center",
            fontsize=LABEL_FONTSIZE,
            color=text_colour(b.colour),
            clip_on=True,
            zorder=5,
        )
        texts.append(text)
        if _fits(ax, text, b, renderer):
            text.set_bbox(_backing(b.colour))
            extent = text.get_window_extent(renderer).padded(backing)
            placed.append((extent.x0, extent.x1, extent.y0, extent.y1))
        else:
            outside.append(n - 1)
    pad = TAG_PAD * LABEL_FONTSIZE * renderer.points_to_pixels(1.0)
    for run in _runs(ax, [boxes[numbered[k]] for k in outside], outside):
        text = texts[run[0]]
        for k in run[1:]:
            texts[k].remove()
        if len(run) > 1:
            text.set_text(f"{run[0] + 1}\u2013{run[-1] + 1}")
        spans = [_pixels(ax, b.x0, b.x1, b.y0, b.y1) for b in (boxes[numbered[k]] for k in run)]
        box = (min(r[0] for r in spans), max(r[1] for r in spans), min(r[2] for r in spans), max(r[3] for r in spans))
        extent = text.get_window_extent(renderer)
        tw, th = extent.width + 2 * pad, extent.height + 2 * pad
        cx, cy = _best_place(box, tw, th, limits, tasks, shaded, np.array(placed, dtype=float).reshape(-1, 4))
        placed.append((cx - tw / 2, cx + tw / 2, cy - th / 2, cy + th / 2))
        text.set_position(to_data.transform((cx, cy)))
        text.set_color("black")
        text.set_bbox({"boxstyle": f"round,pad={TAG_PAD}", "facecolor": "white", "edgecolor": "0.25", "lw": 0.6})
        # the leader: from the tag's centre (its white frame hides the inner part) to the nearest point of the box
        px = min(max(cx, box[0]), box[1])
        py = min(max(cy, box[2]), box[3])
        (x0, y0), (x1, y1) = to_data.transform([(cx, cy), (px, py)])
        ax.plot([x0, x1], [y0, y1], color="0.25", lw=0.6, zorder=4, clip_on=True, solid_capstyle="butt")
        ax.plot([x1], [y1], marker="o", ms=2.2, color="0.25", zorder=4, clip_on=True)


def _runs(ax: Any, boxes: list[_Box], keys: list[int]) -> list[list[int]]:
    """``keys`` (numbers less one, ascending; ``boxes`` theirs) cut into runs that share one tag: consecutive
    numbers on one instance whose boxes touch (:data:`RUN_GAP` pixels apart at most), :data:`RUN_WIDTH` pixels
    wide at most."""
    runs: list[list[int]] = []
    first = last = None
    for k, b in zip(keys, boxes):
        x0, x1, _, _ = _pixels(ax, b.x0, b.x1, b.y0, b.y1)
        if (
            runs
            and first is not None
            and last is not None
            and runs[-1][-1] == k - 1
            and _instance(last.task) == _instance(b.task)
            and x0 - _pixels(ax, last.x0, last.x1, last.y0, last.y1)[1] <= RUN_GAP
            and x1 - _pixels(ax, first.x0, first.x1, first.y0, first.y1)[0] <= RUN_WIDTH
        ):
            runs[-1].append(k)
        else:
            runs.append([k])
            first = b
        last = b
    return runs


def _instance(task: ScheduledTask) -> tuple[int, int, int]:
    return task.gpu_index, task.size, task.start_slice


def _best_place(
    box: tuple[float, float, float, float],
    tw: float,
    th: float,
    limits: tuple[float, float, float, float],
    tasks: Any,
    shaded: Any,
    placed: Any,
) -> tuple[float, float]:
    """Centre (pixels) of a ``tw`` x ``th`` tag for ``box``: inside ``limits``, clear of ``placed`` labels by
    :data:`LABEL_GAP`, cheapest by distance to the box plus the task boxes and bands it covers. Candidates on a
    grid of half-tag steps around the box first, over the whole axes when none there is free."""
    import numpy as np

    bx0, bx1, by0, by1 = box
    sx, sy = (tw + LABEL_GAP) / 2, (th + LABEL_GAP) / 2
    cx, cy = (bx0 + bx1) / 2, (by0 + by1) / 2
    ax_, ay_ = math.ceil(SEARCH_REACH[0] / sx), math.ceil(SEARCH_REACH[1] / sy)
    near = (cx + sx * np.arange(-ax_, ax_ + 1), cy + sy * np.arange(-ay_, ay_ + 1))
    x0, x1, y0, y1 = limits
    whole = (np.arange(x0 + tw / 2, x1 - tw / 2, sx), np.arange(y0 + th / 2, y1 - th / 2, sy))
    best: tuple[float, float] | None = None
    for xs, ys in (near, whole):
        gx, gy = np.meshgrid(xs, ys)
        gx, gy = gx.ravel(), gy.ravel()
        left, right, bottom, top = gx - tw / 2, gx + tw / 2, gy - th / 2, gy + th / 2
        ok = (left >= x0) & (right <= x1) & (bottom >= y0) & (top <= y1)
        if len(placed):
            g = LABEL_GAP
            hit = (
                (left[:, None] < placed[None, :, 1] + g)
                & (right[:, None] > placed[None, :, 0] - g)
                & (bottom[:, None] < placed[None, :, 3] + g)
                & (top[:, None] > placed[None, :, 2] - g)
            )
            ok &= ~hit.any(axis=1)
        if not ok.any():
            continue
        dx = np.maximum(np.maximum(bx0 - right, left - bx1), 0.0)
        dy = np.maximum(np.maximum(by0 - top, bottom - by1), 0.0)
        area = tw * th
        cost = np.hypot(dx, dy) / th
        cost += COVER_TASK * _covered(left, right, bottom, top, tasks) / area
        cost += COVER_BAND * _covered(left, right, bottom, top, shaded) / area
        cost[~ok] = np.inf
        k = int(np.argmin(cost))  # the first of equals: the grid's order, so the same every time
        best = (float(gx[k]), float(gy[k]))
        break
    return best if best is not None else (cx, cy)


def _covered(left: Any, right: Any, bottom: Any, top: Any, rects: Any) -> Any:
    """Per candidate, the area (pixels) it shares with ``rects`` (rows x0, x1, y0, y1), summed."""
    import numpy as np

    if not len(rects):
        return np.zeros(len(left))
    w = np.minimum(right[:, None], rects[None, :, 1]) - np.maximum(left[:, None], rects[None, :, 0])
    h = np.minimum(top[:, None], rects[None, :, 3]) - np.maximum(bottom[:, None], rects[None, :, 2])
    return (np.clip(w, 0, None) * np.clip(h, 0, None)).sum(axis=1)
