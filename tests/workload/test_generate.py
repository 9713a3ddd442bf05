"""Philly-like generator: Gavel's distributions, determinism per seed, and the bundled sample trace."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuweave.errors import InputError
from gpuweave.workload.profiles import ProfileStore
from gpuweave.workload.traces import generate_philly_like, read_trace, write_trace


@pytest.fixture(scope="module")
def many(profiles):
    return generate_philly_like(20_000, 10.0, seed=7, profiles=profiles)


def test_scale_factor_frequencies(many):
    counts = np.bincount([job.num_gpus for job in many], minlength=9)
    shares = counts[[1, 2, 4, 8]] / len(many)
    # 20,000 draws: a 4-sigma band is below 0.013 for every share.
    assert shares == pytest.approx([0.7, 0.1, 0.15, 0.05], abs=0.013)
    assert counts.sum() == counts[[1, 2, 4, 8]].sum()


def test_durations_follow_the_two_log_uniform_ranges(many):
    minutes = np.array([job.duration for job in many]) / 60
    exponents = np.log10(minutes)
    assert exponents.min() >= 1.5 and exponents.max() <= 4.0
    long = exponents > 3
    assert long.mean() == pytest.approx(0.2, abs=0.015)  # only the long branch goes above 10^3 minutes
    short = exponents[~long]
    assert np.histogram(short, bins=3, range=(1.5, 3.0))[0] / len(short) == pytest.approx([1 / 3] * 3, abs=0.02)


def test_poisson_arrivals(many):
    arrivals = np.array([job.arrival for job in many])
    assert arrivals[0] == 0 and np.all(np.diff(arrivals) > 0)
    gaps = np.diff(arrivals)
    assert gaps.mean() == pytest.approx(360.0, rel=0.03)  # 10 jobs/hour
    assert gaps.std() == pytest.approx(360.0, rel=0.05)  # exponential: std == mean


def test_types_are_runnable_and_work_is_duration_times_v100_rate(many, profiles):
    for job in many[:2000]:
        rate = profiles.rate(job.job_type, "V100", job.num_gpus, True)
        assert rate > 0
        assert job.work == pytest.approx(job.duration * rate)
    single_only = {"A3C", "CycleGAN"}
    assert not any(job.job_type in single_only and job.num_gpus > 1 for job in many)
    assert {job.job_type for job in many if job.num_gpus == 1} == set(profiles.job_types())


def test_defaults_have_no_priority_or_deadline(many):
    assert all(job.priority == 1 and job.deadline is None for job in many[:500])


def test_priority_and_slo_options_keep_the_base_jobs(profiles):
    base = generate_philly_like(3000, 5.0, seed=1, profiles=profiles)
    rich = generate_philly_like(3000, 5.0, seed=1, profiles=profiles, with_priority=True, with_slo=True)
    assert [(j.arrival, j.num_gpus, j.job_type, j.work) for j in base] == [
        (j.arrival, j.num_gpus, j.job_type, j.work) for j in rich
    ]
    high = np.mean([j.priority == 5.0 for j in rich])
    assert high == pytest.approx(0.2, abs=0.03)
    slos = [j.attrs["slo"] for j in rich]
    assert set(slos) == {1.2, 2.0, 10.0}
    for job in rich[:100]:
        assert job.deadline == pytest.approx(job.arrival + job.attrs["slo"] * job.duration)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), jobs=st.integers(1, 60), rate=st.floats(0.1, 100))
def test_same_seed_same_jobs(seed, jobs, rate):
    a = generate_philly_like(jobs, rate, seed)
    b = generate_philly_like(jobs, rate, seed)
    assert a == b
    assert len(a) == jobs and len({j.job_id for j in a}) == jobs


def test_different_seeds_differ():
    assert generate_philly_like(50, 4.0, 0) != generate_philly_like(50, 4.0, 1)


def test_bad_arguments():
    with pytest.raises(InputError, match="at least 1 job"):
        generate_philly_like(0, 4.0, 0)
    with pytest.raises(InputError, match="arrival rate: expected a number of jobs/hour from 0.001"):
        generate_philly_like(5, 0.0, 0)
    tiny = ProfileStore.from_rows([("toy", "V100", 1, True, 1.0)])
    with pytest.raises(InputError, match="2 x V100"):
        generate_philly_like(5, 1.0, 0, tiny)


def test_bundled_sample_is_the_documented_generator_output(tmp_path):
    bundled = resources.files("gpuweave.workload").joinpath("data", "traces", "philly-like-200.csv")
    regenerated = tmp_path / "philly-like-200.csv"
    write_trace(generate_philly_like(200, 4.0, 0), regenerated)
    # Equal up to the last bit of numpy's transcendental functions, which numpy releases may change (2.4 moved
    # one work value by one ulp): text fields exactly, numbers to 1e-12 relative.
    ours = [line.split(",") for line in regenerated.read_text(encoding="utf-8").splitlines()]
    theirs = [line.split(",") for line in bundled.read_text(encoding="utf-8").splitlines()]
    assert len(ours) == len(theirs) and ours[0] == theirs[0]
    for mine, bundled_row in zip(ours[1:], theirs[1:]):
        assert len(mine) == len(bundled_row)
        for a, b in zip(mine, bundled_row):
            try:
                x, y = float(a), float(b)
            except ValueError:
                assert a == b
            else:
                assert x == pytest.approx(y, rel=1e-12, abs=0.0)
    jobs = read_trace(str(bundled))
    assert len(jobs) == 200 and max(j.num_gpus for j in jobs) <= 8
