"""Tiresias presets: the spec's values stay the default; ``preset: pollux`` switches Pollux's simulator's rules."""

from __future__ import annotations

import pytest

from gpuweave.cluster.policies import make_policy
from gpuweave.cluster.simulator import Simulator
from gpuweave.cluster.state import JobState
from gpuweave.errors import InputError
from gpuweave.workload.job import Job
from tests.cluster.conftest import POWER, make_nodes


def test_spec_preset_is_the_default():
    policy = make_policy("tiresias")
    assert policy.preset == "spec" and policy.round_length == 360.0
    assert policy.thresholds == [3600.0]
    assert (policy.placement, policy.queue_order) == ("fewest-nodes", "arrival")


def test_pollux_preset_values_and_explicit_overrides():
    policy = make_policy("tiresias", preset="pollux")
    assert policy.round_length == 60.0 and policy.thresholds == [57600.0]
    assert (policy.placement, policy.queue_order) == ("most-free", "entry")
    tuned = make_policy("tiresias", round_length=120, preset="pollux", thresholds=[100], queue_order="arrival")
    assert tuned.round_length == 120.0 and tuned.thresholds == [100.0] and tuned.queue_order == "arrival"


@pytest.mark.parametrize("options", [{"preset": "gavel"}, {"placement": "anywhere"}, {"queue_order": "random"}])
def test_bad_preset_options_are_input_errors(options):
    with pytest.raises(InputError, match="bad options for policy 'tiresias'"):
        make_policy("tiresias", **options)


@pytest.mark.parametrize(("preset", "node"), [("spec", 1), ("pollux", 0)])
def test_placement_best_fit_or_most_free(profiles, preset, node):
    """A 2-GPU job on nodes of 4 and 2 free GPUs: the spec best-fits it (node 1), Pollux takes the emptiest."""
    nodes = make_nodes([("V100", 4), ("V100", 2)])
    job = Job("j", 0.0, 2, 100.0, "small")
    sim = Simulator(nodes, [job], make_policy("tiresias", preset=preset), profiles, POWER)
    records = sim.run()
    assert records.segments[0].placement == ((node, 2),)


def test_start_delay_charges_the_first_start(profiles):
    nodes = make_nodes([("V100", 4)])
    job = Job("j", 0.0, 1, 30.0, "small")  # 3 iterations/s on one V100: 10 s of work
    sim = Simulator(nodes, [job], make_policy("tiresias", preset="pollux"), profiles, POWER, start_delay=30.0)
    assert sim.run().jobs[0].end == pytest.approx(40.0)


class FakeView:
    """Just what the queue ordering reads: the time, the active jobs (running: their service grows) and their
    attained service."""

    def __init__(self, now: float, service: dict[str, float], states: list[JobState]) -> None:
        self.now = now
        self.running = {js.job.job_id: js for js in states}
        self.pending: dict[str, JobState] = {}
        self.shares = None  # whole GPUs
        self._service = service

    def attained_service(self, js: JobState) -> float:
        return self._service[js.job.job_id]


@pytest.mark.parametrize(("queue_order", "expected"), [("arrival", ["a", "b"]), ("entry", ["b", "a"])])
def test_demoted_jobs_queue_by_arrival_or_by_demotion(queue_order, expected):
    """b arrives after a but is demoted first; Pollux keeps Q1 in demotion order."""
    states = [
        JobState(Job("a", 0.0, 1, 1e6, "small"), 1e6, placement=((0, 1),)),
        JobState(Job("b", 5.0, 3, 1e6, "small"), 1e6, placement=((0, 3),)),
    ]
    policy = make_policy("tiresias", thresholds=[150.0], queue_order=queue_order)
    policy._priority_order(FakeView(120.0, {"a": 120.0, "b": 180.0}, states))  # b enters Q1 at 120
    order = policy._priority_order(FakeView(180.0, {"a": 180.0, "b": 180.0}, states))  # a enters Q1 at 180
    assert [entry[-1].job.job_id for entry in order] == expected
