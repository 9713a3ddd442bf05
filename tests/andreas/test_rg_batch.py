"""The batched RG equals the literal sequential loop of spec §6.3; proxy variants by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpuweave.andreas.catalog import load_costs, load_profile_table
from gpuweave.andreas.cost import proxy
from gpuweave.andreas.model import NodeSpec, QueueJob, build_instance
from gpuweave.andreas.randomized_greedy import RGConfig, randomized_greedy, randomized_greedy_reference


def random_instance(rng, n_jobs=None, n_nodes=None, scenario=1, ties=False, h_wc=0.0):
    prof = load_profile_table()
    apps = prof.apps()
    g = {1: (2, 1), 2: (4, 2)}[scenario]
    N = n_nodes or int(rng.integers(2, 7))
    nodes = [NodeSpec(f"n{i}", "V100" if i % 2 == 0 else "T4", g[i % 2]) for i in range(N)]
    n = n_jobs or int(rng.integers(1, 12))
    now = float(rng.uniform(0, 5000))
    jobs = []
    for j in range(n):
        app = apps[int(rng.integers(len(apps)))]
        ep = float(rng.uniform(5, 200)) if not ties else 50.0
        t = {k: ep * s for k, s in prof.configs(app).items()}
        due = now + (float(rng.uniform(0.3, 3.0)) * min(t.values()) if not ties else 3000.0)
        jobs.append(QueueJob(f"j{j}", float(rng.uniform(0, now)), due, float(rng.uniform(1e-4, 5e-4)), t))
    return build_instance(now, nodes, jobs, load_costs(), h_wc=h_wc)


@pytest.mark.parametrize("variant", ["code", "paper"])
def test_batched_equals_reference(variant):
    cfg = RGConfig(proxy_variant=variant, max_it=200)
    for s in range(12):
        rng = np.random.default_rng(s)
        inst = random_instance(rng, scenario=1 + s % 2, ties=(s % 4 == 3), h_wc=300.0 * (s % 2))
        a = randomized_greedy(inst, s, cfg)
        b = randomized_greedy_reference(inst, s, cfg)
        np.testing.assert_array_equal(a.node_of, b.node_of)
        np.testing.assert_array_equal(a.cfg_of, b.cfg_of)
        assert a.f == pytest.approx(b.f) and a.best_iteration == b.best_iteration


def test_roulette_and_inverse_rules_are_seeded_and_never_worse_than_greedy():
    for rule in (RGConfig(config_rule="roulette", max_it=50), RGConfig(swap_rule="inverse", max_it=50)):
        inst = random_instance(np.random.default_rng(5), n_jobs=8)
        a, b = randomized_greedy(inst, 1, rule), randomized_greedy(inst, 1, rule)
        np.testing.assert_array_equal(a.node_of, b.node_of)
        assert a.f <= a.f_greedy
        ref = randomized_greedy_reference(inst, 1, rule)
        np.testing.assert_array_equal(a.cfg_of, ref.cfg_of)


def test_proxy_variants_by_hand():
    """Two jobs on one 2-GPU V100 node and one on the T4: code vs paper energy and tardiness."""
    costs = load_costs()
    nodes = [NodeSpec("v", "V100", 2), NodeSpec("t", "T4", 1)]
    jobs = [
        QueueJob("a", 0, 150.0, 0.5, {("V100", 1): 100.0, ("V100", 2): 80.0, ("T4", 1): 300.0}),
        QueueJob("b", 0, 1000.0, 0.25, {("V100", 1): 200.0, ("V100", 2): 150.0, ("T4", 1): 400.0}),
        QueueJob("c", 0, 500.0, 1.0, {("V100", 1): 50.0, ("V100", 2): 40.0, ("T4", 1): 600.0}),
    ]
    inst = build_instance(100.0, nodes, jobs, costs)
    k = {c: i for i, c in enumerate(inst.configs)}
    node_of = np.array([0, 0, 1])
    cfg_of = np.array([k[("V100", 1)], k[("V100", 1)], k[("T4", 1)]])
    cV2, cT1, cV1 = costs.cost("V100", 2), costs.cost("T4", 1), costs.cost("V100", 1)
    f, E, T, W = proxy(inst, node_of, cfg_of, "code")
    dt = 100.0  # first finish: a on V100 x1
    assert E == pytest.approx((cV2 + cT1) * dt / 3600)
    assert T == pytest.approx(0.5 * max(0, 100 + dt - 150) + 0.25 * 0 + 1.0 * max(0, 100 + dt - 500))
    assert W == 0.0
    f, E, T, W = proxy(inst, node_of, cfg_of, "paper")
    # node v: first-ending job a (100 s) on 1 GPU; node t: c alone (600 s)
    assert E == pytest.approx(100.0 * cV1 / 3600 + 600.0 * cT1 / 3600)
    assert T == pytest.approx(0.5 * 50 + 0 + 1.0 * 200)
    # postponing b: W = rho * omega * max(0, now + H_wc + M_b - d_b)
    f, E, T, W = proxy(inst, np.array([0, -1, 1]), np.array([k[("V100", 1)], -1, k[("T4", 1)]]))
    assert W == pytest.approx(100 * 0.25 * max(0.0, 100 + 400 - 1000))
    assert not math.isnan(f)
