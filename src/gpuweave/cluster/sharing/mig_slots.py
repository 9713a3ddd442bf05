"""MIG instances on the GPUs of shared nodes: which instance a task's share needs, where it can go, and which of
the free places keeps the most room, so that a GPU is partitioned as tasks arrive.

Problem: on a node whose GPUs run MIG (cluster spec ``sharing: mig``), a task asking a share of a GPU gets a MIG
instance of the smallest size whose compute slices cover the share (an A100 share of 460 milli-GPU needs 4 of 7
slices: ``4g``), and a whole GPU the full instance. An instance can be created wherever the GPU's geometry allows one
of that size and no existing instance blocks its slices (:mod:`gpuweave.hardware.mig`: placements and occupancy,
from the FAR paper, JPDC 2025, sec. 1.2). Among the free places of the chosen node, the instance goes where the
most slices stay usable afterwards: ``room(mask)``, the largest number of slices that further instances could
still take on a GPU whose occupied slices are ``mask`` (a search over the geometry's placements, memoised per
mask), ties to the fuller GPU, then the lower GPU and start. That is FAR's repartitioning tree read from the leaves:
split the smallest free region that holds the instance. Creating an instance on free slices leaves the other
instances running (MIG's dynamic reconfiguration), so FGD's experiment, which never removes a task, needs no
reconfiguration of a busy GPU; each instance created is counted.

Complexity: per geometry, ``room`` over at most 2^k masks (k <= 8 slices) times its placements, once; a task then
costs O(GPU slots x placements of its size) on the chosen node.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from gpuweave.errors import InputError
from gpuweave.hardware.catalog import get_gpu
from gpuweave.hardware.mig import MigGeometry, Placement
from gpuweave.workload.tasks import FULL_GPU_MILLI


def held_milli(slices_held: int, num_slices: int) -> int:
    """What instances covering ``slices_held`` of a GPU's ``num_slices`` compute slices hold, in milli-GPUs,
    rounded to nearest (two 3g instances of an A100 hold 857): the one rounding of a MIG GPU's share."""
    return (slices_held * FULL_GPU_MILLI + num_slices // 2) // num_slices


def occupancy_mask(placement: Placement) -> int:
    return sum(1 << s for s in placement.occupancy)


def slices_mask(placement: Placement) -> int:
    return sum(1 << s for s in placement.slices)


@dataclass(frozen=True, slots=True)
class MigLayout:
    """One geometry's placements as bit masks, by size."""

    geometry: MigGeometry
    by_size: dict[int, tuple[tuple[Placement, int], ...]]  # size -> (placement, occupancy mask), left first

    @property
    def num_slices(self) -> int:
        return self.geometry.num_slices

    def size_for(self, gpu_milli: int) -> int | None:
        """The smallest instance size whose slices cover ``gpu_milli`` of the GPU (None: none does)."""
        for size in sorted(self.geometry.sizes):
            if size * FULL_GPU_MILLI >= gpu_milli * self.num_slices:
                return size
        return None

    def free_places(self, busy: int, size: int) -> list[tuple[Placement, int]]:
        """The placements of ``size`` that no occupied slice (``busy``) blocks."""
        return [(p, mask) for p, mask in self.by_size.get(size, ()) if not busy & mask]


@lru_cache(maxsize=None)
def layout_of(model: str) -> MigLayout:
    """The MIG layout of a catalog GPU model (InputError if it is not MIG-capable)."""

    geometry = get_gpu(model).mig
    if geometry is None:
        raise InputError(f"GPU model {model} does not support MIG", field="sharing")
    by_size: dict[int, list[tuple[Placement, int]]] = {}
    for p in sorted(geometry.placements, key=lambda p: (p.size, p.start)):
        by_size.setdefault(p.size, []).append((p, occupancy_mask(p)))
    return MigLayout(geometry, {size: tuple(places) for size, places in by_size.items()})


@lru_cache(maxsize=None)
def room(model: str, busy: int) -> int:
    """The most slices further instances could take on a GPU of ``model`` whose occupied slices are ``busy``."""
    layout = layout_of(model)
    best = 0
    for places in layout.by_size.values():
        for placement, mask in places:
            if not busy & mask:
                best = max(best, placement.size + room(model, busy | mask))
    return best


def best_place(model: str, busy_by_slot: list[int], size: int) -> tuple[int, Placement, int] | None:
    """The (GPU slot, placement, occupancy mask) for an instance of ``size`` that leaves the most room (module
    docstring), or None when no GPU of the node has a free place for it."""
    layout = layout_of(model)
    best: tuple[tuple[int, int, int, int], tuple[int, Placement, int]] | None = None
    for slot, busy in enumerate(busy_by_slot):
        for placement, mask in layout.free_places(busy, size):
            key = (room(model, busy | mask), bin(busy).count("1"), -slot, -placement.start)
            if best is None or key > best[0]:
                best = (key, (slot, placement, mask))
    return None if best is None else best[1]
