"""Gavel's ``lp="warm-simplex"`` (ours): the max-min LP by dual simplex from the last solve's basis. It must reach
the interior point's optimal objective on every LP of a sequence whose jobs come and go, start from fewer
iterations than a cold start, and drive a whole simulation to completion; the option is checked up front."""

from __future__ import annotations

import numpy as np
import pytest

from gpuweave.baselines.gavel import SIMPLEX, WarmMaxMinLP, max_min_fairness_lp, max_min_model, max_min_objective
from gpuweave.cluster.policies import make_policy
from gpuweave.cluster.simulator import Simulator
from gpuweave.hardware.cluster_spec import make_cluster
from gpuweave.workload.profiles import load_profiles
from gpuweave.workload.traces.generate import generate_philly_like

WORKERS = np.array([40.0, 40.0, 36.0])


def _job(rng):
    row = rng.uniform(0.3, 4.0, 3) * np.where(rng.random(3) < 0.15, 0.0, 1.0)
    row[0] = max(row[0], 0.5)  # every job runs somewhere
    return row, float(rng.choice([1, 1, 1, 2, 4, 8]))


def _churn(steps, seed=5):
    """A sequence of (ids, T, scale): each step some jobs finish and some arrive, in arrival order."""
    rng = np.random.default_rng(seed)
    jobs = {}
    next_id = 0
    for _ in range(60):
        jobs[next_id] = _job(rng)
        next_id += 1
    for step in range(steps):
        for key in list(jobs):
            if rng.random() < 0.08:
                del jobs[key]
        for _ in range(int(rng.integers(0, 9))):
            jobs[next_id] = _job(rng)
            next_id += 1
        ids = sorted(jobs)
        yield ids, np.array([jobs[k][0] for k in ids]), np.array([jobs[k][1] for k in ids])


def test_warm_start_reaches_the_interior_optimum_on_every_lp_of_a_changing_set():
    warm = WarmMaxMinLP()
    for ids, T, scale in _churn(25):
        x = warm.solve(T, scale, WORKERS, ids)
        assert (x >= 0).all() and (x.sum(axis=1) <= 1 + 1e-9).all() and (x[T == 0] == 0).all()
        assert ((scale[:, None] * x).sum(axis=0) <= WORKERS + 1e-6).all()
        interior = max_min_fairness_lp(T, scale, WORKERS, interior=True)
        best = max_min_objective(T, scale, WORKERS, interior)
        assert max_min_objective(T, scale, WORKERS, x) == pytest.approx(best, rel=1e-7)
    assert warm.solves == 25


def test_warm_start_needs_fewer_iterations_than_a_cold_simplex():
    steps = list(_churn(12, seed=9))
    warm = WarmMaxMinLP()
    for ids, T, scale in steps:
        warm.solve(T, scale, WORKERS, ids)
    assert warm.warm_starts == len(steps) - 1  # the first LP has no basis to start from
    cold_iterations = 0
    for ids, T, scale in steps[1:]:
        h = max_min_model(T, scale, WORKERS, None, SIMPLEX)  # the same simplex without a start
        h.run()
        cold_iterations += h.getInfo().simplex_iteration_count
    assert warm.iterations < cold_iterations / 2, (warm.iterations, cold_iterations)


def test_warm_start_survives_a_change_of_types_and_an_empty_set():
    warm = WarmMaxMinLP()
    ids, T, scale = next(_churn(1))
    warm.solve(T, scale, WORKERS, ids)
    two = warm.solve(T[:, :2], scale, WORKERS[:2], ids)  # a type gone: the old basis does not fit, cold start
    assert two.shape == (len(ids), 2) and warm.warm_starts == 0
    assert warm.solve(np.zeros((0, 3)), np.zeros(0), WORKERS, []).shape == (0, 3)
    again = warm.solve(T, scale, WORKERS, ids)
    assert max_min_objective(T, scale, WORKERS, again) == pytest.approx(
        max_min_objective(T, scale, WORKERS, max_min_fairness_lp(T, scale, WORKERS)), rel=1e-7
    )


def test_gavel_with_the_warm_simplex_runs_a_trace_to_completion():
    profiles = load_profiles()
    trace = generate_philly_like(150, 60.0, 2, profiles=profiles)
    nodes = make_cluster(48, ["V100", "P100", "K80"], gpus_per_node=8).expand()
    power = {m: (50.0, 250.0) for m in ("V100", "P100", "K80")}
    results = []
    for lp in ("interior", "warm-simplex"):
        policy = make_policy("gavel", lp=lp)
        rec = Simulator(nodes, trace, policy, profiles, power).run()
        assert all(js.end is not None for js in rec.jobs)
        assert policy.lp_solves > 0
        results.append(rec)
    # Same optimal objective, another point of the optimal face: the schedules differ.
    assert [js.end for js in results[0].jobs] != [js.end for js in results[1].jobs]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"lp": "ecos"}, "lp must be one of interior, warm-simplex"),
        ({"lp": "warm-simplex", "partitions": 2}, "partitions = 1"),
        ({"lp": "warm-simplex", "policy": "min_total_duration_perf"}, "partitions = 1"),
    ],
)
def test_bad_lp_options_are_refused_up_front(options, message):
    with pytest.raises(ValueError, match=message):
        make_policy("gavel", **options)


def test_a_start_that_ends_without_an_optimum_is_solved_again_from_scratch(monkeypatch):
    import gpuweave.baselines.gavel as gavel_lps

    steps = list(_churn(2, seed=4))
    warm = WarmMaxMinLP()
    warm.solve(steps[0][1], steps[0][2], WORKERS, steps[0][0])
    real = gavel_lps.run_model
    seen = []

    def first_fails(h, *, strict=True):  # HiGHS stopping short (e.g. a time or iteration limit) on the warm start
        seen.append(strict)
        return None if len(seen) == 1 else real(h, strict=strict)

    monkeypatch.setattr(gavel_lps, "run_model", first_fails)
    ids, T, scale = steps[1]
    x = warm.solve(T, scale, WORKERS, ids)
    assert seen == [False, True]  # the warm start, then the cold run that must end optimal
    best = max_min_objective(T, scale, WORKERS, max_min_fairness_lp(T, scale, WORKERS, interior=True))
    assert max_min_objective(T, scale, WORKERS, x) == pytest.approx(best, rel=1e-7)


def _start_basis_loop_form(last, keys, R):
    """The start basis as first written (one job at a time over lists of statuses), the reference for the array
    form in WarmMaxMinLP._start_basis."""
    at, cols, rows, PM = last
    cols, rows = cols.tolist(), rows.tolist()
    basic, lower, upper = 1, 0, 2  # HighsBasisStatus values
    M = len(keys)
    col, fair, total = [], [], []
    for key in keys:
        k = at.get(key)
        if k is None:
            col += [lower] * R
            fair.append(basic)
            total.append(basic)
        else:
            col += cols[k * R : (k + 1) * R]
            fair.append(rows[k])
            total.append(rows[PM + k])
    col.append(cols[-1])
    row = fair + total + rows[2 * PM :]
    surplus = col.count(basic) + row.count(basic) - len(row)
    for i in range(M, 2 * M):
        if surplus <= 0:
            break
        if row[i] == basic:
            row[i] = upper
            surplus -= 1
    for i in range(len(row)):
        if surplus >= 0:
            break
        if row[i] != basic:
            row[i] = basic
            surplus += 1
    return col, row


def test_the_start_basis_is_the_one_job_at_a_time_form_on_a_changing_set():
    import highspy

    warm = WarmMaxMinLP()
    checked = 0
    for ids, T, scale in _churn(30, seed=11):
        if warm._last is not None and len(warm._last[1]) == warm._last[3] * 3 + 1:
            start = warm._start_basis(ids, 3, highspy)
            col, row = _start_basis_loop_form(warm._last, ids, 3)
            assert [int(s.value) for s in start.col_status] == col
            assert [int(s.value) for s in start.row_status] == row
            checked += 1
        warm.solve(T, scale, WORKERS, ids)
    assert checked == 29


def test_the_start_basis_repairs_too_many_and_too_few_basic_statuses():
    import highspy

    warm = WarmMaxMinLP()
    ids = ["a", "b", "c"]
    # A hand-made last basis with 2 jobs (R = 1): columns a, b, z; rows fair a, b; sum a, b; one type row.
    for cols, rows in (([1, 1, 1], [1, 1, 1, 1, 1]), ([0, 0, 0], [0, 0, 0, 0, 0])):
        warm._last = ({"a": 0, "b": 1}, np.array(cols, np.int8), np.array(rows, np.int8), 2)
        start = warm._start_basis(ids, 1, highspy)
        col, row = _start_basis_loop_form(warm._last, ids, 1)
        assert [int(s.value) for s in start.col_status] == col
        assert [int(s.value) for s in start.row_status] == row
        assert col.count(1) + row.count(1) == len(row)  # as many basic variables as rows
