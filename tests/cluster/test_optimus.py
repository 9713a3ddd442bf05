"""Optimus as Pollux's simulator runs it (cluster/policies/optimus.py): the greedy GPU counts and the placement."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gpuweave.cluster.policies import make_policy
from gpuweave.cluster.state import JobState
from gpuweave.errors import InputError
from gpuweave.workload.job import Job


class Oracle:
    """Step times per GPU count, remaining steps and most GPUs per job type."""

    STEP = {"a": {1: 10.0, 2: 6.0, 3: 5.0, 4: 4.8}, "b": {1: 10.0, 2: 9.0, 3: 8.8}, "c": {1: 3.0, 2: 2.0}}
    REMAINING = {"a": 100.0, "b": 1000.0, "c": 10.0}
    MOST = {"a": 4, "b": 3, "c": 2}

    def optimus_remaining(self, job_type: str, epoch: int) -> float:
        return self.REMAINING[job_type] - epoch

    def optimus_step_time(self, job_type: str, replicas: int) -> float | None:
        return self.STEP[job_type].get(replicas)

    def max_replicas(self, job_type: str) -> int:
        return self.MOST[job_type]


@dataclass
class Node:
    num_gpus: int


class View:
    def __init__(self, gpus_per_node: list[int], states: list[JobState], profiles: object = None) -> None:
        self.nodes = [Node(n) for n in gpus_per_node]
        self.pending = {js.job.job_id: js for js in states if js.placement is None}
        self.running = {js.job.job_id: js for js in states if js.placement is not None}
        self.profiles = Oracle() if profiles is None else profiles

    def epochs_done(self, js: JobState) -> int:
        return 0


def state(job_id: str, job_type: str, arrival: float, placement=None, moldable: object = True) -> JobState:
    js = JobState(Job(job_id, arrival, 1, 100.0, job_type, attrs={"moldable": moldable}), remaining=100.0)
    js.placement = placement
    return js


def test_every_job_gets_one_gpu_then_the_largest_gain_takes_the_next():
    policy = make_policy("optimus")
    jobs = [state("A", "a", 0.0), state("B", "b", 1.0), state("C", "c", 2.0)]
    view = View([4, 2], jobs)
    # gains after one GPU each: A (10 - 6) x 100 = 400, B 1 x 1000 = 1000, C 1 x 10 = 10; 3 GPUs left
    counts = policy._counts(view, view.profiles, jobs)  # B: 1000, then A: 400, then B (200) over A (100)
    assert counts == {"A": 2, "B": 3, "C": 1}


def test_jobs_past_the_cluster_get_nothing_and_a_job_stops_at_its_most():
    policy = make_policy("optimus")
    jobs = [state("A", "a", 0.0), state("B", "b", 1.0), state("C", "c", 2.0)]
    view = View([2], jobs)
    assert policy._counts(view, view.profiles, jobs) == {"A": 1, "B": 1, "C": 0}
    alone = [state("C", "c", 0.0)]
    assert policy._counts(View([4], alone), Oracle(), alone) == {"C": 2}  # its most, though 2 GPUs stay free
    capped = [state("A", "a", 0.0, moldable=3)]  # the trace's moldable column caps the job model's 4
    assert policy._counts(View([4], capped), Oracle(), capped) == {"A": 3}


def test_a_rigid_job_is_named():
    policy = make_policy("optimus")
    rigid = [state("R", "a", 0.0, moldable=None)]
    with pytest.raises(InputError, match="job 'R' is not elastic"):
        policy._counts(View([4], rigid), Oracle(), rigid)


def test_unchanged_counts_keep_their_gpus_and_the_rest_go_most_free_first():
    policy = make_policy("optimus")
    kept = state("A", "a", 0.0, placement=((1, 2),))
    moved = state("B", "b", 1.0, placement=((0, 1),))
    new = state("C", "c", 2.0)
    view = View([4, 4, 4], [kept, moved, new])
    wanted = policy._place(view, [kept, moved, new], {"A": 2, "B": 3, "C": 1})
    # A keeps node 1 (2 free left there); C (1 GPU, fewest first) takes node 0 (4 free, lowest index of the most
    # free); B then takes 3 of node 2's 4
    assert wanted == {"A": ((1, 2),), "C": ((0, 1),), "B": ((2, 3),)}


def test_optimus_needs_pollux_job_model():
    policy = make_policy("optimus")
    with pytest.raises(InputError, match="Pollux's job model"):
        policy.schedule(View([4], [state("A", "a", 0.0)], profiles=object()))  # type: ignore[arg-type]


def test_optimus_is_listed_but_left_out_of_the_policies_for_any_trace():
    from gpuweave.cluster.policies import POLICIES, check_runs_anywhere, policy_names

    assert "optimus" in POLICIES.names() and "optimus" not in policy_names()
    assert POLICIES.get("optimus").meta["needs"] == "pollux"
    with pytest.raises(InputError, match="needs Pollux's job model and elastic jobs .*the service cannot give it"):
        check_runs_anywhere("optimus", "the service")
    check_runs_anywhere("fifo", "the service")  # any other: nothing to say
