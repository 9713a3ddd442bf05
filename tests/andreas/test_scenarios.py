"""Scenario generator (spec §9.3) and quick versions of AC12/AC13 (one workload seed, one RG seed, N = 10)."""

from __future__ import annotations

import numpy as np
import pytest

from gpuweave.andreas.workload import OMEGA_RANGE, full_times, rg_seeds, scenario_jobs, scenario_nodes
from gpuweave.errors import InputError
from gpuweave.repro.andreas.experiments import reductions, scenario_runs


def test_generator_shape_and_determinism():
    nodes = scenario_nodes(10, 2)
    assert [(n.gpu_model, n.num_gpus) for n in nodes[:2]] == [("V100", 4), ("T4", 2)]
    jobs = scenario_jobs(10, 1, 1000)
    assert len(jobs) == 100 and min(j.arrival for j in jobs) == 0.0
    again = scenario_jobs(10, 1, 1000)
    assert [(j.job_id, j.arrival, j.deadline, j.priority) for j in jobs] == [
        (j.job_id, j.arrival, j.deadline, j.priority) for j in again
    ]
    for j in jobs:
        t = full_times(j.job_type, j.work)
        rel = j.deadline - j.arrival
        assert min(t.values()) <= rel <= min(3 * min(t.values()), max(t.values())) + 1e-9
        assert OMEGA_RANGE[0] <= j.priority <= OMEGA_RANGE[1]
        assert j.attrs["moldable"] is True and j.num_gpus == 1
    heavier = scenario_jobs(10, 1, 1000, load_scale=2.0)
    assert max(j.arrival for j in heavier) < max(j.arrival for j in jobs)
    assert rg_seeds(1000) == [1020, 1030, 1040, 1050, 1060]
    with pytest.raises(InputError):
        scenario_nodes(10, 3)
    with pytest.raises(InputError):
        scenario_jobs(10, 1, 0, load_scale=0)


def test_ac12_ac13_quick():
    rows = scenario_runs(1, [10], 1, 1) + scenario_runs(2, [10], 1, 1)
    red = reductions(rows)
    for b in ("andreas-fifo", "edf", "priority"):
        assert 0.35 <= red[(1, 10, b)]["total"] <= 0.80  # AC12 (paper ~62 %)
        assert red[(1, 10, b)]["energy"] >= 0
        assert 0.0 < red[(2, 10, b)]["total"] < red[(1, 10, b)]["total"]  # AC13
    rg = [r for r in rows if r["scenario"] == 1 and r["policy"] == "andreas"]
    fpm = [r for r in rows if r["scenario"] == 1 and r["policy"] != "andreas"]
    assert np.mean([r["tardiness_eur"] for r in rg]) <= 0.1 * np.mean([r["tardiness_eur"] for r in fpm])
    assert np.mean([r["opt_mean_s"] for r in rg]) > np.mean([r["opt_mean_s"] for r in fpm])  # AC15: RG slower than FPM
