"""The CP-SAT exact solver: valid, never worse than FAR, and at least the lower bound."""

from __future__ import annotations

import random

import pytest

from gpuweave.mig.exact import exact
from gpuweave.mig.far import far
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
