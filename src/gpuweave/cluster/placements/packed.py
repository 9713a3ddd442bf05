"""The default placement rule: one node by best fit, else the fewest nodes, fullest free first.

Problem: put a gang of n GPUs on nodes of one GPU model so that it runs at its best rate and leaves large holes for
later gangs. Rule (every policy's placement since wave 1; Gavel's simulator and Tiresias place alike): the node
with the fewest free GPUs that still holds all n (lowest index on ties); when none does and spreading is allowed,
the fewest nodes, those with the most free GPUs first, provided the job can run spread there (its spread rate, read
before the spread is built, is positive). O(nodes of the model) per call.
"""

from __future__ import annotations

from gpuweave.cluster.placement import runnable_spread, single_node
from gpuweave.cluster.placements import FreeCapacity, PlacementRule, register_placement
from gpuweave.cluster.state import JobState, Placement


@register_placement("packed")
class PackedPlacement(PlacementRule):
    """Best fit on one node, else the fewest nodes (fullest free first) where the job runs spread (the default)."""

    def place(
        self, capacity: FreeCapacity, js: JobState, model: str, *, allow_spread: bool = True
    ) -> Placement | None:
        n = js.job.num_gpus  # a model without n free GPUs gives None below (callers check the count first)
        one = single_node(capacity, n, model)
        if one is not None or not allow_spread:
            return one
        return runnable_spread(capacity, js, model)
