"""Pollux's simulator's clock at epoch ends (cluster/epoch_rounding.py), alone and inside simulated runs."""

from __future__ import annotations

import math

import pytest

from gpuweave.cluster.config import SimulationConfig
from gpuweave.cluster.epoch_rounding import EpochRounding
from gpuweave.cluster.run import simulate
from gpuweave.cluster.state import JobState
from gpuweave.workload.job import Job
from gpuweave.workload.pollux import load_pollux_job_model
from gpuweave.workload.traces.pollux import read_pollux_workload
from gpuweave.workload.traces.schema import validate_frame, write_frame
from tests.workload.conftest import shared_dir

POLLUX = shared_dir() / "data" / "pollux"


class ThreeEpochs:
    """Every job: three epochs of 5.25 steps (10.5 s each at 0.5 steps/s: exactly a half second to round)."""

    def epoch_steps(self, job_type: str, num_gpus: int) -> list[float]:
        return [5.25, 10.5, 15.75]


def running(productive_start: float = 90.0, remaining: float = 15.75) -> JobState:
    js = JobState(Job("j", 0.0, 1, 15.75, "toy"), remaining=remaining)
    js.placement, js.rate, js.seg_start, js.productive_start = ((0, 1),), 0.5, productive_start - 30, productive_start
    return js


def test_each_epoch_end_is_rounded_half_to_even_from_its_stretch_start():
    clock = EpochRounding(ThreeEpochs(), 60.0)
    js = running()
    # epoch 1: 90 + round(10.5) = 100; epoch 2: 100 + 10 = 110; linear progress in between
    assert clock.progress(js, 100.0) == pytest.approx(5.25)
    assert clock.progress(js, 105.0) == pytest.approx(5.25 + 0.5 * 5)  # linear would say 7.5
    assert clock.progress(js, 80.0) == 0.0  # still in its delay
    # epoch 3's exact end (120.5) is after the tick at 120: its last stretch starts there, 0.5 s rounds to 0 ...
    assert clock.progress(js, 120.0) == pytest.approx(15.5)
    # ... so the job ends at that tick, one floating-point step late: the tick's decision saw it running
    assert clock.finish(js) == math.nextafter(120.0, math.inf)
    # linear time would have been 90 + 31.5 s


def test_a_resumed_job_walks_from_its_progress_and_new_start():
    clock = EpochRounding(ThreeEpochs(), 60.0)
    js = running(productive_start=200.0, remaining=15.75 - 7.75)  # stopped at 105 above, resumed at 200
    # epoch 2 ends 2.75 steps later: 5.5 s exactly, round(5.5) = 6 (half to even)
    assert clock.progress(js, 206.0) == pytest.approx(2.75)
    assert clock.finish(js) == 206.0 + 10.0  # epoch 3: round(10.5) = 10


def test_epoch_ends_are_scaled_to_the_jobs_work():
    clock = EpochRounding(ThreeEpochs(), 60.0)
    assert clock.epoch_ends("toy", 1, 31.5) == [10.5, 21.0, 31.5]
    with pytest.raises(ValueError, match="positive"):
        EpochRounding(ThreeEpochs(), 0.0)


needs_pollux = pytest.mark.skipif(not POLLUX.is_dir(), reason=f"shared Pollux data not found at {POLLUX}")


def run_tiresias(tmp_path, rows: list[str]) -> dict[str, float]:
    traces = POLLUX / "traces"
    model = load_pollux_job_model(traces)
    workload = tmp_path / "w.csv"
    workload.write_text("name,time,application,num_replicas,batch_size\n" + "\n".join(rows) + "\n")
    trace = tmp_path / "w.trace.csv"
    write_frame(validate_frame(read_pollux_workload(workload, model), file=workload, profiles=model), trace)
    config = SimulationConfig(
        policy="tiresias",
        policy_options={"preset": "pollux"},
        cluster="pollux-64",
        trace=str(trace),
        profiles=str(traces),
        restart_delay=30.0,
        start_delay=30.0,
    )
    return {js.job.job_id: js.end for js in simulate(config).jobs}


@needs_pollux
def test_cifar10_jobs_end_when_pollux_simulator_ends_them(tmp_path):
    """Ends measured with Pollux's own simulator (petuum/adaptdl osdi21-artifact, Tiresias, default 64-GPU
    cluster) on these two jobs, the first two of a workload its generator made with seed 201: 1000 s and 572 s.
    Continuous time gave 987.3 s and 568.9 s."""
    ends = run_tiresias(tmp_path, ["cifar10-0,6,cifar10,6,2048", "cifar10-1,7,cifar10,16,4096"])
    assert ends == {"cifar10-0": 1000.0, "cifar10-1": 572.0}


@needs_pollux
def test_unmeasured_placements_interpolate_on_pollux_triangulation():
    """Step and sync time Pollux's simulator reads for ImageNet at local batch 134 on 14 and 13 nodes (its
    ``get_throughput``, measured beside it); separable linear interpolation between the 12- and 16-node rows gave
    0.7704 s and 0.7790 s."""
    app = load_pollux_job_model(POLLUX / "traces").apps["imagenet"]
    assert app.step_times((2, 2, 2, 2) + (4,) * 10, 134) == pytest.approx((0.75451701, 0.07785129), abs=1e-8)
    assert app.step_times((1,) + (4,) * 11 + (3,), 134) == pytest.approx((0.77104299, 0.09334819), abs=1e-8)
    assert app.step_times((4,) * 5, 160) == pytest.approx((0.83926286, 0.03412946), abs=1e-8)  # 5 nodes: was None
