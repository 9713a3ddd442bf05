"""Round policies that skip a round in which nothing changed decide exactly as when every round is computed."""

from __future__ import annotations

import pytest

from gpuweave.cluster.decision import Decision
from gpuweave.cluster.policies.tiresias import TiresiasPolicy, single_type_placement
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


class FullSortTiresias(TiresiasPolicy):
    """The reference: the round as it was before the order was kept across rounds (every active job's queue read
    and the whole list sorted every round, pass 1 over every active job), and every round computed."""

    def schedule(self, view):
        table = self._rates.of(view)
        models = self._models(view)
        col = {m: i for i, m in enumerate(view.models)}
        active = list(view.running.values()) + list(view.pending.values())
        entered = {}
        old = getattr(self, "_ref_entered", {})
        for js in active:
            queue = self.queue_of(view.attained_service(js))
            previous = old.get(js.job.job_id)
            entered[js.job.job_id] = previous if previous is not None and previous[0] == queue else (queue, view.now)
        self._ref_entered = entered
        if self.queue_order == "entry":
            active.sort(key=lambda js: (*entered[js.job.job_id], js.job.arrival, js.job.job_id))
        else:
            active.sort(key=lambda js: (entered[js.job.job_id][0], js.job.arrival, js.job.job_id))
        scratch = self._capacity.scratch(view)
        left = dict(scratch.free_by_model)
        room = max(left.values(), default=0)
        chosen = []
        for js in active:
            n = js.job.num_gpus
            if js.placement is not None:
                model = view.nodes[js.placement[0][0]].gpu_model
                if left[model] >= n:
                    left[model] -= n
                    room = max(left.values())
                    chosen.append((js, model))
                    continue
            if n > room:
                continue
            cons, uncons = table.cons(js.job.job_type, n), table.uncons(js.job.job_type, n)
            options = [m for m in models if left[m] >= n and (cons[col[m]] > 0 or uncons[col[m]] > 0)]
            if options:
                model = options[0] if self.type_choice == "fixed" else self._rng.choice(options)
                left[model] -= n
                room = max(left.values())
                chosen.append((js, model))
        wanted, movers = {}, []
        for js, model in chosen:
            p = js.placement
            if p is not None and view.nodes[p[0][0]].gpu_model == model and scratch.fits(p):
                scratch.take(p)
                wanted[js.job.job_id] = p
            else:
                movers.append((js, model))
        for js, model in movers:
            placement = single_type_placement(scratch, view, js.job.num_gpus, model, self.placement)
            if placement is None:
                continue
            cons, uncons = table.get(js.job.job_type, js.job.num_gpus)
            if (cons[col[model]] if len(placement) == 1 else uncons[col[model]]) > 0:
                scratch.take(placement)
                wanted[js.job.job_id] = placement
        return Decision.from_allocation(view, wanted)


@pytest.mark.parametrize(
    "options,seed,gpus,rate",
    [
        ({}, 3, 48, 300.0),
        ({"preset": "pollux"}, 4, 96, 60.0),
        ({"type_choice": "fixed", "num_queues": 4}, 5, 24, 120.0),
        ({"num_queues": 3}, 6, 48, 200.0),
    ],
)
def test_tiresias_kept_order_decides_as_a_full_sort_every_round(options, seed, gpus, rate):
    """The order kept across rounds (crossing heap, early exit of pass 1, inline kept placements) against the
    previous code, on Philly-like traces that build a backlog (many queue crossings, preemptions and moves)."""
    trace = generate_philly_like(300, rate, seed, profiles=load_profiles())
    fast = TiresiasPolicy(seed=seed, **options)
    assert _history(fast, trace, gpus) == _history(FullSortTiresias(seed=seed, **options), trace, gpus)
