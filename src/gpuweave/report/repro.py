"""The report of a reproduction or crosscheck directory: ours beside the paper's, coloured by tolerance.

Input: ``comparison.csv`` (experiment, metric, paper, ours, unit, note) written by ``gpuweave repro`` or
``gpuweave crosscheck``; nothing else is read. A row with a paper number is *within tolerance* when
``|ours - paper| <= tolerance * |paper|`` (``<= tolerance`` when the paper's number is 0). The figure draws, for
every such row, ours divided by the paper's on a log axis with the tolerance band shaded, one panel per
experiment; the table lists every row with its verdict. Complexity: O(rows).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path

from gpuweave.errors import InputError
from gpuweave.files import csv_dicts, prepare_output_dir, read_input_text
from gpuweave.plotting import PALETTE, figure, legend_below, plot_text, plot_title, save, write_csv
from gpuweave.report.html import write_report_file
from gpuweave.report.markup import esc, format_value
from gpuweave.report.page import Page, appendix_html
from gpuweave.report.section import Figure

#: default relative tolerance of "ours matches the paper"
TOLERANCE = 0.10
COMPARISON = "comparison.csv"
IN_COLOUR, OUT_COLOUR = PALETTE[0], PALETTE[3]


@dataclass(frozen=True)
class Row:
    experiment: str
    metric: str
    paper: float | None
    ours: float | None
    unit: str
    note: str

    def within(self, tolerance: float) -> bool | None:
        """Whether ours is within ``tolerance`` of the paper's number (None when either is missing)."""
        if self.paper is None or self.ours is None or not (math.isfinite(self.paper) and math.isfinite(self.ours)):
            return None
        return abs(self.ours - self.paper) <= tolerance * (abs(self.paper) if self.paper else 1.0)


def is_repro_dir(path: Path) -> bool:
    return path.is_dir() and (path / COMPARISON).is_file() and not (path / "summary.json").is_file()


def _number(text: str, path: Path, row: int, field: str) -> float | None:
    if text.strip() == "":
        return None
    try:
        return float(text)
    except ValueError:
        raise InputError(f"expected a number, got {text!r}", file=path, row=row, field=field) from None


def read_comparison(path: Path) -> list[Row]:
    """The rows of a ``comparison.csv`` (InputError naming file, row and field on a bad one)."""
    text = read_input_text(path, what="comparison table")  # not UTF-8, a directory, too large: one line
    header, records = csv_dicts(io.StringIO(text, newline=""), file=path)
    for column in ("experiment", "metric", "paper", "ours"):
        if column not in header:
            raise InputError("missing column", file=path, row=0, field=column)
    rows = []
    for i, r in enumerate(records, 1):
        rows.append(
            Row(
                r.get("experiment") or "",
                r.get("metric") or "",
                _number(r.get("paper") or "", path, i, "paper"),
                _number(r.get("ours") or "", path, i, "ours"),
                r.get("unit") or "",
                r.get("note") or "",
            )
        )
    return rows


def _ours_over_paper(r: Row) -> float:
    """ours / paper of a plotted row (one with both numbers, nonzero)."""
    assert r.ours is not None and r.paper is not None, "only rows with both numbers are plotted"
    return r.ours / r.paper


def plot_comparison(rows: list[Row], tolerance: float, path: Path, title: str) -> Figure:
    """Ours / paper per row with a paper number, one panel per experiment, coloured in/out of tolerance."""
    from matplotlib.patches import Patch

    shown = [r for r in rows if r.within(tolerance) is not None and r.paper and r.ours and r.ours / r.paper > 0]
    experiments = list(dict.fromkeys(r.experiment for r in shown)) or ["(no row with a paper number)"]
    sizes = [max(1, sum(r.experiment == e for r in shown)) for e in experiments]
    fig, axes = figure(
        len(experiments),
        1,
        height=1.2 + 0.22 * sum(sizes) + 0.45 * len(experiments),
        sharex=True,
        gridspec_kw={"height_ratios": sizes},
    )
    for ax, experiment in zip(axes[:, 0], experiments):
        mine = [r for r in shown if r.experiment == experiment]
        ax.axvspan(1 - tolerance, 1 + tolerance, color=IN_COLOUR, alpha=0.12, lw=0)
        ax.axvline(1.0, color="0.4", lw=0.8)
        for y, r in enumerate(mine):
            colour = IN_COLOUR if r.within(tolerance) else OUT_COLOUR
            ax.plot([_ours_over_paper(r)], [y], marker="o" if r.within(tolerance) else "X", color=colour, ms=6)
        ax.set_yticks(range(len(mine)), [plot_text(r.metric) for r in mine], fontsize="x-small")
        ax.set_ylim(len(mine) - 0.5, -0.5)
        ax.set_title(plot_text(experiment), fontsize="small", loc="left")
    axes[0, 0].set_xscale("log")
    axes[-1, 0].set_xlabel("ours / paper (log scale; 1 = the paper's number)")
    fig.suptitle(plot_title(title))
    legend_below(
        fig,
        [
            Patch(color=IN_COLOUR, label=f"within ±{tolerance:.0%}"),
            Patch(color=OUT_COLOUR, label=f"outside ±{tolerance:.0%}"),
        ],
    )
    data = write_csv(
        path.with_suffix(".csv"),
        ("experiment", "metric", "paper", "ours", "ours_over_paper", "within_tolerance"),
        [(r.experiment, r.metric, r.paper, r.ours, _ours_over_paper(r), int(bool(r.within(tolerance)))) for r in shown],
    )
    n_in = sum(bool(r.within(tolerance)) for r in shown)
    caption = (
        f"Our number divided by the paper's for each of the {len(shown)} comparable rows, one panel per experiment; "
        f"the shaded band is ±{tolerance:.0%}. Points on the vertical line match exactly; {n_in} of {len(shown)} "
        f"are within the band (blue dots), the others are vermillion crosses."
    )
    return Figure(save(fig, path), caption, data)


def _rows_table(rows: list[Row], tolerance: float) -> str:
    out = ['<div class="scroll"><table><thead><tr>']
    out += [f'<th class="text">{c}</th>' for c in ("experiment", "metric", "paper", "ours", "unit", "verdict", "note")]
    out.append("</tr></thead><tbody>")
    for r in rows:
        verdict = r.within(tolerance)
        cls, word = {True: ("in", "within"), False: ("out", "outside"), None: ("", "")}[verdict]
        cells = [r.experiment, r.metric, format_value(r.paper), format_value(r.ours), r.unit]
        out.append("<tr>" + "".join(f'<td class="text">{esc(c)}</td>' for c in cells))
        out.append(f'<td class="text {cls}">{word}</td><td class="text">{esc(r.note)}</td></tr>')
    out.append("</tbody></table></div>")
    return "".join(out)


def render_repro_report(dirs: list[Path], out_dir: Path, title: str, tolerance: float | None = None) -> Path:
    """report.html for one or more reproduction directories: summary, one figure and one table per directory."""
    tolerance = TOLERANCE if tolerance is None else tolerance
    if not tolerance > 0:
        raise InputError(f"--tolerance must be positive, got {tolerance}", field="tolerance")
    tables = {d: read_comparison(d / COMPARISON) for d in dirs}  # before the folder exists: a bad table leaves none
    prepare_output_dir(out_dir, field="out")
    verdicts = [r.within(tolerance) for rows in tables.values() for r in rows]
    n_in, n_out = verdicts.count(True), verdicts.count(False)
    summary = (
        f"{len(dirs)} reproduction{'s' if len(dirs) > 1 else ''} ({', '.join(d.name for d in dirs)}), "
        f"{len(verdicts)} rows, {n_in + n_out} with a paper number: {n_in} within ±{tolerance:.0%} of the paper's "
        f"number and {n_out} outside it (the notes of comparison.csv say why where known)."
    )
    page = Page(title, out_dir, summary=summary)
    for i, (d, rows) in enumerate(tables.items()):
        fig = plot_comparison(rows, tolerance, out_dir / f"comparison_{i:02d}_{d.name}.png", f"{d.name}: ours / paper")
        page.add(f"{d.name}: ours beside the paper's", figures=[fig], after=[_rows_table(rows, tolerance)])
    page.appendix.append(
        appendix_html("Reproductions", [], {"directories": [str(d) for d in dirs], "tolerance": tolerance})
    )
    return write_report_file(out_dir, page.render())
