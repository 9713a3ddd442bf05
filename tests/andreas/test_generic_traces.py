"""ANDREAS and its baselines on other papers' workloads (issue #5): Philly-like jobs on gavel-60 (fixed GPU
counts in {1, 2, 4, 8} on 4-GPU nodes, no deadlines, work in iterations, energy price 0)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from gpuweave.cluster.config import parse_config
from gpuweave.cluster.run import run_simulation

POLICIES = ("andreas", "andreas-fifo", "edf", "priority")


@pytest.mark.parametrize("policy", POLICIES)
def test_policy_completes_a_generated_philly_trace_on_gavel_60(policy, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary = run_simulation(parse_config({"policy": policy, "jobs": 60, "rate_per_hour": 8}), tmp_path)
    assert summary["completed"] == 60


def _run(policy, jobs, nodes, **kw):
    from gpuweave.repro.andreas.simulate import run_policy
    from tests.cluster.conftest import TableProfiles

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return run_policy(nodes, jobs, policy, profiles=TableProfiles(), restart_delay=10.0, **kw)


@pytest.mark.parametrize("policy", POLICIES)
def test_job_larger_than_any_node_runs_across_nodes_of_one_model(policy):
    """An 8-GPU job on 4-GPU nodes spreads over two nodes of one model (unconsolidated rate) and is not
    starved by a stream of small jobs; small jobs keep their fixed GPU count."""
    from gpuweave.hardware.cluster_spec import Node
    from gpuweave.workload.job import Job
    from tests.cluster.conftest import make_nodes

    nodes = [
        Node(n.index, n.name, n.gpu_model, n.num_gpus, 0.0, 1.0)
        for n in make_nodes([("V100", 4), ("V100", 4), ("K80", 4)])
    ]
    jobs = [Job(f"s{i}", 5.0 * i, 1 + i % 2, 400.0 + 30 * i, "small") for i in range(12)]
    jobs.append(Job("big", 1.0, 8, 500.0, "small"))
    res = _run(policy, jobs, nodes)
    assert all(js.end is not None for js in res.records.jobs)
    big = next(js for js in res.records.jobs if js.job.job_id == "big")
    spans = {(ch.node, ch.gpus) for ch in res.records.allocations if ch.job_id == "big" and ch.gpus}
    assert {nodes[n].gpu_model for n, _ in spans} == {"V100"} and sum(g for _, g in spans) >= 8
    assert big.restarts == 0
    for ch in res.records.allocations:
        if ch.job_id != "big" and ch.gpus:
            assert ch.gpus == next(j.num_gpus for j in jobs if j.job_id == ch.job_id)


def test_no_deadline_jobs_have_no_pressure_nan_and_edf_puts_them_last_by_arrival():
    from gpuweave.andreas.catalog import CostCatalog, load_costs
    from gpuweave.andreas.fpm import fpm_order, fpm_schedule
    from gpuweave.andreas.model import NodeSpec, QueueJob, build_instance
    from gpuweave.andreas.randomized_greedy import randomized_greedy

    nodes = [NodeSpec("a", "V100", 2), NodeSpec("b", "V100", 2)]
    jobs = [
        QueueJob("late-arrival", 5.0, math.inf, 1.0, {("V100", 1): 100.0}),
        QueueJob("no-config", 0.0, math.inf, 1.0, {}),  # m_j = inf and d_j = inf
        QueueJob("deadline", 9.0, 500.0, 1.0, {("V100", 1): 100.0}),
        QueueJob("early-arrival", 1.0, math.inf, 1.0, {("V100", 1): 100.0}),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inst = build_instance(10.0, nodes, jobs, load_costs())
        delta = inst.pressure()
        assert not np.isnan(delta).any()
        assert delta.tolist()[:2] == [-math.inf, -math.inf] and delta[3] == -math.inf
        order = [inst.job_ids[j] for j in fpm_order(inst, np.arange(4), "edf")]
        assert order == ["deadline", "no-config", "early-arrival", "late-arrival"]
        # free energy: costs all 0, no deadlines -> f = 0; jobs still run, on the fastest configuration
        free = CostCatalog({("V100", 1): 0.0, ("V100", 2): 0.0})
        two = QueueJob("fast-on-2", 0.0, math.inf, 1.0, {("V100", 1): 100.0, ("V100", 2): 60.0})
        inst0 = build_instance(10.0, nodes, [two] + jobs, free)
        for sched in (randomized_greedy(inst0, 0), fpm_schedule(inst0, "edf")):
            assert sched.f == 0.0
            placed = {inst0.job_ids[j]: inst0.configs[sched.cfg_of[j]] for j in sched.placed()}
            assert placed["fast-on-2"] == ("V100", 2) and "no-config" not in placed
