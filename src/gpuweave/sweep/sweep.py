"""Run every cell of a sweep on an executor, cache finished runs by config hash, and summarise.

Layout of ``spec.out``::

    runs/<config key>/     one run directory per cell (jobs.csv, ..., summary.json)
    sweep.csv, sweep.parquet   one row per cell: grid fields, key, status, metrics
    sweep_summary.json     the spec, counts, failures and the per-group means
    report/report.html     comparison report (per-run plots for small sweeps, aggregate plot always)

A cell whose ``runs/<key>/summary.json`` exists, reads back and carries the current code's stamp
(:mod:`gpuweave.fingerprint`) is not run again; a run made by other gpuweave code is run again. A failed cell
leaves no ``summary.json`` (``run_simulation`` stages its files), so the next run retries it.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from gpuweave import __version__
from gpuweave.errors import InputError
from gpuweave.files import prepare_output_dir
from gpuweave.report.grains import report_runs
from gpuweave.report.html import METRIC_ORDER, render_sections_report
from gpuweave.report.plots import plot_sweep_aggregate
from gpuweave.report.section import DemoSection
from gpuweave.results import SUMMARY_NAME, is_current, read_summary
from gpuweave.sweep.executors import Executor, LocalExecutor, TaskFailed, describe_exception
from gpuweave.sweep.spec import GRAINS, Cell, SweepSpec, expand

#: sweeps with at most this many finished runs get the per-run plots in their report
REPORT_MAX_RUNS = 12
Runner = Callable[[Any, Path], Any]


@dataclass
class CellTask:
    """What a worker needs for one cell (picklable)."""

    index: int
    config: Any  # the grain's config model
    run_dir: str
    runner: Runner


def run_cell(task: CellTask) -> dict[str, Any]:
    """Run one cell in a worker. Never raises for a failing simulation: returns ``status`` and ``error``."""
    start = time.perf_counter()
    run_dir = Path(task.run_dir)
    try:
        task.runner(task.config, run_dir)
    except Exception as exc:
        (run_dir / "summary.json").unlink(missing_ok=True)
        import traceback

        return {
            "status": "failed",
            "error": describe_exception(exc),
            "traceback": traceback.format_exc(),
            "seconds": time.perf_counter() - start,
        }
    if not (run_dir / "summary.json").is_file():
        return {
            "status": "failed",
            "error": f"the run wrote no {run_dir / 'summary.json'}",
            "seconds": time.perf_counter() - start,
        }
    return {"status": "ok", "error": None, "seconds": time.perf_counter() - start}


def finished_metrics(run_dir: Path, *, current_code_only: bool = False) -> dict[str, Any] | None:
    """The metrics of a finished run directory, or None if it has no readable summary.json (or, with
    ``current_code_only``, if the run was made by other gpuweave code: its fingerprint stamp differs)."""
    try:
        summary = read_summary(run_dir / SUMMARY_NAME)
    except (InputError, OSError):
        return None
    if current_code_only and not is_current(summary):
        return None
    return summary["metrics"]


def _cell_value(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


def _json_clean(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _json_clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_clean(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):  # numpy scalars
        return _json_clean(obj.item())
    return obj


def _replace_atomically(path: Path, write: Callable[[Path], None]) -> None:
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class _Progress:
    """A rich progress bar on stderr (or nothing)."""

    def __init__(self, enabled: bool, total: int, done: int) -> None:
        self.failed = 0
        self._bar = None
        if enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
            )
            self._task = self._bar.add_task("sweep", total=total, completed=done)

    def __enter__(self):
        if self._bar is not None:
            self._bar.start()
        return self

    def advance(self, failed: bool) -> None:
        self.failed += failed
        if self._bar is not None:
            desc = f"sweep ([red]{self.failed} failed[/red])" if self.failed else "sweep"
            self._bar.update(self._task, advance=1, description=desc)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()


def _cached_metrics(cells: list, runs_dir: Path) -> dict[int, dict[str, Any]]:
    """Metrics of the cells whose run directory holds a finished run of the current code (resume)."""
    metrics: dict[int, dict[str, Any]] = {}
    for cell in cells:
        m = finished_metrics(runs_dir / cell.key, current_code_only=True)
        if m is not None:
            metrics[cell.index] = m
    return metrics


def _execute(
    todo: list, runs_dir: Path, runner: Runner, executor: Executor, progress: bool, n_cells: int, metrics: dict
) -> dict[int, dict[str, Any]]:
    """Run the cells of ``todo``; add the metrics of those that succeed to ``metrics``; outcome per cell index."""
    # absolute: Ray workers need not share this process's working directory (they do need its filesystem)
    tasks = [CellTask(c.index, c.config, str((runs_dir / c.key).absolute()), runner) for c in todo]
    outcomes: dict[int, dict[str, Any]] = {}

    with _Progress(progress, n_cells, n_cells - len(todo)) as bar:

        def on_done(i: int, result: Any) -> None:
            bar.advance(isinstance(result, TaskFailed) or result.get("status") != "ok")

        results = executor.map(run_cell, tasks, on_done) if tasks else []

    for cell, result in zip(todo, results):
        if isinstance(result, TaskFailed):
            (runs_dir / cell.key / "summary.json").unlink(missing_ok=True)
            result = {"status": "failed", "error": result.error, "traceback": result.traceback, "seconds": None}
        outcomes[cell.index] = result
        if result["status"] == "ok":
            m = finished_metrics(runs_dir / cell.key)
            if m is None:
                result.update(status="failed", error=f"unreadable {runs_dir / cell.key / 'summary.json'}")
            else:
                metrics[cell.index] = m
    return outcomes


def _results_frame(spec: SweepSpec, cells: list, metrics: dict, outcomes: dict, runs_dir: Path):
    """One row per cell: grid values, key, status, cached, metrics (report order), error, seconds, run_dir."""
    import pandas as pd

    rows = []
    for cell in cells:
        row: dict[str, Any] = {name: _cell_value(value) for name, value in cell.params.items()}
        outcome = outcomes.get(cell.index)
        row["key"] = cell.key
        row["status"] = "ok" if cell.index in metrics else "failed"
        row["cached"] = outcome is None
        row.update(metrics.get(cell.index, {}))
        row["error"] = outcome.get("error") if outcome else None
        row["seconds"] = outcome.get("seconds") if outcome else None
        row["run_dir"] = str(runs_dir / cell.key)
        rows.append(row)
    df = pd.DataFrame(rows)
    names = list(dict.fromkeys(k for m in metrics.values() for k in m))
    ordered = [m for m in METRIC_ORDER if m in names] + [m for m in names if m not in METRIC_ORDER]
    head = list(spec.grid)
    df = df[head + ["key", "status", "cached"] + ordered + ["error", "seconds", "run_dir"]]
    for col in df.columns:
        if col not in ("error", "run_dir", "key", "status") and df[col].dtype == object:
            converted = pd.to_numeric(df[col], errors="coerce")
            if converted.notna().sum() == df[col].notna().sum():
                df[col] = converted
    return df


def run_sweep(
    spec: SweepSpec,
    executor: Executor | None = None,
    progress: bool = True,
    *,
    runner: Runner | None = None,
    report: bool = True,
):
    """Run the sweep and return a pandas DataFrame with one row per cell.

    ``executor`` defaults to :class:`LocalExecutor` with all CPUs. ``runner(config, run_dir)`` defaults to
    the grain's runner (:data:`gpuweave.sweep.spec.GRAINS`; tests pass a fake; it must be a picklable top-level
    function). Writes ``sweep.csv``, ``sweep.parquet``, ``sweep_summary.json`` and, with ``report``, the
    comparison report into ``spec.out``.
    """
    started = time.perf_counter()
    cells = expand(spec)
    out = Path(spec.out)
    runs_dir = prepare_output_dir(out / "runs", field="out")
    executor = executor or LocalExecutor()
    grain = GRAINS[spec.grain]
    runner = runner or grain.runner

    metrics = _cached_metrics(cells, runs_dir)
    todo = [c for c in cells if c.index not in metrics]
    outcomes = _execute(todo, runs_dir, runner, executor, progress, len(cells), metrics)
    df = _results_frame(spec, cells, metrics, outcomes, runs_dir)
    _replace_atomically(out / "sweep.csv", lambda p: df.to_csv(p, index=False))
    _replace_atomically(out / "sweep.parquet", lambda p: df.to_parquet(p, index=False))
    failures = [
        {
            "index": c.index,
            "cell": c.describe(),
            "params": c.params,
            "key": c.key,
            "error": outcomes[c.index].get("error"),
            "traceback": outcomes[c.index].get("traceback", ""),
        }
        for c in cells
        if c.index not in metrics
    ]
    agg = aggregate(df, list(spec.grid), grain.aggregate_metrics)
    report_path = None
    if report and metrics:
        report_path = _write_report(spec, cells, metrics, df, agg, out)
    summary = {
        "gpuweave_version": __version__,
        "source": spec.source,
        "grain": spec.grain,
        "out": str(out),
        "base": spec.base,
        "grid": spec.grid,
        "executor": executor.name,
        "cells": len(cells),
        "executed": len(todo),
        "cached": len(cells) - len(todo),
        "ok": len(metrics),
        "failed": len(failures),
        "failures": failures,
        "wall_s": time.perf_counter() - started,
        "aggregate": agg.to_dict(orient="records") if agg is not None else [],
        "report": str(report_path) if report_path else None,
        "files": {"csv": str(out / "sweep.csv"), "parquet": str(out / "sweep.parquet")},
    }

    def write_summary(p: Path) -> None:
        p.write_text(json.dumps(_json_clean(summary), indent=2, sort_keys=True) + "\n")

    _replace_atomically(out / "sweep_summary.json", write_summary)
    df.attrs["summary"] = _json_clean(summary)
    return df


def aggregate(df, grid_fields: list[str], metric_names: Sequence[str]):
    """Mean (and seed count) of the key metrics per combination of grid fields other than ``seed``."""
    ok = df[df["status"] == "ok"]
    metrics = [m for m in metric_names if m in ok.columns]
    if ok.empty or not metrics:
        return None
    by = [f for f in grid_fields if f != "seed" and f in ok.columns]
    if by:
        grouped = ok.groupby(by, sort=False, dropna=False)
        agg = grouped[metrics].mean()
        agg.insert(0, "runs", grouped.size())
        return agg.reset_index()
    row = ok[metrics].mean().to_frame().T
    row.insert(0, "runs", len(ok))
    return row


def _x_field(df, grid_fields: list[str]) -> str | None:
    candidates = ["rate_per_hour"] + [f for f in grid_fields if f not in ("rate_per_hour", "seed")]
    for f in candidates:
        if f in grid_fields and f in df.columns and df[f].nunique() > 1:
            import pandas as pd

            if pd.api.types.is_numeric_dtype(df[f]):
                return f
    return None


def _write_report(spec: SweepSpec, cells: list[Cell], metrics: dict, df, agg, out: Path) -> Path:
    report_dir = out / "report"
    grid = list(spec.grid)
    ok = df[df["status"] == "ok"]
    x = _x_field(ok, grid)
    groups = [f for f in grid if f not in ("seed", x)]
    figures = []
    y = GRAINS[spec.grain].plot_metric
    if y in ok.columns:
        figures.append(
            plot_sweep_aggregate(ok, report_dir / f"sweep_{y.removesuffix('_s')}.png", x=x, y=y, groups=groups)
        )
    n_failed = len(cells) - len(metrics)
    text = (
        f"{len(cells)} cells from {spec.source}: grid "
        + ", ".join(f"{k} ({len(v)})" for k, v in spec.grid.items())
        + f". Means over seeds; {n_failed} failed cell(s) left out."
    )
    section = DemoSection(
        title="Sweep aggregate",
        table=agg.to_dict(orient="records") if agg is not None else [],
        figures=figures,
        text=text,
    )
    title = f"gpuweave sweep {spec.name}"
    run_dirs = [out / "runs" / c.key for c in cells if c.index in metrics]
    if len(run_dirs) <= REPORT_MAX_RUNS:
        return report_runs(run_dirs, report_dir, title=title, sections=[section])
    return render_sections_report([section], report_dir, title=title)
