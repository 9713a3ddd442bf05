"""The 480-job workload of Hadar's trace-driven evaluation (spec hadar.md §5.2), from the Philly job list.

Problem (paper §VI-A): "we randomly selected 480 jobs from the busiest hour range (hours 3-10) of the
Microsoft trace", categorised by total GPU time (Small 0-1, Medium 1-10, Large 10-50, XLarge 60-100
GPU-hours), with a model per category from Table II, all jobs available at t = 0.

Construction (spec §5.2 steps 1-9, [R] resolutions):

1. Window (``window=``, spec §5.2 step 1 and A9), on the submission timestamps of the list (their time zone
   is not documented; all three rules take them as given):

   * ``"busiest"`` (default): the busiest 7-hour window of submissions, 7 consecutive hours on the grid
     counted from the first submission, most submissions (earliest on ties). In our list it starts
     2017-10-04 20:30:41 and is one hyperparameter-sweep burst (2,147 of its 2,155 eligible jobs are 1-GPU,
     no XL job, 88% from one virtual cluster).
   * ``"daily-03-10"``: every job submitted between 03:00:00 and 10:00:00 clock time (hour 3 up to, not
     including, 10:00) on any day of the list: the paper's "hours 3-10" read as clock hours. 29,589 eligible
     jobs on 85 days, a far more varied mix (5% multi-GPU, 186 XL jobs).
   * ``"busiest-diverse"``: the same hour grid and width, but a window's load is counted without its single
     most active virtual cluster (``cluster`` column: Philly VCs are teams; the list has no user column), so
     one team's burst cannot make a window "busiest" by itself; the pool is every eligible job of that
     window (the top VC's jobs included). No threshold or parameter: argmax over windows of
     (submissions - submissions of the window's top VC). In our list: 2017-10-26 06:30:41, 1,008 eligible
     jobs, still mostly small (96% S, 3% multi-GPU, one XL job).

   Why ``"busiest"`` is the default: it is the spec's resolution (§5.2 step 1 "Take Philly jobs ... submitted
   in the busiest 7- or 8-hour window. Hours 3-10 are counted from trace start"; §7 A9 points there). The
   hours 3-10 from trace start are empty in the flattened Philly list we have (it starts at 2017-09-04
   10:30:41, the raw trace earlier), which leaves the busiest window. Daily clock hours are not the spec's
   reading, and "busiest-diverse" is our own rule, so both stay options; the default was chosen by the
   spec's text, not by which window's results come closer to the paper's ratios.
2. GPU-hours = original ``W_j`` x duration; categories S (0, 1], M (1, 10], L (10, 50], XL [60, 100];
   jobs in (50, 60) or above 100 GPU-hours are dropped; jobs with W > 8 are dropped; every other W is
   rounded up to a power of two (1, 2, 4, 8).
3. Sample ``n`` jobs uniformly without replacement with ``numpy.random.default_rng(seed)``.
4. Model by category: S ResNet-18; M CycleGAN (forced to 1 GPU: Gavel's CycleGAN is single-GPU); L LM or
   Transformer, uniformly; XL ResNet-50. Batch size uniform over Gavel's list for the model.
5. Work = duration x T(model, W, V100, consolidated) (Gavel's V100-reference convention); arrival 0.

Steps 1-2 were applied once to the Philly list per window rule and the eligible jobs are bundled as
``data/philly_window_pool.csv`` (busiest), ``data/philly_daily_03_10_pool.csv`` and
``data/philly_busiest_diverse_pool.csv`` (source and rule in each header; :func:`derive_pool` re-derives
them, ``python -m gpuweave.hadar.trace PHILLY_CSV`` rewrites them, and a test checks they agree when the
raw list is present); step 3 onward runs at run time, per seed.
:func:`read_philly_job_log` converts Philly's raw ``cluster_job_log`` JSON for users who have it, and
:func:`fallback_jobs` is the spec's Gavel-distribution generator when no trace is given.

Complexity: O(P) for a pool of P jobs.
"""

from __future__ import annotations

import math
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from gpuweave.checks import DURATION, GPUS, POSITIVE_COUNT, check_array
from gpuweave.errors import InputError
from gpuweave.files import check_unique_columns, first_csv_row, load_json, read_input_text
from gpuweave.workload.job import Job
from gpuweave.workload.profiles import load_profiles

POOL_FILE = "philly_window_pool.csv"
WINDOW_HOURS = 7
DEFAULT_WINDOW = "busiest"
POOL_FILES = {
    "busiest": POOL_FILE,
    "daily-03-10": "philly_daily_03_10_pool.csv",
    "busiest-diverse": "philly_busiest_diverse_pool.csv",
}
WINDOW_RULES = {
    "busiest": "the 7 consecutive hours (hour grid from the first submission) with the most submissions",
    "daily-03-10": "every job submitted at clock time 03:00:00 <= t < 10:00:00, on any day of the list",
    "busiest-diverse": (
        "the 7 consecutive hours (hour grid from the first submission) with the most submissions "
        "not counting the window's single most active virtual cluster; all its eligible jobs"
    ),
}
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


def check_window(window: str) -> str:
    if window not in POOL_FILES:
        raise InputError(f"unknown window '{window}' (known: {', '.join(POOL_FILES)})", field="window")
    return window


def derive_pool(
    timestamps, durations, num_gpus, hours: int = WINDOW_HOURS, *, window: str = DEFAULT_WINDOW, clusters=None
):
    """Steps 1-2 on arrays of a job list under one window rule (module docstring): a dict of numpy arrays
    (row, duration_s, num_gpus, gpu_hours, category) and ``window_start`` (a description for the daily rule).
    ``clusters`` (the Philly virtual cluster of each job) is needed by ``"busiest-diverse"``."""
    import pandas as pd

    check_window(window)
    ts = pd.to_datetime(pd.Series(list(timestamps)), format="%Y-%m-%d %H:%M:%S")
    dur = np.asarray(durations, dtype=float)
    W = np.asarray(num_gpus, dtype=int)
    t0 = ts.min()
    hour = np.floor((ts - t0).dt.total_seconds().to_numpy() / 3600.0).astype(int)
    if window == "daily-03-10":
        clock = ts.dt.hour.to_numpy()
        inside = (clock >= 3) & (clock < 10)
        start_desc = "03:00-10:00 clock time, every day"
    else:
        if window == "busiest":
            counts = np.bincount(hour)
            load = np.convolve(counts, np.ones(hours, dtype=int), mode="valid")
        else:
            if clusters is None:
                raise InputError("window 'busiest-diverse' needs the virtual-cluster column", field="cluster")
            _, vc = np.unique(np.asarray(list(clusters), dtype=str), return_inverse=True)
            per = np.zeros((hour.max() + 1, vc.max() + 1), dtype=int)
            np.add.at(per, (hour, vc), 1)
            csum = np.vstack([np.zeros((1, per.shape[1]), dtype=int), np.cumsum(per, axis=0)])
            win = csum[hours:] - csum[:-hours]
            load = win.sum(axis=1) - win.max(axis=1)
        start = int(np.argmax(load))
        inside = (hour >= start) & (hour < start + hours)
        start_desc = str(t0 + pd.Timedelta(hours=start))
    gh = dur * W / 3600.0
    cats = np.array([category(g) or "" for g in gh])
    keep = inside & (W <= 8) & (cats != "")
    rows = np.flatnonzero(keep)
    return {
        "row": rows + 1,
        "duration_s": dur[rows],
        "num_gpus": W[rows],
        "gpu_hours": gh[rows],
        "category": cats[rows],
        "window_start": start_desc,
    }


SOURCE_NOTE = (
    "# Source: github.com/petuum/adaptdl, branch osdi21-artifact, commit c793c7089bd307462686339d29707925c461f9a9,\n"
    "# simulator/traces/philly.csv (derived from Microsoft Philly, Jeon et al. ATC'19, "
    "msr-fiddle/philly-traces, CC BY 4.0).\n"
)


def write_pool(pool: dict, path: str | Path, window: str) -> None:
    """Write a derived pool as CSV (row, duration_s, num_gpus, category) with its source and rule in the header."""
    lines = [
        f"# Eligible jobs of the flattened Philly job list under window rule '{window}' ({pool['window_start']}):",
        f"# {WINDOW_RULES[window]}.",
        SOURCE_NOTE.rstrip("\n"),
        "# Rule (gpuweave.hadar.trace.derive_pool; spec hadar.md §5.2 steps 1-2, §7 A9): "
        "W <= 8; GPU-hours = W x duration / 3600",
        "# in S (0,1], M (1,10], L (10,50], XL [60,100]. Rewrite with: python -m gpuweave.hadar.trace PHILLY_CSV",
        f"# row = 1-based data row in the source file; W is the trace's original count; {len(pool['row'])} jobs.",
        "row,duration_s,num_gpus,category",
    ]
    for r, d, w, c in zip(pool["row"], pool["duration_s"], pool["num_gpus"], pool["category"]):
        lines.append(f"{int(r)},{int(d) if float(d).is_integer() else float(d)},{int(w)},{c}")
    Path(path).write_text("\n".join(lines) + "\n")


def load_pool(path: str | Path | None = None, window: str = DEFAULT_WINDOW) -> dict:
    """The bundled pool of a window rule (or a CSV with the same columns when ``path`` is given)."""
    import pandas as pd

    if path is None:
        source = POOL_FILES[check_window(window)]
        text = resources.files("gpuweave.hadar").joinpath("data", source).read_text()
    else:
        p = Path(path)
        text = read_input_text(p, what="pool file")
        source = str(p)
    import io

    check_unique_columns(first_csv_row(text, file=source), file=source)
    try:
        frame = pd.read_csv(io.StringIO(text), comment="#")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise InputError(f"not a readable CSV table: {' '.join(str(exc).split())[:200]}", file=source) from None
    for col in ("row", "duration_s", "num_gpus", "category"):
        if col not in frame.columns:
            raise InputError(f"missing column '{col}'", file=source, field=col)
    for col, rng in (("row", POSITIVE_COUNT), ("duration_s", DURATION), ("num_gpus", GPUS)):
        column = frame[col]
        if column.dtype == object:
            # read_csv keeps an integer wider than 64 bits as a Python int in an object column, which to_numeric
            # cannot convert (OverflowError); as text it parses to inf, which the range check refuses by row.
            column = column.astype(str)
        values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
        check_array(values, rng, file=source, rows=list(range(1, len(values) + 1)), field=col, raw=frame[col].tolist())
        if np.isnan(values).any():
            row = int(np.flatnonzero(np.isnan(values))[0])
            raise InputError(
                f"expected {rng.describe()}, got {frame[col].iloc[row]!r}", file=source, row=row + 1, field=col
            )
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


REFERENCE_GPUS = ("V100", "P100", "K80")


def check_reference_gpu(name: str) -> str:
    if name not in REFERENCE_GPUS:
        raise InputError(f"unknown reference GPU '{name}' (known: {', '.join(REFERENCE_GPUS)})", field="reference_gpu")
    return name


def hadar_workload(
    seed: int = 0,
    n: int = 480,
    profiles=None,
    pool_path: str | Path | None = None,
    window: str = DEFAULT_WINDOW,
    reference_gpu: str = "V100",
) -> list[Job]:
    """The 480-job workload for one seed (the bundled pool of ``window`` unless ``pool_path``).

    ``reference_gpu``: the GPU on which a Philly duration is taken to have run, so work = duration x rate there.
    V100 is the spec's (§5.2 step 9, Gavel's convention); P100 is closer to Philly's own hardware (12 GB / 24 GB
    Pascal GPUs), a sensitivity: work scales by each job type's P100/V100 speed ratio (below 1 for most
    types; Gavel measured ResNet-18 at small batches faster on P100)."""
    check_reference_gpu(reference_gpu)
    if profiles is None:
        profiles = load_profiles()
    return build_jobs(load_pool(pool_path, window), n, seed, profiles, reference_gpu=reference_gpu)


def fallback_jobs(n: int, seed: int, profiles) -> list[Job]:
    """Spec §5.2 fallback: Gavel's Philly-like scale factors and durations, category-filtered until n jobs."""
    rng = np.random.default_rng(seed)
    rows: list[Any] = []
    durs: list[float] = []
    ws: list[Any] = []
    cats: list[Any] = []
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
    p = Path(path)
    data = load_json(p, what="Philly job log")
    if not isinstance(data, list):
        raise InputError("expected a JSON list of jobs (Philly cluster_job_log)", file=p)
    fmt = "%Y-%m-%d %H:%M:%S"
    out: dict[str, list[Any]] = {"timestamp": [], "duration": [], "num_gpus": []}
    skipped = 0
    for k, job in enumerate(data, start=1):
        try:
            sub, duration, gpus = _philly_job(job, fmt)
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
        out["duration"].append(duration)
        out["num_gpus"].append(gpus)
    return out, skipped


def _philly_job(job: object, fmt: str) -> tuple[str, float, int]:
    """One cluster_job_log entry as (submitted_time, last end - first start in s, GPUs of the first attempt).

    Raises ``ValueError(field, message)`` for a malformed job (or strptime's ValueError for a bad time).
    """
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
        if (
            not isinstance(a, dict)
            or not isinstance(a.get("start_time"), str)
            or not isinstance(a.get("end_time"), str)
        ):
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
    gpus = sum(len(d["gpus"]) for d in detail if isinstance(d, dict) and isinstance(d.get("gpus"), list))
    if gpus < 1:
        raise ValueError("attempts", "the first attempt holds no GPUs")
    return sub, (max(ends) - min(starts)).total_seconds(), gpus


def main(argv: list[str] | None = None) -> None:
    """``python -m gpuweave.hadar.trace PHILLY_CSV [OUT_DIR]``: rewrite the bundled pools of every window rule."""
    import sys

    import pandas as pd

    args = sys.argv[1:] if argv is None else argv
    if not args:
        raise SystemExit("usage: python -m gpuweave.hadar.trace PHILLY_CSV [OUT_DIR]")
    out = Path(args[1]) if len(args) > 1 else Path(__file__).parent / "data"
    d = pd.read_csv(args[0])
    for window, name in POOL_FILES.items():
        pool = derive_pool(d.timestamp, d.duration, d.num_gpus, window=window, clusters=d.cluster)
        write_pool(pool, out / name, window)
        print(f"{window}: {len(pool['row'])} jobs -> {out / name}")


if __name__ == "__main__":
    main()
