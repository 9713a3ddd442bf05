"""Philly-like synthetic job generator, with the distributions of Gavel's built-in generator.

Source: Gavel, ``scheduler/utils.py`` (stanford-futuredata/gavel@c4fa400; Narayanan et al., OSDI'20), as
summarised in the shared Gavel data README (facts only, no code reused):

* scale factor (GPUs) from the "Philly distribution": 1, 2, 4, 8 with probabilities 0.7, 0.1, 0.15, 0.05;
* run time on a V100: ``60 * 10**U(1.5, 3)`` s with probability 0.8, else ``60 * 10**U(3, 4)`` s
  (about 32 s ... 17 h and 17 h ... 7 days);
* ``work = duration * rate(job_type, "V100", scale, consolidated=True)`` iterations;
* optional priority weight 5 with probability 0.2 (else 1); optional SLO factor in {1.2, 2, 10} with
  probabilities 0.33/0.34/0.33, turned into ``deadline = arrival + slo * duration`` (our reading: the job
  must finish within ``slo`` times its isolated V100 run time) and kept as ``attrs["slo"]``.

gpuweave's own choices, stated:

* arrivals are a Poisson process of ``rate_per_hour`` jobs/hour: exponential gaps with mean
  ``3600 / rate_per_hour`` s; the first job arrives at 0;
* the job type is uniform over the profile store's job types with a positive consolidated V100 throughput at
  the drawn scale (Gavel drew from all its templates, including ones that cannot run multi-GPU);
* all random numbers come from one ``numpy.random.default_rng(seed)``, drawn as whole vectors in a fixed
  order (gaps, scale, long/short, exponent, type, then the optional priority and SLO draws), so the same
  seed gives the same jobs and turning the options on does not change the base jobs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuweave.checks import RATE_PER_HOUR, number
from gpuweave.errors import InputError
from gpuweave.limits import check_limit
from gpuweave.workload.job import Job
from gpuweave.workload.pollux import PolluxJobModel
from gpuweave.workload.profiles import ProfileStore, load_profiles


@dataclass(frozen=True, slots=True)
class PhillyDistribution:
    """Parameters of the Philly-like generator (defaults: Gavel's)."""

    scale_factors: tuple[int, ...] = (1, 2, 4, 8)
    scale_probabilities: tuple[float, ...] = (0.7, 0.1, 0.15, 0.05)
    short_probability: float = 0.8
    short_exponent: tuple[float, float] = (1.5, 3.0)
    long_exponent: tuple[float, float] = (3.0, 4.0)
    high_priority_probability: float = 0.2
    high_priority: float = 5.0
    slo_factors: tuple[float, ...] = (1.2, 2.0, 10.0)
    slo_probabilities: tuple[float, ...] = (0.33, 0.34, 0.33)


GAVEL_PHILLY = PhillyDistribution()


def generate_philly_like(
    num_jobs: int,
    rate_per_hour: float,
    seed: int,
    profiles: ProfileStore | PolluxJobModel | None = None,
    *,
    reference_gpu: str = "V100",
    with_priority: bool = False,
    with_slo: bool = False,
    distribution: PhillyDistribution = GAVEL_PHILLY,
) -> list[Job]:
    """Generate ``num_jobs`` Philly-like jobs arriving at ``rate_per_hour`` jobs/hour, reproducibly from ``seed``."""
    if num_jobs < 1:
        raise InputError(f"expected at least 1 job, got {num_jobs}", field="jobs")
    check_limit("trace_jobs", num_jobs, "jobs to generate", field="jobs")
    number(rate_per_hour, RATE_PER_HOUR, field="rate", what="arrival rate")
    store = profiles if profiles is not None else load_profiles()
    names_by_scale = _runnable_types(store, distribution, reference_gpu)

    rng = np.random.default_rng(seed)
    gaps = rng.exponential(3600.0 / rate_per_hour, size=num_jobs)
    arrivals = np.concatenate(([0.0], np.cumsum(gaps[1:])))
    scales = rng.choice(
        np.asarray(distribution.scale_factors), size=num_jobs, p=np.asarray(distribution.scale_probabilities)
    )
    short = rng.random(num_jobs) < distribution.short_probability
    unit = rng.random(num_jobs)
    low = np.where(short, distribution.short_exponent[0], distribution.long_exponent[0])
    high = np.where(short, distribution.short_exponent[1], distribution.long_exponent[1])
    durations = 60.0 * 10.0 ** (low + (high - low) * unit)
    type_draws = rng.random(num_jobs)
    priorities = np.ones(num_jobs)
    slos = np.full(num_jobs, np.nan)
    if with_priority:
        priorities = np.where(
            rng.random(num_jobs) < distribution.high_priority_probability, distribution.high_priority, 1.0
        )
    if with_slo:
        slos = rng.choice(
            np.asarray(distribution.slo_factors), size=num_jobs, p=np.asarray(distribution.slo_probabilities)
        )

    width = len(str(num_jobs - 1))
    jobs: list[Job] = []
    for i in range(num_jobs):
        scale = int(scales[i])
        names = names_by_scale[scale]
        job_type = names[int(type_draws[i] * len(names))]
        duration = float(durations[i])
        arrival = float(arrivals[i])
        attrs: dict[str, object] = {"note": f"philly-like generator (Gavel distribution), seed {seed}"}
        deadline = None
        if with_slo:
            attrs["slo"] = float(slos[i])
            deadline = arrival + float(slos[i]) * duration
        jobs.append(
            Job(
                job_id=f"job-{i:0{width}d}",
                arrival=arrival,
                num_gpus=scale,
                work=duration * store.rate(job_type, reference_gpu, scale, True),
                job_type=job_type,
                priority=float(priorities[i]),
                deadline=deadline,
                duration=duration,
                attrs=attrs,
            )
        )
    return jobs


def _runnable_types(
    store: ProfileStore | PolluxJobModel, distribution: PhillyDistribution, reference_gpu: str
) -> dict[int, list[str]]:
    """Per scale factor of the distribution, the job types with a positive rate on that many reference GPUs."""
    names_by_scale: dict[int, list[str]] = {}
    for scale in distribution.scale_factors:
        names = [
            job_type
            for job_type in store.job_types()
            if store.has(job_type, reference_gpu, scale, True) and store.rate(job_type, reference_gpu, scale, True) > 0
        ]
        if not names:
            raise InputError(
                f"the profile store has no job type runnable on {scale} x {reference_gpu}",
                file=store.source,
                field="job_type",
            )
        names_by_scale[scale] = names
    return names_by_scale
