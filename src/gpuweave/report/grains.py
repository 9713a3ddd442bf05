"""``gpuweave report`` on result directories of any grain: one report per kind, read from the result files only.

:func:`report_runs` reads each directory's ``summary.json`` (:mod:`gpuweave.results`), refuses runs of different
kinds in one call (one InputError line), hands cluster runs to :func:`gpuweave.report.html.render_report`
and renders the other kinds here in the same page and plot style: the runs, their metrics side by side, a
comparison relative to the first run, and the kind's plots --

* ``mig``: makespan against the lower bound per run, and each run's Gantt chart (from ``schedule.json``);
* ``packs``: relative cost, packing ratio and relative response time per run (from ``summary.json``) and the
  packs of each run over time (from ``packs.csv``);
* ``kernel``: mean JCT per service and run (from ``services.csv``), the JCT CDF per service (``tasks.csv``) and,
  when the run recorded one, the kernel timeline (``kernels.csv``);
* ``sharing``: allocation and fragmentation against arrived load, and each run's GPUs at the end; runs of one
  experiment under several sharing modes also side by side, named by their mode (:mod:`.sharing`);
* ``repro``: a reproduction's or crosscheck's ``comparison.csv`` (a directory without ``summary.json``): ours
  against the paper's number per row, coloured by whether ours is within the tolerance (:mod:`.repro`).

Complexity: O(total size of the result files) plus matplotlib's drawing.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpuweave.checks import RESULT, parse
from gpuweave.errors import InputError
from gpuweave.files import csv_dicts, read_input_text
from gpuweave.kernel.timeline import plot_timeline_rows, read_kernels_csv
from gpuweave.mig.gantt import plot_gantt
from gpuweave.mig.schedule import read_schedule_json
from gpuweave.packs.gantt import plot_pack_rows
from gpuweave.plotting import figure, legend_outside, plot_text, save, series_style, write_csv
from gpuweave.report.html import (
    REPORT_NAME,
    comparison_table,
    drawn_aside,
    metric_names,
    render_report,
    runs_summary,
    summary_table,
    write_report_file,
)
from gpuweave.report.markup import html_table
from gpuweave.report.page import Page, appendix_html
from gpuweave.report.repro import is_repro_dir, render_repro_report
from gpuweave.report.rundir import label_runs
from gpuweave.report.section import DemoSection, Figure
from gpuweave.report.sharing import mode_labels, modes_sections, modes_summary, sharing_plots
from gpuweave.results import SUMMARY_NAME, read_result_dir, result_kind
from gpuweave.units import METRIC_UNITS, SECOND, Unit, axis_unit, duration_text


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
        config = self.config
        if config.get("placement") and config.get("sharing") == "whole":  # a sharing run that rounded shares up
            return f"{config['placement']} (whole GPUs)"
        return str(config.get("algo") or config.get("mode") or config.get("placement") or self.summary.get("kind"))

    def table(self, name: str, columns: Sequence[str], numeric: Sequence[str] = ()) -> list[dict[str, Any]]:
        """A CSV file of the result directory as rows (text; the ``numeric`` columns as checked finite numbers);
        InputError naming the file, row and field if it, one of ``columns`` or a number is missing or bad."""
        path = self.path / name
        if not path.is_file():
            raise InputError("missing file in result directory", file=path)
        text = read_input_text(path, what="result table")
        header, records = csv_dicts(io.StringIO(text, newline=""), file=path)
        missing = [c for c in columns if c not in header]
        if missing:
            raise InputError("missing column", file=path, field=missing[0])
        rows: list[dict[str, Any]] = []
        for number, row in enumerate(records, start=1):
            for column in numeric:
                row[column] = parse(row.get(column) or "", RESULT, file=path, row=number, field=column)
            rows.append(row)
        return rows


def _bars(
    runs: Sequence[GrainRun],
    series: dict[str, Callable[[GrainRun], Any]],
    path: Path,
    ylabel: str,
    time: Unit | None = None,
):
    """Grouped bars: one group per run, one bar per series; the values also go to a CSV beside the PNG. Values
    that are times in unit ``time`` are drawn in the unit their magnitude calls for (:func:`axis_unit`), named in
    the axis label and the CSV's column (``value_min``)."""
    fig, axes = figure(height=4.2)
    ax = axes[0, 0]
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(runs))
    rows = []
    values = {
        name: [np.nan if (h := value(run)) is None else float(h) for run in runs] for name, value in series.items()
    }
    scale, column = 1.0, "value"
    if time is not None:
        unit = axis_unit([h * time.seconds for hs in values.values() for h in hs])
        scale, column, ylabel = time.seconds / unit.seconds, f"value_{unit.symbol}", f"{ylabel} ({unit.symbol})"
    for i, (name, heights) in enumerate(values.items()):
        heights = [h * scale for h in heights]
        ax.bar(
            x + (i - (len(series) - 1) / 2) * width,
            heights,
            width,
            label=plot_text(name),
            color=series_style(i)["color"],
        )
        rows += [(run.label, name, h) for run, h in zip(runs, heights)]
    ax.set_xticks(x, [plot_text(run.label) for run in runs], rotation=30 if len(runs) > 3 else 0, ha="right")
    ax.set_ylabel(ylabel)
    ax.grid(False, axis="x")
    legend_outside(ax, len(series))
    csv_path = write_csv(path.with_suffix(".csv"), ("run", "series", column), rows)
    return save(fig, path), csv_path


def _file_stem(run: GrainRun, index: int) -> str:
    return f"{index:02d}_" + "".join(c if c.isalnum() or c in "-_" else "_" for c in run.label)[:60]


def _best(runs: Sequence[GrainRun], metric: str, higher: bool = False) -> GrainRun:
    values = [r for r in runs if isinstance(r.metrics.get(metric), (int, float))]
    return (max if higher else min)(values or list(runs), key=lambda r: r.metrics.get(metric) or 0)


def mig_makespan_figure(runs: Sequence[GrainRun], out_dir: Path) -> Figure:
    """Makespan beside the lower bound, one bar pair per run (from the runs' summary.json)."""
    png, data = _bars(
        runs,
        {"makespan": lambda r: r.metrics.get("makespan_s"), "lower bound": lambda r: r.metrics.get("lower_bound_s")},
        out_dir / "mig_makespan.png",
        "time",
        SECOND,
    )
    best = _best(runs, "makespan_s")
    return Figure(
        png,
        "Makespan of each plan beside the batch's lower bound (total work over the GPU's slices). The closer "
        f"the two bars, the better the plan: {best.label} is shortest at "
        f"{duration_text(best.metrics.get('makespan_s', 0))}.",
        data,
    )


def mig_gantt_figure(run: GrainRun, path: Path, title: str | None = None) -> Figure:
    """The Gantt chart of one MIG result directory (from its schedule.json; tasks.csv is the data link)."""
    schedule = read_schedule_json(run.path / "schedule.json")
    gantt = plot_gantt(schedule, path, title=title or f"{run.label}: Gantt chart")
    return Figure(
        gantt,
        f"Gantt chart of {run.label} on {schedule.gpu}: one row per MIG slice, one box per task over the "
        "slices of its instance; grey and vermillion bands are instance creations and destructions. Gaps "
        f"between boxes are idle slices; the dashed line is the makespan ({duration_text(schedule.makespan)}). "
        "A task too short for its name carries a number, listed in the key below the chart.",
        run.path / "tasks.csv",
    )


def mig_plots(runs: Sequence[GrainRun], out_dir: Path) -> list[Figure]:
    figures = [mig_makespan_figure(runs, out_dir)]
    for i, run in enumerate(runs):
        figures.append(mig_gantt_figure(run, out_dir / f"gantt_{_file_stem(run, i)}.png"))
    return figures


def _metric(name: str) -> Callable[[GrainRun], Any]:
    """The bar height of a run: its metric ``name`` (None when it has none)."""
    return lambda r: r.metrics.get(name)


def _service_jct(services: dict[str, dict[str, Any]], service: str) -> Callable[[GrainRun], Any]:
    """The bar height of a run: the mean JCT of ``service`` (None when the run has no such service)."""
    return lambda r: services[r.label].get(service)


def packs_plots(runs: Sequence[GrainRun], out_dir: Path) -> list[Figure]:
    names = ("relative_cost", "packing_ratio", "relative_response_time")
    png, data = _bars(runs, {n: _metric(n) for n in names}, out_dir / "packs_comparison.png", "ratio")
    best = _best(runs, "relative_cost")
    figures = [
        Figure(
            png,
            "Relative cost (total time against every task alone on all processors), packing ratio and relative "
            "response time per run (Sec. 6.2). Lower cost and response time are better, a higher packing ratio "
            f"means fewer idle processors; {best.label} has the lowest relative cost "
            f"({best.metrics.get('relative_cost', 0):.3f}).",
            data,
        )
    ]
    for i, run in enumerate(runs):
        figures.append(packs_chart_figure(run, out_dir / f"packs_{_file_stem(run, i)}.png"))
    return figures


def packs_chart_figure(run: GrainRun, path: Path, title: str | None = None) -> Figure:
    """The pack chart of one packs result directory, drawn from its packs.csv."""
    rows = run.table(
        "packs.csv",
        ("pack", "pack_start", "pack_cost", "task", "procs", "time"),
        ("pack_start", "pack_cost", "procs", "time"),
    )
    procs = int(run.metrics.get("procs") or 1)
    png = plot_pack_rows(rows, procs, path, title=title or f"{run.label}: packs")
    return Figure(
        png,
        f"Packs of {run.label} over time: each dashed block is a pack, each box a task over the processors "
        "it holds; blank space inside a block is idle processor time.",
        run.path / "packs.csv",
    )


def _jct_cdf(runs: Sequence[GrainRun], path: Path) -> Figure:
    fig, axes = figure(height=4.4)
    ax = axes[0, 0]
    lines: dict[str, np.ndarray] = {}
    for run in runs:
        by_service: dict[str, list[float]] = {}
        for row in run.table("tasks.csv", ("service", "jct_ms"), ("jct_ms",)):
            by_service.setdefault(row["service"], []).append(row["jct_ms"])
        for service, values in by_service.items():
            lines[f"{run.label} {service}" if len(runs) > 1 else service] = np.sort(values)
    ms = METRIC_UNITS["_ms"]
    unit = axis_unit([v * ms.seconds for jct in lines.values() for v in jct])
    rows = []
    for i, (name, in_ms) in enumerate(lines.items()):
        jct = in_ms * (ms.seconds / unit.seconds)
        y = np.arange(1, jct.size + 1) / jct.size
        ax.step(
            np.concatenate([[jct[0]], jct]),
            np.concatenate([[0.0], y]),
            where="post",
            label=plot_text(name),
            linewidth=1.4,
            **series_style(i),
        )
        rows += [(name, a, b) for a, b in zip(jct, y)]
    ax.set_xlabel(f"task completion time ({unit.symbol})")
    ax.set_ylabel("fraction of tasks")
    ax.set_title("JCT CDF per service")
    legend_outside(ax, len(lines))
    csv_path = write_csv(path.with_suffix(".csv"), ("series", f"jct_{unit.symbol}", "fraction_of_tasks"), rows)
    return Figure(
        save(fig, path),
        "CDF of task completion time per service (and run). Further left is better; a steep curve means "
        "predictable latency, a long tail to the right means tasks that waited behind others.",
        csv_path,
    )


def kernel_plots(runs: Sequence[GrainRun], out_dir: Path) -> list[Figure]:
    services = {
        run.label: {
            row["service"]: row["mean_jct_ms"]
            for row in run.table("services.csv", ("service", "mean_jct_ms"), ("mean_jct_ms",))
        }
        for run in runs
    }
    names = list(dict.fromkeys(s for per_run in services.values() for s in per_run))
    series = {s: _service_jct(services, s) for s in names}
    png, data = _bars(runs, series, out_dir / "kernel_jct.png", "mean JCT", METRIC_UNITS["_ms"])
    figures = [
        Figure(
            png,
            "Mean task completion time per service and run. Lower is better; compare a "
            "high-priority service's bar across runs to see what sharing the GPU costs it.",
            data,
        ),
        _jct_cdf(runs, out_dir / "kernel_jct_cdf.png"),
    ]
    for i, run in enumerate(runs):
        if (run.path / "kernels.csv").is_file():
            figures.append(_timeline(run, read_kernels_csv(run.path / "kernels.csv"), out_dir, i))
    return figures


def _timeline(run: GrainRun, rows, out_dir: Path, i: int) -> Figure:
    window = (
        min((float(r["start_ms"]) for r in rows), default=0.0),
        max((float(r["end_ms"]) for r in rows), default=1.0),
    )
    png = plot_timeline_rows(rows, window, out_dir / f"timeline_{_file_stem(run, i)}.png")
    return Figure(
        png,
        f"Kernel timeline of {run.label}: one row per service, one box per kernel, coloured by priority; hatched "
        "boxes are low-priority kernels filling a high-priority service's gaps.",
        run.path / "kernels.csv",
    )


@dataclass(frozen=True)
class GrainReport:
    """What a kind's report compares (metric -> higher is better) and how it plots its runs; optionally, the runs'
    labels (None: the usual ones), the summary (None: the usual one) and sections before the runs (their files
    drawn into the report's folder), each from the runs as they are."""

    compared: dict[str, bool]
    plots: Callable[[Sequence[GrainRun], Path], list[Figure]]
    what: str
    labels: Callable[[Sequence[GrainRun]], list[str] | None] | None = None
    summary: Callable[[Sequence[GrainRun]], str | None] | None = None
    sections: Callable[[Sequence[GrainRun], Path], list[DemoSection]] | None = None


GRAIN_REPORTS = {
    "mig": GrainReport(
        {"makespan_s": False, "ratio": False, "reconfigurations": False}, mig_plots, "planned on MIG GPUs"
    ),
    "packs": GrainReport(
        {
            "cost_s": False,
            "relative_cost": False,
            "packing_ratio": True,
            "response_time_s": False,
            "relative_response_time": False,
        },
        packs_plots,
        "co-scheduled in packs",
    ),
    "kernel": GrainReport(
        {"mean_jct_ms": False, "cv_jct": False, "busy_fraction": True, "end_time_ms": False},
        kernel_plots,
        "sharing one simulated GPU",
    ),
    "sharing": GrainReport(
        {
            "allocation_at_130": True,
            "asked_at_130": True,
            "allocation_at_100": True,
            "tasks_failed": False,
            "fragment_ratio_at_100": False,
        },
        sharing_plots,
        "placed on shared GPUs (FGD's experiment)",
        labels=mode_labels,
        summary=modes_summary,
        sections=modes_sections,
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
    kind: str,
    runs: list[GrainRun],
    out_dir: Path,
    title: str,
    sections: Sequence[DemoSection] = (),
    labels: Sequence[str] | None = None,
) -> Path:
    """report.html and the PNGs and CSVs of MIG, packs or kernel runs of one kind (``labels``: the runs' own)."""
    spec = GRAIN_REPORTS[kind]
    label_runs(runs, labels if labels is not None or spec.labels is None else spec.labels(runs))
    with drawn_aside(out_dir) as scratch:  # a table damaged is met while drawing: nothing reaches out_dir then
        metrics = metric_names(runs)
        summary = spec.summary(runs) if spec.summary is not None else None
        page = Page(title, scratch, summary=summary or runs_summary(runs, spec.compared, spec.what))
        for section in spec.sections(runs, scratch) if spec.sections is not None else []:
            page.add_section(section)
        page.add(f"Runs ({kind})", [_runs_table(runs)])
        page.add("Metrics", [summary_table(runs, metrics)])
        if len(runs) > 1:
            page.add("Comparison", [comparison_table(runs, metrics, spec.compared)])
        page.add("Plots", figures=spec.plots(runs, scratch))
        for section in sections:
            page.add_section(section)
        page.appendix.append(appendix_html("Runs", [run.path for run in runs]))
        write_report_file(scratch, page.render())
    return Path(out_dir) / REPORT_NAME


def report_runs(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path,
    *,
    title: str = "gpuweave report",
    sections: Sequence[DemoSection] = (),
    tolerance: float | None = None,
    labels: Sequence[str] | None = None,
) -> Path:
    """Write ``out_dir/report.html`` for result directories of one kind (InputError for mixed kinds); ``labels``
    names the runs (one per directory; default: the policy or algorithm plus what differs).

    A directory with ``comparison.csv`` and no ``summary.json`` is a reproduction (kind ``repro``), compared
    with the paper's numbers within ``tolerance`` (relative; default :data:`gpuweave.report.repro.TOLERANCE`)."""
    if not run_dirs:
        raise InputError("no run directories given")

    kinds = ["repro" if is_repro_dir(Path(d)) else None for d in run_dirs]
    summaries = [None if k else read_result_dir(d) for k, d in zip(kinds, run_dirs)]
    # a summary is read (not None) for every run that is not a reproduction (k is None)
    kinds = [k or result_kind(s, Path(d) / SUMMARY_NAME) for k, s, d in zip(kinds, summaries, run_dirs)]  # type: ignore[arg-type]  # see above
    if len(set(kinds)) > 1:
        seen = ", ".join(f"{k} ({d})" for k, d in dict(zip(kinds, run_dirs)).items())
        raise InputError(f"runs of different kinds cannot share a report: {seen}; report one kind at a time")
    if kinds[0] == "repro" and labels:
        raise InputError("--label names runs; a reproduction's rows are named by their directory", field="label")
    if kinds[0] == "repro":
        return render_repro_report([Path(d) for d in run_dirs], Path(out_dir), title, tolerance)
    if kinds[0] == "cluster":
        return render_report(run_dirs, out_dir, title=title, sections=sections, labels=labels)
    runs = [GrainRun(Path(d), s) for d, s in zip(run_dirs, summaries)]  # type: ignore[arg-type]  # no repro here
    return render_grain_report(kinds[0], runs, Path(out_dir), title, sections, labels)  # type: ignore[arg-type]  # a kind
