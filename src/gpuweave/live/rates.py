"""Rates: the emulated speed a worker is paced to, and the measured rates policies see.

A worker on a GPU-less machine emulates its GPU type by pacing to the profile store's rate for its placement
(:func:`emulated_rate`). Once workers report, :class:`MeasuredProfiles` answers the policy's rate look-ups with
the latest measured steps/s for that (job type, GPU model, GPU count, consolidated) and falls back to the profile
store for what has not run yet. O(1) per look-up.
"""

from __future__ import annotations

import csv
from pathlib import Path

from gpuweave.cluster.state import Placement
from gpuweave.hardware.cluster_spec import Node
from gpuweave.workload.profile_source import ProfileSource
from gpuweave.workload.profiles import PROFILE_COLUMNS, ProfileStore

RateKey = tuple[str, str, int, bool]  # (job type, GPU model, GPUs, consolidated)


def emulated_rate(
    profiles: ProfileSource, job_type: str, num_gpus: int, nodes: list[Node], placement: Placement
) -> float:
    """The profile store's steps/s of a job on ``placement``: the slowest node's, unconsolidated across nodes."""
    consolidated = len(placement) == 1
    return min(profiles.rate(job_type, nodes[node].gpu_model, num_gpus, consolidated) for node, _ in placement)


def measured_key(job_type: str, num_gpus: int, nodes: list[Node], placement: Placement) -> RateKey | None:
    """The profile entry a measurement on ``placement`` stands for (None on mixed GPU models)."""
    models = {nodes[node].gpu_model for node, _ in placement}
    if len(models) != 1:
        return None
    return (job_type, models.pop(), num_gpus, len(placement) == 1)


class MeasuredProfiles:
    """A profile source whose rates are replaced by measurements where there are any; everything else is the base
    source's (:class:`~gpuweave.workload.profile_source.ProfileSource`). It offers no ``placement_rate``: a driver
    keeps the placement-shape source it was built with (the simulator's ``use_profiles``)."""

    def __init__(self, base: ProfileSource, measured: dict[RateKey, float]) -> None:
        self._base = base
        self._measured = dict(measured)

    def rate(self, job_type: str, gpu_model: str, num_gpus: int, consolidated: bool) -> float:
        value = self._measured.get((job_type, gpu_model, num_gpus, bool(consolidated)))
        return value if value is not None else self._base.rate(job_type, gpu_model, num_gpus, consolidated)

    def has(self, job_type: str, gpu_model: str, num_gpus: int, consolidated: bool | None = None) -> bool:
        options = (True, False) if consolidated is None else (bool(consolidated),)
        if any((job_type, gpu_model, num_gpus, option) in self._measured for option in options):
            return True
        return self._base.has(job_type, gpu_model, num_gpus, consolidated)

    def job_types(self) -> tuple[str, ...]:
        return self._base.job_types()

    def gpu_models(self) -> tuple[str, ...]:
        return self._base.gpu_models()

    def scale_factors(self, job_type: str) -> tuple[int, ...]:
        return self._base.scale_factors(job_type)

    def __contains__(self, job_type: object) -> bool:
        return job_type in self._base


MEASURED_PROFILES = "measured_profiles.csv"
MEASURED_NOTE = "a live run's last measured rate per entry (simulated steps/s), else the profile store's rate"


def write_measured_profiles(base: ProfileSource, measured: dict[RateKey, float], path: Path) -> int:
    """A profile table (the profile store's columns) holding the rates a live run measured, in simulated steps/s,
    in place of the store's for the same entries, and the store's own rates for the rest, so that
    ``cluster simulate`` with ``profiles: <run>/measured_profiles.csv`` replays the run at the speeds the GPUs
    showed. Each entry holds the last rate measured for it. A store that is not a table (a Pollux job model) gives
    only the measured rows. Returns the number of measured entries. O(entries)."""
    rows: dict[RateKey, float] = {}
    if isinstance(base, ProfileStore):
        rows = {(r.job_type, r.gpu_model, r.num_gpus, r.consolidated): r.throughput for r in base.rows()}
    for (job_type, model, gpus, consolidated), rate in measured.items():
        # one GPU is one entry, however the placement is described
        rows[(job_type, model, gpus, True if gpus == 1 else consolidated)] = rate
    with open(path, "w", newline="") as fh:
        fh.write(f"# {MEASURED_NOTE}\n")
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(PROFILE_COLUMNS)
        for (job_type, model, gpus, consolidated), rate in sorted(rows.items()):
            writer.writerow([job_type, model, gpus, int(consolidated), repr(float(rate))])
    return len(measured)
