"""Algorithm 1 = the O(kp^2) DP = brute force (spec 7 A1), the hand example (7 C) and the key lemma."""

from __future__ import annotations

import heapq
import math

import numpy as np
import pytest

from gpuweave.packs.onepack import optimal_one_pack, reassign
from gpuweave.packs.onepack_dp import one_pack_dp

from .helpers import brute_one_pack, hand_profile, random_times


def test_algorithm1_equals_dp_and_brute_force_on_500_profiles():
    rng = np.random.default_rng(2013)
    for _ in range(500):
        p = int(rng.integers(1, 9))
        k = int(rng.integers(1, min(5, p) + 1))
        t = random_times(rng, k, p)
        tasks = list(range(k))
        sigma, cost = optimal_one_pack(t.tolist(), tasks, p)
        dp_sigma, dp_cost = one_pack_dp(t, tasks, p)
        brute = brute_one_pack(t, tasks, p)
        assert math.isclose(cost, brute, rel_tol=1e-9)
        assert math.isclose(dp_cost, brute, rel_tol=1e-9)
        assert sum(sigma) == p and min(sigma) >= 1  # Algorithm 1 hands out every processor
        assert math.isclose(max(t[i, s - 1] for i, s in zip(tasks, sigma)), cost, rel_tol=1e-9)
        assert sum(dp_sigma) <= p and min(dp_sigma) >= 1
        assert math.isclose(max(t[i, s - 1] for i, s in zip(tasks, dp_sigma)), dp_cost, rel_tol=1e-9)


def test_hand_example_algorithm1_and_dp():
    prof = hand_profile()
    rows = prof.times.tolist()
    assert optimal_one_pack(rows, [0, 1, 2], 4) == ([2, 1, 1], 8.0)
    assert optimal_one_pack(rows, [0, 1], 4) == ([2, 2], 6.0)
    assert one_pack_dp(prof.times, [0, 1, 2], 4)[1] == 8.0
    assert one_pack_dp(prof.times, [0, 1], 4)[1] == 6.0


def test_key_lemma_of_theorem3_holds_after_every_iteration():
    """Spec 2.2: at the end of every iteration the head's time is <= t_{i,sigma(i)-1} for every i."""
    rng = np.random.default_rng(7)
    for _ in range(100):
        p = int(rng.integers(2, 12))
        k = int(rng.integers(1, p + 1))
        t = random_times(rng, k, p)
        ti = lambda i, j: math.inf if j == 0 else t[i, j - 1]  # noqa: E731
        sigma = [1] * k
        heap = [(-t[i, 0], i) for i in range(k)]
        heapq.heapify(heap)
        for _ in range(p - k):
            _, i = heapq.heappop(heap)
            sigma[i] += 1
            heapq.heappush(heap, (-ti(i, sigma[i]), i))
            head = -heap[0][0]
            assert all(head <= ti(r, sigma[r] - 1) for r in range(k))
        assert math.isclose(-heap[0][0], optimal_one_pack(t.tolist(), list(range(k)), p)[1], rel_tol=1e-9)


def test_ties_go_to_the_earlier_task_and_pack_larger_than_p_is_rejected():
    rows = [[4.0, 2.0, 2.0], [4.0, 2.0, 2.0]]
    assert optimal_one_pack(rows, [0, 1], 3) == ([2, 1], 4.0)
    with pytest.raises(ValueError):
        optimal_one_pack(rows, [0, 1], 1)


def test_reassign_rewrites_sigma_and_returns_cost():
    prof = hand_profile()
    sigma = [1, 1, 1]
    cost = reassign(prof.times.tolist(), [[0, 1], [2]], sigma, 4)
    assert sigma == [2, 2, 4] and cost == 8.0
