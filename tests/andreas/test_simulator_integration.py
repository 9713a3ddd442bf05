"""Simulator opt-ins (moldable GPU count, epoch snapshots), real cost, triggers and AC8 over whole runs."""

from __future__ import annotations

import pytest

from gpuweave.andreas.catalog import load_costs
from gpuweave.andreas.workload import andreas_job, scenario_jobs, scenario_nodes
from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import Decision
from gpuweave.cluster.simulator import Simulator
from gpuweave.errors import InvalidDecisionError
from gpuweave.hardware.cluster_spec import Node
from gpuweave.repro.andreas.simulate import real_cost, run_policy
from gpuweave.workload.job import Job
from gpuweave.workload.profiles import ProfileStore

PROFILES = ProfileStore.from_rows([("app", "V100", 1, True, 1.0), ("app", "V100", 2, True, 1.5)])
POWER = {"V100": (45.0, 300.0)}


class Script(ClusterPolicy):
    """Applies scripted decisions: {time: Decision}; ticks every 10 s."""

    name = "script"
    default_round_length = 10.0

    def __init__(self, plan):
        super().__init__()
        self.plan = plan

    def schedule(self, view):
        return self.plan.get(view.now, Decision())


def _sim(job, plan, **kw):
    nodes = [Node(0, "n0", "V100", 2, 0.2, 1.0)]
    return Simulator(nodes, [job], Script(plan), PROFILES, POWER, restart_delay=0.0, **kw)


def test_moldable_job_changes_gpu_count_with_the_rate_of_the_actual_count():
    job = Job("m", 0.0, 1, 30.0, "app", attrs={"moldable": True})
    # 1 GPU for 10 s (10 units), then 2 GPUs: 20 units at 1.5/s = 13.33 s
    plan = {0.0: Decision(assign={"m": ((0, 1),)}), 10.0: Decision(assign={"m": ((0, 2),)})}
    rec = _sim(job, plan).run()
    js = rec.jobs[0]
    assert js.end == pytest.approx(10.0 + 20.0 / 1.5)
    assert js.attained_gpu_seconds == pytest.approx(10.0 * 1 + 20.0 / 1.5 * 2)


def test_moldable_collection_and_fixed_jobs_keep_the_gang_rule():
    fixed = Job("f", 0.0, 1, 30.0, "app")
    with pytest.raises(InvalidDecisionError, match="gang rule"):
        _sim(fixed, {0.0: Decision(assign={"f": ((0, 2),)})}).run()
    only_one = Job("o", 0.0, 1, 30.0, "app", attrs={"moldable": (1,)})
    with pytest.raises(InvalidDecisionError, match="gang rule"):
        _sim(only_one, {0.0: Decision(assign={"o": ((0, 2),)})}).run()


def test_snapshot_rollback_loses_progress_since_the_last_epoch():
    job = Job("s", 0.0, 1, 30.0, "app", attrs={"moldable": True, "snapshot_every": 4.0})
    # runs 10 s on 1 GPU (10 units), preempted: back to the snapshot at 8; resumes at 20 on 1 GPU: 22 units left
    plan = {
        0.0: Decision(assign={"s": ((0, 1),)}),
        10.0: Decision(preempt=["s"]),
        20.0: Decision(assign={"s": ((0, 1),)}),
    }
    sim = _sim(job, plan)
    rec = sim.run()
    assert rec.jobs[0].end == pytest.approx(20.0 + 22.0)
    assert sim.book.rollback_lost == pytest.approx(2.0)
    # without the opt-in, progress is continuous
    job2 = Job("s", 0.0, 1, 30.0, "app", attrs={"moldable": True})
    assert _sim(job2, plan).run().jobs[0].end == pytest.approx(20.0 + 20.0)


def test_real_cost_charges_node_cost_at_gpus_in_use_and_weighted_tardiness():
    costs = load_costs()
    nodes = [Node(0, "v", "V100", 2, 0.17168313, 1.33)]
    jobs = [
        Job("a", 0.0, 1, 10.0, "app", priority=0.5, deadline=5.0, attrs={"moldable": True}),
        Job("b", 0.0, 1, 20.0, "app", priority=1.0, deadline=100.0, attrs={"moldable": True}),
    ]
    plan = {0.0: Decision(assign={"a": ((0, 1),), "b": ((0, 1),)})}
    sim = Simulator(nodes, jobs, Script(plan), PROFILES, POWER, restart_delay=0.0)
    rec = sim.run()
    rc = real_cost(rec, nodes, costs)
    c1, c2 = costs.cost("V100", 1), costs.cost("V100", 2)
    assert rc.energy == pytest.approx(c2 * 10 / 3600 + c1 * 10 / 3600)
    assert rc.job_energy["a"] == pytest.approx(c2 * 10 / 3600 / 2)
    assert rc.job_energy["b"] == pytest.approx(c2 * 10 / 3600 / 2 + c1 * 10 / 3600)
    assert rc.tardiness == pytest.approx(0.5 * (10 - 5)) and rc.late_jobs == 1 and rc.makespan == 20.0


@pytest.mark.parametrize("policy", ["andreas", "andreas-fifo", "edf", "priority"])
def test_ac8_invariants_over_a_scenario_run(policy):
    nodes = scenario_nodes(6, 2)
    jobs = scenario_jobs(6, 2, 1000)
    res = run_policy(nodes, jobs, policy, **({"seed": 1} if policy == "andreas" else {}))
    rec = res.records
    assert all(js.end is not None for js in rec.jobs)  # every job completes
    assert res.real.energy >= 0
    # replay allocations: after every instant, capacity holds on every node and a job is on one node
    held: dict[str, tuple[int, int]] = {}
    used = [0] * len(nodes)
    first: dict[str, tuple[int, int]] = {}
    allocs = rec.allocations
    for i, ch in enumerate(allocs):
        old = held.pop(ch.job_id, None)
        if old is not None:
            used[old[0]] -= old[1]
        if ch.gpus:
            held[ch.job_id] = (ch.node, ch.gpus)
            used[ch.node] += ch.gpus
            first.setdefault(ch.job_id, (ch.node, ch.gpus))
            if policy != "andreas":  # FPM: a started job keeps (node, k) until completion
                assert first[ch.job_id] == (ch.node, ch.gpus)
        if i + 1 == len(allocs) or allocs[i + 1].time > ch.time:
            assert all(u <= nd.num_gpus for u, nd in zip(used, nodes))
            assert all(nodes[n].gpu_model in ("V100", "T4") for n, _ in held.values())


def test_calls_are_recorded_only_when_asked():
    """A policy made by name for a simulation keeps no call records (one plan per call would grow with the run);
    the reproduction's run_policy turns them on, and an instance made with record=True keeps them."""
    from gpuweave.andreas.catalog import load_profile_table
    from gpuweave.cluster.policies import make_policy
    from gpuweave.cluster.run import gpu_power

    nodes = [Node(0, "v", "V100", 2, 0.17168313, 1.33), Node(1, "t", "T4", 1, 0.17168313, 1.33)]
    jobs = [
        andreas_job("x", "convolutionNet", 20, 0.0, 2000.0, 1e-3),
        andreas_job("y", "LSTMbig", 10, 450.0, 3000.0, 1e-3),
    ]
    store = load_profile_table().profile_store()
    quiet = make_policy("andreas")
    rec = Simulator(nodes, jobs, quiet, store, gpu_power(nodes)).run()
    assert all(js.end is not None for js in rec.jobs) and quiet.calls == []
    asked = make_policy("andreas", record=True)
    Simulator(nodes, jobs, asked, store, gpu_power(nodes)).run()
    assert [c.time for c in asked.calls][:2] == [0.0, 450.0]
    assert [c.time for c in run_policy(nodes, jobs, "andreas").calls][:2] == [0.0, 450.0]


def test_triggers_event_periodic_and_both():
    nodes = [Node(0, "v", "V100", 2, 0.17168313, 1.33), Node(1, "t", "T4", 1, 0.17168313, 1.33)]
    jobs = [
        andreas_job("x", "convolutionNet", 20, 0.0, 2000.0, 1e-3),
        andreas_job("y", "LSTMbig", 10, 450.0, 3000.0, 1e-3),
    ]
    ev = run_policy(nodes, jobs, "andreas")
    assert [c.time for c in ev.calls][:2] == [0.0, 450.0]
    per = run_policy(nodes, jobs, "andreas", period=300.0, periodic_only=True)
    assert all(c.time % 300.0 == 0 for c in per.calls) and per.policy_obj.h_wc == 300.0
    both = run_policy(nodes, jobs, "andreas", period=300.0)
    times = [c.time for c in both.calls]
    assert 450.0 in times and 300.0 in times


def test_andreas_runs_on_a_foundation_workload_without_deadlines():
    """Fixed-size jobs with Gavel-style profiles and no deadlines: RG, EDF and PS still schedule all."""
    from tests.cluster.conftest import TableProfiles, make_nodes

    nodes = [Node(n.index, n.name, n.gpu_model, n.num_gpus, 0.1, 1.2) for n in make_nodes([("V100", 4), ("K80", 4)])]
    jobs = [Job(f"j{i}", 10.0 * i, 1 + i % 2, 300.0 + 50 * i, "small") for i in range(8)]
    for policy in ("andreas", "edf", "priority", "andreas-fifo"):
        res = run_policy(nodes, jobs, policy, profiles=TableProfiles(), restart_delay=10.0)
        assert all(js.end is not None for js in res.records.jobs)
        assert res.real.tardiness == 0.0 and res.real.energy > 0
