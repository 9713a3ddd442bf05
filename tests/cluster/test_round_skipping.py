"""Round policies that skip a round in which nothing changed decide exactly as when every round is computed."""

from __future__ import annotations

import pytest

from gpuweave.cluster.policies.tiresias import TiresiasPolicy
from gpuweave.cluster.simulator import Simulator
from gpuweave.hardware.cluster_spec import make_cluster
from gpuweave.workload.profiles import load_profiles
from gpuweave.workload.traces.generate import generate_philly_like


class EveryRoundTiresias(TiresiasPolicy):
    """The reference: every round computed in full."""

    def schedule(self, view):
        decision, _settled, _active = self._full_round(view)
        return decision


def _history(policy, trace, gpus):
    nodes = make_cluster(gpus, ["V100", "P100", "K80"], gpus_per_node=8).expand()
    power = {m: (50.0, 250.0) for m in ("V100", "P100", "K80")}
    rec = Simulator(nodes, trace, policy, load_profiles(), power).run()
    return [(s.job_id, s.start, s.end, s.placement) for s in rec.segments], rec.decisions


@pytest.mark.parametrize("options", [{}, {"preset": "pollux"}, {"type_choice": "fixed", "num_queues": 4}])
@pytest.mark.parametrize("seed,gpus,rate", [(1, 48, 200.0), (2, 240, 30.0)])
def test_tiresias_skipping_rounds_decides_as_every_round(options, seed, gpus, rate):
    trace = generate_philly_like(300, rate, seed, profiles=load_profiles())
    fast = TiresiasPolicy(seed=seed, **options)
    segments, decisions = _history(fast, trace, gpus)
    assert (segments, decisions) == _history(EveryRoundTiresias(seed=seed, **options), trace, gpus)
    assert len(fast.decision_times) == decisions
    assert 0 < fast.rounds_computed < decisions / 2  # most rounds change nothing and are skipped
