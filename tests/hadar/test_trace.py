"""The 480-job workload, the raw Philly log converter and bad input (one line, exit 2)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from gpuweave.errors import InputError
from gpuweave.hadar.trace import (
    POOL_FILES,
    category,
    derive_pool,
    fallback_jobs,
    hadar_workload,
    load_pool,
    read_philly_job_log,
)

PHILLY = Path("/work/shared/data/philly/philly.csv")


def test_workload_rules(gavel_profiles):
    jobs = hadar_workload(0, profiles=gavel_profiles)
    assert len(jobs) == 480 and all(j.arrival == 0 for j in jobs)
    assert {j.num_gpus for j in jobs} <= {1, 2, 4, 8}
    for j in jobs:
        cat = j.attrs["category"]
        model = j.job_type.split(" (")[0]
        assert model in {"S": {"ResNet-18"}, "M": {"CycleGAN"}, "L": {"LM", "Transformer"}, "XL": {"ResNet-50"}}[cat]
        if model == "CycleGAN":
            assert j.num_gpus == 1
        assert j.work == pytest.approx(j.duration * gavel_profiles.rate(j.job_type, "V100", j.num_gpus, True))
    again = hadar_workload(0, profiles=gavel_profiles)
    assert [(j.job_type, j.work) for j in jobs] == [(j.job_type, j.work) for j in again]
    other = hadar_workload(1, profiles=gavel_profiles)
    assert [j.work for j in other] != [j.work for j in jobs]
    # B0 sanity: the V100-equivalent work is on the scale of a 40 h TTD on 60 GPUs
    assert 600 < sum(j.duration * j.num_gpus for j in jobs) / 3600 < 2400


@pytest.mark.skipif(not PHILLY.exists(), reason="raw Philly list not present")
@pytest.mark.parametrize("window", list(POOL_FILES))
def test_bundled_pool_matches_rederivation(window, philly):
    pool = derive_pool(philly.timestamp, philly.duration, philly.num_gpus, window=window, clusters=philly.cluster)
    bundled = load_pool(window=window)
    assert list(bundled["row"]) == list(pool["row"])
    assert np.allclose(bundled["duration_s"], pool["duration_s"])
    assert list(bundled["num_gpus"]) == list(pool["num_gpus"]) and list(bundled["category"]) == list(pool["category"])
    # the rule itself, checked on the raw rows the pool names
    import pandas as pd

    ts = pd.to_datetime(philly.timestamp.to_numpy()[pool["row"] - 1])
    if window == "daily-03-10":
        assert ((ts.hour >= 3) & (ts.hour < 10)).all() and ts.normalize().nunique() > 50
    else:
        assert (ts.max() - ts.min()) < pd.Timedelta(hours=7)


@pytest.fixture(scope="module")
def philly():
    import pandas as pd

    return pd.read_csv(PHILLY)


@pytest.mark.parametrize("window", list(POOL_FILES))
def test_bundled_pools_are_consistent(window, gavel_profiles):
    pool = load_pool(window=window)
    assert len(pool["row"]) >= 480 and (pool["num_gpus"] <= 8).all()
    gh = pool["duration_s"] * pool["num_gpus"] / 3600.0
    assert [category(g) for g in gh] == list(pool["category"])
    text = (resources.files("gpuweave.hadar") / "data" / POOL_FILES[window]).read_text()
    assert f"window rule '{window}'" in text and "petuum/adaptdl" in text and "c793c7089bd" in text
    jobs = hadar_workload(0, profiles=gavel_profiles, window=window)
    assert len(jobs) == 480 and all(j.attrs["philly_row"] in set(pool["row"]) for j in jobs[:20])


def test_bundled_pools_are_small():
    total = sum(len((resources.files("gpuweave.hadar") / "data" / f).read_bytes()) for f in POOL_FILES.values())
    assert total < 1_000_000


@pytest.mark.parametrize(
    "cell", ["9" * 400, "-" + "9" * 30, "1e400", "x"], ids=["400 digits", "-30 digits", "1e400", "x"]
)
def test_a_pool_cell_out_of_any_range_is_bad_input_naming_its_row(tmp_path, cell):
    # The fuzzer's find: read_csv keeps a 400-digit integer as a Python int, on which to_numeric raised OverflowError
    path = tmp_path / "pool.csv"
    path.write_text(f"row,duration_s,num_gpus,category\n1,3600,1,S\n2,{cell},4,M\n")
    with pytest.raises(InputError) as exc:
        load_pool(path)
    assert exc.value.row == 2 and exc.value.field == "duration_s" and "\n" not in exc.value.one_line()


def test_unknown_window_is_bad_input(tmp_path):
    import subprocess
    import sys

    with pytest.raises(InputError, match="unknown window 'nope'"):
        load_pool(window="nope")
    r = subprocess.run(
        [sys.executable, "-m", "gpuweave.cli", "repro", "hadar", "--out", str(tmp_path / "o"), "--window", "nope"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2, r.stderr
    assert "unknown window 'nope'" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_fallback_generator(gavel_profiles):
    jobs = fallback_jobs(50, 3, gavel_profiles)
    assert len(jobs) == 50 and {j.attrs["category"] for j in jobs} <= {"S", "M", "L", "XL"}


def _log(tmp_path, jobs):
    p = tmp_path / "cluster_job_log"
    p.write_text(json.dumps(jobs))
    return p


GOOD = {
    "jobid": "a1",
    "submitted_time": "2017-10-03 02:00:00",
    "attempts": [
        {
            "start_time": "2017-10-03 02:01:00",
            "end_time": "2017-10-03 03:01:00",
            "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}, {"ip": "m2", "gpus": ["gpu0", "gpu1"]}],
        }
    ],
}
BAD = {
    "jobid": "b2",
    "submitted_time": "2017-10-03 02:00:00",
    "attempts": [{"start_time": "2017-10-03 05:00:00", "end_time": "2017-10-03 04:00:00", "detail": [{"gpus": ["g"]}]}],
}


def test_philly_log_converter(tmp_path):
    out, skipped = read_philly_job_log(_log(tmp_path, [GOOD]))
    assert out == {"timestamp": ["2017-10-03 02:00:00"], "duration": [3600.0], "num_gpus": [4]} and skipped == 0
    with pytest.raises(InputError, match="job b2: an attempt ends before it starts"):
        read_philly_job_log(_log(tmp_path, [GOOD, BAD]))
    out, skipped = read_philly_job_log(_log(tmp_path, [GOOD, BAD]), skip_malformed=True)
    assert skipped == 1 and len(out["timestamp"]) == 1


def test_bad_input_is_one_line_exit_2(tmp_path):
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "gpuweave.cli", "repro", "hadar", "--out", str(tmp_path / "o"), "--jobs", "99999"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2, r.stderr
    assert "cannot sample 99999 jobs" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_bad_emulation_inputs():
    from gpuweave.hadar.emulation import emulate, load_physical, rate_tables

    with pytest.raises(InputError, match="unknown mix"):
        emulate("hadar", "aws", "M-99")
    with pytest.raises(InputError, match="has no throughput entry"):
        emulate("hadar", "aws", ["XX"])
    data = load_physical()
    data["cluster"]["odd"] = {"nodes": [{"name": "n0", "gpu": "A100", "pcie": "4.0"}]}
    with pytest.raises(InputError, match="GPU 'A100' of node 'n0' has no entry"):
        rate_tables(data, "odd", ["IC"], 0, "tflops_over_sqrt_vram")


def test_job_without_any_throughput_is_bad_input(gavel_profiles):
    from gpuweave.cluster.policies import make_policy
    from gpuweave.cluster.simulator import Simulator
    from gpuweave.workload.job import Job

    from .conftest import POWER, nodes_of

    with pytest.raises(InputError):
        Simulator(
            nodes_of([("V100", 4)]),
            [Job("x", 0.0, 1, 10.0, "NoSuchModel")],
            make_policy("hadar"),
            gavel_profiles,
            POWER,
        )


def test_reference_gpu_sets_work_from_duration(gavel_profiles):
    v = hadar_workload(1, 40, gavel_profiles)
    p = hadar_workload(1, 40, gavel_profiles, reference_gpu="P100")
    for a, b in zip(v, p):
        assert (a.job_id, a.job_type, a.num_gpus, a.duration) == (b.job_id, b.job_type, b.num_gpus, b.duration)
        assert b.work == pytest.approx(b.duration * gavel_profiles.rate(b.job_type, "P100", b.num_gpus, True))
        assert a.work == pytest.approx(a.duration * gavel_profiles.rate(a.job_type, "V100", a.num_gpus, True))
    with pytest.raises(InputError, match="unknown reference GPU"):
        hadar_workload(1, 40, gavel_profiles, reference_gpu="H100")
