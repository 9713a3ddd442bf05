"""``gpuweave report`` on result directories of any grain: one report per kind, read from the result files only.

:func:`report_runs` reads each directory's ``summary.json`` (:mod:`gpuweave.results`), refuses runs of different
kinds in one call (one InputError line), hands cluster runs to :func:`gpuweave.report.html.render_report`
unchanged and renders the other kinds here: the runs, their metrics side by side, a comparison relative to the
first run, and the kind's plots --

* ``mig``: makespan against the lower bound per run, and each run's Gantt chart (from ``schedule.json``);
* ``packs``: relative cost, packing ratio and relative response time per run (from ``summary.json``) and the
  packs of each run over time (from ``packs.csv``);
* ``kernel``: mean JCT per service and run (from ``services.csv``) and the JCT CDF per service (``tasks.csv``).

Complexity: O(total size of the result files) plus matplotlib's drawing.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpuweave.checks import RESULT, parse
from gpuweave.errors import InputError
from gpuweave.files import prepare_output_dir, read_input_text
from gpuweave.mig.gantt import plot_gantt
from gpuweave.mig.schedule import read_schedule_json
from gpuweave.report.html import (
    comparison_table,
    configs_html,
    figure_html,
    html_table,
    metric_names,
    page_html,
    render_report,
    section_html,
    summary_table,
    write_report_file,
)
from gpuweave.report.plots import _colors, _figure, _legend, _save, plot_text
from gpuweave.report.rundir import label_runs
from gpuweave.report.section import DemoSection
from gpuweave.results import read_result_dir, result_kind


@dataclass
class GrainRun:
    """One result directory of a MIG, packs or kernel run: its checked summary and a label."""

    path: Path
    summary: dict[str, Any]
    label: str = ""

    @property
    def config(self) -> dict[str, Any]:
        return self.summary.get("config") or {}

    @property
    def metrics(self) -> dict[str, Any]:
        return self.summary["metrics"]

    @property
    def seed(self) -> Any:
        return self.summary.get("seed")

    @property
    def name(self) -> str:
        return str(self.config.get("algo") or self.config.get("mode") or self.summary.get("kind"))

    def table(self, name: str, columns: Sequence[str], numeric: Sequence[str] = ()) -> list[dict[str, Any]]:
        """A CSV file of the result directory as rows (text; the ``numeric`` columns as checked finite numbers);
        InputError naming the file, row and field if it, one of ``columns`` or a number is missing or bad."""
        path = self.path / name
        if not path.is_file():
            raise InputError("missing file in result directory", file=path)
        text = read_input_text(path, what="result table")
        reader = csv.DictReader(io.StringIO(text, newline=""))
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError("missing column", file=path, field=missing[0])
        rows: list[dict[str, Any]] = []
        try:
            for number, row in enumerate(reader, start=1):
                for column in numeric:
                    row[column] = parse(row.get(column) or "", RESULT, file=path, row=number, field=column)
                rows.append(row)
        except csv.Error as exc:
            raise InputError(f"malformed CSV: {exc}", file=path, row=len(rows) + 1) from None
        return rows


def _bars(
    runs: Sequence[GrainRun], series: dict[str, Callable[[GrainRun], float]], path: Path, title: str, ylabel: str
) -> Path:
    """Grouped bars: one group per run, one bar per series."""
    fig, axes = _figure(width=max(6.0, 1.2 * len(runs) + 3), height=4.0)
    ax = axes[0, 0]
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(runs))
    for i, ((name, value), color) in enumerate(zip(series.items(), _colors(len(series)))):
        heights = [value(run) for run in runs]
        heights = [np.nan if h is None else float(h) for h in heights]
        ax.bar(x + (i - (len(series) - 1) / 2) * width, heights, width, color=color, label=plot_text(name))
    ax.set_xticks(x, [plot_text(run.label) for run in runs], rotation=30 if len(runs) > 3 else 0, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    _legend(ax, len(series))
    return _save(fig, path)


def _file_stem(run: GrainRun, index: int) -> str:
    return f"{index:02d}_" + "".join(c if c.isalnum() or c in "-_" else "_" for c in run.label)[:60]


def mig_plots(runs: Sequence[GrainRun], out_dir: Path) -> list[tuple[str, Path]]:
    figures = [
        (
            "Makespan and lower bound (s)",
            _bars(
                runs,
                {
                    "makespan": lambda r: r.metrics.get("makespan_s"),
                    "lower bound": lambda r: r.metrics.get("lower_bound_s"),
                },
                out_dir / "mig_makespan.png",
                "Makespan against the lower bound",
                "seconds",
            ),
        )
    ]
    for i, run in enumerate(runs):
        schedule = read_schedule_json(run.path / "schedule.json")
        png = plot_gantt(schedule, out_dir / f"gantt_{_file_stem(run, i)}.png", title=f"{run.label}: Gantt chart")
        figures.append((f"Gantt chart: {run.label}", png))
    return figures


def _plot_pack_rows(run: GrainRun, path: Path) -> Path:
    """Pack blocks over time, task bars stacked over the processors they hold (from packs.csv)."""
    rows = run.table(
        "packs.csv", ("pack", "pack_start", "pack_cost", "procs", "time"), ("pack_start", "pack_cost", "procs", "time")
    )
    procs = int(run.metrics.get("procs") or 1)
    fig, axes = _figure(width=8.0, height=3.2)
    ax = axes[0, 0]
    offsets: dict[str, int] = {}
    colors = _colors(20)
    for n, row in enumerate(rows):
        start, cost, used = row["pack_start"], row["pack_cost"], int(row["procs"])
        offset = offsets.get(row["pack"], 0)
        if offset == 0:
            ax.broken_barh([(start, cost)], (0, procs), facecolors="none", edgecolors="0.3", linestyles="--")
        ax.broken_barh([(start, row["time"])], (offset, used), facecolors=colors[n % 20], edgecolors="k", linewidth=0.4)
        offsets[row["pack"]] = offset + used
    ax.set_xlabel("time (s)")
    ax.set_ylabel("processors")
    ax.set_ylim(0, procs)
    ax.set_title(plot_text(f"{run.label}: packs over time"))
    return _save(fig, path)


def packs_plots(runs: Sequence[GrainRun], out_dir: Path) -> list[tuple[str, Path]]:
    series = {
        name: (lambda r, n=name: r.metrics.get(n))
        for name in ("relative_cost", "packing_ratio", "relative_response_time")
    }
    figures = [
        (
            "Relative cost, packing ratio and relative response time (Sec. 6.2)",
            _bars(runs, series, out_dir / "packs_comparison.png", "Cost and response", "ratio"),
        )
    ]
    for i, run in enumerate(runs):
        figures.append((f"Packs: {run.label}", _plot_pack_rows(run, out_dir / f"packs_{_file_stem(run, i)}.png")))
    return figures


def _jct_cdf(runs: Sequence[GrainRun], path: Path) -> Path:
    fig, axes = _figure()
    ax = axes[0, 0]
    lines: dict[str, np.ndarray] = {}
    for run in runs:
        by_service: dict[str, list[float]] = {}
        for row in run.table("tasks.csv", ("service", "jct_ms"), ("jct_ms",)):
            by_service.setdefault(row["service"], []).append(row["jct_ms"])
        for service, values in by_service.items():
            lines[f"{run.label} {service}" if len(runs) > 1 else service] = np.sort(values)
    for (name, jct), color in zip(lines.items(), _colors(len(lines))):
        y = np.arange(1, jct.size + 1) / jct.size
        ax.step(
            np.concatenate([[jct[0]], jct]),
            np.concatenate([[0.0], y]),
            where="post",
            color=color,
            label=plot_text(name),
        )
    ax.set_xlabel("task completion time (ms)")
    ax.set_ylabel("fraction of tasks")
    ax.set_title("JCT CDF per service")
    ax.grid(True, alpha=0.3)
    _legend(ax, len(lines))
    return _save(fig, path)


def kernel_plots(runs: Sequence[GrainRun], out_dir: Path) -> list[tuple[str, Path]]:
    services = {
        run.label: {
            row["service"]: row["mean_jct_ms"]
            for row in run.table("services.csv", ("service", "mean_jct_ms"), ("mean_jct_ms",))
        }
        for run in runs
    }
    names = list(dict.fromkeys(s for per_run in services.values() for s in per_run))
    series = {s: (lambda r, s=s: services[r.label].get(s)) for s in names}
    bars = _bars(runs, series, out_dir / "kernel_jct.png", "Mean JCT per service", "ms")
    return [
        ("Mean JCT per service (ms)", bars),
        ("JCT CDF per service", _jct_cdf(runs, out_dir / "kernel_jct_cdf.png")),
    ]


@dataclass(frozen=True)
class GrainReport:
    """What a kind's report compares (metric -> higher is better) and how it plots its runs."""

    compared: dict[str, bool]
    plots: Callable[[Sequence[GrainRun], Path], list[tuple[str, Path]]]


GRAIN_REPORTS = {
    "mig": GrainReport({"makespan_s": False, "ratio": False, "reconfigurations": False}, mig_plots),
    "packs": GrainReport(
        {
            "cost_s": False,
            "relative_cost": False,
            "packing_ratio": True,
            "response_time_s": False,
            "relative_response_time": False,
        },
        packs_plots,
    ),
    "kernel": GrainReport(
        {"mean_jct_ms": False, "cv_jct": False, "busy_fraction": True, "end_time_ms": False}, kernel_plots
    ),
}


def _runs_table(runs: Sequence[GrainRun]) -> str:
    return html_table(
        [
            {"run": run.label, "seed": run.seed, "directory": str(run.path), "gpuweave": run.summary.get("version", "")}
            for run in runs
        ]
    )


def render_grain_report(
    kind: str, runs: list[GrainRun], out_dir: Path, title: str, sections: Sequence[DemoSection] = ()
) -> Path:
    """report.html and the PNGs of MIG, packs or kernel runs of one kind."""
    spec = GRAIN_REPORTS[kind]
    label_runs(runs)
    prepare_output_dir(out_dir, field="out")
    metrics = metric_names(runs)
    figures = spec.plots(runs, out_dir)
    body = [f"<h2>Runs ({kind})</h2>", _runs_table(runs), "<h2>Summary</h2>", summary_table(runs, metrics)]
    if len(runs) > 1:
        body += ["<h2>Comparison</h2>", comparison_table(runs, metrics, spec.compared)]
    body.append("<h2>Plots</h2>")
    body += [figure_html(path, caption) for caption, path in figures]
    body += [section_html(s) for s in sections]
    body.append(configs_html(runs))
    return write_report_file(out_dir, page_html(title, body))


def report_runs(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path,
    *,
    title: str = "gpuweave report",
    sections: Sequence[DemoSection] = (),
) -> Path:
    """Write ``out_dir/report.html`` for result directories of one kind (InputError for mixed kinds)."""
    if not run_dirs:
        raise InputError("no run directories given")
    summaries = [read_result_dir(d) for d in run_dirs]
    kinds = [result_kind(s, Path(d)) for s, d in zip(summaries, run_dirs)]
    if len(set(kinds)) > 1:
        seen = ", ".join(f"{k} ({d})" for k, d in dict(zip(kinds, run_dirs)).items())
        raise InputError(f"runs of different kinds cannot share a report: {seen}; report one kind at a time")
    if kinds[0] == "cluster":
        return render_report(run_dirs, out_dir, title=title, sections=sections)
    runs = [GrainRun(Path(d), s) for d, s in zip(run_dirs, summaries)]
    return render_grain_report(kinds[0], runs, Path(out_dir), title, sections)
