"""The 480-job workload of Hadar's trace-driven evaluation (spec hadar.md §5.2), from the Philly job list.

Problem (paper §VI-A): "we randomly selected 480 jobs from the busiest hour range (hours 3-10) of the
Microsoft trace", categorised by total GPU time (Small 0-1, Medium 1-10, Large 10-50, XLarge 60-100
GPU-hours), with a model per category from Table II, all jobs available at t = 0.

Construction (spec §5.2 steps 1-9, [R] resolutions):

1. Window: the busiest 7-hour window of submissions on the hour grid counted from the first submission.
   The paper's "hours 3-10 from trace start" is empty in the flattened Philly list we have (it starts at
   2017-09-04 10:30, the raw trace earlier; spec A9), so we take the window with the most submissions.
2. GPU-hours = original ``W_j`` x duration; categories S (0, 1], M (1, 10], L (10, 50], XL [60, 100];
   jobs in (50, 60) or above 100 GPU-hours are dropped; jobs with W > 8 are dropped; every other W is
   rounded up to a power of two (1, 2, 4, 8).
3. Sample ``n`` jobs uniformly without replacement with ``numpy.random.default_rng(seed)``.
4. Model by category: S ResNet-18; M CycleGAN (forced to 1 GPU: Gavel's CycleGAN is single-GPU); L LM or
   Transformer, uniformly; XL ResNet-50. Batch size uniform over Gavel's list for the model.
5. Work = duration x T(model, W, V100, consolidated) (Gavel's V100-reference convention); arrival 0.

Steps 1-2 were applied once to the Philly list and the eligible jobs are bundled as
``data/philly_window_pool.csv`` (source and rule in its header; :func:`derive_pool` re-derives it and a
test checks they agree when the raw list is present); step 3 onward runs at run time, per seed.
:func:`read_philly_job_log` converts Philly's raw ``cluster_job_log`` JSON for users who have it, and
:func:`fallback_jobs` is the spec's Gavel-distribution generator when no trace is given.

Complexity: O(P) for a pool of P jobs.
"""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path

import numpy as np

from gpuweave.errors import InputError
from gpuweave.workload.job import Job

POOL_FILE = "philly_window_pool.csv"
WINDOW_HOURS = 7
CATEGORIES = {"S": (0.0, 1.0), "M": (1.0, 10.0), "L": (10.0, 50.0), "XL": (60.0, 100.0)}
MODELS = {"S": ("ResNet-18",), "M": ("CycleGAN",), "L": ("LM", "Transformer"), "XL": ("ResNet-50",)}
BATCH_SIZES = {
    "ResNet-18": (16, 32, 64, 128, 256),
    "ResNet-50": (16, 32, 64, 128),
    "Transformer": (16, 32, 64, 128, 256),
    "LM": (5, 10, 20, 40, 80),
    "CycleGAN": (None,),
}


def category(gpu_hours: float) -> str | None:
    if 0.0 < gpu_hours <= 1.0:
        return "S"
    if 1.0 < gpu_hours <= 10.0:
        return "M"
    if 10.0 < gpu_hours <= 50.0:
        return "L"
    if 60.0 <= gpu_hours <= 100.0:
        return "XL"
    return None


def pow2_up(w: int) -> int:
    return 1 << max(0, math.ceil(math.log2(w)))


def job_type_name(model: str, batch: int | None) -> str:
    return model if batch is None else f"{model} (batch size {batch})"


def derive_pool(timestamps, durations, num_gpus, hours: int = WINDOW_HOURS):
    """Steps 1-2 on arrays of a job list: returns a dict of numpy arrays (row, offset_s, duration_s, W, gpu_hours, category)."""
    import pandas as pd

    ts = pd.to_datetime(pd.Series(list(timestamps)), format="%Y-%m-%d %H:%M:%S")
    dur = np.asarray(durations, dtype=float)
    W = np.asarray(num_gpus, dtype=int)
    t0 = ts.min()
    hour = np.floor((ts - t0).dt.total_seconds().to_numpy() / 3600.0).astype(int)
    counts = np.bincount(hour)
    window = np.convolve(counts, np.ones(hours, dtype=int), mode="valid")
    start = int(np.argmax(window))
    gh = dur * W / 3600.0
    cats = np.array([category(g) or "" for g in gh])
    keep = (hour >= start) & (hour < start + hours) & (W <= 8) & (cats != "")
    rows = np.flatnonzero(keep)
    offset = (ts.iloc[rows] - (t0 + pd.Timedelta(hours=start))).dt.total_seconds().to_numpy()
    return {
        "row": rows + 1,
        "offset_s": offset,
        "duration_s": dur[rows],
        "num_gpus": W[rows],
        "gpu_hours": gh[rows],
        "category": cats[rows],
        "window_start": str(t0 + pd.Timedelta(hours=start)),
    }


def load_pool(path: str | Path | None = None) -> dict:
    """The bundled pool (or a CSV with the same columns)."""
    import pandas as pd

    if path is None:
        text = resources.files("gpuweave.hadar").joinpath("data", POOL_FILE).read_text()
        source = POOL_FILE
    else:
        p = Path(path)
        if not p.exists():
            raise InputError("file not found", file=p)
        text = p.read_text()
        source = str(p)
    import io

    frame = pd.read_csv(io.StringIO(text), comment="#")
    for col in ("row", "duration_s", "num_gpus", "category"):
        if col not in frame.columns:
            raise InputError(f"missing column '{col}'", file=source, field=col)
    return {c: frame[c].to_numpy() for c in frame.columns}


def build_jobs(pool: dict, n: int, seed: int, profiles, reference_gpu: str = "V100") -> list[Job]:
    """Steps 3-5: sample ``n`` jobs from a pool and give each a model, batch size, W and work."""
    size = len(pool["row"])
    if n > size:
        raise InputError(f"cannot sample {n} jobs from a pool of {size}", field="jobs")
    rng = np.random.default_rng(seed)
    picks = np.sort(rng.choice(size, size=n, replace=False))
    jobs = []
    for k, p in enumerate(picks):
        cat = str(pool["category"][p])
        models = MODELS[cat]
        model = models[int(rng.integers(len(models)))]
        sizes = BATCH_SIZES[model]
        batch = sizes[int(rng.integers(len(sizes)))]
        W = 1 if model == "CycleGAN" else pow2_up(int(pool["num_gpus"][p]))
        jt = job_type_name(model, batch)
        rate = float(profiles.rate(jt, reference_gpu, W, True))
        if rate <= 0:
            raise InputError(f"job type {jt!r} has no throughput on {W} x {reference_gpu}", field="job_type")
        duration = float(pool["duration_s"][p])
        jobs.append(
            Job(
                job_id=f"hadar-{k:03d}",
                arrival=0.0,
                num_gpus=W,
                work=duration * rate,
                job_type=jt,
                duration=duration,
                attrs={"category": cat, "philly_row": int(pool["row"][p])},
            )
        )
    return jobs


def hadar_workload(seed: int = 0, n: int = 480, profiles=None, pool_path: str | Path | None = None) -> list[Job]:
    """The 480-job workload for one seed (bundled pool unless ``pool_path``)."""
    if profiles is None:
        from gpuweave.workload.profiles import load_profiles

        profiles = load_profiles()
    return build_jobs(load_pool(pool_path), n, seed, profiles)


def fallback_jobs(n: int, seed: int, profiles) -> list[Job]:
    """Spec §5.2 fallback: Gavel's Philly-like scale factors and durations, category-filtered until n jobs."""
    rng = np.random.default_rng(seed)
    rows, durs, ws, cats = [], [], [], []
    while len(rows) < n:
        W = int(rng.choice([1, 2, 4, 8], p=[0.7, 0.1, 0.15, 0.05]))
        if rng.random() < 0.8:
            d = 60.0 * 10 ** rng.uniform(1.5, 3.0)
        else:
            d = 60.0 * 10 ** rng.uniform(3.0, 4.0)
        cat = category(d * W / 3600.0)
        if cat is None:
            continue
        rows.append(len(rows) + 1)
        durs.append(d)
        ws.append(W)
        cats.append(cat)
    pool = {"row": np.array(rows), "duration_s": np.array(durs), "num_gpus": np.array(ws), "category": np.array(cats)}
    return build_jobs(pool, n, seed, profiles)


def read_philly_job_log(path: str | Path, *, skip_malformed: bool = False) -> tuple[dict, int]:
    """Convert Philly's raw ``cluster_job_log`` (JSON list of jobs with ``attempts``) to columns
    ``timestamp, duration, num_gpus``. Each job needs ``submitted_time`` and at least one attempt with
    ``start_time``, ``end_time`` (``YYYY-MM-DD HH:MM:SS``) and ``detail`` (a list of ``{"gpus": [...]}``);
    duration = last end - first start, W = GPUs of the first attempt. A malformed job raises one
    :class:`InputError` naming the job, or with ``skip_malformed`` is dropped and counted (second value)."""
    from datetime import datetime

    p = Path(path)
    if not p.exists():
        raise InputError("file not found", file=p)
    try:
        data = json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} at line {exc.lineno}", file=p) from None
    if not isinstance(data, list):
        raise InputError("expected a JSON list of jobs (Philly cluster_job_log)", file=p)
    fmt = "%Y-%m-%d %H:%M:%S"
    out = {"timestamp": [], "duration": [], "num_gpus": []}
    skipped = 0
    for k, job in enumerate(data, start=1):
        try:
            if not isinstance(job, dict):
                raise ValueError("job", "expected an object")
            sub = job.get("submitted_time")
            attempts = job.get("attempts")
            if not isinstance(sub, str):
                raise ValueError("submitted_time", "missing")
            datetime.strptime(sub, fmt)
            if not isinstance(attempts, list) or not attempts:
                raise ValueError("attempts", "expected a non-empty list")
            starts, ends = [], []
            for a in attempts:
                if not isinstance(a, dict) or not isinstance(a.get("start_time"), str) or not isinstance(a.get("end_time"), str):
                    raise ValueError("attempts", "an attempt lacks start_time/end_time")
                s = datetime.strptime(a["start_time"], fmt)
                e = datetime.strptime(a["end_time"], fmt)
                if e < s:
                    raise ValueError("attempts", "an attempt ends before it starts")
                starts.append(s)
                ends.append(e)
            detail = attempts[0].get("detail")
            if not isinstance(detail, list) or not detail:
                raise ValueError("attempts", "the first attempt has no 'detail' list of machines")
            gpus = sum(len(d.get("gpus", [])) for d in detail if isinstance(d, dict))
            if gpus < 1:
                raise ValueError("attempts", "the first attempt holds no GPUs")
        except ValueError as exc:
            if len(exc.args) == 2:
                fld, msg = exc.args
            else:
                fld, msg = "attempts", f"bad time ({exc})"
            if skip_malformed:
                skipped += 1
                continue
            jid = job.get("jobid", "?") if isinstance(job, dict) else "?"
            raise InputError(f"job {jid}: {msg}", file=p, row=k, field=fld) from None
        out["timestamp"].append(sub)
        out["duration"].append((max(ends) - min(starts)).total_seconds())
        out["num_gpus"].append(gpus)
    return out, skipped
