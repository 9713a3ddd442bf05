"""live.csv's outcome of an attempt: the attempt that finished its job reads ``done`` even if a stop reached it."""

from pathlib import Path

from gpuweave.cluster.state import JobState
from gpuweave.live.attempts import Attempt, LiveJob, attempt_outcome
from gpuweave.workload.job import Job


def _job() -> LiveJob:
    js = JobState(job=Job(job_id="j1", arrival=0.0, num_gpus=1, work=8000.0, job_type="torch-mlp"), remaining=8000.0)
    return LiveJob(js=js, argv=[], target=8000, checkpoint=Path("model.ckpt"))


def _attempt(number: int, **kw) -> Attempt:
    return Attempt(number, "start", ((0, 1),), False, [], 0.0, 0.0, 0.0, **kw)


def test_a_stop_that_meets_the_last_step_is_done_and_earlier_stops_stay_stopped():
    job = _job()
    first, last = _attempt(1, stopping=True), _attempt(2, stopping=True)
    job.history = [first, last]
    assert [attempt_outcome(job, a) for a in job.history] == ["stopped", "stopped"]  # the job is not done yet
    job.done = True  # the last attempt wrote the final checkpoint as the stop arrived (the H200 run's Hadar j1)
    assert [attempt_outcome(job, a) for a in job.history] == ["stopped", "done"]


def test_crash_and_lost_node_win_over_done_and_cancel_reads_stopped():
    job = _job()
    crashed, lost = _attempt(1, crash="exit 1"), _attempt(2, node_lost=True)
    job.history = [crashed, lost]
    job.done = True
    assert attempt_outcome(job, crashed) == "crash" and attempt_outcome(job, lost) == "node-lost"
    cancelled = _job()
    cancelled.history = [_attempt(1, stopping=True)]
    cancelled.cancelled = True
    assert attempt_outcome(cancelled, cancelled.history[0]) == "stopped"
    plain = _job()
    plain.history = [_attempt(1)]
    assert attempt_outcome(plain, plain.history[0]) == "done"
