"""Exact solvers: subset DP = enumeration = ILP (spec 7 A2), matching for k=2 (A3), A4, 3-Partition (A5), hand (C)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from gpuweave.packs import solve, syn_ref
from gpuweave.packs.exact_dp import exact_all_k
from gpuweave.packs.exact_enum import enumerate_optimum
from gpuweave.packs.exact_ilp import ilp_optimum
from gpuweave.packs.matching import matching_k2
from gpuweave.packs.model import Profile

from .helpers import hand_profile, random_profile


def test_subset_dp_equals_partition_enumeration_for_all_k():
    rng = np.random.default_rng(1)
    for trial in range(40):
        n = int(rng.integers(1, 9))
        p = int(rng.integers(1, 7))
        prof = random_profile(rng, n, p)
        ks = list(range(1, p + 1))
        dp = exact_all_k(prof, ks)
        for k in ks:
            enum_cost, _ = enumerate_optimum(prof, k)
            assert math.isclose(dp[k].cost, enum_cost, rel_tol=1e-9), (trial, n, p, k)
            sched = solve("exact", prof, k)
            sched.validate(prof, k)
            assert math.isclose(sched.cost, enum_cost, rel_tol=1e-9)


def test_subset_dp_equals_ilp():
    rng = np.random.default_rng(2)
    for trial in range(12):
        n = int(rng.integers(2, 7))
        p = int(rng.integers(2, 6))
        k = int(rng.integers(1, p + 1))
        prof = random_profile(rng, n, p)
        opt = exact_all_k(prof, [k])[k].cost
        ilp, packs, sigma = ilp_optimum(prof, k)
        assert math.isclose(ilp, opt, rel_tol=1e-7), (trial, n, p, k)
        sched = solve("exact-ilp", prof, k)
        sched.validate(prof, k)


def test_ilp_on_an_eight_task_instance():
    prof = random_profile(np.random.default_rng(8), 8, 4)
    assert math.isclose(ilp_optimum(prof, 3)[0], exact_all_k(prof, [3])[3].cost, rel_tol=1e-7)


def test_matching_equals_optimum_for_k2():
    rng = np.random.default_rng(3)
    for trial in range(60):
        n = int(rng.integers(1, 10))
        p = int(rng.integers(2, 9))
        prof = random_profile(rng, n, p)
        cost, packs, sigma = matching_k2(prof)
        assert math.isclose(cost, exact_all_k(prof, [2])[2].cost, rel_tol=1e-9), trial
        solve("matching", prof, 2).validate(prof, 2)


def test_opt1_is_the_baseline_and_opt_k_is_non_increasing():
    rng = np.random.default_rng(4)
    for _ in range(30):
        n = int(rng.integers(1, 9))
        p = int(rng.integers(1, 9))
        prof = random_profile(rng, n, p)
        res = exact_all_k(prof, list(range(1, p + 1)))
        assert math.isclose(res[1].cost, prof.baseline_cost(), rel_tol=1e-9)
        costs = [res[k].cost for k in range(1, p + 1)]
        assert all(b <= a * (1 + 1e-9) for a, b in zip(costs, costs[1:]))
        for k in range(n, p + 1):
            assert math.isclose(res[k].cost, res[n].cost if n <= p else res[p].cost, rel_tol=1e-9)


def three_partition_instance(a: list[int], B: int, k: int) -> Profile:
    """Theorem 2's reduction: p = B + (k-3)(B+1); 3n tasks t = 1 + 1/a_i below a_i processors, else 1;
    n(k-3) extra tasks t = max((B+1)/j, 1)."""
    n = len(a) // 3
    p = B + (k - 3) * (B + 1)
    rows = [[1 + 1 / ai if j < ai else 1.0 for j in range(1, p + 1)] for ai in a]
    rows += [[max((B + 1) / j, 1.0) for j in range(1, p + 1)] for _ in range(n * (k - 3))]
    return Profile(np.asarray(rows), tuple(f"T{i}" for i in range(len(rows))))


@pytest.mark.parametrize(
    "a, k, expected",
    [
        ((3, 3, 4, 2, 3, 5), 3, 2.0),
        ((3, 3, 4, 2, 3, 5), 4, 2.0),
        ((1, 1, 1, 1, 7, 9), 3, 2 + 1 / 9),
        ((1, 1, 1, 1, 7, 9), 4, 2.1),
    ],
)
def test_three_partition_reduction(a, k, expected):
    prof = three_partition_instance(list(a), 10, k)
    assert prof.p == (10 if k == 3 else 21)
    assert math.isclose(exact_all_k(prof, [k])[k].cost, expected, rel_tol=1e-9)


def test_hand_example_optimum():
    prof = hand_profile()
    res = exact_all_k(prof, [1, 2, 3, 4])
    assert [res[k].cost for k in (1, 2, 3)] == [9.0, 7.0, 7.0]
    sched = solve("exact", prof, 2)
    packs = {tuple(sorted(pk.tasks)): pk.procs for pk in sched.packs}
    assert packs == {(1, 2): (3, 1), (0,): (4,)}


def test_exact_n10_p16_every_k_is_fast_enough_to_use(record_property):
    """Target: OPT for n = 10, p = 16, any k, in well under 10 s (time recorded, not asserted)."""
    prof = syn_ref(10, 16, 0)
    t0 = time.perf_counter()
    res = exact_all_k(prof, list(range(1, 17)))
    elapsed = time.perf_counter() - t0
    record_property("exact_n10_p16_all_k_seconds", elapsed)
    assert math.isclose(res[10].cost, res[16].cost, rel_tol=1e-9)
    assert res[2].cost >= res[10].cost


def test_exact_rejects_too_many_tasks():
    from gpuweave.errors import InputError

    prof = syn_ref(15, 4, 0)
    with pytest.raises(InputError, match="at most 14 tasks"):
        solve("exact", prof, 2)
