"""adaptation.csv of a live run (gpuweave.live.results.adaptations): an adaptive job's rows are back to back, one
attempt's ending where the next was decided, even when its workers reported in the tick that decided the next
attempt and it drained after (the ray gang test's failure of stop 55)."""

from types import SimpleNamespace

from gpuweave.live.channel import WorkerStatus
from gpuweave.live.results import adaptations


def _attempt(decided: float, ended: float, samples: list[float], gpus: int, batch: int) -> SimpleNamespace:
    status = WorkerStatus(steps_per_s=2.0, batch_size=batch, init_batch_size=32, grad_sqr=1.0, grad_var=4.0)
    worker = SimpleNamespace(spec=SimpleNamespace(env={}))
    return SimpleNamespace(
        decided_sim=decided,
        ended_sim=ended,
        first_step_wall=decided + 1.0,  # wall == simulated here (time_scale 1, wall0 == start_time == 0)
        placement=(("n0", gpus),),
        copies=[SimpleNamespace(status=status, workers=[worker])],
        samples=[(t, status) for t in samples],
    )


def test_an_attempt_that_drains_past_the_next_decision_ends_its_rows_there():
    first = _attempt(0.0, 130.0, [60.0, 120.0], 1, 32)  # reported at 120, the tick the next attempt was decided
    second = _attempt(120.0, 300.0, [180.0, 240.0], 2, 64)
    runtime = SimpleNamespace(
        nodes={"n0": SimpleNamespace(gpu_model="V100")},
        ex=SimpleNamespace(time_scale=1.0),
        jobs={"a": SimpleNamespace(js=SimpleNamespace(job_id="a"), history=[first, second])},
        agents={"a"},
        start_time=0.0,
        wall0=0.0,
    )
    rows = adaptations(runtime)
    # a sample's row runs to the next sample (the first from the decision): 120's would open a row on the second
    # attempt's start, from the first attempt, if the first's rows ran to its end (130)
    assert [(r.start, r.end, r.gpus, r.batch_size) for r in rows] == [
        (0.0, 120.0, 1, 32),
        (120.0, 240.0, 2, 64),
        (240.0, 300.0, 2, 64),
    ]
    assert [r.idle for r in rows] == [1.0, 1.0, 0.0]  # the launch: decided to the first step
