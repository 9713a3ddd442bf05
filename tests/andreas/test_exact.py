"""Exact MILP (HiGHS) against the brute-force oracle, and RG's optimality gap on tiny instances."""

from __future__ import annotations

import numpy as np
import pytest

from gpuweave.andreas.bruteforce import all_plans, brute_force
from gpuweave.andreas.milp import exact_optimum, optimality_gap
from gpuweave.andreas.randomized_greedy import randomized_greedy

from .test_rg_batch import random_instance


@pytest.mark.parametrize("maximal", [True, False])
def test_milp_equals_brute_force(maximal):
    for s in range(12):
        inst = random_instance(
            np.random.default_rng(50 + s), n_jobs=int(1 + s % 5), n_nodes=int(2 + s % 2), h_wc=300.0 * (s % 2)
        )
        m = exact_optimum(inst, maximal=maximal)
        b = brute_force(inst, maximal=maximal)
        assert m.f == pytest.approx(b.f, rel=1e-9, abs=1e-12)
        # the MILP's plan is feasible and has the value it reports
        from gpuweave.andreas.cost import proxy

        assert proxy(inst, m.node_of, m.cfg_of)[0] == pytest.approx(m.f, rel=1e-9, abs=1e-12)


def test_rg_is_never_below_the_optimum_and_its_plan_is_maximal():
    gaps = []
    for s in range(12):
        inst = random_instance(np.random.default_rng(80 + s), n_jobs=int(1 + s % 5), n_nodes=3)
        opt = exact_optimum(inst)
        rg = randomized_greedy(inst, s)
        assert rg.f >= opt.f - 1e-9
        gaps.append(optimality_gap(rg.f, opt.f))
        plans_n, plans_k = all_plans(inst, maximal=True)
        assert ((plans_n == rg.node_of) & (plans_k == rg.cfg_of)).all(axis=1).any()
    assert min(gaps) == 0.0  # RG finds the optimum on some of them


def test_armida_t1200_exact_optimum(inst1200):
    opt = exact_optimum(inst1200)
    assert opt.f == pytest.approx(brute_force(inst1200).f)
    assert opt.f <= 0.163753 + 1e-6  # RG's value (AC4) is an upper bound
    assert brute_force(inst1200, variant="paper").f > 0
    assert optimality_gap(0.0, 0.0) == 0.0
