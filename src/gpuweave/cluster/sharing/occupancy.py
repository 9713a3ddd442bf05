"""What each GPU of a fill run holds at a moment: its used milli-GPUs and, on a MIG GPU, its instances.

Problem: the report draws the cluster's GPUs at the end of FGD's experiment and at the loads FGD reports (50, 80,
90, 100, 110, 120 and 130 % of the GPUs arrived), so the run keeps a copy of its GPUs at those moments. The copy of
load k is the state after the last task whose arrived load rounds to k % or less (the curves' bins, see
:func:`gpuweave.cluster.sharing.experiment.discrete_curves`): it is taken when the first task of a higher bin
arrives, before that task is placed; a load the run's last task reaches (rounded) gets the final state; a load it
never reaches gets none. On a MIG GPU every instance is held by the task it was made for (instances come and go
with their tasks), so the slices no instance occupies are the free ones.

``gpus.csv`` (:mod:`.results`) is read back by :func:`read_gpus_csv`, the one checked reader of the file (the
report's occupancy picture): its rows are counted against limit ``cluster_gpus`` as they are read; the columns of a
moment are the reported loads, spelled as written (``used_milli_at_50``; another suffix is refused by name), the
loads a run reached (from 50 % up, none skipped), each with ``mig_instances_at_<load>`` too in a run with MIG nodes;
``gpu`` is a whole number below 1,024 (a cluster spec's most GPUs per node: the picture draws each), once per node,
and a node has one model; ``mig_slices`` is empty, 0 or the model's MIG slices; a cell of instances is
``size@start`` (ASCII digits) joined by ``+``, each an instance the model's geometry allows, no two overlapping
(:func:`read_instance_labels`, the inverse of :func:`instance_labels`), and a MIG GPU's used milli-GPUs are what its
instances hold (:func:`mig_used_milli`). One line naming the file, row and column at the first breach.

Complexity: one comparison per task; a copy is O(nodes x GPU slots + MIG instances), at most once per load; reading
gpus.csv is O(its size).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpuweave.checks import MAX_GPUS_PER_NODE, Range, parse
from gpuweave.cluster.sharing.mig_slots import held_milli
from gpuweave.cluster.sharing.state import NO_GPU, SharedNodes
from gpuweave.errors import InputError
from gpuweave.files import csv_dicts, read_input_text
from gpuweave.hardware.catalog import get_gpu
from gpuweave.hardware.mig import MigGeometry, Placement
from gpuweave.limits import check_limit
from gpuweave.workload.tasks import FULL_GPU_MILLI

#: the arrived loads (% of the cluster's GPUs) FGD reports, and at which the run keeps a copy of its GPUs
REPORTED_LOADS = (50, 80, 90, 100, 110, 120, 130)


@dataclass(frozen=True, slots=True)
class Occupancy:
    """The GPUs at one moment: ``used_milli[node, slot]`` (:data:`NO_GPU` on a slot the node lacks) and, per MIG
    GPU that holds any, its instances by start slice."""

    used_milli: np.ndarray
    instances: dict[tuple[int, int], tuple[Placement, ...]]

    def instances_on(self, node: int, slot: int) -> tuple[Placement, ...]:
        return self.instances.get((node, slot), ())


def occupancy_of(nodes: SharedNodes) -> Occupancy:
    """A copy of what ``nodes``' GPUs hold now."""
    used = np.where(nodes.has_gpu, FULL_GPU_MILLI - nodes.gpu_free, NO_GPU)
    instances = {key: tuple(sorted(held, key=lambda p: p.start)) for key, held in nodes.instances.items() if held}
    return Occupancy(used, instances)


def instance_labels(instances: tuple[Placement, ...]) -> str:
    """A GPU's instances as one CSV cell: ``size@start`` joined by ``+`` (``4@0+2@4``), empty for none."""
    return "+".join(p.label for p in instances)


#: gpus.csv: the columns every version wrote, and the prefixes of a reported load's columns
GPUS_COLUMNS = ("node", "model", "gpu", "used_milli")
USED_AT, INSTANCES_AT = "used_milli_at_", "mig_instances_at_"
MILLI = Range("milli-GPUs", 0, FULL_GPU_MILLI)
#: a GPU's index on its node: below a cluster spec's most GPUs per node (the picture draws every GPU of a node)
SLOT = Range("", 0, MAX_GPUS_PER_NODE - 1, integer=True)
MIG_SLICES = Range("MIG slices", 0, 1_000, integer=True)
_LABEL = re.compile(r"(0|[1-9][0-9]?)@(0|[1-9][0-9]?)", re.ASCII)


@dataclass(frozen=True, slots=True)
class GpuRecord:
    """One row of gpus.csv read back: per moment (the reported loads, then the end) its used milli-GPUs and MIG
    instances; ``slices`` 0 on a GPU that does not run MIG."""

    node: str
    model: str
    slot: int
    slices: int
    used: list[float]
    instances: list[tuple[Placement, ...]]


def _mig_geometry(model: str, file: str | Path | None, row: int | None) -> MigGeometry:
    """The MIG geometry of a GPU of gpus.csv that holds instances or MIG slices; InputError at its ``model``
    otherwise."""
    try:
        geometry = get_gpu(model).mig
    except InputError as exc:
        raise InputError(exc.message, file=file, row=row, field="model") from None
    if geometry is None:
        raise InputError(f"MIG instances or slices on {model}, which has no MIG", file=file, row=row, field="model")
    return geometry


def read_instance_labels(
    text: str, model: str, *, file: str | Path | None = None, row: int | None = None, field: str | None = None
) -> tuple[Placement, ...]:
    """A cell of :func:`instance_labels` read back as ``model``'s placements, by start (module docstring); InputError
    naming the file, row and ``field`` for a label that is not ``size@start``, an instance the geometry does not
    allow, more instances than the GPU has slices, or two that overlap. O(length of the cell)."""
    if not text:
        return ()
    geometry = _mig_geometry(model, file, row)
    labels = text.split("+")
    if len(labels) > geometry.num_slices:
        raise InputError(
            f"{len(labels):,} MIG instances on one {model}, which has {geometry.num_slices} slices",
            file=file,
            row=row,
            field=field,
        )
    placements: list[Placement] = []
    for label in labels:
        match = _LABEL.fullmatch(label)
        if match is None:
            shown = label if len(label) <= 20 else label[:17] + "..."
            raise InputError(
                f"expected MIG instances as size@start joined by +, got {shown!r}", file=file, row=row, field=field
            )
        try:
            placement = geometry.placement(int(match[1]), int(match[2]))
        except InputError as exc:
            raise InputError(exc.message, file=file, row=row, field=field) from None
        for other in placements:
            if placement.overlaps(other):
                raise InputError(
                    f"MIG instances {other.label} and {placement.label} overlap on one {model} (an instance's slices "
                    "hold one instance)",
                    file=file,
                    row=row,
                    field=field,
                )
        placements.append(placement)
    return tuple(sorted(placements, key=lambda p: p.start))


def occupancy_loads(header: list[str], *, file: str | Path | None = None) -> list[int]:
    """The reported loads gpus.csv has columns for (module docstring); InputError at row 0 naming the column, for a
    suffix that is not a reported load as written, a load missing below one that is there (a run reaches the loads
    in order), or a run with MIG instance columns whose loads do not each have both columns."""
    written = {str(load) for load in REPORTED_LOADS}
    for name in header:
        for prefix in (USED_AT, INSTANCES_AT):
            if name.startswith(prefix) and name[len(prefix) :] not in written:
                raise InputError(
                    f"expected {prefix}<load> for a reported load ({', '.join(sorted(written, key=int))}), "
                    f"got column {name[:60]!r}",
                    file=file,
                    row=0,
                    field=name[:60],
                )
    columns = set(header)
    used = [load for load in REPORTED_LOADS if f"{USED_AT}{load}" in columns]
    reached = list(REPORTED_LOADS[: len(used)])
    if used != reached:
        gap = next(load for load, want in zip(used, reached) if load != want)
        missing = f"{USED_AT}{REPORTED_LOADS[REPORTED_LOADS.index(gap) - 1]}"
        raise InputError(
            f"missing column (the run reached {gap} %, so it passed the loads below)", file=file, row=0, field=missing
        )
    with_mig = [load for load in REPORTED_LOADS if f"{INSTANCES_AT}{load}" in columns]
    if with_mig and with_mig != used:
        odd = next(load for load in REPORTED_LOADS if (load in with_mig) != (load in used))
        name = f"{INSTANCES_AT}{odd}" if odd in used else f"{USED_AT}{odd}"
        raise InputError(
            "missing column (a run with MIG nodes has used_milli_at_<load> and mig_instances_at_<load> for each "
            "load it reached)",
            file=file,
            row=0,
            field=name,
        )
    return used


def read_gpus_csv(path: Path) -> tuple[list[int], list[GpuRecord]]:
    """gpus.csv read back and checked (module docstring): the reported loads it has and one record per GPU, in the
    file's order. InputError (LimitError past ``cluster_gpus`` rows) at the first breach. O(size of the file)."""
    if not path.is_file():
        raise InputError("missing file in result directory", file=path)
    text = read_input_text(path, what="result table")
    header, records = csv_dicts(io.StringIO(text, newline=""), file=path, restval="")
    missing = [c for c in GPUS_COLUMNS if c not in header]
    if missing:
        raise InputError("missing column", file=path, field=missing[0])
    loads = occupancy_loads(header, file=path)
    used_columns = [f"{USED_AT}{load}" for load in loads] + ["used_milli"]
    instance_columns = [f"{INSTANCES_AT}{load}" for load in loads] + ["mig_instances"]
    absent = [c for c in instance_columns if c not in header]  # a MIG GPU's rows need them (older files: the end)
    out: list[GpuRecord] = []
    seen: set[tuple[str, int]] = set()
    model_of: dict[str, str] = {}
    for number, row in enumerate(records, start=1):
        check_limit("cluster_gpus", number, "GPUs in gpus.csv", file=path, row=number)
        node, model = row["node"] or "", (row["model"] or "").strip()
        slot = int(parse(row["gpu"] or "", SLOT, file=path, row=number, field="gpu"))
        if (node, slot) in seen:
            raise InputError(f"GPU {slot} of node {node[:60]!r} appears twice", file=path, row=number, field="gpu")
        seen.add((node, slot))
        if model_of.setdefault(node, model) != model:
            raise InputError(
                f"node {node[:60]!r} has GPUs of two models ({model_of[node][:40]}, {model[:40]})",
                file=path,
                row=number,
                field="model",
            )
        used = [float(parse(row[c] or "", MILLI, file=path, row=number, field=c)) for c in used_columns]
        instances = [
            read_instance_labels(row.get(c) or "", model, file=path, row=number, field=c) for c in instance_columns
        ]
        slices = _slices(row.get("mig_slices") or "", model, any(instances), path, number)
        if slices and absent:
            raise InputError(
                f"missing column: GPU {slot} of node {node[:60]!r} runs MIG (mig_slices {slices})",
                file=path,
                row=number,
                field=absent[0],
            )
        if slices:
            _check_mig_used(used, instances, slices, used_columns, path, number)
        out.append(GpuRecord(node, model, slot, slices, used, instances))
    if not out:
        raise InputError("no GPU in gpus.csv (no row after the header)", file=path, row=1, field="node")
    return loads, out


def mig_used_milli(instances: tuple[Placement, ...], num_slices: int) -> int:
    """What a MIG GPU's instances hold in milli-GPUs (:func:`.mig_slots.held_milli`, as the fill counts them)."""
    return held_milli(sum(p.size for p in instances), num_slices)


def _check_mig_used(
    used: list[float],
    instances: list[tuple[Placement, ...]],
    slices: int,
    columns: list[str],
    file: Path,
    row: int,
) -> None:
    """A MIG GPU's used milli-GPUs at each moment are what its instances hold (1 milli-GPU either way)."""
    for value, held, column in zip(used, instances, columns):
        expected = mig_used_milli(held, slices)
        if abs(value - expected) > 1:
            labels = instance_labels(held) or "no instance"
            raise InputError(
                f"a MIG GPU holding {labels} uses {expected} milli-GPUs, got {value:g}",
                file=file,
                row=row,
                field=column,
            )


def _slices(text: str, model: str, holds: bool, file: Path, row: int) -> int:
    """A row's ``mig_slices``: empty or 0 (no MIG; a GPU holding instances in a file written before the column runs
    MIG) or the model's MIG slices."""
    slices = int(parse(text, MIG_SLICES, file=file, row=row, field="mig_slices")) if text.strip() else 0
    if slices or holds:
        expected = _mig_geometry(model, file, row).num_slices
        if slices and slices != expected:
            raise InputError(f"{model} has {expected} MIG slices, got {slices}", file=file, row=row, field="mig_slices")
        return expected
    return 0


class OccupancyRecorder:
    """Copies of the GPUs at the reported loads, taken as the tasks arrive (see module docstring)."""

    def __init__(self, total_gpus: int, loads: tuple[int, ...] = REPORTED_LOADS) -> None:
        self.total_gpus = total_gpus
        self.pending = sorted(loads)
        self.last_load = 0.0
        self.taken: dict[int, Occupancy] = {}

    def arrive(self, arrived_milli: int, nodes: SharedNodes) -> None:
        """A task arrives (``arrived_milli`` counts it; ``nodes`` do not hold it yet)."""
        if not self.pending or self.total_gpus <= 0:
            return
        # Python's round on the same expression as the curves' bins (half to even)
        self.last_load = round(arrived_milli / self.total_gpus / 10, 0)
        if self.last_load > self.pending[0]:
            state = occupancy_of(nodes)
            while self.pending and self.last_load > self.pending[0]:
                self.taken[self.pending.pop(0)] = state

    def finish(self, nodes: SharedNodes) -> dict[int, Occupancy]:
        """The copies by load, the loads the last task reached given the final state."""
        reached = [load for load in self.pending if load <= self.last_load]
        if reached:
            state = occupancy_of(nodes)
            for load in reached:
                self.taken[load] = state
        return dict(sorted(self.taken.items()))
