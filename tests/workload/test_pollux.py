"""Pollux's job model (gpuweave.workload.pollux) and the Pollux workload importer, on a small hand-made app."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gpuweave.errors import InputError
from gpuweave.workload.pollux import (
    PolluxJobModel,
    job_type_name,
    load_pollux_job_model,
    parse_job_type,
    placement_shape,
)
from gpuweave.workload.profiles import load_profiles
from gpuweave.workload.traces.formats import detect_format, load_trace_frame
from tests.workload.conftest import assert_names

# One app "toy": local batches 10 and 20; step time 1 s + 0.1 s per extra node-shape digit, sync 0.2 s.
PLACEMENTS = {(1,): (1.0, 2.0), (2,): (1.2, 2.2), (1, 1): (1.4, 2.4), (2, 2): (1.6, 2.6), (2, 4): (1.8, 2.8)}
SCALABILITY = {(6, 12): (3.0, 4.0), (6, 16): (5.0, 6.0), (8, 12): (7.0, 8.0), (8, 16): (9.0, 10.0)}


def write_app(root: Path, name: str = "toy") -> Path:
    app = root / name
    app.mkdir(parents=True)
    lines = ["placement,local_bsz,step_time,sync_time"]
    for shape, (at10, at20) in PLACEMENTS.items():
        code = "".join(map(str, shape))
        lines += [f"{code},10,{at10},0.2", f"{code},20,{at20},0.2"]
    (app / "placements.csv").write_text("\n".join(lines) + "\n")
    rows = ["num_nodes,num_replicas,local_bsz,step_time,sync_time"]
    for (nodes, gpus), (at10, at20) in SCALABILITY.items():
        rows += [f"{nodes},{gpus},10,{at10},0.2", f"{nodes},{gpus},20,{at20},0.2"]
    (app / "scalability.csv").write_text("\n".join(rows) + "\n")
    # Two validated batch sizes; 3 epochs; progress ends 10/20/30 at batch 10, 12/22/32 at batch 40.
    (app / "validation-10.csv").write_text(
        "progress,iteration,metric,grad_sqr,grad_var\n10,10,0.1,1,0\n20,20,0.2,1,0\n30,30,0.3,1,0\n"
    )
    (app / "validation-40.csv").write_text(
        "progress,iteration,metric,grad_sqr,grad_var\n12,3,0.1,1,3\n22,6,0.2,1,3\n32,9,0.3,1,3\n"
    )
    return app


@pytest.fixture
def traces(tmp_path: Path) -> Path:
    write_app(tmp_path / "traces")
    return tmp_path / "traces"


@pytest.fixture
def model(traces: Path) -> PolluxJobModel:
    return load_pollux_job_model(traces)


def test_placement_shape_is_pollux_greedy_order_smallest_rotation():
    assert placement_shape((2, 4)) == (2, 4)
    assert placement_shape((4, 2)) == (2, 4)
    assert placement_shape((1, 4, 2)) == (1, 4, 2)  # descending (4, 2, 1) -> smallest rotation (1, 4, 2)
    assert placement_shape((4, 0, 4)) == (4, 4)


def test_job_type_names_round_trip():
    assert job_type_name("cifar10", 2048) == "cifar10 (batch size 2048)"
    assert parse_job_type("cifar10 (batch size 2048)") == ("cifar10", 2048)
    assert parse_job_type("ResNet-50 (batch size 64)") == ("ResNet-50", 64)
    assert parse_job_type("A3C") is None


def test_batch_plan_follows_pollux_rules(model):
    app = model.apps["toy"]
    assert app.init_batch_size == 10 and app.max_batch_size == 40 and app.max_local_bsz == 20
    plan = app.batch_plan(40, 1)  # local 40 > 20: one accumulation step of 20
    assert (plan.atomic_bsz, plan.accum_steps, plan.batch_size) == (20, 1, 40)
    plan = app.batch_plan(20, 1)  # one GPU above the initial batch: at least one accumulation step
    assert (plan.atomic_bsz, plan.accum_steps, plan.batch_size) == (10, 1, 20)
    plan = app.batch_plan(30, 4)  # ceil(30/4) = 8 per GPU, capped so 4 x 8 <= 40
    assert (plan.atomic_bsz, plan.accum_steps, plan.batch_size) == (8, 0, 32)


def test_work_is_progress_over_gain_per_epoch(model):
    app = model.apps["toy"]
    # Epoch ends: the least progress of any batch size: 10, 20, 30. Batch 10 has no gradient noise: gain 1.
    assert app.work(10, 1) == pytest.approx(30.0)
    # Batch 40 on 2 GPUs: scale 4, sqr 1, var 3 -> gain (3 + 1) / (3/4 + 1) = 16/7 in every epoch.
    assert app.work(40, 2) == pytest.approx(30.0 * 7 / 16)
    assert app.work(80, 4) == app.work(40, 4)  # the effective batch is capped at the largest validated one
    with pytest.raises(InputError, match="outside the validated"):
        app.work(5, 1)


def test_rate_on_measured_and_interpolated_shapes(model):
    jt = job_type_name("toy", 30)  # 2 GPUs: local 15, no accumulation
    # measured (2,): midway between 1.2 and 2.2
    assert model.placement_rate(jt, "T4", (2,)) == pytest.approx(1 / 1.7)
    assert model.placement_rate(jt, "T4", (1, 1)) == pytest.approx(1 / 1.9)
    app = model.apps["toy"]
    # 14 GPUs on 7 nodes, not measured: linear on the triangulation of (nodes, GPUs, local batch); the toy table is
    # linear in nodes and GPUs there, so that is the midpoint of 12 and 16 GPUs on the 6- and 8-node lines (4.5 and
    # 8.5 s at local batch 15).
    assert app.step_times((2,) * 7, 15) == pytest.approx((6.5, 0.2))
    assert app.step_times((2,) * 6, 15) == pytest.approx((3.5, 0.2))  # a measured (nodes, GPUs) pair
    assert app.step_times((2,) * 6, 25) is None  # outside the measured local batches
    assert app.step_times((2,) * 9, 15) is None  # beyond the largest node count with 18 GPUs
    assert model.placement_rate(job_type_name("toy", 40), "T4", (2,) * 6) == 0.0  # local batch 4: not measured
    assert model.placement_rate(jt, "V100", (2,)) == 0.0  # the model stands for one GPU model
    assert model.rate(jt, "T4", 2, True) == model.placement_rate(jt, "T4", (2,))


def test_accumulation_adds_compute_time(model):
    # batch 20 on one GPU: atomic 10 with one accumulation step: step 1.0 + 1 x (1.0 - 0.2)
    assert model.placement_rate(job_type_name("toy", 20), "T4", (1,)) == pytest.approx(1 / 1.8)


def test_load_profiles_reads_a_traces_directory(traces):
    store = load_profiles(traces)
    assert isinstance(store, PolluxJobModel)
    assert store.job_types() == ("toy (batch size 10)", "toy (batch size 40)")
    assert "toy (batch size 30)" in store and "other (batch size 30)" not in store


def test_missing_validation_is_named(tmp_path):
    app = write_app(tmp_path / "traces")
    for path in app.glob("validation-*.csv"):
        path.unlink()
    with pytest.raises(InputError, match="validation"):
        load_pollux_job_model(tmp_path / "traces")


def write_workload(root: Path, rows: list[str]) -> Path:
    folder = root / "workloads"
    folder.mkdir(exist_ok=True)
    path = folder / "w.csv"
    path.write_text("name,time,application,num_replicas,batch_size\n" + "\n".join(rows) + "\n")
    return path


def test_importer_maps_rows_and_computes_work(traces, model):
    path = write_workload(traces.parent, ["toy-0,5,toy,1,10", "toy-1,70,toy,2,40"])
    assert detect_format(path) == "pollux"
    frame = load_trace_frame(path, profiles=model)
    assert frame["job_id"].tolist() == ["toy-0", "toy-1"]
    assert frame["num_gpus"].tolist() == [1, 2]
    assert frame["job_type"].tolist() == ["toy (batch size 10)", "toy (batch size 40)"]
    assert frame["work"].tolist() == pytest.approx([30.0, 30.0 * 7 / 16])
    assert frame["arrival"].tolist() == [5.0, 70.0]


def test_importer_finds_the_traces_beside_the_workload(traces):
    path = write_workload(traces.parent, ["toy-0,5,toy,1,10"])
    assert math.isclose(load_trace_frame(path, "pollux")["work"].iloc[0], 30.0)


@pytest.mark.parametrize(
    ("row", "field"),
    [("toy-0,5,nope,1,10", "application"), ("toy-0,5,toy,0,10", "num_replicas"), ("toy-0,x,toy,1,10", "time")],
)
def test_importer_names_bad_cells(traces, row, field):
    path = write_workload(traces.parent, ["toy-1,1,toy,1,10", row])
    with pytest.raises(InputError) as exc_info:
        load_trace_frame(path, "pollux")
    assert_names(exc_info, path, 2, field)


def test_importer_without_traces_says_where_it_looked(tmp_path):
    path = write_workload(tmp_path, ["toy-0,5,toy,1,10"])
    with pytest.raises(InputError, match="no Pollux application traces"):
        load_trace_frame(path, "pollux")


def test_shared_workloads_import(shared_data):
    frame = load_trace_frame(shared_data / "pollux" / "workloads" / "workload-1.csv")
    assert frame.attrs["format"] == "pollux" and len(frame) == 160
    assert (frame["work"] > 0).all()
