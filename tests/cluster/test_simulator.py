"""Hand-worked simulator cases: gang, heterogeneity, restart delay, energy, rounds, bad decisions."""

from __future__ import annotations

import pytest

from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import Decision, Plan
from gpuweave.cluster.simulator import Simulator
from gpuweave.errors import InputError, InvalidDecisionError
from gpuweave.workload.job import Job

from .conftest import POWER, make_nodes


def run(nodes, jobs, policy, profiles, **kw):
    return Simulator(nodes, jobs, policy, profiles, POWER, **kw).run()


def test_single_job_on_fastest_model_energy_and_cost(profiles):
    from gpuweave.cluster.policies import make_policy

    nodes = make_nodes([("K80", 4), ("V100", 4)])
    # 2-GPU job on V100: rate 6 it/s, 600 iterations -> 100 s.
    rec = run(nodes, [Job("a", 0.0, 2, 600.0, "small")], make_policy("fifo"), profiles)
    js = rec.jobs[0]
    assert js.end == pytest.approx(100.0)
    assert js.gpu_seconds_by_model == {"V100": pytest.approx(200.0)}
    # Cluster energy over 100 s: idle 4*25 + 4*50, plus 2 busy V100 extra 250 W each.
    expected_w = 4 * 25 + 4 * 50 + 2 * 250
    assert rec.energy_j == pytest.approx(expected_w * 100.0)
    assert rec.cost == pytest.approx(expected_w * 100.0 / 3.6e6 * 0.1)
    assert js.energy_j == pytest.approx(2 * 300 * 100.0)


def test_fifo_head_of_line_blocking_and_spread_rate(profiles):
    from gpuweave.cluster.policies import make_policy

    nodes = make_nodes([("V100", 2), ("V100", 2)])
    jobs = [
        Job("a", 0.0, 1, 300.0, "small"),  # 100 s on one V100
        Job("b", 1.0, 4, 2400.0, "small"),  # needs both nodes: rate 0.8*12 = 9.6 -> 250 s after a ends
        Job("c", 2.0, 1, 30.0, "small"),  # strict FIFO: waits behind b
    ]
    rec = run(nodes, jobs, make_policy("fifo"), profiles)
    by = {js.job.job_id: js for js in rec.jobs}
    assert by["a"].end == pytest.approx(100.0)
    assert by["b"].first_start == pytest.approx(100.0)
    assert by["b"].end == pytest.approx(100.0 + 2400.0 / 9.6)
    assert by["c"].first_start == pytest.approx(by["b"].end)


class MoveOnce(ClusterPolicy):
    """Starts job x on node 0, moves it to node 1 at the first round tick after 0."""

    name = "move-once"
    default_round_length = 50.0

    def __init__(self):
        super().__init__()
        self.moved = False

    def schedule(self, view):
        if "x" in view.pending:
            return Decision(assign={"x": ((0, 1),)})
        if view.now >= 50 and not self.moved and "x" in view.running:
            self.moved = True
            return Decision(assign={"x": ((1, 1),)})
        return Decision()


def test_restart_delay_charged_on_move(profiles):
    nodes = make_nodes([("V100", 1), ("K80", 1)])
    # 300 it: 50 s on V100 gives 150 it; moved to K80 at t=50, 10 s delay, then 150 it at 1 it/s.
    rec = run(nodes, [Job("x", 0.0, 1, 300.0, "small")], MoveOnce(), profiles, restart_delay=10.0)
    js = rec.jobs[0]
    assert js.restarts == 1
    assert js.end == pytest.approx(50 + 10 + 150)
    assert js.gpu_seconds_by_model["V100"] == pytest.approx(50)
    assert js.gpu_seconds_by_model["K80"] == pytest.approx(160)
    assert [s.delay for s in rec.segments] == [0.0, 10.0]


class Bad(ClusterPolicy):
    name = "bad"
    default_round_length = None

    def __init__(self, decision):
        super().__init__()
        self.decision = decision

    def schedule(self, view):
        return self.decision if view.pending else Decision()


@pytest.mark.parametrize(
    "decision, words",
    [
        (Decision(assign={"j": ((0, 1),)}), "gang"),
        (Decision(assign={"j": ((0, 2),), "k": ((0, 2),)}), "capacity"),
        (Decision(assign={"nope": ((0, 2),)}), "not waiting"),
        (Decision(preempt=["j"]), "not running"),
        (Decision(assign={"j": ((1, 2),)}), "cannot run"),
    ],
)
def test_invalid_decisions_are_rejected(profiles, decision, words):
    nodes = make_nodes([("V100", 2), ("K80", 2)])
    jobs = [Job("j", 0.0, 2, 10.0, "big"), Job("k", 0.0, 2, 10.0, "small")]
    with pytest.raises(InvalidDecisionError, match=words):
        run(nodes, jobs, Bad(decision), profiles)


def test_job_that_can_never_fit_is_bad_input(profiles):
    from gpuweave.cluster.policies import make_policy

    nodes = make_nodes([("V100", 2), ("K80", 4)])
    with pytest.raises(InputError, match="cannot run on any GPU model"):
        run(nodes, [Job("j", 0.0, 4, 10.0, "big")], make_policy("fifo"), profiles)


def test_the_first_job_that_can_never_fit_is_named_with_its_row(profiles):
    """Feasibility is checked once per (job type, GPU count): the error still names the first such job in arrival
    order, with its row, however many jobs of its kind come before or after it."""
    from gpuweave.cluster.policies import make_policy

    nodes = make_nodes([("V100", 2), ("K80", 4)])
    jobs = [
        Job("fits", 0.0, 2, 10.0, "big"),
        Job("fits-too", 1.0, 2, 10.0, "big"),
        Job("first-bad", 2.0, 4, 10.0, "big"),
        Job("second-bad", 3.0, 4, 10.0, "big"),
    ]
    with pytest.raises(InputError, match="job 'first-bad'") as err:
        run(nodes, jobs, make_policy("fifo"), profiles)
    assert err.value.row == 3 and err.value.field == "num_gpus"


class RoundCounter(ClusterPolicy):
    name = "rounds"
    default_round_length = 360.0

    def __init__(self):
        super().__init__()
        self.calls = []

    def schedule(self, view):
        self.calls.append((view.now, len(view.pending) + len(view.running)))
        plan = Plan(view)
        for js in view.pending.values():
            plan.start(js, ((0, 1),)) if plan.free[0] else None
        return plan.decision


def test_round_ticks_on_grid_and_only_while_active(profiles):
    nodes = make_nodes([("V100", 1)])
    jobs = [Job("a", 10.0, 1, 3.0 * 400, "small"), Job("b", 5000.0, 1, 3.0, "small")]
    policy = RoundCounter()
    rec = run(nodes, jobs, policy, profiles)
    times = [t for t, _ in policy.calls]
    assert times[:2] == [360.0, 720.0]
    assert 1080.0 not in times  # a finished at 760: no call on an idle cluster
    assert 5040.0 in times  # b waits for the next grid tick after 5000
    assert all(active > 0 for _, active in policy.calls)
    assert max(times) <= 5040.0
    by = {js.job.job_id: js for js in rec.jobs}
    assert by["a"].end == pytest.approx(760.0)


class Swap(ClusterPolicy):
    """Starts x on node 0 and y on node 1, then swaps them at the first tick."""

    name = "swap"
    default_round_length = 100.0

    def schedule(self, view):
        if view.pending:
            return Decision(assign={"x": ((0, 2),), "y": ((1, 2),)})
        if view.now == 100.0:
            return Decision(assign={"x": ((1, 2),), "y": ((0, 2),)})
        return Decision()


def test_swapping_jobs_never_overfills_a_node(profiles):
    nodes = make_nodes([("V100", 2), ("V100", 2)])
    jobs = [Job("x", 0.0, 2, 6000.0, "small"), Job("y", 0.0, 2, 6000.0, "small")]
    rec = run(nodes, jobs, Swap(), profiles)
    per_node = [0, 0]
    held = {}
    for change in rec.allocations:
        key = (change.job_id, change.node)
        per_node[change.node] += change.gpus - held.get(key, 0)
        held[key] = change.gpus
        assert 0 <= per_node[change.node] <= 2
    assert all(js.restarts == 1 for js in rec.jobs)


def test_tardiness_metrics(profiles):
    from gpuweave.cluster.metrics import summarize
    from gpuweave.cluster.policies import make_policy

    nodes = make_nodes([("V100", 1)])
    jobs = [
        Job("a", 0.0, 1, 300.0, "small", priority=2.0, deadline=50.0),  # ends at 100: 50 s late, weight 2
        Job("b", 0.0, 1, 300.0, "small", deadline=500.0),  # ends at 200: on time
        Job("c", 0.0, 1, 30.0, "small"),  # no deadline
    ]
    m = summarize(run(nodes, jobs, make_policy("fifo"), profiles))
    assert m["jobs_with_deadline"] == 2 and m["deadline_misses"] == 1
    assert m["total_tardiness_s"] == pytest.approx(50.0)
    assert m["weighted_tardiness_s"] == pytest.approx(100.0)


class NeverStarts(ClusterPolicy):
    """A round-based policy that never starts anything: the simulator must stop it, not tick for ever."""

    name = "never"
    default_round_length = 60.0

    def schedule(self, view):
        return Decision()


def test_round_policy_that_starves_an_idle_cluster_is_stopped(profiles):
    from gpuweave.cluster.simulator import STALL_ROUNDS

    nodes = make_nodes([("V100", 1)])
    sim = Simulator(nodes, [Job("a", 0.0, 1, 10.0, "small")], NeverStarts(), profiles, POWER)
    with pytest.raises(InvalidDecisionError, match=f"idle cluster for {STALL_ROUNDS} rounds"):
        sim.run()
    assert sim.decisions == STALL_ROUNDS


class HalfWhenSpread:
    """rate = 3 it/s per V100 consolidated, half of it spread over several nodes."""

    def rate(self, job_type, gpu_model, num_gpus, consolidated):
        return 3.0 * num_gpus * (1.0 if consolidated else 0.5)


@pytest.mark.parametrize(
    ("spec", "fraction", "slowdown"),
    [([("V100", 1), ("V100", 1)], 0.5, 2.0), ([("V100", 2)], 1.0, 1.0)],
    ids=["spread", "consolidated"],
)
def test_useful_work_and_placement_slowdown(spec, fraction, slowdown):
    """Issue #40 item 6: a 2-GPU job forced across two 1-GPU nodes holds its GPUs twice as long as its work needs."""
    from gpuweave.cluster.metrics import summarize
    from gpuweave.cluster.policies import make_policy

    jobs = [Job("a", 0.0, 2, 600.0, "small")]  # 100 s consolidated on two V100s, 200 s spread
    m = summarize(run(make_nodes(spec), jobs, make_policy("fifo"), HalfWhenSpread()))
    assert m["gpu_hours"] == pytest.approx(2 * 100.0 * slowdown / 3600)
    assert m["useful_gpu_hours"] == pytest.approx(2 * 100.0 / 3600)
    assert m["useful_fraction"] == pytest.approx(fraction)
    assert m["median_placement_slowdown"] == pytest.approx(slowdown)


class MoveGangOnce(MoveOnce):
    """MoveOnce with a 2-GPU job: node 0's two GPUs, then node 1's."""

    def schedule(self, view):
        if "x" in view.pending:
            return Decision(assign={"x": ((0, 2),)})
        if view.now >= 50 and not self.moved and "x" in view.running:
            self.moved = True
            return Decision(assign={"x": ((1, 2),)})
        return Decision()


def test_useful_work_leaves_restart_delays_out_of_the_slowdown(profiles):
    """A moved job holds its GPUs through the restart delay: not useful work, and not a placement slowdown."""
    from gpuweave.cluster.metrics import summarize

    nodes = make_nodes([("V100", 2), ("V100", 2)])
    rec = run(nodes, [Job("x", 0.0, 2, 1200.0, "small")], MoveGangOnce(), profiles, restart_delay=20.0)
    m = summarize(rec)
    held = rec.jobs[0].attained_gpu_seconds
    assert held == pytest.approx(2 * (50 + 20 + 150))  # 1,200 it at 6 it/s: 50 s, a 20 s delay, 150 s
    assert m["useful_gpu_hours"] == pytest.approx(2 * 200.0 / 3600)
    assert m["useful_fraction"] == pytest.approx(200.0 / 220.0)
    assert m["median_placement_slowdown"] == pytest.approx(1.0)


def test_useful_work_is_unknown_without_consolidated_rates(profiles):
    import dataclasses
    import math

    from gpuweave.cluster.metrics import summarize
    from gpuweave.cluster.policies import make_policy

    rec = run(make_nodes([("V100", 1)]), [Job("a", 0.0, 1, 30.0, "small")], make_policy("fifo"), profiles)
    m = summarize(dataclasses.replace(rec, consolidated_rate=None))
    assert math.isnan(m["useful_fraction"]) and math.isnan(m["median_placement_slowdown"])


def test_useful_work_of_a_job_on_two_models(profiles):
    """The consolidated rate of a job that ran on V100 then K80 is averaged by the time it held each."""
    import math

    from gpuweave.cluster.metrics import summarize

    nodes = make_nodes([("V100", 1), ("K80", 1)])
    rec = run(nodes, [Job("x", 0.0, 1, 300.0, "small")], MoveOnce(), profiles, restart_delay=0.0)
    m = summarize(rec)  # 150 it in 50 s on the V100, 150 it in 150 s on the K80: all of it useful
    assert m["useful_gpu_hours"] == pytest.approx(200.0 / 3600) and m["useful_fraction"] == pytest.approx(1.0)
    assert math.isnan(m["median_placement_slowdown"])  # over jobs of several GPUs only: a 1-GPU job is never spread
