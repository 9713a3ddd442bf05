"""A8/A9: HadarE bookkeeping, the Theorem 3 corollary, and the simulator's opt-in forking."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import Decision
from gpuweave.cluster.forking import copy_nodes, is_forked, merge_copies
from gpuweave.cluster.simulator import Simulator
from gpuweave.errors import InvalidDecisionError
from gpuweave.hadar.emulation import emulate
from gpuweave.hadar.forking import copy_id, parent_of, split_steps
from gpuweave.workload.job import Job

from .conftest import POWER, nodes_of


def test_a8_copy_ids_unique_and_invertible():
    ids = {copy_id(p, i, 100) for p in range(100) for i in range(1, 6)}
    assert len(ids) == 500
    for p in (0, 7, 99):
        for i in (1, 5):
            assert parent_of(copy_id(p, i, 100), 100) == (p, i)
    with pytest.raises(ValueError):
        copy_id(100, 1, 100)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.lists(st.floats(0.1, 100.0), min_size=1, max_size=6))
def test_a8_split_sums_exactly_and_is_proportional(steps, rates):
    r = {i: x for i, x in enumerate(rates)}
    share = split_steps(steps, r)
    assert sum(share.values()) == steps
    total = sum(rates)
    fastest = min(r, key=lambda i: (-r[i], i))
    for i, x in r.items():
        if i != fastest:
            assert abs(share[i] - steps * x / total) <= 0.5 + 1e-9


@settings(max_examples=12, deadline=None)
@given(
    st.sampled_from(["aws", "lab"]),
    st.sampled_from(["M-1", "M-3", "M-4", "M-5", "M-8"]),
    st.sampled_from([90.0, 180.0, 360.0]),
    st.integers(0, 3),
)
def test_a9_no_idle_node_before_the_last_round(cluster, mix, slot, seed):
    r = emulate("hadare", cluster, mix, slot, seed=seed)
    for k, assign in enumerate(r.assignments[:-1]):
        assert len(assign) == 5, f"round {k}: a node was left idle"
    # and HadarE never takes longer than Hadar by more than its extra per-round overhead allows
    assert r.ttd > 0 and all(j > 0 for j in r.jct)


class Forker(ClusterPolicy):
    name = "forker"
    default_round_length = None

    def __init__(self, placement, forks=True):
        super().__init__()
        self.placement = placement
        self.forks_jobs = forks

    def schedule(self, view):
        return Decision(assign={"x": self.placement}) if view.pending else Decision()


def test_simulator_fork_rates_add_up(gavel_profiles):
    nodes = nodes_of([("V100", 4), ("K80", 4)])
    jt = "ResNet-18 (batch size 32)"
    v, k = gavel_profiles.rate(jt, "V100", 1, True), gavel_profiles.rate(jt, "K80", 1, True)
    rec = Simulator(nodes, [Job("x", 0.0, 1, 1000.0, jt)], Forker(((0, 2), (1, 1))), gavel_profiles, POWER).run()
    assert rec.jobs[0].end == pytest.approx(1000.0 / (2 * v + k))
    assert rec.jobs[0].attained_gpu_seconds == pytest.approx(3 * rec.jobs[0].end)


def test_simulator_fork_needs_opt_in_and_whole_copies(gavel_profiles):
    nodes = nodes_of([("V100", 4), ("K80", 4)])
    jt = "ResNet-18 (batch size 32)"
    with pytest.raises(InvalidDecisionError, match="gang"):
        Simulator(
            nodes, [Job("x", 0.0, 1, 1000.0, jt)], Forker(((0, 1), (1, 1)), forks=False), gavel_profiles, POWER
        ).run()
    with pytest.raises(InvalidDecisionError, match="gang"):
        Simulator(nodes, [Job("x", 0.0, 2, 1000.0, jt)], Forker(((0, 2), (1, 1))), gavel_profiles, POWER).run()


def test_fork_rules_copy_nodes_and_merge():
    assert is_forked(2, ((0, 2), (1, 4)), 6) and not is_forked(2, ((0, 2),), 2) and not is_forked(2, ((0, 3),), 3)
    assert copy_nodes(((0, 2), (1, 4)), 2) == [0, 1, 1]
    assert copy_nodes(((3, 2),), 2) == [3] and copy_nodes(((0, 1), (1, 1)), 2) == [] and copy_nodes(None, 2) == []
    assert merge_copies({("a", 1): ((0, 2),), ("a", 2): ((1, 2),), ("b", 1): ((0, 1),), ("a", 3): ((0, 2),)}) == {
        "a": ((0, 4), (1, 2)),
        "b": ((0, 1),),
    }
