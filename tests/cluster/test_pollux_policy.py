"""Pollux: its search (baselines/pollux_search.py), a job's agent (workload/pollux_agent.py) and the policy on the
simulator's adaptive clock (cluster/policies/pollux.py, cluster/adaptive_clock.py)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from gpuweave.baselines.pollux_search import AllocationProblem, fronts, search
from gpuweave.errors import InputError
from gpuweave.workload.pollux import load_pollux_job_model, packed_counts
from gpuweave.workload.pollux_agent import AgentState

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "pollux"
needs_data = pytest.mark.skipif(not (DATA / "traces").is_dir(), reason="Pollux's shared data is not here")


def _brute_fronts(values):
    left, out = set(range(len(values))), []
    while left:
        front = {i for i in left if not any(all(values[j] <= values[i]) and any(values[j] < values[i]) for j in left)}
        out.append(sorted(front))
        left -= front
    return out


def test_fronts_are_the_non_dominated_layers():
    rng = np.random.default_rng(1)
    for _ in range(300):
        values = rng.integers(0, 6, size=(int(rng.integers(1, 40)), 2)).astype(float)
        assert [sorted(f.tolist()) for f in fronts(values)] == _brute_fronts(values)


def _problem(jobs=3, nodes=2, gpus=2, most=3, factor=1.0, base=None):
    speedups = np.zeros((jobs, 17, most + 1))
    for j in range(jobs):
        for n in range(1, 17):
            for r in range(n, most + 1):
                speedups[j, n, r] = r ** (0.9 - 0.2 * j) * (0.8 if n > 1 else 1.0)
    base = np.zeros((jobs, nodes), np.int64) if base is None else base
    return AllocationProblem(
        speedups, base, np.full(jobs, most), np.full(jobs, factor), np.full(nodes, gpus), np.full(jobs, 1 / 4)
    )


def test_repair_keeps_every_limit():
    problem = _problem(jobs=4, nodes=3, gpus=4, most=5)
    rng = np.random.default_rng(0)
    states = problem.repair(rng.integers(0, 6, size=(500, 4, 3)), rng)
    assert (states.sum(axis=1) <= 4).all()  # each node's GPUs
    assert (states.sum(axis=2) <= 5).all()  # each job's most
    distributed = np.count_nonzero(states, axis=2) > 1
    assert ((states > 0) & distributed[:, :, None]).sum(axis=1).max() <= 1  # one distributed job per node


def test_the_search_finds_the_best_power_mean_of_a_small_problem():
    """2 nodes x 2 GPUs, 3 jobs of at most 3 GPUs: the enumeration's best power mean is the search's."""
    problem = _problem()
    every = np.array(list(itertools.product(range(3), repeat=6))).reshape(-1, 3, 2)
    feasible = every[(every.sum(axis=1) <= 2).all(axis=1) & (every.sum(axis=2) <= 3).all(axis=1)]
    distributed = np.count_nonzero(feasible, axis=2) > 1
    feasible = feasible[((feasible > 0) & distributed[:, :, None]).sum(axis=1).max(axis=1) <= 1]
    best = problem.evaluate(feasible)[:, 0].min()
    states, values = search(problem, problem.base[None], np.random.default_rng(3), generations=30)
    assert values[:, 0].min() == pytest.approx(best)
    along = values[np.argsort(values[:, 0], kind="stable"), 1]
    assert len(states) == len(values) and (np.diff(along) <= 0).all()  # a front: f1 falls as f0 grows


def test_a_restart_penalty_keeps_a_running_job_where_it_is():
    base = np.array([[2, 0], [0, 2], [0, 0]])
    still = _problem(base=base, factor=0.0)  # moving a job costs its whole term: nobody moves
    states, values = search(still, base[None], np.random.default_rng(0), generations=20)
    chosen = states[np.argmin(values[:, 0])]
    assert (chosen[:2] == base[:2]).all()


@needs_data
def test_an_agent_with_a_fixed_batch_splits_it_as_the_job_model_does():
    model = load_pollux_job_model(DATA / "traces")
    app = model.apps["cifar10"]
    for replicas in (1, 2, 6, 16):
        agent = AgentState(app, target_batch=2048)
        agent.reallocate(packed_counts(replicas, 4))
        plan = app.batch_plan(2048, replicas)
        assert (agent.atomic_bsz, agent.accum_steps) == (plan.atomic_bsz, plan.accum_steps)
    assert agent.restarts == 0


@needs_data
def test_an_agent_learns_and_finishes_its_epochs():
    model = load_pollux_job_model(DATA / "traces")
    agent = AgentState(model.apps["bert"])
    agent.reallocate((4,))
    assert agent.atomic_bsz * 4 * (agent.accum_steps + 1) >= agent.app.init_batch_size  # before any fit
    t = 0.0
    while not agent.done:
        agent.step((4,), t, 60.0, 30.0 if t == 0 else 0.0)
        t += 60.0
        assert agent.perf is not None and agent.profile
    assert agent.epoch == agent.app.max_epochs and agent.completion is not None
    assert t - 60 < agent.completion <= t and agent.completion == int(agent.completion)  # whole seconds


def _pollux_run(tmp_path, rows: int, name: str = "first"):
    from gpuweave.repro.crosscheck.pollux import Counterpart, run_ours

    lines = (DATA / "workloads" / "workload-1.csv").read_text().splitlines()
    workload = tmp_path / "small.csv"
    workload.write_text("\n".join(lines[: rows + 1]) + "\n")
    out = tmp_path / name
    out.mkdir(exist_ok=True)
    counterpart = Counterpart("pollux", {"generations": 8, "population": 30}, elastic=True, adaptive=True)
    return run_ours(workload, DATA, counterpart, out)


@needs_data
def test_pollux_runs_pollux_jobs_to_completion(tmp_path):
    times = _pollux_run(tmp_path, 4)
    assert len(times.jct) == 4 and all(t > 30 for t in times.jct.values())  # each at least its re-scale delay


def test_pollux_needs_pollux_s_job_model(tmp_path):
    from gpuweave.cluster.config import SimulationConfig
    from gpuweave.cluster.run import simulate

    trace = tmp_path / "t.csv"
    trace.write_text("job_id,arrival,num_gpus,job_type,duration\na,0,1,ResNet-18 (batch size 128),100\n")
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("name: v100\nnodes:\n  - {gpu: V100, gpus_per_node: 4}\n")
    with pytest.raises(InputError, match="Pollux's job model"):
        simulate(SimulationConfig(policy="pollux", trace=str(trace), cluster=str(cluster)))


@pytest.mark.parametrize("options", [{"population": 1}, {"generations": 0}, {"population": "many"}, {"speed": 2}])
def test_bad_options_are_one_input_error(options):
    from gpuweave.cluster.policies import make_policy

    with pytest.raises(InputError, match="bad options for policy 'pollux'"):
        make_policy("pollux", **options)
