"""Gavel's simulator reproduced: mechanics, fifo-perf, ideal placement, gavel-sim, and the agreement bands of
issue #18 on Gavel's own results (../shared/data/gavel-reference)."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpuweave.baselines.gavel import fifo_perf_allocation, fraction_priorities, isolated_allocation
from gpuweave.cluster.policies import POLICIES, make_policy
from gpuweave.cluster.simulator import Simulator
from gpuweave.hardware.cluster_spec import load_cluster
from gpuweave.repro.crosscheck import run_crosscheck
from gpuweave.repro.crosscheck.gavel import read_summary, simulate_run
from gpuweave.workload.job import Job
from gpuweave.workload.profiles import ProfileRow, ProfileStore, load_profiles


def gavel_reference() -> Path:
    shared = Path(os.environ.get("GPUWEAVE_SHARED", Path(__file__).resolve().parents[2].parent / "shared"))
    data = shared / "data" / "gavel-reference"
    if not (data / "summary.csv").is_file():
        pytest.skip(f"Gavel reference data not found at {data} (set GPUWEAVE_SHARED to the shared/ directory)")
    return data


def test_fifo_perf_allocation_skips_zero_throughput_and_stops_when_nothing_has_room():
    T = np.array([[2.0, 1.0], [0.0, 0.0], [1.0, 3.0], [5.0, 5.0], [1.0, 1.0]])
    x = fifo_perf_allocation(T, np.array([1, 1, 1, 2, 1]), np.array([1.0, 2.0]))
    # job 0 on type 0; job 1 fits but runs nowhere: passed over; job 2 on type 1; job 3 (2 GPUs) has no room:
    # the pass stops, so job 4 gets nothing although type 1 has a GPU left.
    assert x.tolist() == [[1, 0], [0, 0], [0, 1], [0, 0], [0, 0]]


def test_priorities_follow_the_time_fraction_and_new_jobs_get_zero():
    alloc = np.array([[0.5, 0.5], [1.0, 0.0], [0.3, 0.7]])
    job_time = np.array([[180.0, 540.0], [180.0, 180.0], [0.0, 180.0]])
    prio = fraction_priorities(alloc, np.array([True, True, False]), job_time, np.array([360.0, 720.0]), alloc >= 0)
    assert prio[0].tolist() == pytest.approx([0.5 / 0.5, 0.5 / 0.75])
    assert prio[1].tolist() == [2.0, 0.0]  # x = 0 gives 0
    assert prio[2].tolist() == [0.0, 0.0]  # no allocation yet


def test_isolated_allocation_scales_each_row_to_at_most_one():
    x = isolated_allocation(np.array([1.0, 2.0, 8.0]), np.array([4.0, 2.0]))
    # shares n_r / M / sf: [4/3, 2/3], [2/3, 1/3], [1/6, 1/12]; the first two rows are scaled to sum to 1.
    assert x.sum(axis=1).tolist() == pytest.approx([1.0, 1.0, 0.25])
    assert x[2].tolist() == pytest.approx([1 / 6, 1 / 12])


def test_policies_registered_with_their_options():
    names = POLICIES.names()
    for name in ("fifo-perf", "gavel-las", "gavel-ftf", "gavel-min-total-duration"):
        assert name in names
        options = {o.name for o in POLICIES.get(name).options}
        assert {"reset_interval", "recompute", "time_prior", "deficit"} <= options
    assert make_policy("gavel-las").policy == "heterogeneity_unaware_las"
    assert make_policy("fifo-perf").policy == "fifo_perf"


def test_gavel_sim_has_ideal_placement():
    spec = load_cluster("gavel-sim")
    assert spec.placement == "ideal" and spec.gpus_by_model() == {"V100": 20, "P100": 20, "K80": 20}
    assert load_cluster("gavel-60").placement == "physical"


@pytest.mark.parametrize("ideal", [False, True])
def test_ideal_placement_gives_a_spread_job_its_consolidated_rate(ideal):
    profiles = ProfileStore.from_rows(
        [
            ProfileRow("a", "V100", 2, True, 4.0),
            ProfileRow("a", "V100", 2, False, 1.0),
            ProfileRow("a", "V100", 1, True, 2.0),
        ]
    )
    nodes = load_cluster("gavel-sim").expand()[:2]
    job = Job(job_id="j", arrival=0.0, num_gpus=2, job_type="a", work=400.0)
    rec = Simulator(nodes, [job], make_policy("fifo"), profiles, {"V100": (0.0, 0.0)}, ideal_placement=ideal).run()
    assert rec.jobs[0].end == pytest.approx(100.0 if ideal else 400.0)


# (Gavel policy, trace, avg-JCT band, makespan band): issue #18's acceptance, on the smaller trace by default.
BANDS = [
    ("max_min_fairness_perf", "poisson-120", 0.02, 0.02),
    ("fifo_perf", "poisson-120", 0.02, 0.02),
    ("finish_time_fairness_perf", "poisson-120", 0.02, 0.02),
    ("min_total_duration_perf", "poisson-120", None, 0.02),
    ("max_min_fairness", "poisson-120", 0.03, 0.03),
    pytest.param("max_min_fairness_perf", "static-240", 0.02, 0.02, marks=pytest.mark.slow),
    pytest.param("fifo_perf", "static-240", 0.02, 0.02, marks=pytest.mark.slow),
    pytest.param("finish_time_fairness_perf", "static-240", 0.02, 0.02, marks=pytest.mark.slow),
    pytest.param("min_total_duration_perf", "static-240", None, 0.02, marks=pytest.mark.slow),
    pytest.param("max_min_fairness", "static-240", 0.03, 0.03, marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("policy", "trace", "avg_band", "makespan_band"), BANDS)
def test_agrees_with_gavels_simulator(policy, trace, avg_band, makespan_band):
    data = gavel_reference()
    run = next(r for r in read_summary(data / "summary.csv") if r.policy == policy and r.trace == trace)
    ours, makespan = simulate_run(run, data / "traces" / f"{trace}.trace", load_profiles())
    if avg_band is not None:
        assert np.mean(list(ours.values())) == pytest.approx(run.avg_jct_s, rel=avg_band)
    assert makespan == pytest.approx(run.makespan_s, rel=makespan_band)


def test_crosscheck_writes_comparison_rows_for_what_the_data_holds(tmp_path):
    data = gavel_reference()
    mini = tmp_path / "data"
    (mini / "traces").mkdir(parents=True)
    (mini / "results").mkdir()
    shutil.copy(data / "traces" / "poisson-120.trace", mini / "traces")
    shutil.copy(data / "results" / "poisson-120__fifo_perf.csv", mini / "results")
    with open(data / "summary.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    keep = [r for r in rows if r["trace"] == "poisson-120" and r["policy"] in ("fifo_perf", "no_such_policy")]
    with open(mini / "summary.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(keep)
    out = tmp_path / "out"
    result = run_crosscheck("gavel", mini, out)
    assert [(r.experiment, r.metric) for r in result][:3] == [
        ("poisson-120 fifo_perf", m) for m in ("avg JCT", "median JCT", "makespan")
    ]
    assert result[0].paper == pytest.approx(float(keep[0]["avg_jct_s"]) / 3600)
    assert result[3].metric == "per-job JCT Pearson r" and result[3].ours > 0.99
    header = (out / "comparison.csv").read_text().splitlines()[0]
    assert header == "experiment,metric,paper,ours,unit,note"
    assert (out / "poisson-120__fifo_perf.csv").is_file()


def gw(*args: str):
    return subprocess.run([sys.executable, "-m", "gpuweave.cli", *args], capture_output=True, text=True)


def test_simulate_run_setting_flags_need_no_yaml(tmp_path):
    out = tmp_path / "run"
    res = gw(
        "simulate", "-p", "gavel", "-c", "gavel-60", "--jobs", "6", "--placement", "ideal", "--restart-delay", "0",
        "--round-length", "120", "-O", "policy=fifo_perf", "-O", "reset_interval=600", "--out", str(out),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    config = json.loads((out / "summary.json").read_text())["config"]
    assert config["placement"] == "ideal" and config["restart_delay"] == 0 and config["round_length"] == 120
    assert config["policy_options"] == {"policy": "fifo_perf", "reset_interval": 600}
    bad = gw("simulate", "-p", "gavel", "-O", "no-equals-sign", "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "KEY=VALUE" in bad.stderr
