"""The CP-SAT exact solver: valid, never worse than FAR, and at least the lower bound."""

from __future__ import annotations

import random

import pytest

from gpuweave.hardware.catalog import get_mig_geometry
from gpuweave.mig.exact import exact
from gpuweave.mig.far import far
from gpuweave.mig.generator import workload
from gpuweave.mig.problem import lower_bound, make_problem
from gpuweave.mig.validate import validate_schedule

from .helpers import random_problem


def test_exact_small_batches_optimal_and_valid():
    rng = random.Random(8)
    for n, gpu in ((3, "A100"), (4, "A30"), (5, "A100")):
        p = random_problem(rng, gpu, n=n)
        r = far(p)
        e = exact(p, time_limit_s=30)
        assert validate_schedule(e.schedule, p).ok
        assert e.optimal_single
        assert e.schedule.makespan <= r.makespan + n * e.resolution + 1e-9
        assert e.schedule.makespan >= lower_bound(p) - 1e-9


def test_exact_beats_far_where_tree_is_wasteful():
    # two 4-slice-friendly tasks: FAR's tree can host only one size-4 node; the optimum runs the
    # second on the 3-slice instance at S4 in parallel
    p = make_problem(["a", "b"], [[40, 20, 10, 10, 9.9], [40, 20, 10, 10, 9.9]], "A100")
    e = exact(p, time_limit_s=20)
    assert e.optimal
    assert e.schedule.makespan == pytest.approx(10.0 + 0.20 + 0.20, abs=1e-3)  # two creates in sequence, then 10 s
    assert e.schedule.makespan <= far(p).makespan + 1e-9


def test_exact_general_model_proves_generated_batch():
    # a generated A100 batch (Mixed, WideTimes) where FAR is 1.1 % above the optimum: the general
    # model (any number of lifetimes per instance) proves it in well under a second
    p = workload("A100", "mixed", "wide", 6, seed=3)
    f = far(p)
    e = exact(p, time_limit_s=30)
    assert validate_schedule(e.schedule, p).ok
    assert e.optimal and e.optimal_single
    assert lower_bound(p) - 1e-9 <= e.bound <= e.schedule.makespan + p.n * e.resolution
    assert e.schedule.makespan < f.makespan - 0.5


def test_exact_general_never_worse_than_one_lifetime_model():
    rng = random.Random(21)
    for gpu, n, gpus in (("A100", 5, 1), ("A30", 5, 1), ("A100", 4, 2), ("A30", 4, 2)):
        p = random_problem(rng, gpu, n=n, gpus=gpus, inf_prob=0.2)
        general = exact(p, time_limit_s=20)
        single = exact(p, time_limit_s=20, max_lifetimes=1)
        assert general.optimal and single.optimal_single
        assert validate_schedule(general.schedule, p).ok and validate_schedule(single.schedule, p).ok
        assert general.bound <= single.schedule.makespan + n * general.resolution + 1e-9


def test_symmetric_image_of_a_schedule_is_valid():
    from gpuweave.mig.exact import _canonical, _swap_pairs

    labels = sorted(
        tuple(sorted(q.label for q in side))
        for left, right, _ in _swap_pairs(get_mig_geometry("A100"))
        for side in (left, right)
    )
    assert labels == sorted(
        [("1@0", "1@1", "2@0"), ("1@2", "1@3", "2@2"), ("1@0",), ("1@1",), ("1@2",), ("1@3",), ("1@4",), ("1@5",)]
    )
    for seed in range(3):
        p = workload("A100", "mixed", "wide", 12, seed=seed).with_gpus(2)
        s = far(p).schedule
        c = _canonical(s, p)
        assert validate_schedule(c, p).ok
        assert c.makespan == s.makespan
