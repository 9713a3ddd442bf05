"""Result files of one cluster run, written atomically.

``jobs.csv``, ``allocations.csv``, ``timeseries.csv`` (and, for adaptive jobs, ``adaptation.csv``) and
``summary.json`` are written through the result core
(:mod:`gpuweave.results`): staged beside the target and renamed into place only when all of them are complete,
so a run that fails halfway never leaves a result that looks complete. A simulation writes allocations.csv and
timeseries.csv while it runs (:func:`write_streamed_run`), into the same staging directory. Numbers are formatted
with a fixed precision, so the same config and seed give byte-identical files. Beside the core keys, summary.json
keeps the keys it had before the core (``gpuweave_version``, ``gpuweave_code``, ``policy``, ``cluster``,
``definitions``).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuweave import __version__
from gpuweave.cluster.simulator import RecordSink, SimulationRecords
from gpuweave.fingerprint import code_fingerprint
from gpuweave.results import ResultCore, write_result
from gpuweave.results import fmt as fmt  # re-exported: live/results.py and the CLI format with it

if TYPE_CHECKING:
    from gpuweave.cluster.adaptive_clock import Adaptation
    from gpuweave.cluster.book import AllocationChange, TimeseriesRow
    from gpuweave.hardware.cluster_spec import Node

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
    "gpu_hours": "GPU-hours held by jobs (restarts included)",
    "useful_gpu_hours": "GPU-hours the work done takes at each job's consolidated rate (all its GPUs on one node) on "
    "the GPU model(s) it ran on",
    "useful_fraction": "useful_gpu_hours / gpu_hours: 1 when every job ran consolidated without restarts; a policy "
    "that spreads jobs over nodes keeps GPUs busy (utilization) doing less work",
    "median_placement_slowdown": "median over completed jobs of several GPUs of (time held less start and restart "
    "delays) / time at the consolidated rate",
}


def write_run(
    rec: SimulationRecords,
    summary: Mapping[str, float | int | None],
    config: dict[str, Any],
    out_dir: Path,
    nodes: list[Node],
) -> Path:
    """The result directory of a run whose records are all in memory (the live runtime's)."""

    def write_files(staging: Path) -> None:
        _write_jobs(rec, staging / "jobs.csv")
        if rec.shares is not None:
            _write_sharing(rec.shares.series, staging / SHARING_FILE)
        with CsvRecordSink(staging, nodes, rec.models) as sink:
            sink.allocations(rec.allocations)
            sink.timeseries(rec.timeseries)
            if rec.adaptations:
                sink.adaptations(rec.adaptations)

    return write_result(
        out_dir, ResultCore("cluster", config, config.get("seed"), summary), write_files, _extra(rec, config)
    )


def write_streamed_run(
    run: Callable[[RecordSink], SimulationRecords], config: dict[str, Any], out_dir: Path, nodes: list[Node]
) -> dict[str, float | int]:
    """Run ``run(sink)`` with allocations.csv and timeseries.csv written as it goes (the simulator hands its records
    over in chunks, so memory does not grow with them), then jobs.csv and summary.json. Returns the metrics."""
    # imported here: importing gpuweave.cluster.results does without numpy
    from gpuweave.cluster.metrics import summarize

    done: dict[str, Any] = {}  # the records and their metrics, once written

    def write_files(staging: Path) -> None:
        with CsvRecordSink(staging, nodes, list(dict.fromkeys(n.gpu_model for n in nodes))) as sink:
            rec = run(sink)
        _write_jobs(rec, staging / "jobs.csv")
        if rec.shares is not None:
            _write_sharing(rec.shares.series, staging / SHARING_FILE)
        done["rec"], done["summary"] = rec, summarize(rec)

    write_result(
        out_dir,
        lambda: ResultCore("cluster", config, config.get("seed"), done["summary"]),
        write_files,
        lambda: _extra(done["rec"], config),
    )
    summary: dict[str, float | int] = done["summary"]
    return summary


def _extra(rec: SimulationRecords, config: dict[str, Any]) -> dict[str, Any]:
    """summary.json's keys beside the result core."""
    return {
        "gpuweave_version": __version__,
        "gpuweave_code": code_fingerprint(),
        "policy": config.get("policy"),
        "cluster": {"total_gpus": rec.total_gpus, "gpus_by_model": rec.gpus_by_model},
        "definitions": DEFINITIONS,
    }


SHARING_FILE = "sharing.csv"  # a shared run's used share and fragmentation over time (docs/file-formats.md)
SHARING_COLUMNS = ("time_s", "used_milli_gpus", "fragment_milli_gpus", "fragment_ratio_pct")


def _write_sharing(series: list[tuple[float, int, float, float]], path: Path) -> None:
    """A shared run's used share and fragmentation over time: one row per instant they changed."""
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(SHARING_COLUMNS)
        for t, used, fragment, ratio in series:
            writer.writerow((fmt(t), used, fmt(fragment), fmt(ratio)))


def _write_jobs(rec: SimulationRecords, path: Path) -> None:
    models = rec.models
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(JOB_COLUMNS + [f"gpu_seconds_{m}" for m in models])
        for js in rec.jobs:
            j = js.job
            jct = js.end - j.arrival if js.end is not None else None
            wait = js.first_start - j.arrival if js.first_start is not None else None
            row: list[object] = [
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
            by_model = js.gpu_seconds_by_model  # most jobs ran on one model: the others are fmt(0.0), "0"
            row += [fmt(by_model[m]) if m in by_model else "0" for m in models]
            w.writerow(row)


ADAPTATION_FILE = "adaptation.csv"  # adaptive jobs' GPUs, batch, throughput and efficiency per interval
ADAPTATION_COLUMNS = (
    "start",
    "end",
    "job_id",
    "gpu_model",
    "nodes",
    "gpus",
    "batch_size",
    "atomic_bsz",
    "accum_steps",
    "epoch",
    "idle_s",
    "throughput",
    "stat_efficiency",
    "goodput",
)


class CsvRecordSink:
    """allocations.csv and timeseries.csv of a result directory, appended chunk by chunk (a
    :class:`~gpuweave.cluster.simulator.RecordSink`), and adaptation.csv once a run has adaptive jobs' records;
    ``models`` are the cluster's GPU models in node order."""

    def __init__(self, directory: Path, nodes: list[Node], models: list[str]) -> None:
        self._directory = directory
        self._node_names = [node.name for node in nodes]
        self._node_models = [node.gpu_model for node in nodes]
        self._files = [open(directory / name, "w", newline="") for name in ("allocations.csv", "timeseries.csv")]
        self._allocations, self._timeseries = (csv.writer(fh) for fh in self._files)
        self._allocations.writerow(["time", "job_id", "node", "gpu_model", "gpus"])
        self._timeseries.writerow(["time"] + [f"busy_{m}" for m in models] + ["busy_total", "power_w"])
        self._adaptations: Any = None  # its writer, from the first rows (whole-GPU rigid runs have none)

    def allocations(self, rows: Iterable[AllocationChange]) -> None:
        names, models = self._node_names, self._node_models
        self._allocations.writerows([fmt(a.time), a.job_id, names[a.node], models[a.node], a.gpus] for a in rows)

    def timeseries(self, rows: Iterable[TimeseriesRow]) -> None:
        self._timeseries.writerows([fmt(t), *busy, sum(busy), fmt(power)] for t, busy, power in rows)

    def adaptations(self, rows: Iterable[Adaptation]) -> None:
        writer = self._adaptations
        if writer is None:
            self._files.append(open(self._directory / ADAPTATION_FILE, "w", newline=""))
            writer = self._adaptations = csv.writer(self._files[-1])
            writer.writerow(ADAPTATION_COLUMNS)
        writer.writerows(
            (
                fmt(a.start), fmt(a.end), a.job_id, a.gpu_model or "", a.nodes, a.gpus, a.batch_size, a.atomic_bsz,
                a.accum_steps, a.epoch, fmt(a.idle), fmt(a.throughput), fmt(a.efficiency), fmt(a.goodput),
            )
            for a in rows
        )  # fmt: skip

    def close(self) -> None:
        for fh in self._files:
            fh.close()

    def __enter__(self) -> "CsvRecordSink":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
