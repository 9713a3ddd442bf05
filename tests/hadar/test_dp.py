"""A4-A6 and the literal variant: FIND_ALLOC, the DP against brute force, task-level heterogeneity."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuweave.cluster.book import ClusterBook
from gpuweave.cluster.policies import make_policy
from gpuweave.cluster.simulator import Simulator
from gpuweave.hadar.dp import HadarDP, hadar_round, literal_allocation
from gpuweave.hadar.price import PriceConstants
from gpuweave.hadar.problem import QueuedJob, RoundProblem
from gpuweave.workload.job import Job

from .conftest import POWER, nodes_of

RATES = {  # whole-job rates (V100, P100, K80) cons / uncons, small made-up table
    1: (np.array([10.0, 6.0, 2.0]), np.array([10.0, 6.0, 2.0])),
    2: (np.array([18.0, 11.0, 3.5]), np.array([12.0, 9.0, 0.0])),  # K80 spread absent
    4: (np.array([30.0, 20.0, 6.0]), np.array([22.0, 15.0, 5.0])),
}


def problem(servers, jobs, free=None, **kw):
    stype = np.array([t for t, _ in servers])
    cap = np.array([c for _, c in servers])
    return RoundProblem(stype, cap, cap.copy() if free is None else np.array(free), 3, jobs, **kw)


def qjob(key, W, remaining, **kw):
    cons, uncons = RATES[W]
    return QueuedJob(key, W, cons, uncons, remaining, kw.pop("total", remaining), **kw)


# ---------------------------------------------------------------- A4
@pytest.fixture
def a4_sim(gavel_profiles, monkeypatch):
    """Two servers (3 V100, 3 K80), one 4-GPU ResNet-18 job: only a mixed placement can hold it."""
    monkeypatch.setattr(ClusterBook, "check_feasible", lambda self: None)

    def make(policy):
        nodes = nodes_of([("V100", 3), ("K80", 3)])
        job = Job("j", 0.0, 4, 100_000.0, "ResNet-18 (batch size 32)")
        sim = Simulator(nodes, [job], policy, gavel_profiles, POWER)
        sim.book.arrive(sim.book.states[0])
        return sim

    return make


def test_a4_hadar_schedules_mixed_types(a4_sim):
    sim = a4_sim(make_policy("hadar"))
    decision = sim.policy.schedule(sim.view)
    placement = decision.assign["j"]
    assert (
        sorted(placement) == [(0, 3), (1, 1)]
        or sorted(placement) == [(0, 1), (1, 3)]
        or {n for n, _ in placement} == {0, 1}
    )
    assert sum(k for _, k in placement) == 4
    assert sim.view.rate(sim.book.states[0], placement) == pytest.approx(25.510, abs=1e-3)


@pytest.mark.parametrize("name", ["gavel", "tiresias", "yarn-cs"])
def test_a4_single_type_baselines_leave_it_waiting(a4_sim, name):
    sim = a4_sim(make_policy(name))
    assert not sim.policy.schedule(sim.view).assign


# ---------------------------------------------------------------- A5
def test_a5_none_when_too_few_free_gpus():
    p = problem([(0, 4), (2, 4)], [qjob("a", 4, 1000.0)], free=[2, 1])
    assert HadarDP(p).find_alloc(0, tuple(p.free)) is None


def test_a5_none_when_no_valid_candidate():
    # 2-GPU job, only two single-GPU K80 servers free: spreading on K80 is absent from the table.
    p = problem([(2, 1), (2, 1)], [qjob("a", 2, 1000.0)])
    dp = HadarDP(p)
    assert dp.candidates(0, (1, 1)) == []
    assert dp.find_alloc(0, (1, 1)) is None


def test_a5_none_when_payoff_not_positive():
    p = problem([(0, 4)], [qjob("a", 1, 1000.0)])
    dp = HadarDP(p, constants=PriceConstants(np.full(3, 1e9), np.full(3, 2e9), 1.0, 1, np.ones(1), np.ones(1)))
    assert dp.candidates(0, (4,)) and dp.find_alloc(0, (4,)) is None


def test_a5_returns_argmax_payoff_candidate():
    p = problem([(0, 2), (1, 4), (2, 4)], [qjob("a", 4, 50_000.0), qjob("b", 1, 100.0)])
    dp = HadarDP(p)
    F = (2, 3, 4)
    cands = dp.candidates(0, F)
    best = dp.find_alloc(0, F)
    assert best is not None and best.mu == pytest.approx(max(c.mu for c in cands))
    assert {a for a in (c.alloc for c in cands)} >= {((2, 4),)}  # packed on the K80 server is generated
    assert any(len(c.alloc) > 1 for c in cands)  # and mixed spreads


# ---------------------------------------------------------------- A6
def brute_force(dp: HadarDP) -> float:
    n = len(dp.p.jobs)
    best = 0.0
    for mask in itertools.product((0, 1), repeat=n):
        F = list(int(v) for v in dp.p.free)
        total = 0.0
        ok = True
        for i in range(n):
            if not mask[i]:
                continue
            c = dp.find_alloc(i, tuple(F))
            if c is None:
                ok = False
                break
            total += c.mu
            for h, k in c.alloc:
                F[h] -= k
        if ok:
            best = max(best, total)
    return best


instances = st.tuples(
    st.lists(st.tuples(st.integers(0, 2), st.integers(1, 4)), min_size=1, max_size=3),
    st.lists(st.tuples(st.sampled_from([1, 2, 4]), st.floats(50.0, 40_000.0), st.booleans()), min_size=1, max_size=8),
    st.integers(0, 5),
)


@settings(max_examples=40, deadline=None)
@given(instances)
def test_a6_dp_equals_brute_force(inst):
    servers, jobs, now = inst
    q = [qjob(i, W, rem, total=rem * 2, started=started) for i, (W, rem, started) in enumerate(jobs)]
    p = problem(servers, q, now_slot=now)
    result = HadarDP(p, max_states=10**9).solve()
    assert not result.fallback
    assert result.value == pytest.approx(brute_force(HadarDP(p)), rel=1e-9, abs=1e-9)
    # the plan is feasible and its payoffs add up to the value
    used = np.zeros(len(servers), dtype=int)
    for alloc in result.plan.values():
        for h, k in alloc:
            used[h] += k
    assert np.all(used <= p.capacity)


def test_state_budget_falls_back_to_greedy():
    q = [qjob(i, 1, 1000.0 * (i + 1)) for i in range(30)]
    p = problem([(0, 4), (1, 4), (2, 4)], q)
    res = HadarDP(p, max_states=5).solve()
    assert res.fallback and len(res.plan) == 12  # every GPU used by the greedy completion


# ---------------------------------------------------------------- literal variant
def test_literal_algorithm2_never_selects_a_job():
    q = [qjob("big", 4, 1000.0), qjob("a", 1, 500.0), qjob("b", 2, 800.0)]
    p = problem([(0, 2), (1, 2)], q)  # "big" cannot fit: the printed algorithm returns at once (A2)
    assert literal_allocation(p).plan == {}
    fixed = hadar_round(p)
    assert set(fixed.plan) == {"a", "b"}
    # A1: even when every job fits, comparing costs only never selects
    p2 = problem([(0, 4)], [qjob("a", 1, 500.0)])
    assert literal_allocation(p2).plan == {} and hadar_round(p2).plan
