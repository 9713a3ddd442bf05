"""Hadar's evaluation metrics (spec hadar.md §5.6) computed from simulation records.

* GRU per round ``t``: GPU-seconds held by jobs in round t (the 10 s restart included, or excluded in the
  ``include_restart=False`` variant) / (G x L), rounds from 0 to the TTD (the last one partial);
  :func:`gru_cdf` weights rounds by their length (Fig. 3).
* TTD (makespan) and time to 50% of jobs; the completed-jobs curve (Fig. 4); JCT = end - arrival.
* GRU over the rounds with a backlog (:func:`backlog_rounds`): a reported variant window, ours.
* Allocation churn: fraction of rounds in which some running job's allocation changed (stopped or moved
  while unfinished); the paper says ~30% of rounds (spec B5).
* Scheduling time per round: from the policy's ``decision_times``.

Complexity: O(S log S) for S segments (a step function integrated at round edges).
"""

from __future__ import annotations

import math

import numpy as np

from gpuweave.cluster.metrics import step_mean_per_interval


def gru_per_round(rec, round_length: float, include_restart: bool = True) -> np.ndarray:
    ttd = rec.end_time
    n = max(1, math.ceil(ttd / round_length - 1e-9))
    edges = np.minimum(np.arange(n + 1) * round_length, ttd)
    times, deltas = [], []
    for seg in rec.segments:
        g = sum(k for _, k in seg.placement)
        start = seg.start + (0.0 if include_restart else seg.delay)
        if seg.end > start:
            times += [start, seg.end]
            deltas += [g, -g]
    if not times:
        return np.zeros(n)
    order = np.argsort(times, kind="stable")
    level = np.cumsum(np.asarray(deltas, dtype=float)[order])
    return step_mean_per_interval(np.asarray(times)[order], level, edges) / rec.total_gpus


def round_weights(rec, round_length: float) -> np.ndarray:
    ttd = rec.end_time
    n = max(1, math.ceil(ttd / round_length - 1e-9))
    edges = np.minimum(np.arange(n + 1) * round_length, ttd)
    return np.diff(edges)


def backlog_rounds(rec, round_length: float) -> np.ndarray:
    """Per round (same grid as :func:`gru_per_round`): True if at its start some arrived, unfinished job is not
    running. A variant window for GRU (ours, reported beside the spec's): the spec's rounds run to each
    policy's own TTD, so a policy that leaves one long job running alone for days has a low median GRU
    however busy it kept the cluster while jobs were waiting."""
    ttd = rec.end_time
    n = max(1, math.ceil(ttd / round_length - 1e-9))
    t = np.arange(n) * round_length + 1e-6
    arrivals = np.sort([js.job.arrival for js in rec.jobs])
    ends = np.sort([js.end if js.end is not None else math.inf for js in rec.jobs])
    starts = np.sort([seg.start for seg in rec.segments])
    stops = np.sort([seg.end for seg in rec.segments])
    unfinished = np.searchsorted(arrivals, t, side="right") - np.searchsorted(ends, t, side="right")
    running = np.searchsorted(starts, t, side="right") - np.searchsorted(stops, t, side="right")
    return unfinished > running


def gru_cdf(gru: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted GRU values, cumulative fraction of time) for a CDF plot."""
    order = np.argsort(gru, kind="stable")
    w = np.asarray(weights, dtype=float)[order]
    return np.asarray(gru)[order], np.cumsum(w) / w.sum()


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    x, c = gru_cdf(values, weights)
    return float(x[np.searchsorted(c, 0.5)])


def completion_curve(rec) -> tuple[np.ndarray, np.ndarray]:
    ends = np.sort([js.end for js in rec.jobs if js.end is not None])
    return ends, np.arange(1, ends.size + 1) / len(rec.jobs)


def ttd(rec) -> float:
    return float(rec.end_time - rec.start_time)


def time_to_fraction(rec, fraction: float = 0.5) -> float:
    ends = np.sort([js.end for js in rec.jobs if js.end is not None])
    k = math.ceil(fraction * len(rec.jobs))
    return float(ends[k - 1] - rec.start_time) if 0 < k <= ends.size else math.nan


def mean_jct(rec) -> float:
    return float(np.mean([js.end - js.job.arrival for js in rec.jobs if js.end is not None]))


def churn(rec, round_length: float) -> float:
    """Fraction of rounds with a change of a running job's allocation (not counting completions)."""
    ends = {js.job.job_id: js.end for js in rec.jobs}
    changed = set()
    for seg in rec.segments:
        if ends.get(seg.job_id) is not None and seg.end < ends[seg.job_id] - 1e-9:
            changed.add(int(round(seg.end / round_length)))
    n = max(1, math.ceil((rec.end_time - rec.start_time) / round_length - 1e-9))
    return len(changed) / n
