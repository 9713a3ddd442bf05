"""Tiresias trace converter on the real 60-job file and the legacy fossil."""

from __future__ import annotations

from collections import Counter

import pytest

from gpuweave.errors import InputError
from gpuweave.workload.profiles import load_profiles
from gpuweave.workload.traces import load_trace_frame, read_tiresias_trace
from gpuweave.workload.traces.schema import fill_work, frame_to_jobs

from .conftest import assert_names


def test_real_60_job_trace(shared_data):
    path = shared_data / "Tiresias" / "60_job.csv"
    frame = load_trace_frame(path, profiles=load_profiles())
    assert frame.attrs["format"] == "tiresias"
    assert len(frame) == 60
    assert dict(Counter(frame["num_gpus"])) == {1: 30, 2: 10, 4: 10, 8: 10}
    assert frame["arrival"].min() == 0 and frame["arrival"].max() == 1779
    assert frame["duration"].min() == 121 and frame["duration"].max() == 1800
    assert Counter(frame["tiresias_model"]) == Counter(
        {
            m: 6
            for m in (
                "vgg19",
                "vgg16",
                "vgg11",
                "alexnet",
                "resnet152",
                "resnet101",
                "resnet50",
                "inception4",
                "inception3",
                "googlenet",
            )
        }
    )
    jobs = frame_to_jobs(fill_work(frame, load_profiles(), file=path))
    store = load_profiles()
    for job in jobs:
        assert job.work == pytest.approx(job.duration * store.rate(job.job_type, "V100", job.num_gpus, True))
        assert job.attrs["tiresias_model"]


def test_legacy_tf_job_schema_is_rejected(shared_data):
    path = shared_data / "Tiresias" / "tf_job.csv"
    with pytest.raises(InputError) as exc:
        read_tiresias_trace(path)
    assert_names(exc, path, 0, "iterations")


def test_bad_tiresias_rows(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(
        "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,1,0,10,vgg19,100,5\n1,2,5,10,vgg16,-7,5",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as exc:
        read_tiresias_trace(path)
    assert_names(exc, path, 2, "duration")
