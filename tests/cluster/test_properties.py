"""Property tests: on random clusters and traces, every policy obeys the simulator's physics."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import Plan
from gpuweave.cluster.placement import fewest_nodes
from gpuweave.cluster.policies import make_policy
from gpuweave.cluster.simulator import Simulator
from gpuweave.workload.job import Job

from .conftest import POWER, TableProfiles, make_nodes


class RandomPreemptive(ClusterPolicy):
    """Round-based chaos: random preemptions and moves, to exercise restarts."""

    name = "random-preemptive"

    def __init__(self, seed: int, round_length: float):
        super().__init__(round_length=round_length)
        self.rng = random.Random(seed)

    def schedule(self, view):
        plan = Plan(view)
        for js in list(view.running.values()):
            if self.rng.random() < 0.3:
                plan.stop(js)
        for js in list(view.pending.values()) + [view.running[j] for j in plan.decision.preempt]:
            models = [m for m in view.models if view.model_rate(js, m, True) > 0]
            self.rng.shuffle(models)
            for m in models:
                p = fewest_nodes(plan, js.job.num_gpus, m)
                if p is not None:
                    plan.start(js, p)
                    break
        return plan.decision


clusters = st.lists(st.tuples(st.sampled_from(["V100", "K80"]), st.integers(1, 4)), min_size=1, max_size=5)
job_specs = st.lists(
    st.tuples(
        st.floats(0, 2000, allow_nan=False),
        st.sampled_from([1, 1, 1, 2, 4]),
        st.floats(1, 5000, allow_nan=False),
        st.sampled_from(["small", "big"]),
    ),
    min_size=1,
    max_size=25,
)


def _fits(nodes, profiles, n, jtype):
    for m in {nd.gpu_model for nd in nodes}:
        total = sum(nd.num_gpus for nd in nodes if nd.gpu_model == m)
        if total >= n and profiles.rate(jtype, m, n, True) > 0:
            return True
    return False


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spec=clusters, jobs=job_specs, policy=st.sampled_from(["fifo", "sjf", "yarn-cs", "chaos"]), seed=st.integers(0, 99)
)
def test_physics_hold_for_every_policy(spec, jobs, policy, seed):
    nodes = make_nodes(spec)
    profiles = TableProfiles()
    trace = [Job(f"j{i}", a, n, w, t) for i, (a, n, w, t) in enumerate(jobs) if _fits(nodes, profiles, n, t)]
    if not trace:
        return
    pol = RandomPreemptive(seed, 97.0) if policy == "chaos" else make_policy(policy)
    rec = Simulator(nodes, trace, pol, profiles, POWER, restart_delay=7.0).run()

    # 1. Capacity: replay allocation changes; per node, GPUs held never exceed its size.
    held: dict[tuple[str, int], int] = {}
    per_node = [0] * len(nodes)
    for change in rec.allocations:
        key = (change.job_id, change.node)
        per_node[change.node] += change.gpus - held.get(key, 0)
        held[key] = change.gpus
        assert 0 <= per_node[change.node] <= nodes[change.node].num_gpus
    assert all(v == 0 for v in per_node)
    for _, busy, _ in rec.timeseries:
        assert sum(busy) <= sum(nd.num_gpus for nd in nodes)

    # 2. No job starts before it arrives; every job completes.
    for js in rec.jobs:
        assert js.end is not None
        assert js.first_start >= js.job.arrival - 1e-9

    # 3. Conservation: work = sum of productive time x rate; GPU-seconds = sum of held time x GPUs.
    by_job: dict[str, list] = {}
    for seg in rec.segments:
        by_job.setdefault(seg.job_id, []).append(seg)
    for js in rec.jobs:
        segs = by_job[js.job.job_id]
        productive = sum(max(0.0, (s.end - s.start) - s.delay) * s.rate for s in segs)
        assert productive == pytest.approx(js.job.work, rel=1e-6, abs=1e-6)
        held_s = sum((s.end - s.start) * js.job.num_gpus for s in segs)
        assert js.attained_gpu_seconds == pytest.approx(held_s, rel=1e-9)
        # GPU-seconds = work / rate + restart delays: exact for a job that ran on one placement throughout.
        if len(segs) == 1:
            assert js.attained_gpu_seconds == pytest.approx(js.job.work / segs[0].rate * js.job.num_gpus, rel=1e-9)
        else:
            delays = sum(min(s.delay, s.end - s.start) for s in segs)
            work_time = sum(max(0.0, (s.end - s.start) - s.delay) for s in segs)
            assert held_s == pytest.approx((delays + work_time) * js.job.num_gpus, rel=1e-9)
        assert sum(s.delay > 0 for s in segs) == js.restarts
    last = by_job and max(s.end for segs in by_job.values() for s in segs)
    assert rec.end_time == pytest.approx(last)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    gpus=st.sampled_from([8, 16, 24, 32]),
    models=st.lists(st.sampled_from(["V100", "P100", "K80"]), min_size=1, max_size=3, unique=True),
    per_node=st.sampled_from([2, 4, 8]),
    seed=st.integers(0, 10_000),
    policy=st.sampled_from(["fifo", "sjf", "yarn-cs"]),
)
def test_physics_on_bundled_profiles_and_generated_traces(gpus, models, per_node, seed, policy):
    """The same invariants with the real Gavel throughputs, a generated Philly-like trace and a built cluster."""
    from gpuweave.hardware.catalog import get_gpu
    from gpuweave.hardware.cluster_spec import make_cluster
    from gpuweave.workload.profiles import load_profiles
    from gpuweave.workload.traces.generate import generate_philly_like

    if gpus // per_node < len(models):
        return  # make_cluster needs a node per model
    spec = make_cluster(gpus, models, gpus_per_node=per_node)
    nodes = spec.expand()
    profiles = load_profiles()
    trace = [j for j in generate_philly_like(30, 40.0, seed, profiles=profiles) if j.num_gpus <= per_node]
    power = {n.gpu_model: (get_gpu(n.gpu_model).power_idle_w, get_gpu(n.gpu_model).power_max_w) for n in nodes}
    feasible = []
    for j in trace:
        if any(profiles.rate(j.job_type, m, j.num_gpus, True) > 0 for m in spec.gpus_by_model()):
            feasible.append(j)
    if not feasible:
        return
    rec = Simulator(nodes, feasible, make_policy(policy), profiles, power).run()
    per_node_busy = [0] * len(nodes)
    held: dict[tuple[str, int], int] = {}
    for change in rec.allocations:
        key = (change.job_id, change.node)
        per_node_busy[change.node] += change.gpus - held.get(key, 0)
        held[key] = change.gpus
        assert 0 <= per_node_busy[change.node] <= nodes[change.node].num_gpus
    for js in rec.jobs:
        assert js.first_start >= js.job.arrival
        segs = [s for s in rec.segments if s.job_id == js.job.job_id]
        assert sum((s.end - s.start - s.delay) * s.rate for s in segs) == pytest.approx(js.job.work, rel=1e-6)
        assert js.attained_gpu_seconds == pytest.approx(js.job.work / segs[0].rate * js.job.num_gpus, rel=1e-9)
