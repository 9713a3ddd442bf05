"""POP partitioning (``partitions: k``) for Gavel's max-min LP and Hadar's round: k = 1 is the unpartitioned
policy, k > 1 gives valid allocations whose objective is measured against the whole problem's."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from gpuweave.baselines.gavel import max_min_fairness_lp, max_min_fairness_pop, max_min_objective, pop_groups
from gpuweave.cluster.policies import make_policy
from gpuweave.cluster.simulator import Simulator
from gpuweave.errors import InputError
from gpuweave.hadar.dp import hadar_round
from gpuweave.hadar.pop import partitioned_round, plan_value, split_round
from gpuweave.hadar.problem import QueuedJob, RoundProblem
from gpuweave.hardware.cluster_spec import make_cluster
from gpuweave.workload.profiles import load_profiles
from gpuweave.workload.traces.generate import generate_philly_like


def test_pop_groups_deal_jobs_round_robin():
    assert [g.tolist() for g in pop_groups(7, 3)] == [[0, 3, 6], [1, 4], [2, 5]]
    assert [g.tolist() for g in pop_groups(2, 4)] == [[0], [1]]
    assert pop_groups(0, 4) == []


def test_partitioned_gavel_lp_is_feasible_and_no_better_than_the_whole():
    rng = np.random.default_rng(3)
    M = 120
    T = rng.uniform(0.5, 4.0, (M, 3)) * np.where(rng.random((M, 3)) < 0.1, 0.0, 1.0)
    T[:, 0] = np.maximum(T[:, 0], 0.5)  # every job runs somewhere
    scale = rng.choice([1.0, 1.0, 2.0, 4.0], M)
    workers = np.array([24.0, 24.0, 24.0])
    whole = max_min_fairness_lp(T, scale, workers)
    assert np.array_equal(max_min_fairness_pop(T, scale, workers, 1), whole)
    for k in (2, 4, 8):
        x = max_min_fairness_pop(T, scale, workers, k)
        assert (x.sum(axis=1) <= 1 + 1e-6).all() and (x[T == 0] == 0).all()
        assert ((scale[:, None] * x).sum(axis=0) <= workers + 1e-6).all()
        assert max_min_objective(T, scale, workers, x) <= max_min_objective(T, scale, workers, whole) + 1e-6


def round_problem(n_jobs=40, seed=0):
    rng = np.random.default_rng(seed)
    stype = np.repeat([0, 1, 2], 6)
    cap = np.full(stype.size, 4)
    jobs = []
    used = np.zeros(stype.size, dtype=int)
    for i in range(n_jobs):
        W = int(rng.choice([1, 1, 2, 4]))
        cons = np.array([10.0, 6.0, 2.0]) * W
        prev = None
        if i % 3 == 0:
            h = int(np.flatnonzero(cap - used >= W)[0])
            used[h] += W
            prev = ((h, W),)
        jobs.append(QueuedJob(f"j{i}", W, cons, cons * 0.8, 3e4 * rng.random() + 100, 4e4, 0, prev, prev is not None))
    return RoundProblem(stype, cap, cap.copy(), 3, jobs, now_slot=2)


def test_split_round_covers_every_job_and_server_once_and_keeps_placements():
    problem = round_problem()
    parts = split_round(problem, 4)
    servers = sorted(h for _, s in parts for h in s)
    assert servers == list(range(18))
    for sub, s in parts:
        assert sorted(np.unique(sub.server_type).tolist()) == [0, 1, 2]  # every partition holds every type
        for job in sub.jobs:
            if job.prev is not None:
                assert all(0 <= h < len(s) for h, _ in job.prev)
    keys = sorted(j.key for sub, _ in parts for j in sub.jobs)
    assert keys == sorted(j.key for j in problem.jobs)
    kept = {j.key: tuple((s[h], g) for h, g in j.prev) for sub, s in parts for j in sub.jobs if j.prev is not None}
    assert kept == {j.key: j.prev for j in problem.jobs if j.prev is not None}


def test_partitioned_hadar_round_is_a_valid_plan_scored_against_the_whole():
    problem = round_problem(60, seed=1)
    whole = hadar_round(problem)
    assert plan_value(problem, whole.plan) == pytest.approx(whole.value, rel=1e-9)
    result = partitioned_round(problem, 3)
    load = np.zeros(18, dtype=int)
    W = {j.key: j.num_gpus for j in problem.jobs}
    for key, alloc in result.plan.items():
        assert sum(g for _, g in alloc) == W[key]
        for h, g in alloc:
            load[h] += g
    assert (load <= problem.capacity).all()
    assert plan_value(problem, result.plan) > 0


@pytest.mark.parametrize("name", ["gavel", "hadar"])
def test_partitions_one_is_the_policy_and_k_runs_a_simulation(name):
    nodes = make_cluster(48, ["V100", "P100", "K80"], gpus_per_node=4).expand()
    profiles = load_profiles()
    # Hadar's rounds cost about 10x Gavel's: fewer jobs keep several partitions busy at a tenth of the time
    trace = generate_philly_like(60 if name == "gavel" else 24, 200.0, 2, profiles=profiles)
    power = {m: (50.0, 250.0) for m in ("V100", "P100", "K80")}

    def run(**options):
        rec = Simulator(nodes, trace, make_policy(name, **options), profiles, power).run()
        return [(s.job_id, s.start, s.end, s.placement) for s in rec.segments], rec

    assert run()[0] == run(partitions=1)[0]
    segments, rec = run(partitions=3)
    assert all(js.end is not None for js in rec.jobs) and segments


def test_partitions_are_checked():
    for name, options in [
        ("gavel", {"partitions": 0}),
        ("gavel-ftf", {"partitions": 2}),
        ("hadar", {"partitions": 1.5}),
    ]:
        with pytest.raises(InputError):
            make_policy(name, **options)
    with pytest.raises(InputError):
        make_policy("hadar", partitions=2, solver="exact")


def test_bench_pop_cli_reports_each_k_against_k1():
    r = subprocess.run(
        [sys.executable, "-m", "gpuweave.cli", "bench", "pop", "--policy", "gavel", "--partitions", "1,2"]
        + ["--jobs", "60", "--gpus", "48", "--rate", "120", "--json"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["rows"]
    assert [row["partitions"] for row in rows] == [1, 2]
    assert rows[0]["jct_vs_k1"] == 1.0 and rows[1]["rounds_compared"] > 0
    assert 0 < rows[1]["objective_ratio_min"] <= rows[1]["objective_ratio_median"] <= 1 + 1e-6
    bad = subprocess.run(
        [sys.executable, "-m", "gpuweave.cli", "bench", "pop", "--partitions", "1,x"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "partitions" in bad.stderr and "Traceback" not in bad.stderr


def test_bench_round_grows_the_sample_past_the_philly_pool():
    from gpuweave.bench import bench_round

    result = bench_round(2200, "gavel", 1, 0, {})  # the pool has 2,155 jobs
    assert result["jobs"] == 2200 and result["gpus"] == 2208
    assert result["cpu_s"] > 0 and result["seconds"] > 0 and 0 < result["started"] <= 2200
