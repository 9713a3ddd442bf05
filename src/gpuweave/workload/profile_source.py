"""What a profile source is: the typed contract behind every ``profiles`` object a driver or policy reads.

Two sources exist: :class:`~gpuweave.workload.profiles.ProfileStore` (a throughput table) and
:class:`~gpuweave.workload.pollux.PolluxJobModel` (Pollux's application traces). A wrapper answers the same
questions over one of them: :class:`~gpuweave.live.rates.MeasuredProfiles` (a live run's measured rates first).
A job's allowed GPU types are not a source's business: they are the job's ``allowed_models``.

:class:`ProfileSource` holds the look-ups callers make on a source whatever it is (the simulator and the
policies' rates, run preparation's GPU models, trace checks' job types, the service's admission check).
:class:`PlacementRateSource` is the optional extra of a source whose rate depends on the GPUs per node, not
just on consolidated or not (Pollux's job model); a driver asks for it with ``isinstance(source,
PlacementRateSource)``. :class:`EpochStepSource` is the extra of a source that knows where a job's epochs end
(Pollux's job model again: the simulator then rounds each epoch's end as Pollux's simulator does). All are
structural (:class:`typing.Protocol`): a source need not inherit from them.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class ProfileSource(Protocol):
    """Isolated throughputs of job types on GPU allocations (see :mod:`gpuweave.workload.profiles`)."""

    def rate(self, job_type: str, gpu_model: str, num_gpus: int, consolidated: bool) -> float:
        """Steps (iterations) per second of the whole job of ``job_type`` on ``num_gpus`` GPUs of ``gpu_model``,
        on one server (``consolidated``) or spread over several. ``0.0`` = known infeasible (do not place it
        there); an entry the source does not have raises :class:`~gpuweave.errors.MissingProfileError`."""
        ...

    def has(self, job_type: str, gpu_model: str, num_gpus: int, consolidated: bool | None = None) -> bool:
        """True when :meth:`rate` answers (possibly 0.0) instead of raising; ``consolidated=None``: either one."""
        ...

    def job_types(self) -> tuple[str, ...]:
        """Every job type the source knows, sorted."""
        ...

    def gpu_models(self) -> tuple[str, ...]:
        """Every GPU model the source has rates for, sorted."""
        ...

    def scale_factors(self, job_type: str) -> tuple[int, ...]:
        """The GPU counts ``job_type`` is profiled on, ascending; MissingProfileError for an unknown type."""
        ...

    def __contains__(self, job_type: object) -> bool:
        """``job_type in source``: the source knows the job type."""
        ...


@runtime_checkable
class PlacementRateSource(Protocol):
    """A source whose rate depends on the exact GPUs per node of a placement (Pollux's job model)."""

    def placement_rate(self, job_type: str, gpu_model: str, counts: tuple[int, ...]) -> float:
        """Steps/s of ``job_type`` on ``counts`` GPUs per node of ``gpu_model``; 0.0 = do not place it there;
        MissingProfileError for an unknown job type."""
        ...


@runtime_checkable
class EpochStepSource(Protocol):
    """A source that knows where a job's epochs end (Pollux's job model): the simulator then runs Pollux's
    simulator's clock at epoch ends (:mod:`gpuweave.cluster.epoch_rounding`)."""

    def epoch_steps(self, job_type: str, num_gpus: int) -> list[float]:
        """Steps done at the end of each epoch of a job of ``job_type`` on ``num_gpus`` GPUs, ascending, the last
        one its whole work; MissingProfileError for an unknown job type."""
        ...

    def epoch_step_factors(self, job_type: str, num_gpus: int, gpus: int) -> list[float]:
        """Per epoch, what one step of the job on ``gpus`` GPUs is worth in its steps on ``num_gpus``."""
        ...
