"""Optimizer time per call at N = 10, 50, 100 (scenarios 1 and 2); benchmarks run once as tests (disabled by default).

Run with ``--benchmark-enable`` to measure. The instance: N nodes of scenario 1 at a busy moment of the
generated workload, the queue being the N jobs submitted last (a third of them half done).
"""

from __future__ import annotations

import numpy as np
import pytest

from gpuweave.andreas.catalog import load_costs, load_profile_table
from gpuweave.andreas.model import NodeSpec, QueueJob, build_instance
from gpuweave.andreas.randomized_greedy import randomized_greedy
from gpuweave.andreas.workload import scenario_jobs, scenario_nodes


def bench_instance(N: int, scenario: int = 1):
    nodes = [NodeSpec(n.name, n.gpu_model, n.num_gpus) for n in scenario_nodes(N, scenario)]
    jobs = sorted(scenario_jobs(N, scenario, 1000), key=lambda j: j.arrival)
    now = jobs[len(jobs) // 2].arrival
    queue = [j for j in jobs if j.arrival <= now][-N:]
    prof = load_profile_table()
    rng = np.random.default_rng(0)
    q = []
    for i, j in enumerate(queue):
        frac = 0.5 if i % 3 == 0 else 1.0
        times = {k: frac * j.work * s for k, s in prof.configs(j.job_type).items()}
        q.append(QueueJob(j.job_id, j.arrival, j.deadline, j.priority, times))
    rng.shuffle(q)
    return build_instance(now, nodes, q, load_costs())


@pytest.mark.parametrize("scenario", [1, 2])
@pytest.mark.parametrize("N", [10, 50, 100])
def test_bench_rg_call(benchmark, N, scenario):
    inst = bench_instance(N, scenario)
    sched = benchmark(randomized_greedy, inst, 0)
    assert sched.f <= sched.f_greedy
    assert sched.iterations == min(1000, N * inst.n * inst.g_cat)
