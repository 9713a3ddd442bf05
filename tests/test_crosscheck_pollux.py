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
def test_tiresias_and_optimus_reproduce_every_jct_of_pollux_simulator(tmp_path):
    """Pollux's simulator's epoch rounding (cluster/epoch_rounding.py) and its interpolation of unmeasured
    placements (qhull's triangulation) make every job's JCT Pollux's own, to the second it reports: Tiresias
    (tiresias-1.0-results.json) and Optimus on elastic jobs (results-1.0/optimus-1.0-results.json)."""
    rows = crosscheck_pollux(POLLUX, tmp_path)
    metrics = [r for r in rows if r.metric in ("avg JCT", "median JCT", "makespan") and r.ours is not None]
    assert len(metrics) == 24
    for row in metrics:
        assert row.ours == pytest.approx(row.paper, rel=1e-9), (row.experiment, row.metric)
    for policy in ("tiresias", "optimus"):
        for workload in ("workload-1", "workload-2", "workload-3", "workload-4"):
            with open(tmp_path / f"{policy}-1.0-{workload}-jobs.csv", newline="") as fh:
                jobs = list(csv.DictReader(fh))
            assert len(jobs) == 160
            assert max(abs(float(j["ours_jct"]) - float(j["peer_jct"])) for j in jobs) < 1e-3, (policy, workload)
    assert (tmp_path / "optimus-1.0-workload-1.trace.csv").is_file()
    pollux = [r for r in rows if r.experiment.startswith("pollux pollux")]
    assert len(pollux) == 1 and pollux[0].ours is None and "--policies pollux" in pollux[0].note


def make_data_dir(root: Path) -> Path:
    write_app(root / "traces")
    write_workload(root, ["toy-0,5,toy,1,10", "toy-1,70,toy,2,40", "toy-2,80,toy,1,10"])
    (root / "tiresias-1.0-results.json").write_text(json.dumps({"jcts": {"w": {"toy-0": 100, "toy-1": 90}}}))
    (root / "results-1.0").mkdir()  # Pollux's and Optimus' results, as in the shared data
    (root / "results-1.0" / "optimus-1.0-results.json").write_text(json.dumps({"jcts": {"w": {"toy-0": 100}}}))
    (root / "results-1.0" / "pollux-1.0-results.json").write_text(json.dumps({"jcts": {"w": {"toy-0": 100}}}))
    return root


def test_rows_name_the_peer_policy_and_metric(tmp_path):
    rows = crosscheck_pollux(make_data_dir(tmp_path / "data"), tmp_path / "out")
    pollux = [r for r in rows if "pollux pollux" in r.experiment]
    assert len(pollux) == 1 and pollux[0].ours is None and "--policies pollux" in pollux[0].note
    optimus = {r.metric: r for r in rows if r.experiment == "pollux optimus (load 1.0) w"}
    assert optimus["avg JCT"].paper == 100.0 and optimus["avg JCT"].ours > 0
    assert "elastic jobs" in optimus["avg JCT"].note
    tiresias = [r for r in rows if r.experiment == "pollux tiresias (load 1.0) w"]
    metrics = ["avg JCT", "median JCT", "makespan", "per-job JCT Pearson r", "per-job JCT Spearman rho"]
    assert [r.metric for r in tiresias] == metrics
    assert tiresias[0].paper == 95.0 and tiresias[0].ours > 0
    # the peer reports two of the three jobs: its makespan is from toy-0's arrival to toy-1's end
    assert tiresias[2].paper == pytest.approx(70 + 90 - 5)


def test_the_artifact_s_own_results_layout_is_read(tmp_path):
    """``--data`` may be Pollux's artifact's ``simulator/`` folder as it is, its results in
    results-jobload/<policy>-<load>/summary.json (a folder name that is not <policy>-<load> is not a results file)."""
    data = make_data_dir(tmp_path / "data")
    for name in ("tiresias-1.0-results.json", "results-1.0/optimus-1.0-results.json"):
        folder = data / "results-jobload" / Path(name).name.removesuffix("-results.json")
        folder.mkdir(parents=True)
        (data / name).rename(folder / "summary.json")
    (data / "results-jobload" / "plot").mkdir()
    (data / "results-jobload" / "plot" / "summary.json").write_text("not JSON: never read")
    rows = crosscheck_pollux(data, tmp_path / "out")
    assert {r.experiment for r in rows if r.metric == "avg JCT" and r.ours is not None} == {
        "pollux tiresias (load 1.0) w",
        "pollux optimus (load 1.0) w",
    }


def test_missing_workload_is_an_input_error(tmp_path):
    data = make_data_dir(tmp_path / "data")
    (data / "tiresias-1.0-results.json").write_text(json.dumps({"jcts": {"missing": {"toy-0": 1}}}))
    with pytest.raises(InputError, match="no CSV"):
        crosscheck_pollux(data, tmp_path / "out")


def test_correlations_handle_ties():
    pearson, spearman = per_job_correlations([1.0, 2.0, 2.0, 3.0], [10.0, 20.0, 20.0, 40.0])
    assert spearman == pytest.approx(1.0) and 0.9 < pearson < 1.0


def test_pollux_s_own_policy_runs_when_asked_and_its_seeds_are_averaged(tmp_path):
    rows = crosscheck_pollux(make_data_dir(tmp_path / "data"), tmp_path / "out", policies="pollux", seeds="0,1")
    pollux = {r.metric: r for r in rows if r.experiment == "pollux pollux (load 1.0) w"}
    assert {r.experiment for r in rows} == {"pollux pollux (load 1.0) w"}  # only the policy asked for
    assert pollux["avg JCT"].paper == 100.0 and pollux["avg JCT"].ours > 30  # at least its re-scale delay
    assert "adaptive batches" in pollux["avg JCT"].note and "seeds 0,1" in pollux["avg JCT"].note
    with open(tmp_path / "out" / "pollux-1.0-w-jobs.csv", newline="") as fh:
        assert [j["job_id"] for j in csv.DictReader(fh)] == ["toy-0"]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"policies": "gavel"}, "policy 'gavel' is not in the Pollux results files"),
        ({"workloads": "w9"}, "workload 'w9' is not in the Pollux results files"),
        ({"seeds": "0,x"}, "seeds"),
    ],
)
def test_a_bad_selection_is_one_input_error(tmp_path, options, message):
    with pytest.raises(InputError, match=message):
        crosscheck_pollux(make_data_dir(tmp_path / "data"), tmp_path / "out", **options)


def test_the_seed_fixes_our_pollux(tmp_path):
    data = make_data_dir(tmp_path / "data")
    runs = [crosscheck_pollux(data, tmp_path / name, policies="pollux", seeds="3") for name in ("a", "b")]
    assert [repr(r.ours) for r in runs[0]] == [repr(r.ours) for r in runs[1]]  # (one job: its correlations nan)
    assert (tmp_path / "a" / "pollux-1.0-w-jobs.csv").read_text() == (
        tmp_path / "b" / "pollux-1.0-w-jobs.csv"
    ).read_text()
