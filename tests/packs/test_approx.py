"""pack-Approx: Theorem 5 invariants (spec 7 B1-B4, lemmas L1/L2/L4/L5) and the hand example (7 C)."""

from __future__ import annotations

import numpy as np
import pytest

from gpuweave.packs import evaluate, solve
from gpuweave.packs.exact_dp import exact_all_k
from gpuweave.packs.makepack import make_pack, packs_raw_cost
from gpuweave.packs.pack_approx import pack_approx_run

from .helpers import hand_profile, random_profile


def test_make_pack_bounds_with_k_equal_p():
    """B1 / L1: A_tot/p <= COST <= 2 A_tot/p + t_max for arbitrary sigma."""
    rng = np.random.default_rng(11)
    for _ in range(300):
        n = int(rng.integers(1, 30))
        p = int(rng.integers(1, 17))
        prof = random_profile(rng, n, p)
        rows = prof.times.tolist()
        sigma = rng.integers(1, p + 1, size=n).tolist()
        packs = make_pack(rows, sigma, p, p)
        cost = packs_raw_cost(rows, packs, sigma)
        a_tot = sum(rows[i][sigma[i] - 1] * sigma[i] for i in range(n))
        t_max = max(rows[i][sigma[i] - 1] for i in range(n))
        assert a_tot / p <= cost * (1 + 1e-9)
        assert cost <= (2 * a_tot / p + t_max) * (1 + 1e-9)
        assert sorted(i for b in packs for i in b) == list(range(n))
        assert all(sum(sigma[i] for i in b) <= p for b in packs)


def test_pack_approx_raw_is_a_3_approximation_and_lemmas_hold():
    """B2 (>= 400 instances, n <= 8), B3 (monotone A_tot and t_max), L4/L5 against the optimum."""
    rng = np.random.default_rng(12)
    worst = 0.0
    for _ in range(400):
        n = int(rng.integers(1, 9))
        p = int(rng.integers(1, 9))
        prof = random_profile(rng, n, p)
        rows = prof.times.tolist()
        opt_res = exact_all_k(prof, [p])[p]
        opt = opt_res.cost
        run = pack_approx_run(rows, n, p, p, reassign_each=False, record=True)
        assert run.cost <= 3 * opt * (1 + 1e-9)
        worst = max(worst, run.cost / opt)
        a = [s.a_tot for s in run.steps]
        tm = [s.t_max for s in run.steps]
        assert all(y >= x * (1 - 1e-9) for x, y in zip(a, a[1:]))
        assert all(y <= x * (1 + 1e-9) for x, y in zip(tm, tm[1:]))
        a_opt = sum(rows[i][opt_res.sigma[i] - 1] * opt_res.sigma[i] for i in range(n))
        for step in run.steps:
            if step.t_max > opt * (1 + 1e-9):
                assert all(s <= so for s, so in zip(step.sigma, opt_res.sigma))  # L4
                assert step.a_tot <= a_opt * (1 + 1e-9)
                assert step.a_tot / p < step.t_max  # L5
    assert worst >= 1.0


def test_variant_b_never_worse_than_a_never_worse_than_raw():
    """B4 for every instance and every k."""
    rng = np.random.default_rng(13)
    for _ in range(150):
        n = int(rng.integers(1, 15))
        p = int(rng.integers(1, 10))
        prof = random_profile(rng, n, p)
        for k in range(1, p + 1):
            b = solve("pack-approx", prof, k).cost
            a = solve("pack-approx-a", prof, k).cost
            raw = solve("pack-approx-raw", prof, k).cost
            assert b <= a * (1 + 1e-9) and a <= raw * (1 + 1e-9)


def test_sigma_trajectory_does_not_depend_on_k():
    prof = random_profile(np.random.default_rng(14), 12, 8)
    rows = prof.times.tolist()
    trajs = [
        [s.sigma for s in pack_approx_run(rows, 12, 8, k, reassign_each=False, record=True).steps] for k in (2, 5, 8)
    ]
    assert trajs[0] == trajs[1] == trajs[2]


def test_hand_example_pack_approx():
    prof = hand_profile()
    run = pack_approx_run(prof.times.tolist(), 3, 4, 4, reassign_each=False, record=True)
    assert [s.sigma for s in run.steps] == [[1, 1, 1], [2, 1, 1], [2, 2, 1]]
    assert [s.raw_cost for s in run.steps] == [12.0, 8.0, 9.0]
    assert run.steps[2].packs == [[0, 1], [2]] and run.steps[2].a_tot / 4 == 25 / 4
    assert run.cost == 8.0
    sched = solve("pack-approx", prof, 4)
    assert sched.cost == 8.0 and [(pk.tasks, pk.procs) for pk in sched.packs] == [((0, 1, 2), (2, 1, 1))]
    m = evaluate(prof, sched)
    assert m.packing_ratio == pytest.approx(0.71875) and m.relative_response_time == pytest.approx(1.0625)
    assert solve("pack-approx-raw", prof, 2).cost == 9.0
    assert solve("pack-approx", prof, 2).cost == 8.0
