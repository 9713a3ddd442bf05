"""The house style of every gpuweave plot: one palette, one way to make, label, legend and save a figure.

Problem: plots of different grains (cluster runs, MIG Gantt charts, packs, kernel timelines, reproductions) must
read alike and stay readable for colour-blind readers and with many series. This module is the one place that
decides how:

* colours: the Okabe-Ito palette (eight hues distinguishable under the common colour-vision deficiencies);
  series 9-16 reuse the hues with a dashed line, 17-24 dotted, and so on (:func:`series_style`), so no two
  series of one plot look alike;
* identical results share one line: :func:`group_identical` merges series whose data are equal and labels the
  line ``a = b = c``;
* legends never cover data: they sit outside the axes (right of a single panel, under a grid of panels);
* figures are drawn at :data:`WIDTH_IN` inches and :data:`DPI` dots per inch, wide enough to be shown at the
  full width of a 1,400 px window without blurring;
* every figure's data go to a CSV beside its PNG (:func:`write_csv`), written from the same arrays as the plot.

Matplotlib's object API on the Agg canvas only (no pyplot state), imported inside the functions so importing this
module is cheap. Complexity: O(points drawn).
"""

from __future__ import annotations

import csv
import re
import textwrap
import warnings
from collections.abc import Hashable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

# A character no installed font has (an emoji task name; a CJK one where no fallback font below is installed) is drawn
# as an empty box; matplotlib also warned on stderr, once per character, in the middle of a command's output. The box
# is the message; the warning is dropped.
warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from", category=UserWarning)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")

#: Okabe & Ito (2008), "Color Universal Design", ordered so that neighbours differ most
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
#: one line style per pass over the palette
LINESTYLES = ("-", (0, (5, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2)), (0, (3, 1, 1, 1, 1, 1)))
#: hatches for filled shapes after the first two passes over the palette ("//" is left to mean "held, unused")
HATCHES = ("..", "xx", "++")
WIDTH_IN = 11.0
DPI = 130
GRID_ALPHA = 0.3
CONTEXT_GREY = "0.82"
#: the longest user text (a series, a tick label, a panel title) a plot shows whole: a legend entry of a few hundred
#: characters (a fuzzed service name) squeezed the plot area to nothing, and matplotlib warned on stderr. Our own
#: longest label, a reproduction's metric, has 69.
TEXT_CHARS = 80
#: a title (a figure's or a panel's) wraps at words into lines of at most :data:`TEXT_CHARS` characters instead of
#: being cut, up to this many lines: a title with its clip note ran past 80 characters and lost its end ("runs last
#: unt…"). Only text longer than the lines hold (a fuzzed name) is still cut.
TITLE_LINES = 3
#: fonts a label falls back to, glyph by glyph, for what DejaVu Sans lacks (CJK job, task and service names), the
#: first installed one used: Debian's fonts-droid-fallback (1.8 MB; .ci/run installs it), fonts-wqy-zenhei,
#: fonts-noto-cjk. None installed: such characters stay empty boxes, as above.
FALLBACK_FONTS = ("Droid Sans Fallback", "WenQuanYi Zen Hei", "Noto Sans CJK JP")
#: their files, for a font installed after matplotlib cached its font list (the cache is not rebuilt on its own)
FALLBACK_FILES = ("DroidSansFallbackFull.ttf", "wqy-zenhei.ttc", "NotoSansCJK-Regular.ttc")
_fonts_chosen = False


def series_style(i: int) -> dict[str, Any]:
    """Colour and line style of the ``i``-th series: the palette first, then the palette again dashed, ..."""
    return {"color": PALETTE[i % len(PALETTE)], "linestyle": LINESTYLES[(i // len(PALETTE)) % len(LINESTYLES)]}


def fill_style(i: int) -> dict[str, Any]:
    """Face colour and hatch of the ``i``-th filled shape (bars, Gantt boxes): the palette, then the palette
    lightened (half white), then lightened and hatched."""
    rgb = _rgb(i)
    passes = i // len(PALETTE)
    if passes:
        rgb = (0.5 + 0.5 * rgb[0], 0.5 + 0.5 * rgb[1], 0.5 + 0.5 * rgb[2])
    return {"facecolor": rgb, "hatch": HATCHES[(passes - 2) % len(HATCHES)] if passes >= 2 else None}


def _rgb(i: int) -> tuple[float, float, float]:
    colour = PALETTE[i % len(PALETTE)]
    return int(colour[1:3], 16) / 255, int(colour[3:5], 16) / 255, int(colour[5:7], 16) / 255


def text_colour(i: int) -> str:
    """Black or white, whichever reads better on :func:`fill_style` ``i``'s face colour."""
    r, g, b = fill_style(i)["facecolor"]
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.45 else "white"


def plot_text(text: Any) -> str:
    """User text made safe for matplotlib: no mathtext (``$``), no legend-hiding leading ``_``, control characters
    (a NUL, a newline) shown as U+FFFD, and at most :data:`TEXT_CHARS` characters (longer text is cut with an
    ellipsis)."""
    text = _CONTROL.sub("\ufffd", str(text))
    if len(text) > TEXT_CHARS:
        text = text[: TEXT_CHARS - 1] + "\u2026"
    text = text.replace("$", r"\$")
    return " " + text if text.startswith("_") else text


def plot_title(text: Any, width: int = TEXT_CHARS) -> str:
    """A title made safe like :func:`plot_text`, but wrapped at words into lines of at most ``width`` characters
    rather than cut; only beyond :data:`TITLE_LINES` lines is the rest cut with an ellipsis."""
    text = _CONTROL.sub("\ufffd", str(text))
    lines = textwrap.wrap(text, width, break_on_hyphens=False) or [""]
    if len(lines) > TITLE_LINES:
        lines = lines[:TITLE_LINES]
        lines[-1] = lines[-1][: width - 1] + "\u2026"
    text = "\n".join(line.replace("$", r"\$") for line in lines)
    return " " + text if text.startswith("_") else text


def group_identical(labels: Sequence[str], data: Sequence[Any]) -> list[tuple[str, list[int]]]:
    """Series whose data are equal, merged: ``[("a = b = c", [0, 3, 5]), ("d", [1]), ...]`` in first-seen order.

    ``data[i]`` is anything :func:`_fingerprint` can hash (arrays, tuples of arrays, numbers). O(total size)."""
    groups: dict[Hashable, list[int]] = {}
    for i, value in enumerate(data):
        groups.setdefault(_fingerprint(value), []).append(i)
    return [(" = ".join(labels[i] for i in members), members) for members in groups.values()]


def _fingerprint(value: Any) -> Hashable:
    if isinstance(value, np.ndarray):
        return ("array", value.shape, np.ascontiguousarray(value).tobytes())
    if isinstance(value, (tuple, list)):
        return tuple(_fingerprint(v) for v in value)
    return value


def figure(nrows: int = 1, ncols: int = 1, *, width: float = WIDTH_IN, height: float = 4.2, **subplots):
    """A constrained-layout figure and a 2-D array of axes in the house style (grid, no top/right spines)."""
    from matplotlib.figure import Figure

    use_fallback_font()
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, **subplots)
    for ax in axes.flat:
        style_axes(ax)
    return fig, axes


def use_fallback_font() -> str | None:
    """Add the first installed font of :data:`FALLBACK_FONTS` after the sans-serif family (matplotlib >= 3.6 takes
    each glyph from the first font of the list that has it) and return its name, or None. Done once per process,
    on the first figure, and only while ``font.family`` is matplotlib's default: a family the user set is theirs.
    Global because a label's font is read from rcParams when its text is created, after :func:`figure` returns."""
    global _fonts_chosen
    import matplotlib
    from matplotlib import font_manager

    if _fonts_chosen:
        family = matplotlib.rcParams["font.family"]
        return family[1] if len(family) == 2 and family[1] in FALLBACK_FONTS else None
    _fonts_chosen = True
    if list(matplotlib.rcParams["font.family"]) != ["sans-serif"]:
        return None
    manager = font_manager.fontManager
    installed = {entry.name for entry in manager.ttflist}
    if not installed.intersection(FALLBACK_FONTS):
        for path in font_manager.findSystemFonts():
            if Path(path).name in FALLBACK_FILES:
                manager.addfont(path)
        installed = {entry.name for entry in manager.ttflist}
    chosen = next((name for name in FALLBACK_FONTS if name in installed), None)
    if chosen is not None:
        matplotlib.rcParams["font.family"] = ["sans-serif", chosen]
    return chosen


def style_axes(ax) -> None:
    ax.grid(True, alpha=GRID_ALPHA, linewidth=0.6)
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)
    ax.tick_params(labelsize="small")


def legend_outside(ax, n: int | None = None, *, title: str | None = None, handles=None) -> None:
    """The axes' legend to the right of the plot area, outside it, so it never covers data."""
    handles, labels = (handles, [h.get_label() for h in handles]) if handles else ax.get_legend_handles_labels()
    if not handles:
        return
    n = len(handles) if n is None else n
    ax.legend(
        handles,
        labels,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        borderaxespad=0.0,
        frameon=False,
        fontsize="small" if n <= 12 else "x-small",
        ncol=1 if n <= 18 else 2,
        title=title,
        title_fontsize="small",
    )


def legend_below(fig, handles, *, ncol: int | None = None, title: str | None = None) -> None:
    """One legend for a whole figure, under its panels (constrained layout makes room for it)."""
    if not handles:
        return
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncol=ncol or min(len(handles), 6),
        frameon=False,
        fontsize="small",
        title=title,
        title_fontsize="small",
    )


def note(ax, text: str) -> None:
    """A short note in the top right corner of the axes, above the plot area (e.g. "x clipped at 350 h")."""
    ax.annotate(
        plot_text(text),
        xy=(1.0, 1.0),
        xycoords="axes fraction",
        xytext=(0, 4),
        textcoords="offset points",
        ha="right",
        va="bottom",
        fontsize="x-small",
        color="0.35",
    )


def save(fig, path: str | Path) -> Path:
    """Write the figure in the format its suffix names (PNG by default; a PNG carries no software stamp, so
    equal inputs give equal bytes)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = path.suffix.lower().lstrip(".") or "png"
    fmt = "jpeg" if fmt == "jpg" else fmt
    fig.savefig(path, format=fmt, dpi=DPI, **({"metadata": {"Software": None}} if fmt == "png" else {}))
    return path


def write_csv(path: str | Path, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Path:
    """The data behind a figure, one row per point (numbers with up to 9 significant digits)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        for row in rows:
            writer.writerow([_cell(v) for v in row])
    return path


def _cell(value: Any) -> str:
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return "" if not np.isfinite(value) else f"{value:.9g}"
    if isinstance(value, np.integer):
        return str(int(value))
    return "" if value is None else str(value)
