"""crosscheck_pollux: our Tiresias (Pollux preset) against Pollux's simulator's own results."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from gpuweave.errors import InputError
from gpuweave.repro.crosscheck.pollux import crosscheck_pollux, per_job_correlations
from tests.workload.conftest import shared_dir
from tests.workload.test_pollux import write_app, write_workload

POLLUX = shared_dir() / "data" / "pollux"


@pytest.mark.skipif(not POLLUX.is_dir(), reason=f"shared Pollux data not found at {POLLUX}")
def test_tiresias_pollux_preset_reproduces_every_jct_of_pollux(tmp_path):
    """Pollux's simulator's epoch rounding (cluster/epoch_rounding.py) and its interpolation of unmeasured
    placements (qhull's triangulation) make every job's JCT Pollux's own, to the second it reports."""
    rows = crosscheck_pollux(POLLUX, tmp_path)
    metrics = [r for r in rows if r.metric in ("avg JCT", "median JCT", "makespan")]
    assert len(metrics) == 12
    for row in metrics:
        assert row.experiment.startswith("pollux tiresias")
        assert row.ours == pytest.approx(row.paper, rel=1e-9), (row.experiment, row.metric)
    for workload in ("workload-1", "workload-2", "workload-3", "workload-4"):
        with open(tmp_path / f"tiresias-1.0-{workload}-jobs.csv", newline="") as fh:
            jobs = list(csv.DictReader(fh))
        assert len(jobs) == 160
        assert max(abs(float(j["ours_jct"]) - float(j["peer_jct"])) for j in jobs) < 1e-3, workload


def make_data_dir(root: Path) -> Path:
    write_app(root / "traces")
    write_workload(root, ["toy-0,5,toy,1,10", "toy-1,70,toy,2,40", "toy-2,80,toy,1,10"])
    (root / "tiresias-1.0-results.json").write_text(json.dumps({"jcts": {"w": {"toy-0": 100, "toy-1": 90}}}))
    (root / "optimus-1.0-results.json").write_text(json.dumps({"jcts": {"w": {"toy-0": 100}}}))
    return root


def test_rows_name_the_peer_policy_and_metric(tmp_path):
    rows = crosscheck_pollux(make_data_dir(tmp_path / "data"), tmp_path / "out")
    optimus = [r for r in rows if "optimus" in r.experiment]
    assert len(optimus) == 1 and optimus[0].ours is None and "no gpuweave counterpart" in optimus[0].note
    tiresias = [r for r in rows if r.experiment == "pollux tiresias (load 1.0) w"]
    metrics = ["avg JCT", "median JCT", "makespan", "per-job JCT Pearson r", "per-job JCT Spearman rho"]
    assert [r.metric for r in tiresias] == metrics
    assert tiresias[0].paper == 95.0 and tiresias[0].ours > 0
    # the peer reports two of the three jobs: its makespan is from toy-0's arrival to toy-1's end
    assert tiresias[2].paper == pytest.approx(70 + 90 - 5)


def test_missing_workload_is_an_input_error(tmp_path):
    data = make_data_dir(tmp_path / "data")
    (data / "tiresias-1.0-results.json").write_text(json.dumps({"jcts": {"missing": {"toy-0": 1}}}))
    with pytest.raises(InputError, match="no CSV"):
        crosscheck_pollux(data, tmp_path / "out")


def test_correlations_handle_ties():
    pearson, spearman = per_job_correlations([1.0, 2.0, 2.0, 3.0], [10.0, 20.0, 20.0, 40.0])
    assert spearman == pytest.approx(1.0) and 0.9 < pearson < 1.0
