"""Alibaba converters: openb 2023 pods and nodes, 2026 spot-GPU nodes (real files) and jobs (synthetic)."""

from __future__ import annotations

from collections import Counter

import pytest
import yaml

from gpuweave.errors import InputError
from gpuweave.workload.profiles import load_profiles
from gpuweave.workload.traces import (
    load_trace_frame,
    read_openb_nodes,
    read_openb_pods,
    read_spot_jobs,
    read_spot_nodes,
)
from gpuweave.workload.traces.alibaba import cluster_gpu_count, cluster_to_yaml
from gpuweave.workload.traces.schema import fill_work, frame_to_jobs

from .conftest import assert_names

OPENB = ("alibaba-clusterdata", "cluster-trace-gpu-v2023", "csv")
SPOT = ("alibaba-clusterdata", "cluster-trace-v2026-spot-gpu")


def test_openb_default_pods(shared_data):
    path = shared_data.joinpath(*OPENB, "openb_pod_list_default.csv")
    frame = load_trace_frame(path, profiles=load_profiles())
    assert frame.attrs["format"] == "alibaba-pods"
    # 8,152 pods: 1,088 CPU-only; of the 7,064 GPU pods, 861 were never scheduled.
    assert len(frame) == 7_064 - 861
    assert frame.attrs["notes"][:2] == [
        "dropped 1088 CPU-only pods",
        "dropped 861 GPU pods never scheduled (empty scheduled_time)",
    ]
    assert set(frame["num_gpus"]) == {1, 2, 4, 8}
    assert (frame["duration"] > 0).all()
    assert frame["gpu_milli"].between(1, 1000).all()
    assert set(frame["pod_phase"]) == {"Running", "Failed", "Succeeded"}
    assert "gpu_model" not in frame.columns or frame["gpu_model"].isna().all()
    running = frame[frame["pod_phase"] == "Running"]
    assert running["note"].str.contains("lower bound").all()
    jobs = frame_to_jobs(fill_work(frame, load_profiles(), file=path))
    assert jobs[0].attrs["gpu_milli"] in range(0, 1001) and "qos" in jobs[0].attrs


def test_openb_gpu_spec_is_canonicalised(shared_data):
    frame = read_openb_pods(shared_data.joinpath(*OPENB, "openb_pod_list_gpuspec33.csv"))
    assert "gpu_spec" not in frame.columns and "gpu_model" not in frame.columns
    specs = Counter(s for s in frame["allowed_models"] if isinstance(s, str))
    models = {m for s in specs for m in s.split("+")}
    assert models <= {"T4", "G2", "G3", "P100", "V100", "A10"}
    assert specs["V100"] > 0  # V100M16|V100M32 collapse to one model
    assert "P100+V100" in specs
    assert all("M16" not in s and "M32" not in s for s in specs)


def test_openb_resources_are_schema_columns(shared_data, tmp_path):
    from gpuweave.workload.traces.schema import read_trace, write_frame

    path = shared_data.joinpath(*OPENB, "openb_pod_list_gpuspec33.csv")
    frame = load_trace_frame(path, profiles=load_profiles())
    assert {"cpu_milli", "memory_mib", "gpu_milli", "allowed_models"} <= set(frame.columns)
    assert (frame["cpu_milli"] > 0).all() and frame["gpu_milli"].between(1, 1000).all()
    target = tmp_path / "pods.csv"
    write_frame(frame, target)
    jobs = read_trace(target, profiles=load_profiles())
    shared = [j for j in jobs if j.attrs["gpu_milli"] < 1000]
    assert shared and all(j.num_gpus == 1 for j in shared)
    assert any(j.allowed_models == ("G2",) for j in jobs)
    assert all(isinstance(j.attrs["cpu_milli"], int) for j in jobs[:50])


@pytest.mark.parametrize(
    ("cells", "field", "message"),
    [("2,400,8000,16384", "gpu_milli", "1-GPU jobs only"), ("1,1400,8000,16384", "gpu_milli", "<= 1000"),
     ("1,0,8000,16384", "gpu_milli", "> 0"), ("1,500,-3,16384", "cpu_milli", "> 0")],
)
def test_schema_resource_columns_are_checked(tmp_path, cells, field, message):
    from gpuweave.workload.traces.schema import read_trace

    path = tmp_path / "t.csv"
    path.write_text(
        "job_id,arrival,num_gpus,gpu_milli,cpu_milli,memory_mib,job_type,duration\n"
        f"a,0,{cells},ResNet-18 (batch size 32),60\n"
    )
    with pytest.raises(InputError, match=message) as exc:
        read_trace(path, profiles=load_profiles())
    assert_names(exc, path, 1, field)


def test_openb_multigpu_variant_has_no_times(shared_data):
    path = shared_data.joinpath(*OPENB, "openb_pod_list_multigpu50.csv")
    with pytest.raises(InputError) as exc:
        read_openb_pods(path)
    assert_names(exc, path, 0, "pod_phase")
    assert "multigpu" in str(exc.value)


def test_openb_nodes_to_cluster(shared_data):
    cluster = read_openb_nodes(shared_data.joinpath(*OPENB, "openb_node_list_all_node.csv"), price_per_kwh=0.1, pue=1.2)
    assert cluster["name"] == "alibaba-openb-2023"
    assert cluster_gpu_count(cluster) == 6_212
    assert sum(node["count"] for node in cluster["nodes"]) == 1_213
    assert "openb_node_list_all_node.csv" in cluster["description"] and "7a6c496" in cluster["source"]
    by_gpu = Counter()
    for node in cluster["nodes"]:
        by_gpu[node["gpu"]] += node["count"]
        assert node["price_per_kwh"] == 0.1 and node["pue"] == 1.2
    assert by_gpu == {"G2": 549, "T4": 404, "P100": 134, "V100": 55 + 30, "G3": 39, "A10": 2}
    gpu_only = read_openb_nodes(shared_data.joinpath(*OPENB, "openb_node_list_gpu_node.csv"))
    assert cluster_gpu_count(gpu_only) == 6_212


def test_spot_nodes_to_cluster(shared_data):
    cluster = read_spot_nodes(shared_data.joinpath(*SPOT, "node_info_df.csv"))
    assert cluster_gpu_count(cluster) == 10_412
    by_gpu = Counter()
    for node in cluster["nodes"]:
        by_gpu[node["gpu"]] += node["count"]
    assert by_gpu == {"A10": 2494, "GPU-series-1": 989, "A100-80GB": 432, "H800": 219, "GPU-series-2": 122, "A800": 22}
    assert yaml.safe_load(cluster_to_yaml(cluster)) == cluster
    assert all("price_per_kwh" not in node and "pue" not in node for node in cluster["nodes"])


def test_catalog_only_clusters_load_as_cluster_specs(shared_data):
    cluster_spec = pytest.importorskip(
        "gpuweave.hardware.cluster_spec", reason="the hardware cluster-spec module is absent"
    )
    openb = read_openb_nodes(shared_data.joinpath(*OPENB, "openb_node_list_gpu_node.csv"), catalog_only=True)
    assert {node["gpu"] for node in openb["nodes"]} == {"A10", "P100", "T4", "V100"}
    assert "549 x 8 G2" in openb["description"] and "39 x 8 G3" in openb["description"]
    assert sum(cluster_spec.cluster_from_dict(openb).gpus_by_model().values()) == 6_212 - 549 * 8 - 39 * 8
    spot = read_spot_nodes(shared_data.joinpath(*SPOT, "node_info_df.csv"), catalog_only=True, pue=1.1)
    assert {node["gpu"] for node in spot["nodes"]} == {"A10", "A100-80GB"}
    assert cluster_spec.cluster_from_dict(spot).gpus_by_model() == {"A10": 2494, "A100-80GB": 432 * 8}


SPOT_HEADER = "job_name,organization,gpu_model,cpu_request,gpu_request,worker_num,submit_time,duration,job_type"


def test_spot_jobs_synthetic(tmp_path):
    # The real job_info_df.csv is absent from the snapshot; these rows follow its README's columns and example.
    path = tmp_path / "job_info_df.csv"
    path.write_text(
        f"{SPOT_HEADER}\n"
        "239255,13,A10,20,1,1,0,2764799,HP\n"
        "437261,57,A100-SXM4-80GB,15,1,94,9589663,71718,Spot\n"
        "437262,57,A100-SXM4-80GB,15,0,2,9589663,100,Spot\n"
        "500000,8,GPU-series-1,4,0.5,2,10,60,Spot\n",
        encoding="utf-8",
    )
    frame = load_trace_frame(path, seed=1)
    assert frame.attrs["format"] == "alibaba-jobs"
    assert frame.attrs["notes"] == ["dropped 1 jobs with gpu_request 0 or duration 0"]
    rows = {r.job_id: r for r in frame.itertuples()}
    assert rows["437261"].num_gpus == 94 and rows["437261"].gpu_model == "A100-80GB" and rows["437261"].tier == "Spot"
    assert rows["239255"].num_gpus == 1 and rows["239255"].user == "13" and rows["239255"].tier == "HP"
    assert rows["500000"].num_gpus == 2 and rows["500000"].gpu_request == 0.5
    assert list(frame["job_id"]) == ["239255", "500000", "437261"]  # sorted by arrival


@pytest.mark.parametrize(
    ("row", "field", "words"),
    [
        ("1,13,Voodoo5,20,1,1,0,100,HP", "gpu_model", "unknown GPU model 'Voodoo5'"),
        ("1,13,A10,20,1,1,0,100,Urgent", "job_type", "HP or Spot"),
        ("1,13,A10,20,1,1,0,-100,HP", "duration", ">= 0"),
        ("1,13,A10,20,x,1,0,100,HP", "gpu_request", "expected a number"),
    ],
)
def test_spot_jobs_bad_rows(tmp_path, row, field, words):
    path = tmp_path / "job_info_df.csv"
    path.write_text(f"{SPOT_HEADER}\n2,13,A10,20,1,1,0,100,HP\n{row}\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_spot_jobs(path)
    assert_names(exc, path, 2, field)
    assert words in str(exc.value)


def test_openb_pods_bad_values(tmp_path):
    header = (
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
    )
    path = tmp_path / "pods.csv"
    path.write_text(
        f"{header}\np0,1,1,1,1000,,LS,Running,0,10,0\np1,1,1,1,1000,K80|TPU,LS,Running,0,10,0\n", encoding="utf-8"
    )
    with pytest.raises(InputError) as exc:
        read_openb_pods(path)
    assert_names(exc, path, 2, "gpu_spec")
    path.write_text(f"{header}\np0,1,1,1,1500,,LS,Running,0,10,0\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_openb_pods(path)
    assert_names(exc, path, 1, "gpu_milli")


def test_converted_parquet_carries_no_converter_notes(shared_data, tmp_path):
    from gpuweave.workload.traces.schema import write_frame

    frame = load_trace_frame(shared_data.joinpath(*OPENB, "openb_pod_list_gpushare100.csv"), seed=2)
    assert frame.attrs["notes"]
    target = tmp_path / "pods.parquet"
    write_frame(frame, target)
    back = load_trace_frame(target)
    assert back.attrs["notes"] == [] and len(back) == len(frame)
    assert back["gpu_milli"].tolist() == frame["gpu_milli"].tolist()
