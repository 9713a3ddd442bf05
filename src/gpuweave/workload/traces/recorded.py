"""What the source's own scheduler did: the recorded schedule of a converted trace that kept each job's ``start`` and
``end`` (Slurm histories, Helios logs), in the terms of a simulated run's summary, so a replay can be set beside it.

Definitions as in :func:`gpuweave.cluster.metrics.summarize`: JCT = end - arrival, wait = start - arrival, both over
the jobs with an end (finished), percentiles by numpy's linear interpolation; makespan = the last end - the first
arrival of the trace. Jobs without an end (still running when the history was taken) are counted, not measured.
O(jobs), vectorised.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


def recorded_schedule(frame: "pd.DataFrame") -> dict | None:
    """The recorded schedule's metrics, or None when the trace has no ``start`` and ``end`` (or no job ended)."""
    import numpy as np
    import pandas as pd

    if "start" not in frame.columns or "end" not in frame.columns:
        return None
    end = pd.to_numeric(frame["end"], errors="coerce").to_numpy(dtype="float64")
    start = pd.to_numeric(frame["start"], errors="coerce").to_numpy(dtype="float64")
    arrival = frame["arrival"].to_numpy(dtype="float64")
    finished = ~np.isnan(end)
    if not finished.any():
        return None
    jct = end[finished] - arrival[finished]
    waits = start[finished] - arrival[finished]
    waits = waits[~np.isnan(waits)]
    return {
        "finished": int(finished.sum()),
        "unfinished": int((~finished).sum()),
        "avg_jct_s": float(jct.mean()),
        "p50_jct_s": float(np.percentile(jct, 50)),
        "p99_jct_s": float(np.percentile(jct, 99)),
        "makespan_s": float(end[finished].max() - arrival.min()),
        "mean_queueing_delay_s": float(waits.mean()) if waits.size else None,
    }
