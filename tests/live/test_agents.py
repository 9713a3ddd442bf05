"""Adaptive jobs' agents in a live run (live/agents.py): batch limits from the trace's columns, the batch picked for
each placement, measurements refitting the throughput model, and who may run pollux live."""

from __future__ import annotations

import pytest

from gpuweave.cluster.state import JobState
from gpuweave.errors import InputError
from gpuweave.live.agents import ADAPTIVE_COLUMNS, LiveAgents, batch_limits
from gpuweave.workload.job import Job

LIMITS = dict(zip(ADAPTIVE_COLUMNS, (32, 256, 8, 64)))


def _job(job_id: str = "a", **attrs) -> Job:
    return Job(job_id, 0.0, 1, 1000.0, "mlp", attrs=attrs)


def test_a_job_is_adaptive_with_all_four_columns_only():
    assert batch_limits(_job()) is None
    limits = batch_limits(_job(moldable=4, **LIMITS))
    assert limits is not None
    given = (limits.init_batch_size, limits.max_batch_size, limits.min_local_bsz, limits.max_local_bsz)
    assert given == (32, 256, 8, 64)
    assert limits.max_replicas(256) == 4  # moldable caps it (256 / 8 would be 32)
    with pytest.raises(InputError, match="max_local_bsz"):
        batch_limits(_job(batch_size=32, max_batch_size=256, min_local_bsz=8))
    with pytest.raises(InputError, match="min_local_bsz <= batch_size"):
        batch_limits(_job(**{**LIMITS, "batch_size": 512}))
    with pytest.raises(InputError, match="whole numbers"):
        batch_limits(_job(**{**LIMITS, "min_local_bsz": 2.5}))


def test_the_agent_picks_each_placement_s_batch_and_learns_from_measurements():
    agents = LiveAgents()
    assert agents.add(_job(**LIMITS)) and not agents.add(_job("rigid"))
    js = JobState(_job(**LIMITS), 1000.0)
    agent = agents.agent(js, 0.0)
    assert agent is not None and agent.goodput_model() is None and agent.restarts is None
    plan = agents.launch("a", ((0, 1),), "V100")  # before any measurement: the initial batch, Pollux's rule
    assert (plan.batch_size, plan.atomic_bsz, plan.accum_steps) == (32, 32, 0) and agent.restarts == 0
    agents.measure("a", ((0, 1),), 0.1, 0.0, None)  # no gradient statistics yet: nothing to fit a goodput to
    assert agent.perf is None
    agents.measure("a", ((0, 1),), 0.1, 0.0, (2.0, 5.0))
    assert agent.perf is not None and agent.grad == (2.0, 5.0) and agent.goodput_model() is not None
    fitted = agent.perf
    agents.measure("a", ((0, 1),), 0.101, 0.0, (2.0, 5.0))  # within 5 %: no refit
    assert agent.perf is fitted
    plan = agents.launch("a", ((0, 2), (1, 2)), "V100")  # a new placement: the goodput model's batch, one more restart
    assert plan.batch_size == 4 * plan.atomic_bsz * (plan.accum_steps + 1) and 32 <= plan.batch_size <= 256
    assert agent.restarts == 1
    agents.measure("a", ((0, 2), (1, 2)), 0.12, 0.02, (1.0, 6.0))
    assert (2, 4, plan.atomic_bsz) in agent.profile


def test_with_fits_per_gpu_type_each_type_s_measurements_fit_that_type_only():
    """Sia's agents: a fit per GPU type, switched with the placement (pollux's: one whatever the type)."""
    agents = LiveAgents()
    agents.per_gpu_type = True
    agents.add(_job(**LIMITS))
    agent = agents.agent(JobState(_job(**LIMITS), 1000.0), 0.0)
    assert agent is not None
    agents.launch("a", ((0, 1),), "V100")
    agents.measure("a", ((0, 1),), 0.1, 0.0, (2.0, 5.0))
    on_v100 = agent.perf_on("V100")
    assert on_v100 is not None and agent.perf_on("K80") is None
    agents.launch("a", ((1, 1),), "K80")  # another type: its own fit, none yet
    assert agent.perf is None and agent.perf_on("V100") is on_v100
    agents.measure("a", ((1, 1),), 0.25, 0.0, (2.0, 5.0))
    on_k80 = agent.perf_on("K80")
    assert on_k80 is not None and on_k80 != on_v100 and agent.perf_on("V100") is on_v100
    agents.launch("a", ((0, 1),), "V100")  # back: the V100 fit comes in again
    assert agent.perf is on_v100 and agent.restarts == 2


def test_pollux_and_sia_run_live_only_when_every_job_is_adaptive():
    from gpuweave.live.runtime import _check_policy

    for policy in ("pollux", "sia"):
        _check_policy(policy, True)
        with pytest.raises(InputError, match=f"policy '{policy}' needs"):
            _check_policy(policy, False)
    for other in ("optimus", "gavel-sia"):  # they need the job model's tables
        with pytest.raises(InputError, match=f"policy '{other}' needs"):
            _check_policy(other, True)
    _check_policy("fifo", False)
