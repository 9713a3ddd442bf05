"""The plots of a ``sharing`` report (``gpuweave cluster fill`` result directories), from their CSV files only:

* allocation against arrived load, one line per run, with the arrived load itself as the unreachable ceiling
  (the shape of FGD's Fig. 7, ATC'23);
* the fragmentation ratio against arrived load;
* when the runs are one experiment under several sharing modes (``cluster fill --sharing whole,fraction,mig``:
  the same pods, nodes, placement, seed and ``--to``; :func:`compared_modes`), the runs are named by their mode,
  the allocation plot adds what the placed tasks asked where a mode rounds shares up (whole GPUs, MIG instances),
  and :func:`modes_sections` and :func:`modes_summary` put them side by side: allocation, what was asked and the
  fragmentation ratio per mode at the reported loads (also ``sharing_modes.csv``), the tasks placed and failed per
  mode, and a sentence on what sharing buys;
* each run's GPUs (gpus.csv), the occupancy picture: a heatmap per reported load and at the end, one pixel row per
  node (grouped by GPU model, fullest at the end first; each node's GPUs fullest first), one cell per GPU: navy when
  held whole, orange when partly used (darker: more; the fractions FGD's fragments live in), grey-blue when idle,
  white where a node has fewer GPUs; a MIG GPU as its slices (in an instance, free, or blocked by an instance that
  does not compute on them). Beside it a zoomed panel of at most :data:`ZOOM_NODES` nodes at the end, sampled
  evenly within each model (marked < on the heatmaps), each GPU a cell labelled with its share in use, or a MIG
  GPU's instances as boxes labelled with their slices. Below :data:`MAX_HEIGHT_IN` every node keeps its own pixel
  row (about 1,700 nodes); past it, neighbouring rows are averaged.

Complexity: O(rows of the CSV files + GPUs x reported loads x MIG slices) plus matplotlib's drawing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gpuweave.cluster.sharing.modes import MODE_WORDS
from gpuweave.cluster.sharing.occupancy import REPORTED_LOADS, read_gpus_csv
from gpuweave.hardware.mig import Placement
from gpuweave.plotting import (
    DPI,
    PALETTE,
    figure,
    legend_below,
    legend_outside,
    plot_text,
    save,
    series_style,
    write_csv,
)
from gpuweave.report.section import DemoSection, Figure
from gpuweave.units import number_text, plain_number

if TYPE_CHECKING:
    from gpuweave.report.grains import GrainRun

CURVE_COLUMNS = ("load", "allocation", "fragment", "fragment_ratio")
FULL_MILLI = 1000.0  # a whole GPU in milli-GPUs
SLICE_FREE, SLICE_USED, SLICE_BLOCKED = 0, 1, 2
IDLE_COLOUR = "#C3CDD8"  # light grey-blue, apart from white (no GPU) even in a one-pixel row
FULL_COLOUR = "#08306B"  # navy: a GPU (or a MIG instance) held whole
PARTIAL_COLOURS = ("#FDEBC8", PALETTE[1], "#8A4500")  # light to dark orange: the share in use of a shared GPU
BLOCKED_COLOUR = PALETTE[4]  # slices an instance blocks but does not compute on (A100's 3g at S0 blocks S3)
ZOOM_NODES = 32  # nodes in the zoomed panel
MAX_HEIGHT_IN = 16.0  # the tallest occupancy figure: a pixel row per node up to about 1,700 nodes
CELL_WIDTH, CELL_HEIGHT = 0.92, 0.78  # a GPU's cell in the zoomed panel, in data units (one GPU, one node)


def _curve(run: GrainRun, column: str) -> tuple[list[float], list[float]]:
    rows = run.table("curves.csv", CURVE_COLUMNS)
    points = [(float(r["load"]), float(r[column])) for r in rows if r[column] not in ("", None)]
    return [p[0] for p in points], [p[1] for p in points]


def _lines(
    runs: Sequence[GrainRun], column: str, path: Path, ylabel: str, ceiling: bool, asked: bool = False
) -> tuple[Path, Path]:
    """One line per run of ``column`` against arrived load; with ``asked``, a thin dotted line of the same colour
    for each run whose placed tasks asked less than they hold (CSV rows ``<run>: asked``)."""
    fig, axes = figure(height=4.2)
    ax = axes[0, 0]
    rows = []
    lines = 0
    for i, run in enumerate(runs):
        x, y = _curve(run, column)
        ax.plot(x, y, label=plot_text(run.label), **series_style(i))
        rows += [(run.label, load, value) for load, value in zip(x, y)]
        lines += 1
        ask_x, ask_y = _asked(run) if asked else ([], [])
        if ask_y and (ask_x, ask_y) != (x, y):
            label = f"{run.label}: asked"
            ax.plot(ask_x, ask_y, label=plot_text(label), color=series_style(i)["color"], linestyle=":", linewidth=1.3)
            rows += [(label, load, value) for load, value in zip(ask_x, ask_y)]
            lines += 1
    if ceiling:
        ax.plot([0, 100], [0, 100], color="0.6", linestyle=":", linewidth=1, label="arrived (ceiling)")
    ax.set_xlabel("arrived GPU requests (% of the cluster's GPUs)")
    ax.set_ylabel(ylabel)
    legend_outside(ax, lines + int(ceiling))
    return save(fig, path), write_csv(path.with_suffix(".csv"), ("run", "load", column), rows)


def _asked(run: GrainRun) -> tuple[list[float], list[float]]:
    """The share of the GPUs the placed tasks asked, per load (curves.csv's ``asked``; none in older files)."""
    rows = run.table("curves.csv", CURVE_COLUMNS)
    if not rows or "asked" not in rows[0]:
        return [], []
    points = [(float(r["load"]), float(r["asked"])) for r in rows if r["asked"] not in ("", None)]
    return [p[0] for p in points], [p[1] for p in points]


def compared_modes(runs: Sequence[GrainRun]) -> list[str] | None:
    """The runs' sharing modes when they are one experiment under several modes (distinct modes; the same pods,
    nodes or cluster, placement, seed and ``--to``), else None."""
    if len(runs) < 2:
        return None
    modes = [str(run.config.get("sharing") or "fraction") for run in runs]
    if len(set(modes)) < len(modes) or any(m not in MODE_WORDS for m in modes):
        return None
    same = ("pods", "nodes", "cluster", "placement", "seed", "to")
    if len({tuple(repr(run.config.get(k)) for k in same) for run in runs}) > 1:
        return None
    return modes


def mode_labels(runs: Sequence[GrainRun]) -> list[str] | None:
    """The runs' labels in a comparison of modes (``fractions``, ``whole GPUs``, ``MIG``), else None."""
    modes = compared_modes(runs)
    return [MODE_WORDS[m] for m in modes] if modes else None


@dataclass(slots=True)
class _ModeCurves:
    """One mode's curves.csv at the reported loads: allocation, asked and fragmentation ratio per load."""

    word: str
    allocation: dict[int, float | None]
    asked: dict[int, float | None]
    fragment_ratio: dict[int, float | None]

    @property
    def rounds_up(self) -> bool:
        """Whether its tasks hold more than they asked at some reported load (whole GPUs, MIG instances)."""
        return any(a is not None and self.asked.get(k) not in (None, a) for k, a in self.allocation.items())


def _mode_curves(run: GrainRun) -> _ModeCurves:
    rows = {int(float(r["load"])): r for r in run.table("curves.csv", CURVE_COLUMNS)}

    def at(column: str) -> dict[int, float | None]:
        cells = {k: (rows.get(k) or {}).get(column) for k in REPORTED_LOADS}
        return {k: float(v) if v not in ("", None) else None for k, v in cells.items()}

    allocation = at("allocation")
    asked = at("asked") if rows and "asked" in next(iter(rows.values())) else dict(allocation)
    return _ModeCurves(run.label, allocation, asked, at("fragment_ratio"))


def _percent(value: float | None) -> str:
    """ "94.5 %" for a sentence, the number and its sign kept on one line (a no-break space)."""
    return f"{plain_number(value)}\u00a0%" if value is not None else "n/a"


def _load_point(curves: Sequence[_ModeCurves]) -> int | None:
    """The load the summary speaks of: 100 % if every mode reached it, else the highest reported load all did."""
    reached = [k for k in REPORTED_LOADS if all(c.allocation[k] is not None for c in curves)]
    return 100 if 100 in reached else (reached[-1] if reached else None)


def _asked_at(c: _ModeCurves, load: int, of: str = "") -> str:
    """ "78.97 %{of} with whole GPUs (holding 100 %)": what a mode's placed tasks asked at ``load``, and what
    they hold where that is more."""
    asked, held = c.asked.get(load), c.allocation[load]
    text = f"{_percent(asked if asked is not None else held)}{of} with {c.word}"
    if asked is not None and asked != held:
        text += f" (holding {_percent(held)})"
    return text


def _and(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def modes_summary(runs: Sequence[GrainRun]) -> str | None:
    """The report's summary for a comparison of modes (else None): what ran, then what sharing buys: allocation
    (and what was asked) at 100 % arrived load, the fragmentation ratio there, and the tasks that found no room."""
    if compared_modes(runs) is None:
        return None
    curves = [_mode_curves(run) for run in runs]
    config = runs[0].config
    pods = Path(str(config.get("pods") or "?")).name
    submitted = runs[0].metrics.get("tasks_submitted")
    text = (
        f"One fill experiment under {len(runs)} sharing modes ({_and([c.word for c in curves])}): the same "
        f"{number_text(submitted)} tasks of {pods} placed by {config.get('placement')}, seed {runs[0].seed}, on "
        "the same nodes"
    )
    # one `cluster fill --sharing a,b` ran each mode on every node (a spec's MIG groups aside)
    text += ", each mode on every node." if all("compared_modes" in run.config for run in runs) else "."
    load = _load_point(curves)
    if load is not None:
        # the modes that share first, against whole GPUs (no sharing) when it ran
        order = sorted(curves, key=lambda c: c.word == MODE_WORDS["whole"])
        first, rest = order[0], order[1:]
        text += (
            f" What sharing buys: at {_percent(load)} arrived load the placed tasks asked "
            f"{_asked_at(first, load, ' of the GPUs')}, against {_and([_asked_at(c, load) for c in rest])}."
        )
        ratios = [f"{_percent(c.fragment_ratio[load])} with {c.word}" for c in order]
        text += f" FGD's fragmentation ratio there is {_and(ratios)}."
    failed = [f"{number_text(run.metrics.get('tasks_failed'))} with {run.label}" for run in runs]
    end = config.get("to")
    until = f" (to {_percent(100 * float(end))} arrived)" if isinstance(end, (int, float)) else ""
    text += f" Over the whole fill{until}, the tasks that found no room: {_and(failed)}."
    return text


def modes_sections(runs: Sequence[GrainRun], out_dir: Path) -> list[DemoSection]:
    """The comparison of modes, when the runs are one (:func:`compared_modes`; else none): allocation, what was
    asked and the fragmentation ratio per mode at the reported loads (also ``sharing_modes.csv`` in ``out_dir``),
    and the tasks placed and failed per mode."""
    if compared_modes(runs) is None:
        return []
    curves = [_mode_curves(run) for run in runs]
    loads = [k for k in REPORTED_LOADS if any(c.allocation[k] is not None for c in curves)]
    table = []
    for load in loads:
        row: dict[str, object] = {"arrived load (%)": load}
        row.update({f"allocated, {c.word} (%)": c.allocation[load] for c in curves})
        row.update({f"asked, {c.word} (%)": c.asked[load] for c in curves if c.rounds_up})
        row.update({f"fragmentation ratio, {c.word} (%)": c.fragment_ratio[load] for c in curves})
        table.append(row)
    write_csv(
        out_dir / "sharing_modes.csv",
        ("load", "mode", "allocation", "asked", "fragment_ratio"),
        [
            (load, mode, c.allocation[load], c.asked[load], c.fragment_ratio[load])
            for load in loads
            for mode, c in zip(compared_modes(runs) or [], curves)
        ],
    )
    allocation = DemoSection(
        "Sharing modes side by side",
        table,
        text="Per arrived load (GPU requests as a share of the cluster's GPUs), each mode's allocation: the share of "
        "the GPUs the placed tasks hold (a whole GPU per task with whole GPUs, an instance's slices with MIG), what "
        "those tasks asked where they hold more, and FGD's fragmentation ratio (the share of the idle GPU capacity "
        "the workload's typical tasks cannot use; lower keeps room for later tasks). From each run's curves.csv; "
        "the same values are in sharing_modes.csv beside this report.",
    )
    tasks = [_tasks_row(run) for run in runs]
    placed = DemoSection(
        "Tasks placed and failed per sharing mode",
        tasks,
        text="Over the whole fill: the tasks that arrived, those placed and those that found no room (they fail at "
        "once in FGD's experiment, and their request still counts as arrived).",
    )
    return [allocation, placed]


def _tasks_row(run: GrainRun) -> dict[str, object]:
    submitted, failed = run.metrics.get("tasks_submitted"), run.metrics.get("tasks_failed")
    row: dict[str, object] = {"sharing": run.label, "tasks arrived": submitted}
    if isinstance(submitted, int) and isinstance(failed, int):
        row["placed"] = submitted - failed
        row["found no room"] = failed
        row["found no room (%)"] = round(100 * failed / submitted, 2) if submitted else None
    if "mig_instances_created" in run.metrics:
        row["MIG instances made"] = run.metrics["mig_instances_created"]
    return row


@dataclass(slots=True)
class _Gpu:
    """One GPU of gpus.csv: its slot, MIG slices (0: no MIG) and, per moment (the reported loads, then the end),
    its used milli-GPUs and MIG instances."""

    slot: int
    slices: int
    used: list[float]
    instances: list[tuple[Placement, ...]]

    def states(self, moment: int) -> list[int]:
        """A MIG GPU's slices at ``moment``: :data:`SLICE_FREE`, :data:`SLICE_USED` or :data:`SLICE_BLOCKED`."""
        states = [SLICE_FREE] * self.slices
        for placement in self.instances[moment]:
            for s in placement.occupancy:
                if s < self.slices:
                    states[s] = SLICE_USED if s in placement.slices else SLICE_BLOCKED
        return states


@dataclass(slots=True)
class _Node:
    name: str
    model: str
    gpus: list[_Gpu] = field(default_factory=list)

    def used(self, moment: int) -> float:
        return sum(g.used[moment] for g in self.gpus)


@dataclass(slots=True)
class _Picture:
    """gpus.csv read back: the moments (column suffixes and panel titles) and the nodes, in drawing order."""

    loads: list[int]
    nodes: list[_Node]
    end_load: int | None = None  # the end is this load's state (drawn once)

    @property
    def titles(self) -> list[str]:
        end = f"end, {self.end_load} %" if self.end_load is not None else "end"
        return [f"{load} %" for load in self.loads] + [end]

    @property
    def width(self) -> int:
        return max((len(n.gpus) for n in self.nodes), default=1)

    @property
    def any_mig(self) -> bool:
        return any(g.slices for n in self.nodes for g in n.gpus)


def _read_picture(run: GrainRun) -> _Picture:
    """gpus.csv: every GPU at the end and at the reported loads the run reached (older files: the end only), read
    and checked by :func:`gpuweave.cluster.sharing.occupancy.read_gpus_csv`."""
    loads, records = read_gpus_csv(run.path / "gpus.csv")
    nodes: dict[str, _Node] = {}
    for record in records:
        node = nodes.setdefault(record.node, _Node(record.node, record.model))
        node.gpus.append(_Gpu(record.slot, record.slices, record.used, record.instances))
    picture = _Picture(loads, list(nodes.values()))
    gpus = [g for n in picture.nodes for g in n.gpus]
    if loads and all(g.used[-1] == g.used[-2] and g.instances[-1] == g.instances[-2] for g in gpus):
        picture.end_load = loads[-1]  # the end is the last load's state (a fill to 130 %): drawn once
        picture.loads = loads[:-1]
        for gpu in gpus:
            del gpu.used[-2], gpu.instances[-2]
    return picture


def _order(picture: _Picture) -> None:
    """Drawing order: nodes by model, then fullest at the end first; each node's GPUs fullest at the end first."""
    for node in picture.nodes:
        node.gpus.sort(key=lambda g: (-g.used[-1], g.slot))
    picture.nodes.sort(key=lambda n: (n.model, -n.used(-1), [-g.used[-1] for g in n.gpus], n.name))


def _groups(nodes: Sequence[_Node]) -> list[tuple[str, int, int]]:
    """(model, first row, rows) of each model's run of nodes in drawing order."""
    groups: list[tuple[str, int, int]] = []
    for row, node in enumerate(nodes):
        if groups and groups[-1][0] == node.model:
            model, first, count = groups[-1]
            groups[-1] = (model, first, count + 1)
        else:
            groups.append((node.model, row, 1))
    return groups


def _sample(nodes: Sequence[_Node], limit: int) -> list[int]:
    """Rows of the zoomed panel: all nodes up to ``limit``, else within each model evenly spaced rows (so each
    occupancy level shows), each model's share of ``limit`` by its nodes, at least one."""
    if len(nodes) <= limit:
        return list(range(len(nodes)))
    groups = _groups(nodes)
    quota = [max(1, limit * count // len(nodes)) for _, _, count in groups]
    while sum(quota) > limit and max(quota) > 1:
        quota[quota.index(max(quota))] -= 1
    rows: list[int] = []
    for (_, first, count), q in zip(groups, quota):
        rows += sorted({first + int(round(x)) for x in np.linspace(0, count - 1, q)})
    return rows


def _rgba(colour: Any, alpha: float | None = None) -> tuple[float, float, float, float]:
    from matplotlib.colors import to_rgba

    return to_rgba(colour, alpha)


def _partial_colours() -> Any:
    from matplotlib.colors import LinearSegmentedColormap

    return LinearSegmentedColormap.from_list("partly used", PARTIAL_COLOURS)


def _colours() -> Any:
    """The colour of a used share 0..1 in steps of 1/1000: idle pale, a share orange (darker: more), whole navy, so
    that the partly used GPUs (FGD's fragments live there) stand out from full and idle ones."""
    from matplotlib.colors import ListedColormap

    steps = round(FULL_MILLI)
    partial = _partial_colours()(np.linspace(0.0, 1.0, steps - 1))
    return ListedColormap([_rgba(IDLE_COLOUR), *map(tuple, partial), _rgba(FULL_COLOUR)])


def _overview_image(picture: _Picture, moment: int, sub: int, cmap: Any) -> np.ndarray:
    """RGBA pixels of one moment: a row per node, ``sub`` columns per GPU (a MIG GPU's slices side by side)."""
    nodes, width = picture.nodes, picture.width
    share = np.full((len(nodes), width), np.nan)
    for r, node in enumerate(nodes):
        share[r, : len(node.gpus)] = [g.used[moment] / FULL_MILLI for g in node.gpus]
    rgba = np.asarray(cmap(np.nan_to_num(np.clip(share, 0.0, 1.0))), dtype=float)
    rgba[np.isnan(share)] = (1.0, 1.0, 1.0, 1.0)
    image = np.repeat(rgba, sub, axis=1)
    states = {SLICE_FREE: cmap(0.0), SLICE_USED: cmap(1.0), SLICE_BLOCKED: _rgba(BLOCKED_COLOUR)}
    for r, node in enumerate(nodes):
        for c, gpu in enumerate(node.gpus):
            if gpu.slices:
                slice_states = gpu.states(moment)
                for j in range(sub):
                    image[r, c * sub + j] = states[slice_states[j * gpu.slices // sub]]
    return image


def _draw_overview(axes: Sequence[Any], picture: _Picture, zoomed: Sequence[int], cmap: Any, pixels: bool) -> None:
    """The small multiples: one heatmap per moment, a pixel row per node (model groups ruled and named)."""
    nodes, width = picture.nodes, picture.width
    sub = math.lcm(*{g.slices for n in nodes for g in n.gpus if g.slices}) if picture.any_mig else 1
    groups = _groups(nodes)
    spacing = max(1, len(nodes) // 40)  # a group's name only where it does not sit on a larger one's
    named: list[tuple[str, int, int]] = []
    for group in sorted(groups, key=lambda g: -g[2]):
        if all(abs(group[1] + group[2] / 2 - (g[1] + g[2] / 2)) >= spacing for g in named):
            named.append(group)
    for moment, (ax, title) in enumerate(zip(axes, picture.titles)):
        image = _overview_image(picture, moment, sub, cmap)
        interpolation = "nearest" if pixels else "antialiased"
        ax.imshow(image, aspect="auto", interpolation=interpolation, extent=(0, width, len(nodes), 0))
        ax.grid(False)
        for c in range(1, width):
            ax.axvline(c, color="white", linewidth=0.5)
        for _, first, _ in groups[1:]:
            ax.axhline(first, color="black", linewidth=0.6)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(plot_text(title), fontsize="small")
        ax.set_xlabel("GPUs", fontsize="x-small")
    first = axes[0]
    first.set_yticks([g[1] + g[2] / 2 for g in named], [plot_text(f"{model} ({count})") for model, _, count in named])
    first.set_ylabel("nodes by GPU model (count), fullest first")
    last = axes[len(picture.titles) - 1]
    last.plot(
        [width + 0.15] * len(zoomed),
        [r + 0.5 for r in zoomed],
        marker="<",
        markersize=3,
        color="black",
        linestyle="none",
        clip_on=False,
    )


def _share_text(share: float) -> str:
    """A cell's used share, short: ``1``, ``0``, ``.45``."""
    text = f"{share:.2f}".rstrip("0").rstrip(".")
    return text[1:] if text.startswith("0.") else text


def _text_colour(rgba: Sequence[float]) -> str:
    """Black or white, whichever reads better on ``rgba``."""
    return "black" if 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2] > 0.5 else "white"


def _draw_mig_gpu(ax: Any, gpu: _Gpu, x: float, y: float, cmap: Any) -> None:
    """One MIG GPU of the zoomed panel: its slices (free pale, blocked hatched), its instances as boxes."""
    from matplotlib.patches import Rectangle

    step = CELL_WIDTH / gpu.slices
    for s, state in enumerate(gpu.states(-1)):
        if state != SLICE_USED:
            blocked = state == SLICE_BLOCKED
            face = _rgba(BLOCKED_COLOUR) if blocked else cmap(0.0)
            ax.add_patch(
                Rectangle(
                    (x + s * step, y),
                    step,
                    CELL_HEIGHT,
                    facecolor=face,
                    edgecolor="white",
                    linewidth=0.4,
                    hatch="//" if blocked else None,
                )
            )
    for p in gpu.instances[-1]:
        ax.add_patch(
            Rectangle(
                (x + p.start * step, y),
                p.size * step,
                CELL_HEIGHT,
                facecolor=cmap(1.0),
                edgecolor="white",
                linewidth=0.8,
            )
        )
        ax.text(
            x + (p.start + p.size / 2) * step,
            y + CELL_HEIGHT / 2,
            f"{p.size}g" if p.size > 1 else "1",
            ha="center",
            va="center",
            fontsize=5.5,
            color="white",
        )


def _draw_zoom(ax: Any, picture: _Picture, rows: Sequence[int], cmap: Any) -> None:
    """The zoomed panel: the sampled nodes at the end, each GPU a labelled cell (MIG GPUs as instance boxes)."""
    from matplotlib.patches import Rectangle

    for y, row in enumerate(rows):
        node = picture.nodes[row]
        for c, gpu in enumerate(node.gpus):
            x, top = c + (1 - CELL_WIDTH) / 2, y - CELL_HEIGHT / 2
            if gpu.slices:
                _draw_mig_gpu(ax, gpu, x, top, cmap)
                continue
            share = min(max(gpu.used[-1] / FULL_MILLI, 0.0), 1.0)
            ax.add_patch(
                Rectangle((x, top), CELL_WIDTH, CELL_HEIGHT, facecolor=cmap(share), edgecolor="0.55", linewidth=0.4)
            )
            ax.text(
                x + CELL_WIDTH / 2,
                y,
                _share_text(share),
                ha="center",
                va="center",
                fontsize=6,
                color=_text_colour(cmap(share)),
            )
    ax.set_xlim(0, picture.width)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.grid(False)
    ax.set_yticks(
        range(len(rows)), [plot_text(f"{picture.nodes[r].name} ({picture.nodes[r].model})") for r in rows], fontsize=6
    )
    ax.set_xticks(
        [c + 0.5 for c in range(picture.width)], [str(c + 1) for c in range(picture.width)], fontsize="x-small"
    )
    ax.set_xlabel("GPU of the node, fullest first")
    shown = "every node" if len(rows) == len(picture.nodes) else f"{len(rows)} of {len(picture.nodes)} nodes (<)"
    ax.set_title(plot_text(f"{picture.titles[-1]}: {shown}"), fontsize="small")


def _legend(fig: Any, picture: _Picture, axes: Sequence[Any], cmap: Any) -> None:
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.patches import Patch

    shared = any(not g.slices and 0 < u < FULL_MILLI for n in picture.nodes for g in n.gpus for u in g.used)
    if shared:
        bar = fig.colorbar(
            ScalarMappable(Normalize(0.0, 1.0), _partial_colours()),
            ax=list(axes),
            location="bottom",
            shrink=0.8,
            aspect=30,
            pad=0.01,
        )
        bar.set_label("partly used GPU: share in use", fontsize="small")
        bar.ax.tick_params(labelsize="x-small")
    handles = []
    if any(not g.slices for n in picture.nodes for g in n.gpus):
        handles += [
            Patch(facecolor=FULL_COLOUR, label="GPU in use whole"),
            Patch(facecolor=IDLE_COLOUR, edgecolor="0.55", label="idle GPU"),
        ]
    width = picture.width  # a max over the nodes: once, not per node
    if any(len(n.gpus) < width for n in picture.nodes):
        handles.append(Patch(facecolor="white", edgecolor="0.55", label="no GPU (a node with fewer)"))
    if picture.any_mig:
        handles += [
            Patch(facecolor=FULL_COLOUR, edgecolor="white", label="MIG instance in use (3g: 3 slices)"),
            Patch(facecolor=IDLE_COLOUR, edgecolor="0.55", label="free MIG slice"),
            Patch(
                facecolor=_rgba(BLOCKED_COLOUR),
                hatch="//",
                edgecolor="white",
                label="slice blocked by an instance, unused",
            ),
        ]
    legend_below(fig, handles, ncol=3)


def occupancy_figure(run: GrainRun, path: Path, who: str | None = None) -> Figure:
    """One run's GPUs: a heatmap per reported load and at the end (a pixel row per node), beside a zoomed
    panel of sampled nodes at the end with labelled cells and MIG instance boxes (module docstring); ``who``
    names the run in the caption (default its label)."""
    picture = _read_picture(run)
    _order(picture)
    rows = _sample(picture.nodes, ZOOM_NODES)
    moments = len(picture.titles)
    # a pixel row per node while the figure stays under MAX_HEIGHT_IN; past that, rows are averaged
    height = min(MAX_HEIGHT_IN, max(5.0, len(picture.nodes) / DPI + 2.8, len(rows) * 0.26 + 2.2))
    pixels = len(picture.nodes) <= (height - 2.8) * DPI
    ratios = [0.55 + 0.03 * picture.width] * moments + [max(4.0, 0.7 * picture.width)]
    fig, axes = figure(1, moments + 1, height=height, gridspec_kw={"width_ratios": ratios})
    cmap = _colours()
    _draw_overview(axes[0, :moments], picture, rows, cmap, pixels)
    _draw_zoom(axes[0, moments], picture, rows, cmap)
    _legend(fig, picture, axes[0, :moments], cmap)
    csv_path = _write_picture_csv(path.with_suffix(".csv"), picture, set(rows))
    reached = picture.loads + ([picture.end_load] if picture.end_load is not None else [])
    loads = ", ".join(f"{load} %" for load in reached) or "none reached"
    return Figure(
        save(fig, path),
        f"The GPUs of {who or run.label} as the GPU requests arrive (a heatmap per reported load: {loads}) and at the "
        "end: one row per node, grouped by GPU model and fullest first, one cell per GPU, navy when held whole, "
        "orange when partly used (darker: more), pale when idle, white where the node has fewer GPUs; a MIG GPU "
        "shows its slices. On the right, the nodes marked < at the end, each GPU labelled with its share in use "
        f"or drawn as its MIG instances. At the end {_end_counts(picture)}.",
        csv_path,
    )


def _end_counts(picture: _Picture) -> str:
    """The caption's count of partly used and idle GPUs, and of MIG instances and free slices, at the end."""
    gpus = [g for n in picture.nodes for g in n.gpus]
    whole = [g for g in gpus if not g.slices]
    parts = []
    if whole:
        partial = sum(1 for g in whole if 0 < g.used[-1] < FULL_MILLI)
        idle = sum(1 for g in whole if g.used[-1] == 0)
        parts.append(f"{partial} GPUs are partly used (fractions) and {idle} idle")
    mig = [g for g in gpus if g.slices]
    if mig:
        instances = sum(len(g.instances[-1]) for g in mig)
        states = [state for g in mig for state in g.states(-1)]
        free, blocked = states.count(SLICE_FREE), states.count(SLICE_BLOCKED)
        parts.append(f"the MIG GPUs hold {instances} instances (slices free: {free}, blocked: {blocked})")
    return "; ".join(parts)


def _write_picture_csv(path: Path, picture: _Picture, zoomed: set[int]) -> Path:
    """The data drawn: one row per GPU in drawing order, its cell (row, column), and its state per moment."""
    moments = [f"at_{load}" for load in picture.loads] + [f"at_{picture.end_load}" if picture.end_load else "end"]
    header = ["row", "column", "zoomed", "node", "model", "gpu", "mig_slices"]
    header += [f"used_milli_{m}" for m in moments] + [f"mig_instances_{m}" for m in moments]
    rows = [
        [
            r,
            c,
            int(r in zoomed),
            node.name,
            node.model,
            gpu.slot,
            gpu.slices or None,
            *gpu.used,
            *("+".join(p.label for p in held) for held in gpu.instances),
        ]
        for r, node in enumerate(picture.nodes)
        for c, gpu in enumerate(node.gpus)
    ]
    return write_csv(path, header, rows)


def sharing_plots(runs: Sequence[GrainRun], out_dir: Path) -> list[Figure]:
    """The figures of a sharing report (module docstring)."""
    modes = compared_modes(runs) is not None
    png, data = _lines(
        runs, "allocation", out_dir / "sharing_allocation.png", "GPUs allocated (%)", ceiling=True, asked=modes
    )
    best = max(runs, key=lambda r: r.metrics.get("allocation_at_130") or 0.0)
    if modes:
        caption = (
            "Share of the cluster's GPUs allocated as GPU requests arrive, one line per sharing mode (fractions "
            "counted); the grey dotted diagonal is what arrived. With whole GPUs a task holds a whole GPU and with "
            "MIG an instance's slices, more than it asked: the thin dotted line of the mode's colour is what its "
            "placed tasks asked. Where a line leaves the diagonal, tasks start to fail for fragmentation or lack of "
            "room."
        )
    else:
        caption = (
            "Share of the cluster's GPUs allocated (fractions counted) as GPU requests arrive, one line per run; "
            "the dotted diagonal is what arrived. Where a line leaves the diagonal, tasks start to fail for "
            f"fragmentation or lack of room; {best.label} allocates most at 130 % "
            f"({best.metrics.get('allocation_at_130')} %)."
        )
    figures = [Figure(png, caption, data)]
    png, data = _lines(runs, "fragment_ratio", out_dir / "sharing_fragment_ratio.png", "fragmented (% of idle)", False)
    whole = any(run.config.get("sharing") == "whole" for run in runs) if modes else False
    figures.append(
        Figure(
            png,
            "FGD's fragmentation ratio: the share of idle GPU capacity that the workload's typical tasks could not "
            "use, as requests arrive. Lower keeps room for the tasks that will come."
            + (" With whole GPUs it falls to 0 once every GPU is held: no idle capacity is left." if whole else ""),
            data,
        )
    )
    figures += [
        occupancy_figure(run, out_dir / f"sharing_gpus_{i:02d}.png", f"the run with {run.label}" if modes else None)
        for i, run in enumerate(runs)
    ]
    return figures
