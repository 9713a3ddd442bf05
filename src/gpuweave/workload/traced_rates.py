"""Traced durations as a profile source: every job runs for the time its trace says, on any GPU model.

Problem: a replay of a production trace (openb's pods: creation and deletion times) asks *when* and *where* the
trace's tasks would run under another queue policy or placement, not how fast another GPU would have run them; the
trace's times are the tasks' run times on whatever GPUs they had, and the profiled tables (Gavel's K80/P100/V100)
do not cover openb's T4, A10 or G1-G3. :class:`TracedDurations` answers 1 step per second for every job type on
every GPU model and count, so a job's work is its traced duration in seconds (the trace reader fills ``work``
from ``duration`` at this rate) and it runs for exactly that long wherever it goes. A run config selects it with
``profiles: traced`` (``--profiles traced``). O(1) per look-up.
"""

from __future__ import annotations

TRACED = "traced"  # the run config's profiles value that selects this source
TRACED_RATE = 1.0  # steps per second: work = duration


class TracedDurations:
    """Rate 1 step/s for every job type, GPU model and count (see module docstring)."""

    source = "traced durations (every job at its trace's run time, on any GPU)"

    def rate(self, job_type: str, gpu_model: str, num_gpus: int, consolidated: bool) -> float:
        return TRACED_RATE

    def has(self, job_type: str, gpu_model: str, num_gpus: int, consolidated: bool | None = None) -> bool:
        return True

    def job_types(self) -> tuple[str, ...]:
        return ()  # any: a replay keeps its trace's job types, whatever they are

    def gpu_models(self) -> tuple[str, ...]:
        from gpuweave.hardware.catalog import all_gpus

        return tuple(sorted(all_gpus()))

    def scale_factors(self, job_type: str) -> tuple[int, ...]:
        from gpuweave.checks import MAX_GPUS_PER_NODE

        return tuple(range(1, MAX_GPUS_PER_NODE + 1))

    def __contains__(self, job_type: object) -> bool:
        return isinstance(job_type, str)
