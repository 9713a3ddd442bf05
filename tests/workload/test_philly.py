"""Philly job-list converter on the real 82,247-job file and on small synthetic files."""

from __future__ import annotations

from collections import Counter

import pytest

from gpuweave.errors import InputError
from gpuweave.workload.profiles import load_profiles
from gpuweave.workload.traces import load_trace_frame, read_philly_jobs
from gpuweave.workload.traces.schema import fill_work, frame_to_jobs

from .conftest import assert_names


@pytest.fixture(scope="module")
def philly(shared_data):
    path = shared_data / "philly" / "philly.csv"
    return path, load_trace_frame(path, "philly", profiles=load_profiles())


def test_real_philly_list(philly):
    _, frame = philly
    assert len(frame) == 82_247
    # The README's histogram; the file also holds 6 jobs of 64 and 3 of 128 GPUs that it does not list.
    assert dict(Counter(frame["num_gpus"])) == {
        1: 76_627,
        4: 1_870,
        2: 1_818,
        8: 1_643,
        16: 199,
        32: 67,
        12: 7,
        24: 7,
        64: 6,
        128: 3,
    }
    assert frame["arrival"].min() == 0
    assert frame["arrival"].is_monotonic_increasing
    assert frame["vc"].nunique() == 15
    assert frame["duration"].min() >= 1 and frame["duration"].max() == 4_628_226
    assert frame["work"].isna().all()


def test_job_types_are_runnable_at_the_job_size(philly):
    _, frame = philly
    store = load_profiles()
    multi = frame[frame["num_gpus"] >= 8]
    assert all(store.rate(t, "V100", 8, True) > 0 for t in multi["job_type"].unique())
    assert "A3C" not in set(multi["job_type"]) and "CycleGAN" not in set(multi["job_type"])
    assert frame["note"].str.contains("drawn uniformly at random").all()


def test_big_jobs_need_extrapolation_or_a_cap(philly):
    path, frame = philly
    with pytest.raises(InputError) as exc:
        fill_work(frame, load_profiles(), file=path)
    assert exc.value.field == "num_gpus" and "extrapolate" in str(exc.value)
    filled = fill_work(frame, load_profiles(extrapolate=True), file=path)
    assert filled["work"].notna().all()
    with pytest.raises(InputError) as exc:
        load_trace_frame(path, "philly", max_gpus=64)
    assert exc.value.field == "num_gpus" and "128 GPUs" in str(exc.value)


def test_job_type_assignment_is_seeded(tmp_path):
    path = tmp_path / "p.csv"
    rows = "\n".join(
        f"2017-10-0{1 + i % 3} 00:00:{i:02d},{10 + i},{[1, 2, 4, 8, 16][i % 5]},0,vc{i % 2}" for i in range(40)
    )
    path.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n" + rows + "\n\n", encoding="utf-8")
    a = read_philly_jobs(path, seed=3)
    b = read_philly_jobs(path, seed=3)
    c = read_philly_jobs(path, seed=4)
    assert a["job_type"].tolist() == b["job_type"].tolist()
    assert a["job_type"].tolist() != c["job_type"].tolist()
    jobs = frame_to_jobs(
        fill_work(load_trace_frame(path, "philly", seed=3), load_profiles(extrapolate=True), file=path)
    )
    assert len(jobs) == 40 and jobs[0].arrival == 0.0
    assert jobs[-1].arrival == pytest.approx(2 * 86_400 + 38)


@pytest.mark.parametrize(
    ("row", "field", "words"),
    [
        ("2017-13-45 00:00:00,5,1,5,vc", "timestamp", "YYYY-MM-DD"),
        ("2017-10-01 00:00:00,-5,1,5,vc", "duration", ">= 0"),
        ("2017-10-01 00:00:00,0,1,0,vc", "duration", "> 0"),
        ("2017-10-01 00:00:00,5,one,5,vc", "num_gpus", "expected an integer"),
    ],
)
def test_bad_philly_rows(tmp_path, row, field, words):
    path = tmp_path / "bad.csv"
    path.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,5,1,5,vc\n" + row + "\n", encoding="utf-8"
    )
    with pytest.raises(InputError) as exc:
        read_philly_jobs(path)
    assert_names(exc, path, 2, field)
    assert words in str(exc.value)


def test_zero_durations_can_be_dropped(tmp_path):
    path = tmp_path / "zero.csv"
    path.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,5,1,5,vc\n2017-10-01 00:00:01,0,1,0,vc\n",
        encoding="utf-8",
    )
    frame = read_philly_jobs(path, drop_zero_duration=True)
    assert len(frame) == 1 and "dropped 1 jobs with duration 0" in frame.attrs["notes"]


def test_missing_philly_column(tmp_path):
    path = tmp_path / "nocluster.csv"
    path.write_text("timestamp,duration,num_gpus\n2017-10-01 00:00:00,5,1\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_philly_jobs(path)
    assert_names(exc, path, 0, "cluster")
