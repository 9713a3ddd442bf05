"""Result files of one cluster run, written atomically.

``jobs.csv``, ``allocations.csv``, ``timeseries.csv`` and ``summary.json`` are written through the result core
(:mod:`gpuweave.results`): staged beside the target and renamed into place only when all of them are complete,
so a run that fails halfway never leaves a result that looks complete. Numbers are formatted with a fixed
precision, so the same config and seed give byte-identical files. Beside the core keys, summary.json keeps the
keys it had before the core (``gpuweave_version``, ``gpuweave_code``, ``policy``, ``cluster``, ``definitions``).
"""

from __future__ import annotations

import csv
from pathlib import Path

from gpuweave import __version__
from gpuweave.cluster.simulator import SimulationRecords
from gpuweave.fingerprint import code_fingerprint
from gpuweave.results import ResultCore, fmt, write_result

JOB_COLUMNS = [
    "job_id",
    "job_type",
    "arrival",
    "start",
    "end",
    "jct",
    "queueing_delay",
    "num_gpus",
    "restarts",
    "deadline",
    "gpu_seconds",
    "energy_j",
    "cost",
]

DEFINITIONS = {
    "energy": "facility energy (GPU idle/max power x PUE) of the whole cluster, first arrival to last completion",
    "jct": "end - arrival",
    "utilization": "GPU-seconds held by jobs (restarts included) / (total GPUs x makespan)",
}


def write_run(rec: SimulationRecords, summary: dict, config: dict, out_dir: Path, nodes: list) -> Path:
    def write_files(staging: Path) -> None:
        _write_jobs(rec, staging / "jobs.csv")
        _write_allocations(rec, staging / "allocations.csv", nodes)
        _write_timeseries(rec, staging / "timeseries.csv")

    extra = {
        "gpuweave_version": __version__,
        "gpuweave_code": code_fingerprint(),
        "policy": config.get("policy"),
        "cluster": {"total_gpus": rec.total_gpus, "gpus_by_model": rec.gpus_by_model},
        "definitions": DEFINITIONS,
    }
    return write_result(out_dir, ResultCore("cluster", config, config.get("seed"), summary), write_files, extra)


def _write_jobs(rec: SimulationRecords, path: Path) -> None:
    models = rec.models
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(JOB_COLUMNS + [f"gpu_seconds_{m}" for m in models])
        for js in rec.jobs:
            j = js.job
            jct = js.end - j.arrival if js.end is not None else None
            wait = js.first_start - j.arrival if js.first_start is not None else None
            row = [
                j.job_id,
                j.job_type,
                fmt(j.arrival),
                fmt(js.first_start),
                fmt(js.end),
                fmt(jct),
                fmt(wait),
                j.num_gpus,
                js.restarts,
                fmt(j.deadline),
                fmt(js.attained_gpu_seconds),
                fmt(js.energy_j),
                fmt(js.cost),
            ]
            row += [fmt(js.gpu_seconds_by_model.get(m, 0.0)) for m in models]
            w.writerow(row)


def _write_allocations(rec: SimulationRecords, path: Path, nodes: list) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["time", "job_id", "node", "gpu_model", "gpus"])
        for a in rec.allocations:
            node = nodes[a.node]
            w.writerow([fmt(a.time), a.job_id, node.name, node.gpu_model, a.gpus])


def _write_timeseries(rec: SimulationRecords, path: Path) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["time"] + [f"busy_{m}" for m in rec.models] + ["busy_total", "power_w"])
        for t, busy, power in rec.timeseries:
            w.writerow([fmt(t), *busy, sum(busy), fmt(power)])
