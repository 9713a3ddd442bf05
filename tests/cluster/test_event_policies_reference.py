"""The indexed event-driven policies (FIFO, SJF, YARN-CS) decide exactly as a straightforward reference that
re-scans or re-sorts the whole pending queue on every call (their code before the pending index)."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import Plan
from gpuweave.cluster.placement import fastest_models, place_on_model
from gpuweave.cluster.policies import make_policy
from gpuweave.hardware.cluster_spec import make_cluster
from gpuweave.workload.job import Job
from gpuweave.workload.profiles import load_profiles
from gpuweave.workload.traces.generate import generate_philly_like

from .conftest import POWER, decision_history, random_trace


class ReferenceFifo(ClusterPolicy):
    """Walk the whole queue in arrival order on every call."""

    def __init__(self, strict: bool = True) -> None:
        super().__init__()
        self.strict = strict

    def schedule(self, view):
        plan = Plan(view)
        for js in view.pending.values():
            placed = False
            if sum(plan.free_by_model.values()) >= js.job.num_gpus:
                for model in fastest_models(view, js):
                    placement = place_on_model(plan, js, model)
                    if placement is not None:
                        plan.start(js, placement)
                        placed = True
                        break
            if not placed and self.strict:
                break
        return plan.decision


class ReferenceSjf(ClusterPolicy):
    """Sort the whole queue by oracle duration on every call; skip jobs that do not fit."""

    def schedule(self, view):
        def oracle(js):
            if js.job.duration is not None:
                return float(js.job.duration)
            best = max((view.model_rate(js, m, True) for m in view.models), default=0.0)
            return js.job.work / best if best > 0 else float("inf")

        plan = Plan(view)
        for js in sorted(view.pending.values(), key=lambda js: (oracle(js), js.job.arrival, js.job.job_id)):
            if sum(plan.free_by_model.values()) < js.job.num_gpus:
                continue
            for model in fastest_models(view, js):
                placement = place_on_model(plan, js, model)
                if placement is not None:
                    plan.start(js, placement)
                    break
        return plan.decision


class ReferenceYarn(ClusterPolicy):
    """Walk the whole queue in arrival order; a seeded choice among the GPU types with room."""

    def __init__(self, strict: bool = False, type_choice: str = "random", seed: int = 0) -> None:
        super().__init__(seed=seed)
        self.strict, self.type_choice, self.rng = strict, type_choice, random.Random(seed)

    def schedule(self, view):
        plan = Plan(view)
        largest = {m: max(view.nodes[i].num_gpus for i in view.nodes_by_model[m]) for m in view.models}
        for js in view.pending.values():
            n = js.job.num_gpus
            candidates = []
            for model in view.models:
                if plan.free_by_model[model] < n:
                    continue
                placement = place_on_model(plan, js, model, allow_spread=n > largest[model])
                if placement is not None and view.rate(js, placement) > 0:
                    candidates.append(placement)
            if candidates:
                plan.start(js, candidates[0] if self.type_choice == "fixed" else self.rng.choice(candidates))
            elif self.strict:
                break
        return plan.decision


CASES = [
    ("fifo", {}, lambda seed: ReferenceFifo()),
    ("fifo", {"strict": False}, lambda seed: ReferenceFifo(strict=False)),
    ("sjf", {}, lambda seed: ReferenceSjf()),
    ("yarn-cs", {}, lambda seed: ReferenceYarn(seed=seed)),
    ("yarn-cs", {"strict": True}, lambda seed: ReferenceYarn(strict=True, seed=seed)),
    ("yarn-cs", {"type_choice": "fixed"}, lambda seed: ReferenceYarn(type_choice="fixed", seed=seed)),
]


_history = decision_history  # jobs also compared by restarts (none: no preemption)


@pytest.mark.parametrize("name,options,reference", CASES)
@pytest.mark.parametrize("seed", [1, 2])
def test_same_decisions_as_reference_on_philly_like_backlog(name, options, reference, seed):
    # A small cluster far over capacity: hundreds of jobs wait, with mixed GPU counts and job types.
    nodes = make_cluster(48, ["V100", "P100", "K80"], gpus_per_node=8).expand()
    profiles = load_profiles()
    trace = generate_philly_like(600, 400.0, seed, profiles=profiles)
    power = {m: (50.0, 250.0) for m in ("V100", "P100", "K80")}
    indexed = _history(nodes, trace, make_policy(name, seed=seed, **options), profiles, power)
    assert indexed == _history(nodes, trace, reference(seed), profiles, power)
    assert max(len(s[3]) for s in indexed[0]) >= 1


clusters = st.lists(st.tuples(st.sampled_from(["V100", "K80"]), st.integers(1, 4)), min_size=1, max_size=5)
job_specs = st.lists(
    st.tuples(
        st.floats(0, 500, allow_nan=False),
        st.sampled_from([1, 1, 2, 3, 4, 8]),
        st.floats(1, 5000, allow_nan=False),
        st.sampled_from(["small", "big"]),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=clusters, jobs=job_specs, case=st.integers(0, len(CASES) - 1), seed=st.integers(0, 9))
def test_same_decisions_as_reference_on_random_traces(spec, jobs, case, seed):
    nodes, profiles, trace = random_trace(spec, jobs)
    if not trace:
        return
    name, options, reference = CASES[case]
    indexed = _history(nodes, trace, make_policy(name, seed=seed, **options), profiles, POWER)
    assert indexed == _history(nodes, trace, reference(seed), profiles, POWER)


@pytest.mark.parametrize("strict", [True, False])
def test_pending_index_follows_a_queue_changed_inside_as_well_as_at_its_tail(strict):
    """A driver that drops a waiting job and adds another in the same instant (the service cancels one while a new
    one arrives): one more job than the index knows, yet not one arrival at the tail. The index must offer exactly
    the queue's jobs, in order."""
    from gpuweave.cluster.policies.pending_index import PendingIndex, arrival_order
    from gpuweave.cluster.state import JobState

    def state(name: str) -> JobState:
        return JobState(job=Job(job_id=name, arrival=0.0, num_gpus=1, work=1.0, job_type="resnet50"), remaining=1.0)

    pending = {name: state(name) for name in "abc"}
    index = PendingIndex(arrival_order, strict=strict)
    index.sync(pending)
    del pending["b"]
    pending["d"], pending["e"] = state("d"), state("e")
    index.sync(pending)
    offered: list[str] = []
    index.start_in_order(lambda: 10, lambda js: offered.append(js.job.job_id) or True)
    assert offered == ["a", "c", "d", "e"] and len(index) == 0
