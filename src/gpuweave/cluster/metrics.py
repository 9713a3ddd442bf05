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
"""

from __future__ import annotations

import math
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
    return out


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
