"""The optimised Hadar DP (per-free-vector summaries, cached payoffs) decides exactly as its first form
(tests/hadar/reference_dp.py): same plan, value, FIND_ALLOC count, memo size and fallback on random rounds."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuweave.hadar import dp as fast
from gpuweave.hadar.problem import QueuedJob, RoundProblem

from . import reference_dp as ref

servers = st.lists(st.tuples(st.integers(0, 2), st.sampled_from([1, 2, 4, 4, 8])), min_size=1, max_size=12)
jobs = st.lists(
    st.tuples(
        st.sampled_from([1, 1, 1, 2, 3, 4, 8]),  # W
        st.lists(st.sampled_from([0.0, 1.0, 2.5, 6.0, 10.0, 18.0]), min_size=3, max_size=3),  # cons
        st.floats(0.5, 1.0),  # uncons / cons
        st.floats(10.0, 5e4),  # remaining
        st.integers(0, 5),  # arrival slot
        st.booleans(),  # running (a prev placement, when one fits)
        st.booleans(),  # packed only (HadarE copies)
    ),
    min_size=1,
    max_size=30,
)


def build(spec, job_spec, kappa, utility, free_frac):
    stype = np.array([t for t, _ in spec], dtype=np.int64)
    cap = np.array([c for _, c in spec], dtype=np.int64)
    free = np.maximum(0, np.floor(cap * free_frac).astype(np.int64)) if free_frac < 1 else cap.copy()
    used = [0] * len(spec)
    queue = []
    for k, (W, cons, ratio, rem, slot, running, packed) in enumerate(job_spec):
        cons = np.array(cons)
        if not cons.any():
            cons[k % 3] = 3.0
        uncons = cons * ratio if W > 1 else cons.copy()
        prev = None
        if running:  # a current placement on one server that still has W GPUs not yet used by another job
            for h, c in enumerate(cap.tolist()):
                if c - used[h] >= W and cons[stype[h]] > 0:
                    prev, used[h] = ((h, W),), used[h] + W
                    break
        queue.append(
            QueuedJob(
                key=f"j{k}",
                num_gpus=W,
                cons=cons,
                uncons=uncons,
                remaining=rem,
                total_work=rem * 1.5,
                arrival_slot=slot,
                prev=prev,
                started=prev is not None or k % 4 == 0,
                packed_only=packed and W <= int(cap.max()),
            )
        )
    return RoundProblem(stype, cap, free, 3, queue, now_slot=6, kappa=kappa, utility=utility)


def fields(cands):
    return [None if c is None else (c.alloc, c.rate, c.servers, c.cost, c.mu, c.order) for c in cands]


def same(a, b):
    assert a.plan == b.plan
    assert a.value == b.value
    assert (a.states, a.memo_keys, a.fallback) == (b.states, b.memo_keys, b.fallback)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spec=servers,
    job_spec=jobs,
    kappa=st.sampled_from([0.0, 1.0, 3.0]),
    utility=st.sampled_from(["raw", "normalized"]),
    free_frac=st.sampled_from([1.0, 0.5]),
    max_states=st.sampled_from([1, 4, 64, 10_000]),
)
def test_dp_decides_as_the_reference(spec, job_spec, kappa, utility, free_frac, max_states):
    """Plan, value, states, memo keys and fallback equal the reference's (``same`` asserts each)."""
    problem = build(spec, job_spec, kappa, utility, free_frac)
    same(fast.hadar_round(problem, max_states=max_states), ref.hadar_round(problem, max_states=max_states))
    same(
        fast.hadar_round(problem, max_states=max_states, backfill=True),
        ref.hadar_round(problem, max_states=max_states, backfill=True),
    )
    if len(problem.jobs) <= 10:  # the literal form explores both branches of every job once its memo is full
        same(
            fast.literal_allocation(problem, max_states=max_states),
            ref.literal_allocation(problem, max_states=max_states),
        )


def test_find_alloc_candidates_match_on_a_mixed_cluster():
    # Two server sizes within a type (not uniform: the cheapest server is found by a scan) and uniform ones.
    spec = [(0, 4), (0, 8), (0, 4), (1, 8), (1, 8), (2, 2)]
    job_spec = [(W, [10.0, 6.0, 2.0], 0.8, 900.0, 0, k % 2 == 0, False) for k, W in enumerate([1, 2, 4, 8, 3, 1])]
    problem = build(spec, job_spec, 1.0, "raw", 1.0)
    new, old = fast.HadarDP(problem), ref.HadarDP(problem)
    assert new._uniform == [False, True, True]
    for F in [(4, 8, 4, 8, 8, 2), (1, 3, 4, 0, 5, 2), (0, 0, 0, 1, 1, 0), (3, 1, 3, 8, 0, 1)]:
        for i in range(len(problem.jobs)):
            assert fields(new.candidates(i, F)) == fields(old.candidates(i, F))
            assert fields([new.find_alloc(i, F)]) == fields([old.find_alloc(i, F)])
