"""What adaptive jobs did: each job's batch over time, statistical efficiency over time, and goodput beside
throughput per job type, from the runs' ``adaptation.csv`` (:mod:`gpuweave.cluster.adaptive_clock` writes it).

Under Pollux and Sia a job's speed is not its GPUs alone: its agent picks a batch for them, and a larger batch
raises throughput (samples per second) while lowering statistical efficiency (progress per sample; Qiao et al.,
OSDI'21 sec. 3.1). Goodput, their product, is what the policy maximises. These views show that trade: which
batches jobs ran at and when, how efficient the cluster's running jobs were over time, and per job type the
time-weighted GPUs, batch, throughput, efficiency and goodput. Intervals in a re-scale delay count only for their
running part. Complexity: O(rows of adaptation.csv) per run, plus matplotlib's drawing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from gpuweave.plotting import figure, legend_outside, save, series_style, style_axes, write_csv
from gpuweave.report.markup import html_table
from gpuweave.report.plots import (
    Stretches,
    _clip_note,
    _clip_sentence,
    _start,
    _suptitle,
    _time_label,
    _time_unit,
    activity_horizon,
    changed_jobs,
    job_bars,
)
from gpuweave.report.rundir import RunData
from gpuweave.report.section import Figure

#: the batch figure draws at most this many runs (one panel each)
BATCH_MAX_RUNS = 4
#: the efficiency figure's time buckets over the span drawn
EFFICIENCY_BUCKETS = 400


def adaptive_runs(runs: Sequence[RunData]) -> list[RunData]:
    """The runs with an adaptation table (adaptive jobs' records)."""
    return [run for run in runs if run.adaptation is not None and len(run.adaptation)]


def batch_stretches(run: RunData) -> Stretches:
    """``(job, start, end, batch)`` of every stretch a job ran at one global batch (consecutive intervals of the
    same batch merged; a gap, such as a wait in the queue, ends a stretch). O(rows)."""
    table = run.adaptation.sort_values(["job_id", "start"], kind="stable")
    out: Stretches = []
    current: list[Any] | None = None
    for job, start, end, batch in zip(table["job_id"], table["start"], table["end"], table["batch_size"]):
        start, end, batch = float(start), float(end), int(batch)
        if current is not None and current[0] == job and current[3] == batch and current[2] == start:
            current[2] = end
            continue
        if current is not None:
            out.append((current[0], current[1], current[2], current[3]))
        current = [job, start, end, batch]
    if current is not None:
        out.append((current[0], current[1], current[2], current[3]))
    return out


def plot_job_batches(runs: Sequence[RunData], path: Path) -> Figure:
    """Each job's global batch over time (one panel per adaptive run, at most :data:`BATCH_MAX_RUNS`)."""
    adaptive = adaptive_runs(runs)
    shown = [(run, batch_stretches(run)) for run in adaptive[:BATCH_MAX_RUNS]]
    png, csv = job_bars(shown, path, "batch_size", "Batch size of each job over time")
    summary = [f"{run.label}: {'{} of {}'.format(*changed_jobs(segs))} jobs changed batch" for run, segs in shown]
    caption = (
        "Each job's global batch (GPUs x per-GPU batch x accumulation steps) over time since the first arrival: one "
        "row per job in arrival order, a bar for every stretch at one batch, coloured by it on a log scale (gaps: "
        "waiting). An adaptive job's agent grows its batch as its gradient noise grows in later epochs, and re-picks "
        f"it whenever the policy resizes it. {'; '.join(summary)}."
    )
    if len(adaptive) > len(shown):
        caption += f" Drawn: the first {len(shown)} of {len(adaptive)} adaptive runs."
    plotted = [run for run, _ in shown]
    clip, end = activity_horizon(plotted)
    return Figure(png, caption + _clip_sentence(plotted, clip, end), csv)


def _covered(points: np.ndarray, edges: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``sum_r weights_r * max(0, edge - points_r)`` at every edge: by prefix sums over the sorted points, O((rows +
    edges) log rows)."""
    order = np.argsort(points, kind="stable")
    sorted_points, sorted_weights = points[order], weights[order]
    total_w = np.concatenate(([0.0], np.cumsum(sorted_weights)))
    total_wp = np.concatenate(([0.0], np.cumsum(sorted_weights * sorted_points)))
    k = np.searchsorted(sorted_points, edges, side="left")
    return edges * total_w[k] - total_wp[k]


def efficiency_series(run: RunData, t0: float, bucket: float) -> tuple[np.ndarray, np.ndarray]:
    """(bucket starts since ``t0``, mean statistical efficiency of the running jobs in each bucket, weighted by the
    seconds each ran in it; NaN where nothing ran). A row runs from its start plus its idle seconds to its end, and
    counts in every bucket it overlaps by the overlap (a live attempt spans many)."""
    table = run.adaptation
    begin = (table["start"] + table["idle_s"]).to_numpy(dtype=float) - t0
    end = np.maximum(table["end"].to_numpy(dtype=float) - t0, begin)
    efficiency = table["stat_efficiency"].to_numpy(dtype=float)
    size = max(1, int(np.ceil(end.max() / bucket))) if len(end) else 0
    edges = np.arange(size + 1) * bucket
    ones = np.ones_like(begin)
    seconds = np.diff(_covered(begin, edges, ones) - _covered(end, edges, ones))
    weighted = np.diff(_covered(begin, edges, efficiency) - _covered(end, edges, efficiency))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(seconds > 1e-9, weighted / np.where(seconds > 1e-9, seconds, 1.0), np.nan)
    return edges[:-1], mean


def plot_efficiency(runs: Sequence[RunData], path: Path) -> Figure:
    """The running jobs' mean statistical efficiency over time, one line per adaptive run."""
    adaptive = adaptive_runs(runs)
    t0 = _start(adaptive)
    clip, end = activity_horizon(adaptive)
    unit = _time_unit(clip)
    span = max(1.0, end - t0)
    bucket = span / EFFICIENCY_BUCKETS
    fig, axes = figure(1, 1)
    ax = axes[0, 0]
    rows: list[tuple[Any, ...]] = []
    means = []
    for i, run in enumerate(adaptive):
        xs, ys = efficiency_series(run, t0, bucket)
        ax.step(xs / unit.seconds, ys, where="post", label=run.label, **series_style(i))
        rows += [(run.label, x / unit.seconds, y) for x, y in zip(xs, ys) if y == y]
        running = (run.adaptation["end"] - run.adaptation["start"] - run.adaptation["idle_s"]).clip(lower=0)
        means.append((run.label, float((running * run.adaptation["stat_efficiency"]).sum() / max(running.sum(), 1e-9))))
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("statistical efficiency (1 = initial batch)", fontsize="small")
    ax.set_xlabel(_time_label("time since the first arrival", unit), fontsize="small")
    style_axes(ax)
    _clip_note(ax, clip, end, unit)
    legend_outside(ax, len(adaptive))
    _suptitle(fig, "Statistical efficiency of the running jobs over time", clip, end)
    csv = write_csv(path.with_suffix(".csv"), ("series", f"time_{unit.symbol}", "stat_efficiency"), rows)
    overall = "; ".join(f"{label} {mean:.3f}" for label, mean in means)
    caption = (
        "Mean statistical efficiency of the jobs running in each stretch of time (weighted by the seconds each ran "
        "in it; re-scale delays left out): the progress a sample makes at the job's batch relative to its initial "
        "batch. Low values mean large batches: throughput bought with efficiency, which goodput (their product) "
        f"weighs. Over the whole run (time-weighted): {overall}."
    )
    return Figure(save(fig, path), caption + _clip_sentence(adaptive, clip, end), csv)


def goodput_rows(runs: Sequence[RunData]) -> list[dict[str, Any]]:
    """Per run and job type, weighted by running seconds: mean GPUs, batch, throughput, efficiency, goodput."""
    out = []
    for run in adaptive_runs(runs):
        table = run.adaptation.copy()
        types = dict(zip(run.jobs["job_id"], run.jobs["job_type"])) if "job_type" in run.jobs.columns else {}
        table["job_type"] = [types.get(job, "?") for job in table["job_id"]]
        table["w"] = (table["end"] - table["start"] - table["idle_s"]).clip(lower=0)
        for job_type, group in table.groupby("job_type", sort=True):
            weight = float(group["w"].sum())
            if weight <= 0:
                continue

            def mean(column: str, g: Any = group, w: float = weight) -> float:
                return float((g[column] * g["w"]).sum() / w)

            out.append(
                {
                    "run": run.label,
                    "job type": job_type,
                    "jobs": int(group["job_id"].nunique()),
                    "running_s": weight,
                    "mean GPUs": round(mean("gpus"), 2),
                    "mean batch": round(mean("batch_size"), 1),
                    "throughput (samples/s)": round(mean("throughput"), 2),
                    "statistical efficiency": round(mean("stat_efficiency"), 3),
                    "goodput (samples/s)": round(mean("goodput"), 2),
                }
            )
    return out


def adaptation_section(runs: Sequence[RunData], out_dir: Path) -> tuple[list[str], list[Figure]]:
    """The report's section on adaptive jobs: the table's HTML and the two figures (nothing without such runs)."""
    if not adaptive_runs(runs):
        return [], []
    text = (
        "<p>Adaptive jobs pick their batch for the GPUs they are given. Per run and job type, weighted by the "
        "seconds each job ran: its GPUs, global batch, throughput, statistical efficiency and goodput "
        "(throughput x efficiency, in samples of the initial batch's worth per second).</p>"
    )
    figures = [plot_job_batches(runs, out_dir / "job_batches.png"), plot_efficiency(runs, out_dir / "efficiency.png")]
    return [text, html_table(goodput_rows(runs))], figures
