"""Rates: the emulated speed a worker is paced to, and the measured rates policies see.

A worker on a GPU-less machine emulates its GPU type by pacing to the profile store's rate for its placement
(:func:`emulated_rate`). Once workers report, :class:`MeasuredProfiles` answers the policy's rate look-ups with
the latest measured steps/s for that (job type, GPU model, GPU count, consolidated) and falls back to the profile
store for what has not run yet. O(1) per look-up.
"""

from __future__ import annotations

from gpuweave.cluster.state import Placement

RateKey = tuple[str, str, int, bool]  # (job type, GPU model, GPUs, consolidated)


def emulated_rate(profiles, job_type: str, num_gpus: int, nodes: list, placement: Placement) -> float:
    """The profile store's steps/s of a job on ``placement``: the slowest node's, unconsolidated across nodes."""
    consolidated = len(placement) == 1
    return min(profiles.rate(job_type, nodes[node].gpu_model, num_gpus, consolidated) for node, _ in placement)


def measured_key(job_type: str, num_gpus: int, nodes: list, placement: Placement) -> RateKey | None:
    """The profile entry a measurement on ``placement`` stands for (None on mixed GPU models)."""
    models = {nodes[node].gpu_model for node, _ in placement}
    if len(models) != 1:
        return None
    return (job_type, models.pop(), num_gpus, len(placement) == 1)


class MeasuredProfiles:
    """A profile store whose rates are replaced by measurements where there are any."""

    def __init__(self, base, measured: dict[RateKey, float]) -> None:
        self._base = base
        self._measured = dict(measured)

    def rate(self, job_type: str, gpu_model: str, num_gpus: int, consolidated: bool) -> float:
        value = self._measured.get((job_type, gpu_model, num_gpus, bool(consolidated)))
        return value if value is not None else self._base.rate(job_type, gpu_model, num_gpus, consolidated)

    def __getattr__(self, name: str):
        return getattr(self._base, name)
