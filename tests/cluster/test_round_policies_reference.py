"""The optimised round policies decide exactly as their first forms (kept as references beside this test): the
same segments, start and end times and number of decisions on Philly-like backlogs and on random traces.

Gavel's reference is tests/cluster/reference_gavel.py (per-job dicts, every type's queue sorted every round);
Hadar's and HadarE's are tests/cluster/reference_hadar.py on the first DP (tests/hadar/reference_dp.py); ANDREAS'
is the policy with the first RG (tests/andreas/reference_rg.py) and the job-by-job instance below."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuweave.andreas.model import Instance
from gpuweave.cluster.policies import make_policy
from gpuweave.cluster.policies.andreas_adapter import RGPolicy
from gpuweave.cluster.policies.andreas_instance import ViewAdapter
from gpuweave.hardware.cluster_spec import make_cluster
from gpuweave.workload.profiles import load_profiles
from gpuweave.workload.traces.generate import generate_philly_like

from ..andreas import reference_rg
from .conftest import POWER, decision_history, random_trace
from .reference_gavel import ReferenceGavel
from .reference_hadar import ReferenceHadar, ReferenceHadarE

GAVEL_CASES = [
    ("gavel", {}, {}),
    ("gavel", {"recompute": "on_change"}, {"recompute": "on_change"}),
    ("gavel", {"deficit": "per_round", "time_prior": 0.0}, {"deficit": "per_round", "time_prior": 0.0}),
    ("gavel-las", {}, {"policy": "heterogeneity_unaware_las"}),
    ("fifo-perf", {}, {"policy": "fifo_perf"}),
    ("gavel-ftf", {}, {"policy": "finish_time_fairness_perf"}),
    ("gavel-min-total-duration", {}, {"policy": "min_total_duration_perf"}),
]


history = decision_history


@pytest.mark.parametrize("name,options,reference", GAVEL_CASES)
@pytest.mark.parametrize("seed,gpus,jobs,rate", [(1, 48, 150, 400.0)])
def test_gavel_decides_as_the_reference_on_philly_like_traces(name, options, reference, seed, gpus, jobs, rate):
    if name in ("gavel-ftf", "gavel-min-total-duration"):
        jobs = 60  # bisections over LPs: keep the run short
    nodes = make_cluster(gpus, ["V100", "P100", "K80"], gpus_per_node=8).expand()
    profiles = load_profiles()
    trace = generate_philly_like(jobs, rate, seed, profiles=profiles)
    power = {m: (50.0, 250.0) for m in ("V100", "P100", "K80")}
    fast = history(nodes, trace, make_policy(name, seed=seed, **options), profiles, power)
    assert fast == history(nodes, trace, ReferenceGavel(seed=seed, **reference), profiles, power)
    assert sum(1 for s in fast[0] if s[2] is not None) > len(trace)  # jobs were preempted and moved


clusters = st.lists(st.tuples(st.sampled_from(["V100", "K80"]), st.integers(1, 4)), min_size=1, max_size=5)
job_specs = st.lists(
    st.tuples(
        st.floats(0, 3000, allow_nan=False),
        st.sampled_from([1, 1, 2, 3, 4, 8]),
        st.floats(100, 20000, allow_nan=False),
        st.sampled_from(["small", "big"]),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=clusters, jobs=job_specs, case=st.integers(0, 4), seed=st.integers(0, 9))
def test_gavel_decides_as_the_reference_on_random_traces(spec, jobs, case, seed):
    nodes, profiles, trace = random_trace(spec, jobs)
    if not trace:
        return
    name, options, reference = GAVEL_CASES[case]
    fast = history(nodes, trace, make_policy(name, seed=seed, type_order=["V100", "K80"], **options), profiles, POWER)
    ref = ReferenceGavel(seed=seed, type_order=["V100", "K80"], **reference)
    assert fast == history(nodes, trace, ref, profiles, POWER)


HADAR_CASES = [
    ("hadar", {}, ReferenceHadar),
    ("hadar", {"variant": "sticky"}, ReferenceHadar),
    ("hadar", {"backfill": True, "order": "srpt"}, ReferenceHadar),
    ("hadar", {"utility": "normalized", "max_states": 8}, ReferenceHadar),
    ("hadare", {}, ReferenceHadarE),
]


@pytest.mark.parametrize("name,options,reference", HADAR_CASES)
def test_hadar_decides_as_the_reference_on_a_philly_like_trace(name, options, reference):
    nodes = make_cluster(48, ["V100", "P100", "K80"], gpus_per_node=4).expand()
    profiles = load_profiles()
    trace = generate_philly_like(60 if name == "hadare" else 90, 200.0, 3, profiles=profiles)
    power = {m: (50.0, 250.0) for m in ("V100", "P100", "K80")}
    fast = history(nodes, trace, make_policy(name, **options), profiles, power)
    assert fast == history(nodes, trace, reference(**options), profiles, power)


class ReferenceViewAdapter(ViewAdapter):
    """The instance built one job at a time (its first form)."""

    def instance(self, view, h_wc, include_running=True, exclude=frozenset(), reserved=None) -> Instance:
        inst = super().instance(view, h_wc, include_running, exclude, reserved)
        by_id = {**view.pending, **view.running}
        times = np.full(inst.times.shape, np.inf)
        for j, job_id in enumerate(inst.job_ids):
            js = by_id[job_id]
            r = self.rates(view, js)
            with np.errstate(divide="ignore"):
                times[j] = np.where(r > 0, view.remaining(js) / np.where(r > 0, r, 1.0), np.inf)
            assert inst.due[j] == (math.inf if js.job.deadline is None else float(js.job.deadline))
        inst.times = times
        return inst


class ReferenceAndreas(RGPolicy):
    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.adapter = ReferenceViewAdapter(self.adapter.cost_model, self.adapter.rho)

    def optimize(self, inst, others=None):
        t0 = time.perf_counter()
        sched = reference_rg.randomized_greedy(inst, self.rng, self.config)
        sched.extra["opt_seconds"] = time.perf_counter() - t0
        return sched


@pytest.mark.parametrize("options", [{}, {"period": 300.0}, {"node_rule": "random_beta", "max_it": 20}])
def test_andreas_decides_as_the_reference_on_a_philly_like_trace(options):
    nodes = make_cluster(48, ["V100", "P100", "K80"], gpus_per_node=8).expand()
    profiles = load_profiles()
    trace = generate_philly_like(100, 200.0, 4, profiles=profiles)
    power = {m: (50.0, 250.0) for m in ("V100", "P100", "K80")}
    fast = history(nodes, trace, make_policy("andreas", seed=4, **options), profiles, power)
    assert fast == history(nodes, trace, ReferenceAndreas(seed=4, **options), profiles, power)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=clusters, jobs=job_specs, case=st.integers(0, 5), seed=st.integers(0, 9))
def test_hadar_and_andreas_decide_as_the_reference_on_random_traces(spec, jobs, case, seed):
    nodes, profiles, trace = random_trace(spec, jobs)
    if not trace:
        return
    if case < len(HADAR_CASES):
        name, options, reference = HADAR_CASES[case]
        fast, ref = make_policy(name, **options), reference(**options)
    else:
        fast, ref = make_policy("andreas", seed=seed, max_it=20), ReferenceAndreas(seed=seed, max_it=20)
    assert history(nodes, trace, fast, profiles, POWER) == history(nodes, trace, ref, profiles, POWER)


def test_gavel_s_fill_of_a_contested_type_is_the_walk_in_queue_order():
    """Gavel's greedy fill (:func:`gpuweave.cluster.policies.gavel._fill_in_order`, a cumulative sum and then one
    search per further job) takes exactly the jobs the one-job-at-a-time walk takes, and leaves the same room."""
    from gpuweave.cluster.policies.gavel import _fill_in_order

    rng = np.random.default_rng(3)
    for _ in range(4000):
        n, room = int(rng.integers(0, 40)), int(rng.integers(0, 60))
        sizes = rng.choice([1, 2, 3, 4, 8, 16], n).astype(np.int64)
        queue = rng.permutation(100)[:n].astype(np.int64)
        walked, filled = np.full(100, -1, dtype=np.int64), np.full(100, -1, dtype=np.int64)
        left = room
        for m, size in zip(queue.tolist(), sizes.tolist()):
            if size <= left:
                walked[m] = 2
                left -= size
                if left == 0:
                    break
        assert _fill_in_order(queue, sizes, room, filled, 2) == left
        assert np.array_equal(filled, walked)
