"""Pollux's simulator's clock at epoch ends: each epoch's last stretch is rounded to whole seconds.

Problem: reproduce job completion times of Pollux's own simulator (petuum/adaptdl, branch ``osdi21-artifact``,
``simulator/simulator.py``, ``Job.step``; Qiao et al., OSDI'21 sec. 5.1) on gpuweave's event clock. That simulator
steps every job once per scheduling interval (60 s) and, inside an interval, from epoch end to epoch end: when an
epoch ends within the stretch that began at the interval's start, at the end of the job's re-scale delay or at the
previous epoch's end, the time that stretch took is *rounded to whole seconds* (Python's ``round``: half to even)
while the job's progress is set to the epoch's end exactly. A job's JCT thus differs from the exact linear one by
up to half a second per epoch (cifar10 has 100, imagenet 90): 12.7 s on a 6-GPU cifar10 job alone, and through the
order in which GPUs then free up, 2.6 % of the average JCT of a 320-job workload under Tiresias (measured beside
that simulator on workloads generated with its own generator; the module's tests pin the single-job cases).

Model: a running job's steps grow linearly at its rate from its productive start (after its start or restart
delay), as everywhere in gpuweave; the job's epoch ends, in steps, come from the profile source
(:class:`~gpuweave.workload.profile_source.EpochStepSource`, Pollux's job model), scaled to the job's work. Walking
from the segment's start, an epoch whose exact end ``x`` falls after an interval tick starts its last stretch at
the latest tick before ``x`` (progress up to there is exact); the epoch then ends at
``start + round(x - start)`` with its progress exactly at the epoch's end, and the next epoch's stretch starts
there. The job completes at the end of its last epoch; one that ends in the first (rounded: zeroth) second of an
interval completes at that interval's tick, but Pollux's simulator learns it only while stepping the interval, so
the tick's decision still sees the job holding its GPUs: its completion event is one floating-point step after the
tick (the JCT differs by that step, 1e-11 s). Interval ticks are the policy's round grid ``k x L`` (the
simulator's own ticks). A stop at a tick sees exactly the progress Pollux's simulator would. An elastic job
(moldable, on another GPU count than its trace's) counts its work in steps at its trace's count: a step on ``n``
GPUs is worth the ratio of the epoch's gains at the two effective batches
(``EpochStepSource.epoch_step_factors``), so its rate changes from epoch to epoch as its statistical efficiency
does in Pollux's simulator.

Complexity: O(epochs walked) per walk (a start, completion prediction, stop or query of a running job); a query
resumes at the last epoch end an earlier one reached on the same placement, so a round's queries cost the epochs
ended since the last round. Epoch ends are computed once per (job type, GPUs, work).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from gpuweave.cluster.adaptive_clock import Adaptation
    from gpuweave.cluster.state import JobState
    from gpuweave.workload.profile_source import EpochStepSource


class EpochClock(Protocol):
    """What the book, the view and the simulator ask a clock that is not rate x time: this module's
    :class:`EpochRounding`, and :class:`~gpuweave.cluster.adaptive_clock.AdaptiveClock` (Pollux's adaptive jobs)."""

    grid: float
    adaptations: list[Adaptation]  # records of adaptive jobs not yet handed to the run's sink (else always empty)

    def progress(self, js: JobState, t: float) -> float: ...

    def stop(self, js: JobState, t: float) -> float: ...

    def finish(self, js: JobState) -> float: ...

    def epochs_done(self, js: JobState, t: float) -> int: ...


class EpochRounding:
    """Progress and completion of running jobs under Pollux's per-epoch rounding (see the module docstring)."""

    __slots__ = ("_source", "grid", "_ends", "_factors", "_cursors", "adaptations")

    def __init__(self, source: EpochStepSource, grid: float) -> None:
        if not grid > 0:
            raise ValueError(f"the interval grid must be positive, got {grid!r}")
        self._source = source
        self.grid = float(grid)
        self.adaptations: list[Adaptation] = []  # its jobs keep their batches: nothing to record
        self._ends: dict[tuple[str, int, float], list[float]] = {}
        self._factors: dict[tuple[str, int, int], list[float]] = {}
        # Per job, the last epoch end a walk reached on the job's current placement (its version): a later walk on
        # it starts there, so each round's queries cost the epochs since the last round, not since the start.
        self._cursors: dict[str, tuple[int, float, float, int]] = {}

    def epoch_ends(self, job_type: str, num_gpus: int, work: float) -> list[float]:
        """Steps at the end of each epoch of a job, the last one exactly ``work``."""
        key = (job_type, num_gpus, work)
        ends = self._ends.get(key)
        if ends is None:
            raw = [float(v) for v in self._source.epoch_steps(job_type, num_gpus)]
            scale = work / raw[-1]
            ends = [v * scale for v in raw[:-1]] + [work]
            self._ends[key] = ends
        return ends

    def epoch_factors(self, job_type: str, num_gpus: int, gpus: int) -> list[float] | None:
        """Per epoch, what a step on ``gpus`` GPUs is worth in the job's steps (on ``num_gpus``); None: 1 each."""
        if gpus == num_gpus:
            return None
        key = (job_type, num_gpus, gpus)
        factors = self._factors.get(key)
        if factors is None:
            factors = self._factors[key] = [float(f) for f in self._source.epoch_step_factors(job_type, num_gpus, gpus)]
        return factors

    def epochs_done(self, js: JobState, t: float) -> int:
        """Epochs the job has finished by ``t``, as Pollux's simulator counts them."""
        job = js.job
        if js.placement is None or t <= js.productive_start:
            return bisect_right(self.epoch_ends(job.job_type, job.num_gpus, float(job.work)), job.work - js.remaining)
        return self._walk(js, t)[2]

    def _walk(self, js: JobState, until: float) -> tuple[float, float, int]:
        """``(steps done, time, epochs done)`` of a running job, walked from its productive start to ``until`` or to
        its completion, whichever comes first."""
        job = js.job
        ends = self.epoch_ends(job.job_type, job.num_gpus, float(job.work))
        assert js.placement is not None
        gpus = sum(k for _, k in js.placement)
        factors = self.epoch_factors(job.job_type, job.num_gpus, gpus)
        grid, remember = self.grid, until != math.inf
        cursor = self._cursors.get(job.job_id)
        if cursor is not None and cursor[0] == js.version and cursor[1] <= until:
            _, start, done, k = cursor  # resumed at the last epoch end walked to on this placement
        else:
            done = float(job.work) - js.remaining
            start = js.productive_start
            k = bisect_right(ends, done)
        while k < len(ends):
            end = ends[k]
            rate = js.rate if factors is None else js.rate * factors[k]
            exact = start + (end - done) / rate
            last_tick = math.ceil(exact / grid) * grid - grid  # the latest interval start before the epoch's end
            if last_tick > start:
                if until <= last_tick:
                    return done + rate * (until - start), until, k
                done += rate * (last_tick - start)
                start = last_tick
            stretch = round((end - done) / rate)
            if stretch == 0 and k + 1 == len(ends) and start % grid == 0:
                # The job ends in an interval's first second: Pollux's simulator finds out while stepping that
                # interval, after the tick's decision saw the job running, so its GPUs stay taken through it.
                return end, math.nextafter(start, math.inf), k + 1
            if until < start + stretch:  # linear until the (rounded) end, at the epoch's end if rounded up
                return min(done + rate * (until - start), end), until, k
            done, start, k = end, start + stretch, k + 1
            if remember:
                self._cursors[job.job_id] = (js.version, start, done, k)
        return done, start, k

    def progress(self, js: JobState, t: float) -> float:
        """Steps a running job has done from its productive start to ``t`` (0 during its delay)."""
        if t <= js.productive_start:
            return 0.0
        done, _, _ = self._walk(js, t)
        return done - (float(js.job.work) - js.remaining)

    def stop(self, js: JobState, t: float) -> float:
        """A running job leaves its GPUs at ``t``: its :meth:`progress` (nothing else is kept per job)."""
        return self.progress(js, t)

    def finish(self, js: JobState) -> float:
        """When a running job completes if nothing stops it."""
        _, t, _ = self._walk(js, math.inf)
        return t
