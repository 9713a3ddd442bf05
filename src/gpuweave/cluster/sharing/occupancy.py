"""What each GPU of a fill run holds at a moment: its used milli-GPUs and, on a MIG GPU, its instances.

Problem: the report draws the cluster's GPUs at the end of FGD's experiment and at the loads FGD reports (50, 80,
90, 100, 110, 120 and 130 % of the GPUs arrived), so the run keeps a copy of its GPUs at those moments. The copy of
load k is the state after the last task whose arrived load rounds to k % or less (the curves' bins, see
:func:`gpuweave.cluster.sharing.experiment.discrete_curves`): it is taken when the first task of a higher bin
arrives, before that task is placed; a load the run's last task reaches (rounded) gets the final state; a load it
never reaches gets none. On a MIG GPU every instance is held by the task it was made for (instances come and go
with their tasks), so the slices no instance occupies are the free ones.

Complexity: one comparison per task; a copy is O(nodes x GPU slots + MIG instances), at most once per load.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuweave.cluster.sharing.state import NO_GPU, SharedNodes
from gpuweave.hardware.mig import Placement
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
