"""The result directory of FGD's experiment (``gpuweave cluster fill``): summary.json (kind ``sharing``),
``curves.csv`` (allocation and fragmentation per arrived-load point, as FGD's analysis makes them), ``events.csv``
(one row per submitted task) and ``gpus.csv`` (each GPU's used share at the end: the occupancy picture's data).
Written whole or not at all (:func:`gpuweave.results.write_result`). O(tasks + GPUs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuweave.cluster.sharing.experiment import FillResult
from gpuweave.results import ResultCore, write_csv, write_result
from gpuweave.workload.tasks import FULL_GPU_MILLI, TaskTable

REPORTED_LOADS = (50, 80, 90, 100, 110, 120, 130)


def fill_metrics(result: FillResult) -> dict[str, float | int | None]:
    """The summary's numbers: tasks submitted and failed, allocation and fragmentation ratio at FGD's points."""
    metrics: dict[str, float | int | None] = {"tasks_submitted": result.submitted, "tasks_failed": result.failed}
    for load in REPORTED_LOADS:
        if load < len(result.curves["load"]):
            metrics[f"allocation_at_{load}"] = result.curves["allocation"][load]
            metrics[f"fragment_ratio_at_{load}"] = result.curves["fragment_ratio"][load]
    if result.nodes.any_mig:
        metrics["mig_instances_created"] = result.nodes.instances_created
    last = REPORTED_LOADS[-1]
    if last < len(result.curves["load"]):  # what the placed tasks asked: below allocation when shares were rounded up
        metrics[f"asked_at_{last}"] = result.curves["asked"][last]
    return metrics


def write_fill_result(out_dir: Path, result: FillResult, tasks: TaskTable, config: dict[str, Any]) -> Path:
    """Write the experiment's result directory (see module docstring)."""
    nodes = result.nodes

    def files(staging: Path) -> None:
        curves = result.curves
        write_csv(
            staging / "curves.csv",
            ["load", "allocation", "asked", "fragment", "fragment_ratio"],
            zip(curves["load"], curves["allocation"], curves["asked"], curves["fragment"], curves["fragment_ratio"]),
        )
        events = result.events
        names = nodes.table.names
        write_csv(
            staging / "events.csv",
            ["task", "node", "arrived_milli", "used_milli", "fragment_milli", "fragment_ratio"],
            (
                (tasks.names[row], names[node] if node >= 0 else "", a, u, f, r)
                for row, node, a, u, f, r in zip(
                    events.task_rows.tolist(),
                    events.node.tolist(),
                    events.arrived_milli.tolist(),
                    events.used_milli.tolist(),
                    events.fragment_milli.tolist(),
                    events.fragment_ratio.tolist(),
                )
            ),
        )
        write_csv(
            staging / "gpus.csv",
            ["node", "model", "gpu", "used_milli", "mig_instances"],
            (
                (
                    names[n],
                    nodes.table.models[n],
                    slot,
                    FULL_GPU_MILLI - int(nodes.gpu_free[n, slot]),
                    "+".join(p.label for p in sorted(nodes.instances.get((n, slot), ()), key=lambda p: p.start)),
                )
                for n in range(len(nodes))
                for slot in range(int(nodes.table.num_gpus[n]))
            ),
        )

    core = ResultCore("sharing", config, result.seed, fill_metrics(result))
    return write_result(out_dir, core, files, {"placement": result.placement, "sharing": result.sharing})
