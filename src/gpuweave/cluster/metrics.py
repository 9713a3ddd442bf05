"""Run metrics computed from simulation records (no simulator state needed).

Definitions (issue #2 item 8):
- JCT = end - arrival; avg/p50/p99 over completed jobs (p by linear interpolation).
- makespan = last completion - first arrival; time_to_50pct = time from first arrival until half of all
  jobs have completed.
- queueing delay = first start - arrival (mean over started jobs).
- utilization = GPU-seconds held by jobs / (total GPUs x makespan).
- energy_kwh and cost: the whole cluster (busy and idle GPUs, times PUE) from first arrival to last
  completion.
- tardiness (jobs with a deadline): max(0, end - deadline); weighted by the job's priority weight, as
  ANDREAS' tardiness cost weighs it.
- useful work (issue #40 item 6): a job's useful GPU-seconds are the GPU-seconds its work done (``work -
  remaining``) takes at its consolidated rate (all its GPUs on one node) on the GPU model(s) it ran on (on several,
  the rates averaged by the GPU-seconds it held on each), times its GPUs. ``useful_gpu_hours`` sums them;
  ``useful_fraction`` = useful / ``gpu_hours`` (GPU-hours held, restart delays and lost progress included): a
  policy that spreads jobs over nodes keeps its GPUs busy running them slower, which raises utilisation and lowers
  the useful fraction.
  ``median_placement_slowdown``: over completed jobs of more than one GPU (a 1-GPU job is never spread, and in a
  Philly-like trace nine jobs in ten would hide the others at 1.0), (GPU-seconds held less the start and restart
  delays charged) / useful GPU-seconds, i.e. how much longer the job ran than it would have consolidated on the same
  model(s). NaN where the records carry no consolidated rates (or no such job completed).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from gpuweave.cluster.simulator import SimulationRecords

if TYPE_CHECKING:
    import numpy.typing as npt


def summarize(rec: SimulationRecords) -> dict[str, float | int]:
    done = [js for js in rec.jobs if js.end is not None]
    jct = np.array([js.end - js.job.arrival for js in done], dtype=float)  # type: ignore[operator,type-var]  # ended
    started = [js for js in rec.jobs if js.first_start is not None]
    waits = np.array([js.first_start - js.job.arrival for js in started], dtype=float)  # type: ignore[operator,type-var]  # started
    makespan = rec.end_time - rec.start_time
    ends = np.sort(np.array([js.end for js in done], dtype=float))
    half = math.ceil(len(rec.jobs) / 2)
    t50 = float(ends[half - 1] - rec.start_time) if len(ends) >= half and half > 0 else math.nan
    gpu_seconds = sum(js.attained_gpu_seconds for js in rec.jobs)
    util = gpu_seconds / (rec.total_gpus * makespan) if makespan > 0 else 0.0
    by_model: dict[str, float] = {}
    for m in rec.models:
        s = sum(js.gpu_seconds_by_model.get(m, 0.0) for js in rec.jobs)
        denom = rec.gpus_by_model[m] * makespan
        by_model[m] = s / denom if denom > 0 else 0.0

    def q(a: np.ndarray, p: float) -> float:
        return float(np.percentile(a, p)) if a.size else math.nan

    out: dict[str, float | int] = {
        "jobs": len(rec.jobs),
        "completed": len(done),
        "avg_jct_s": float(jct.mean()) if jct.size else math.nan,
        "p50_jct_s": q(jct, 50),
        "p99_jct_s": q(jct, 99),
        "makespan_s": float(makespan),
        "time_to_50pct_s": t50,
        "mean_queueing_delay_s": float(waits.mean()) if waits.size else math.nan,
        "utilization": float(util),
        "energy_kwh": rec.energy_j / 3.6e6,
        "cost": float(rec.cost),
        "restarts": int(sum(js.restarts for js in rec.jobs)),
        "gpu_hours": gpu_seconds / 3600.0,
        "events": rec.events,
        "decisions": rec.decisions,
    }
    late = [(max(0.0, js.end - js.job.deadline), js.job.priority) for js in done if js.job.deadline is not None]  # type: ignore[operator]  # ended
    out["jobs_with_deadline"] = len(late)
    out["deadline_misses"] = sum(1 for t, _ in late if t > 0)
    out["total_tardiness_s"] = float(sum(t for t, _ in late))
    out["weighted_tardiness_s"] = float(sum(t * w for t, w in late))
    for m, u in by_model.items():
        out[f"utilization_{m}"] = float(u)
    out.update(useful_work(rec))
    if rec.shares is not None:
        out.update(sharing_metrics(rec.shares.series, rec.total_gpus, rec.end_time))
        nodes = rec.shares.nodes
        if nodes.any_mig:  # instances made, destroyed to repartition, and the seconds tasks waited for them
            out["mig_instances_created"] = nodes.instances_created
            out["mig_instances_destroyed"] = nodes.instances_destroyed
            out["mig_reconfig_s"] = nodes.reconfig_seconds
    return out


def sharing_metrics(series: list[tuple[float, int, float, float]], total_gpus: int, end: float) -> dict[str, float]:
    """A shared run's time-weighted means over its records (time, used milli-GPUs, fragment, fragment ratio %),
    each row holding until the next (the last until ``end``): ``gpu_allocation`` (% of the GPUs held, counting
    shares), ``fragment_ratio`` (% of the idle share that the typical tasks could not use, FGD's measure) and the
    peak allocation. O(rows)."""
    if not series:
        return {}
    times = np.array([row[0] for row in series] + [max(end, series[-1][0])], dtype=float)
    spans = np.diff(times)
    used = np.array([row[1] for row in series], dtype=float) / (10.0 * total_gpus)
    ratio = np.array([row[3] for row in series], dtype=float)
    total = float(spans.sum())
    weights = spans / total if total > 0 else np.full(len(spans), 1.0 / len(spans))
    return {
        "mean_gpu_allocation_pct": float((used * weights).sum()),
        "peak_gpu_allocation_pct": float(used.max()),
        "mean_fragment_ratio_pct": float((ratio * weights).sum()),
    }


def useful_work(rec: SimulationRecords) -> dict[str, float]:
    """``useful_gpu_hours``, ``useful_fraction`` and ``median_placement_slowdown`` (module docstring). O(jobs x
    models each ran on), computed once from the records at the end of a run (the hot loop keeps nothing for it)."""
    rate = rec.consolidated_rate
    nan = {"useful_gpu_hours": math.nan, "useful_fraction": math.nan, "median_placement_slowdown": math.nan}
    if rate is None:
        return nan
    useful_total = held_total = 0.0
    slowdowns: list[float] = []
    for js in rec.jobs:
        held = js.attained_gpu_seconds
        if held <= 0.0:
            continue
        held_total += held
        job = js.job
        done = job.work - js.remaining
        # The consolidated rate, averaged over the models it ran on by the time it held each (exact for a job that
        # ran on one model; on several, exact when its placements slowed it alike on each).
        weighted = seconds_known = 0.0
        for model, seconds in js.gpu_seconds_by_model.items():
            r = rate(job, model)
            if r > 0.0 and seconds > 0.0:
                weighted += seconds * r
                seconds_known += seconds
        if weighted <= 0.0:
            continue  # no consolidated rate known on the models it ran on: its work is not counted as useful
        useful = done * seconds_known / weighted * job.num_gpus
        if rec.shares is not None:  # a task's work is worth the share of each GPU it asked for
            useful *= rec.shares.asked_share(job)
        useful_total += useful
        if js.end is not None and useful > 0.0 and job.num_gpus > 1:
            delays = rec.start_delay + js.restarts * rec.restart_delay
            slowdowns.append(max(held - delays * job.num_gpus, 0.0) / useful)
    return {
        "useful_gpu_hours": useful_total / 3600.0,
        "useful_fraction": useful_total / held_total if held_total > 0.0 else math.nan,
        "median_placement_slowdown": float(np.median(slowdowns)) if slowdowns else math.nan,
    }


#: a median placement slowdown above this is named beside utilisation (run summaries, the report's summary)
PLACEMENT_SLOWDOWN_NOTED = 1.2


def placement_note(metrics: Mapping[str, object]) -> str:
    """ "the median job of several GPUs ran 1.6x longer than with its GPUs on one node (placement); 40% of the
    GPU-hours held were useful work" when a run's ``median_placement_slowdown`` is above
    :data:`PLACEMENT_SLOWDOWN_NOTED`, else ""."""
    slowdown, useful = metrics.get("median_placement_slowdown"), metrics.get("useful_fraction")
    if not isinstance(slowdown, (int, float)) or not slowdown > PLACEMENT_SLOWDOWN_NOTED:
        return ""
    text = f"the median job of several GPUs ran {slowdown:.1f}x longer than with its GPUs on one node (placement)"
    if isinstance(useful, (int, float)) and math.isfinite(useful):
        text += f"; {useful:.0%} of the GPU-hours held were useful work"
    return text


def step_mean_per_interval(
    times: npt.ArrayLike, levels: npt.ArrayLike, edges: npt.ArrayLike
) -> npt.NDArray[np.float64]:
    """Mean of a right-continuous step function over each interval ``[edges[k], edges[k+1])``.

    ``times`` are sorted breakpoints and ``levels[i]`` the value from ``times[i]`` to the next breakpoint (0
    before the first and after the last). Used for GPU utilisation per scheduling round. O(n + m)."""
    import numpy as np

    t = np.asarray(times, dtype=float)
    level = np.asarray(levels, dtype=float)
    edges = np.asarray(edges, dtype=float)
    if t.size == 0:
        return np.zeros(max(0, edges.size - 1))
    integral = np.concatenate([[0.0], np.cumsum(level[:-1] * np.diff(t))])
    at_edges = np.interp(edges, t, integral, left=0.0, right=integral[-1])
    length = np.diff(edges)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(length > 0, np.diff(at_edges) / length, 0.0)
