"""The result directory of FGD's experiment (``gpuweave cluster fill``): summary.json (kind ``sharing``),
``curves.csv`` (allocation and fragmentation per arrived-load point, as FGD's analysis makes them), ``events.csv``
(one row per submitted task) and ``gpus.csv`` (the occupancy picture's data, one row per GPU: its used milli-GPUs
and MIG instances at the end, ``used_milli`` and ``mig_instances``, its MIG slices, ``mig_slices``, empty on a GPU
that does not run MIG, and at each reported load the run reached, ``used_milli_at_<load>`` and, in a run with MIG
nodes, ``mig_instances_at_<load>``; instances as ``size@start`` joined by ``+``, each held by one task, the
slices outside them free: :mod:`.occupancy`).
Written whole or not at all (:func:`gpuweave.results.write_result`). O(tasks + GPUs x reported loads)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuweave.cluster.sharing.experiment import FillResult
from gpuweave.cluster.sharing.occupancy import REPORTED_LOADS, instance_labels, occupancy_of
from gpuweave.hardware.catalog import get_gpu
from gpuweave.results import ResultCore, write_csv, write_result
from gpuweave.workload.tasks import TaskTable


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
        write_gpus_csv(staging / "gpus.csv", result)

    core = ResultCore("sharing", config, result.seed, fill_metrics(result))
    return write_result(out_dir, core, files, {"placement": result.placement, "sharing": result.sharing})


def write_gpus_csv(path: Path, result: FillResult) -> None:
    """``gpus.csv`` (module docstring): one row per GPU, at the end and at each reported load the run reached."""
    nodes = result.nodes
    moments = [occupancy_of(nodes), *result.occupancy.values()]
    header = ["node", "model", "gpu", "used_milli", "mig_instances", "mig_slices"]
    header += [f"used_milli_at_{load}" for load in result.occupancy]
    with_mig = nodes.any_mig
    if with_mig:
        header += [f"mig_instances_at_{load}" for load in result.occupancy]
    used = [m.used_milli.tolist() for m in moments]
    slices = [get_gpu(model).mig_slices if mig else None for model, mig in zip(nodes.table.models, nodes.mig_node)]

    def row(n: int, slot: int) -> list[object]:
        cells: list[object] = [nodes.table.names[n], nodes.table.models[n], slot, used[0][n][slot]]
        cells += [instance_labels(moments[0].instances_on(n, slot)), slices[n]]
        cells += [u[n][slot] for u in used[1:]]
        if with_mig:
            cells += [instance_labels(m.instances_on(n, slot)) for m in moments[1:]]
        return cells

    write_csv(path, header, (row(n, slot) for n in range(len(nodes)) for slot in range(int(nodes.table.num_gpus[n]))))
