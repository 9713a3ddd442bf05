"""Cross-check against Gavel's own simulator (stanford-futuredata/gavel@c4fa400): our Gavel policies on Gavel's
traces, beside Gavel's results.

Input, a directory laid out like ``../shared/data/gavel-reference``: ``summary.csv`` (one row per Gavel run:
``trace``, ``policy``, ``avg_jct_s``, ``median_jct_s``, ``makespan_s`` and the driver ``command``),
``traces/<trace>.trace`` (Gavel's trace format) and, optionally, ``results/<trace>__<policy>.csv`` (per-job
``job_id``, ``jct_s``; job ids are trace line numbers from 0). Every summary row whose policy we know and whose
trace is present is re-run here on Gavel's simulated cluster as its command gives it (``-c v100:p100:k80``, one
GPU per server, ideal placement, no restart delay, ``--time_per_iteration`` round, ``--seed``).

Output rows: avg JCT, median JCT and makespan (hours; Gavel's value in ``paper``) and, where the per-job file is
there, the Pearson and Spearman correlations of the per-job JCTs. ``<trace>__<policy>.csv`` in the output
directory lists both JCTs job by job. Cost: one simulation per summary row.

Every file is read through the project's checked readers (:func:`~gpuweave.workload.traces._tables.read_csv_strings`,
:mod:`gpuweave.checks`): a metric that is NaN, negative, zero or not a number, a command whose ``-c``, ``--seed`` or
``--time_per_iteration`` is not a sane number, a missing column, a NUL byte, a per-job JCT that is not positive or
a job id given twice are one InputError naming the file, the row and the field; a row with an empty metric is a
failed run and is skipped. A trace name becomes a file name only through :func:`~gpuweave.files.safe_child`, so
a crafted ``../../x`` in ``summary.csv`` neither reads nor writes outside its folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpuweave.checks import COUNT, MAX_SECONDS, ROUND_LENGTH, SEED, Range, parse
from gpuweave.cluster.policies import make_policy
from gpuweave.cluster.run import gpu_power
from gpuweave.cluster.simulator import Simulator
from gpuweave.errors import InputError
from gpuweave.files import safe_child, safe_name
from gpuweave.hardware.cluster_spec import cluster_from_dict
from gpuweave.repro.crosscheck.correlation import PEARSON, SPEARMAN, per_job_correlations
from gpuweave.repro.registry import ComparisonRow
from gpuweave.results import write_csv
from gpuweave.workload.profiles import load_profiles
from gpuweave.workload.traces._tables import ROW, missing_mask, numeric_column, read_csv_strings, require_columns
from gpuweave.workload.traces.formats import load_trace_frame
from gpuweave.workload.traces.schema import frame_to_jobs

# Gavel's policy name -> our registered policy that reproduces it.
GAVEL_POLICIES = {
    "max_min_fairness_perf": "gavel",
    "fifo_perf": "fifo-perf",
    "max_min_fairness": "gavel-las",
    "finish_time_fairness_perf": "gavel-ftf",
    "min_total_duration_perf": "gavel-min-total-duration",
}
GAVEL_TYPES = ("V100", "P100", "K80")  # the order of Gavel's -c v100:p100:k80
SUMMARY_COLUMNS = ("trace", "policy", "avg_jct_s", "median_jct_s", "makespan_s")
METRICS = ("avg_jct_s", "median_jct_s", "makespan_s")
GPUS_PER_TYPE = Range("GPUs", 0, 1_000_000, integer=True)


@dataclass(frozen=True, slots=True)
class GavelRun:
    """One row of Gavel's summary.csv: what ran and what it measured."""

    trace: str
    policy: str
    avg_jct_s: float
    median_jct_s: float
    makespan_s: float
    gpus: tuple[int, ...]
    round_length: float
    seed: int


def _option(command: str, flags: tuple[str, ...], default: str) -> str:
    for flag in flags:
        match = re.search(rf"(?:^|\s){re.escape(flag)}\s+(\S+)", command)
        if match:
            return match.group(1)
    return default


def read_summary(path: Path) -> list[GavelRun]:
    """The runs of Gavel's ``summary.csv`` that finished (a value in each metric column); every other bad value is
    an InputError naming the row and the field (see the module docstring)."""
    frame = read_csv_strings(path, what="runs")
    require_columns(frame, SUMMARY_COLUMNS, file=path, what="Gavel's summary.csv")
    # a metric is a time: NaN, negative, zero or past 317 years is not a result of a finished run
    metrics = [
        numeric_column(frame, name, file=path, unit="s", required=False, strictly_above=0.0, maximum=MAX_SECONDS)
        for name in METRICS
    ]
    finished = ~(missing_mask(metrics[0]) | missing_mask(metrics[1]) | missing_mask(metrics[2]))
    commands = frame["command"].tolist() if "command" in frame.columns else [""] * len(frame)
    runs = []
    for position, (trace, policy, command, row, done) in enumerate(
        zip(frame["trace"], frame["policy"], commands, frame[ROW], finished)
    ):
        if not done:
            continue  # a failed run (empty metrics)
        row = int(row)
        safe_name(trace.strip(), suffix=".trace", file=path, row=row, field="trace")  # it names files
        if not policy.strip():
            raise InputError("empty value; expected Gavel's policy name", file=path, row=row, field="policy")
        where: dict[str, Any] = {"file": path, "row": row, "field": "command"}
        spec = _option(command, ("-c", "--cluster_spec"), "20:20:20").split(":")
        if len(spec) != len(GAVEL_TYPES):
            raise InputError("expected -c V100:P100:K80 in the command", **where)
        gpus = tuple(int(parse(n, GPUS_PER_TYPE, **where)) for n in spec)
        if sum(gpus) < 1:
            raise InputError("the command's -c V100:P100:K80 gives no GPU", **where)
        round_length = parse(_option(command, ("--time_per_iteration",), "360"), ROUND_LENGTH, **where)
        seed = int(parse(_option(command, ("--seed",), "0"), SEED, **where))
        avg, median, makespan = (float(metric.iloc[position]) for metric in metrics)
        runs.append(GavelRun(trace.strip(), policy.strip(), avg, median, makespan, gpus, round_length, seed))
    return runs


def gavel_cluster(gpus: tuple[int, ...]) -> list:
    """Gavel's simulated cluster: one GPU per server, ideal placement, nodes in v100, p100, k80 order."""
    groups = [
        {"count": n, "gpu": model, "gpus_per_node": 1, "name_prefix": f"{model.lower()}-"}
        for model, n in zip(GAVEL_TYPES, gpus)
        if n > 0
    ]
    spec = cluster_from_dict({"name": "gavel-sim", "placement": "ideal", "nodes": groups})
    return spec.expand()


def _peer_jcts(path: Path) -> dict[int, float]:
    """Gavel's per-job JCTs (``job_id``, ``jct_s``) if the file is there: ids are trace lines (whole numbers from
    0, each once), JCTs positive seconds; anything else is an InputError naming the row and the field."""
    if not path.is_file():
        return {}
    frame = read_csv_strings(path)
    require_columns(frame, ("job_id", "jct_s"), file=path, what="Gavel's per-job results")
    ids = numeric_column(frame, "job_id", file=path, unit="trace line", integer=True, minimum=0, maximum=COUNT.hi)
    jcts = numeric_column(frame, "jct_s", file=path, unit="s", strictly_above=0.0, maximum=MAX_SECONDS)
    peer: dict[int, float] = {}
    for job, jct, row in zip(ids.astype("int64").tolist(), jcts.tolist(), frame[ROW]):
        if job in peer:
            raise InputError(f"job {job} appears twice", file=path, row=int(row), field="job_id")
        peer[job] = jct
    return peer


def simulate_run(run: GavelRun, trace_path: Path, profiles) -> tuple[dict[int, float], float]:
    """Our JCT of every job (by trace line) under the policy that reproduces ``run.policy``, and our makespan
    (the last completion; Gavel's "Total duration" on traces that start at 0)."""
    frame = load_trace_frame(trace_path, "gavel", profiles=profiles)
    line_of = {job_id: i for i, job_id in enumerate(frame["job_id"])}
    jobs = frame_to_jobs(frame)
    nodes = gavel_cluster(run.gpus)
    policy = make_policy(GAVEL_POLICIES[run.policy], round_length=run.round_length, seed=run.seed)
    rec = Simulator(
        nodes, jobs, policy, profiles, gpu_power(nodes), restart_delay=0.0, record_segments=False, ideal_placement=True
    ).run()
    # every job of a trace finishes, so each has an end
    jcts = {line_of[js.job.job_id]: js.end - js.job.arrival for js in rec.jobs}  # type: ignore[operator]  # ended
    return jcts, max(js.end for js in rec.jobs)  # type: ignore[type-var,return-value]  # all ended


def compare_run(run: GavelRun, ours: dict[int, float], peer: dict[int, float], makespan: float) -> list[ComparisonRow]:
    """The comparison rows of one run (times in hours)."""
    experiment = f"{run.trace} {run.policy}"
    note = f"ours: policy {GAVEL_POLICIES[run.policy]} on Gavel's {':'.join(map(str, run.gpus))} cluster"
    jct = np.array([ours[i] for i in sorted(ours)])
    rows = [
        ComparisonRow(experiment, "avg JCT", run.avg_jct_s / 3600, float(jct.mean()) / 3600, "h", note),
        ComparisonRow(experiment, "median JCT", run.median_jct_s / 3600, float(np.median(jct)) / 3600, "h", note),
        ComparisonRow(experiment, "makespan", run.makespan_s / 3600, makespan / 3600, "h", note),
    ]
    common = sorted(set(ours) & set(peer))
    if len(common) >= 2:
        pearson, spearman = per_job_correlations([ours[i] for i in common], [peer[i] for i in common])
        per_job = f"over {len(common)} jobs, ours vs Gavel's JCT"
        rows.append(ComparisonRow(experiment, PEARSON, None, pearson, "", per_job))
        rows.append(ComparisonRow(experiment, SPEARMAN, None, spearman, "", per_job))
    return rows


def crosscheck_gavel(data_dir: Path, out_dir: Path) -> list[ComparisonRow]:
    """Every known (trace, policy) of ``data_dir/summary.csv``, ours beside Gavel's; per-job files to ``out_dir``."""
    summary = Path(data_dir) / "summary.csv"
    if not summary.is_file():
        raise InputError("Gavel data directory has no summary.csv", file=summary)
    profiles = load_profiles()
    rows: list[ComparisonRow] = []
    for run in read_summary(summary):
        trace_path = safe_child(Path(data_dir) / "traces", run.trace, suffix=".trace", file=summary, field="trace")
        if run.policy not in GAVEL_POLICIES or not trace_path.is_file():
            continue
        ours, makespan = simulate_run(run, trace_path, profiles)
        name = f"{run.trace}__{run.policy}"  # the policy is one of GAVEL_POLICIES' names
        peer = _peer_jcts(safe_child(Path(data_dir) / "results", name, suffix=".csv", file=summary, field="trace"))
        rows += compare_run(run, ours, peer, makespan)
        write_csv(
            safe_child(Path(out_dir), name, suffix=".csv", file=summary, field="trace"),
            ["job_id", "gavel_jct_s", "ours_jct_s"],
            [[i, peer.get(i, ""), ours[i]] for i in sorted(ours)],
        )
    return rows
