"""Tasks that name a MIG profile (``3g.20gb``): the names, the readers, the placement under each sharing mode, and
bad input as one line (file, row, field) with exit 2 and nothing written."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from gpuweave.cluster.sharing.experiment import run_fill
from gpuweave.cluster.sharing.profiles import resolve_mig_profiles
from gpuweave.cluster.sharing.state import SharedNodes, task_request
from gpuweave.errors import InputError
from gpuweave.hardware.cluster_spec import cluster_from_dict
from gpuweave.hardware.mig_profiles import models_with, parse_mig_profile, profiles_of, share_milli
from gpuweave.hardware.node_resources import node_table_from_spec
from gpuweave.workload.traces.openb import read_openb_tasks
from gpuweave.workload.traces.schema import read_trace, write_trace
from tests.test_cli_bad_input import check_one_error, gpuweave

POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,mig_profile\n"


def spec_of(gpu: str, *, count: int = 1, gpus: int = 1, sharing: str | None = None) -> dict:
    group = {"count": count, "gpu": gpu, "gpus_per_node": gpus, "cpu_milli": 64000, "memory_mib": 262144}
    if sharing:
        group["sharing"] = sharing
    return {"name": gpu.lower(), "nodes": [group]}


def pods(tmp_path: Path, *rows: str, name: str = "pods.csv") -> Path:
    path = tmp_path / name
    path.write_text(POD_HEADER + "".join(f"{row}\n" for row in rows))
    return path


# --------------------------------------------------------------------------- names
@pytest.mark.parametrize(
    ("text", "name", "slices", "memory"),
    [
        ("3g.20gb", "3g.20gb", 3, 20),
        (" MIG 1G.5GB ", "1g.5gb", 1, 5),
        ("nvidia.com/mig-4g.24gb", "4g.24gb", 4, 24),
        ("mig-7g.141gb", "7g.141gb", 7, 141),
    ],
)
def test_profile_names_in_nvidias_spellings(text: str, name: str, slices: int, memory: int):
    profile = parse_mig_profile(text)
    assert (profile.name, profile.slices, profile.memory_gb) == (name, slices, memory)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("3g20gb", "malformed"),
        ("3g.20", "malformed"),
        ("gpu", "malformed"),
        ("0g.5gb", ">= 1"),
        ("1g.5gb+me", "media extensions"),
        ("1g.18gb-me.all", "media extensions"),
    ],
)
def test_bad_profile_names_are_refused_with_the_field(text: str, message: str):
    with pytest.raises(InputError, match=message) as info:
        parse_mig_profile(text, file="p.csv", row=4)
    assert (info.value.file, info.value.row, info.value.field) == ("p.csv", 4, "mig_profile")


def test_catalog_profiles_match_nvidias_and_the_geometry():
    assert [p.name for p in profiles_of("A100")] == ["1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"]
    assert [p.name for p in profiles_of("A30")] == ["1g.6gb", "2g.12gb", "4g.24gb"]
    assert [p.name for p in profiles_of("H200")][-1] == "7g.141gb"
    assert profiles_of("T4") == () and profiles_of("G2") == ()  # no MIG; not a catalog name (openb's)
    assert models_with("3g.40gb") == ("A100-80GB", "H100-80GB")
    # the share: slices over the GPU's slices, rounded down (what a task asks never exceeds what it holds)
    assert (share_milli("3g.20gb"), share_milli("1g.5gb"), share_milli("2g.12gb"), share_milli("7g.80gb")) == (
        428,
        142,
        500,
        1000,
    )
    assert share_milli("1g.10gb") == 142 and share_milli("5g.30gb") is None


# --------------------------------------------------------------------------- readers
def test_pod_list_reads_profiles_and_fills_their_share(tmp_path: Path):
    tasks = read_openb_tasks(
        pods(tmp_path, "a,1000,1024,1,,,3g.20gb", "b,1000,1024,1,500,,", "c,1000,1024,1,143,,MIG 1g.5gb", "d,1,1,0,0,,")
    )
    assert tasks.gpu_milli.tolist() == [428, 500, 143, 0]  # 143: within 1 of 1g.5gb's 142, kept as given
    assert tasks.mig_profiles == ("3g.20gb", "1g.5gb")
    assert [tasks.profile_of(i) for i in range(4)] == ["3g.20gb", None, "1g.5gb", None]
    assert [task_request(tasks, i).mig_slices for i in range(4)] == [3, 0, 1, 0]
    assert tasks.take(np.array([2, 0])).mig_profile.tolist() == [1, 0]
    assert tasks.as_whole_gpus().mig_profile is None  # whole GPUs: the profile's share becomes the whole GPU
    plain = read_openb_tasks(pods(tmp_path, "a,1000,1024,1,500,,", name="plain.csv"))
    assert plain.mig_profile is None and plain.mig_profiles == ()


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        ("a,1000,1024,2,,,3g.20gb", "num_gpu", "one GPU"),
        ("a,1000,1024,0,0,,3g.20gb", "num_gpu", "one GPU"),
        ("a,1000,1024,1,500,,3g.20gb", "gpu_milli", "disagrees with MIG profile 3g.20gb (428"),
        ("a,1000,1024,1,,,", "gpu_milli", "empty value"),
        ("a,1000,1024,1,,,3g.20", "mig_profile", "malformed"),
        ("a,1000,1024,1,,,1g.20gb", "mig_profile", "two memory slices"),
        ("a,1000,1024,1,,,5g.30gb", "mig_profile", "no GPU of the catalog"),
    ],
)
def test_pod_list_bad_profiles_name_row_and_field(tmp_path: Path, row: str, field: str, message: str):
    with pytest.raises(InputError, match=message.replace("(", r"\(")) as info:
        read_openb_tasks(pods(tmp_path, "ok,1000,1024,1,,,2g.10gb", row))
    assert (info.value.row, info.value.field) == (2, field)


def test_trace_schema_reads_profiles(tmp_path: Path):
    path = tmp_path / "jobs.csv"
    path.write_text(
        "job_id,arrival,num_gpus,job_type,duration,mig_profile\n"
        "a,0,1,ResNet-18 (batch size 32),60,3g.20gb\nb,1,2,ResNet-18 (batch size 32),60,\n"
    )
    jobs = read_trace(path)
    assert jobs[0].attrs["mig_profile"] == "3g.20gb" and jobs[0].attrs["gpu_milli"] == 428
    assert "mig_profile" not in jobs[1].attrs
    write_trace(jobs, tmp_path / "again.csv")  # the profile is written back (its share comes from it again)
    assert [j.attrs.get("mig_profile") for j in read_trace(tmp_path / "again.csv")] == ["3g.20gb", None]
    path.write_text(
        "job_id,arrival,num_gpus,job_type,duration,mig_profile\na,0,4,ResNet-18 (batch size 32),60,3g.20gb\n"
    )
    with pytest.raises(InputError, match="one GPU") as info:
        read_trace(path)
    assert (info.value.row, info.value.field) == (1, "num_gpus")


# --------------------------------------------------------------------------- placement
def test_a_3g_profile_gets_a_3_slice_instance_where_its_share_alone_would_get_4(tmp_path: Path):
    """429 milli-GPU without a profile needs 4 of 7 slices (3 x 1000 < 429 x 7); ``3g.20gb`` gets exactly 3."""
    table = node_table_from_spec(cluster_from_dict(spec_of("A100")), mig=True)
    tasks = resolve_mig_profiles(
        table, read_openb_tasks(pods(tmp_path, "a,1000,1024,1,,,3g.20gb", "b,1000,1024,1,429,,"))
    )
    assert tasks.allowed_models == (("A100-40GB",), None)  # the cluster's models that have the profile
    nodes = SharedNodes(table)
    profiled, plain = task_request(tasks, 0), task_request(tasks, 1)
    assert nodes.mig_size(profiled, "A100-40GB") == 3 and nodes.mig_size(plain, "A100-40GB") == 4
    first = nodes.assign(profiled, 0, nodes.best_fit_gpus(profiled, 0))
    assert [p.size for p in first.instances] == [3]
    assert nodes.gpu_used_milli == 429  # 3 of 7 slices, rounded to nearest; it asked 428
    second = nodes.assign(profiled, 0, nodes.best_fit_gpus(profiled, 0))
    assert sorted(p.label for p in (*first.instances, *second.instances)) == ["3@0", "3@4"]
    assert not nodes.fits(profiled).any() and not nodes.fits(plain).any()


def test_profiles_only_on_models_that_have_them_in_every_mode(tmp_path: Path):
    """A100 (MIG group) and A30 (fractions) in one cluster: 3g.20gb tasks go to the A100s only, as 3-slice
    instances; 2g.12gb tasks to the A30s only, as half a GPU each."""
    spec = cluster_from_dict(
        {
            "name": "mixed",
            "nodes": [
                {"count": 1, "gpu": "A100", "gpus_per_node": 2, "sharing": "mig"},
                {"count": 1, "gpu": "A30", "gpus_per_node": 2},
            ],
        }
    )
    table = node_table_from_spec(spec)
    rows = [f"a{i},1000,1024,1,,,3g.20gb" for i in range(4)] + [f"b{i},1000,1024,1,,,2g.12gb" for i in range(4)]
    tasks = read_openb_tasks(pods(tmp_path, *rows))
    # to 93 % of the 4 GPUs: the eight tasks (3,712 milli-GPU) and no draw (the next one would pass 3,720)
    result = run_fill(table, tasks, "best-fit", seed=3, tune=0.93)
    nodes = result.nodes
    models = nodes.table.models
    for row, node in zip(result.events.task_rows.tolist(), result.events.node.tolist()):
        if node >= 0:
            assert models[node] == ("A100-40GB" if tasks.profile_of(row) == "3g.20gb" else "A30")
    assert {p.label for placed in nodes.instances.values() for p in placed} <= {"3@0", "3@4"}
    assert result.failed == 0 and nodes.instances_created == 4
    assert result.events.asked_milli[-1] == 4 * 428 + 4 * 500
    assert nodes.gpu_used_milli == 2 * 857 + 4 * 500  # each A100 holds 6 of 7 slices
    whole = run_fill(table, tasks, "best-fit", seed=3, tune=0.93, sharing="whole")
    assert whole.failed == 4  # 2 + 2 GPUs of the right models, each task a whole one


def test_a_profile_no_gpu_of_the_cluster_has_is_refused(tmp_path: Path):
    tasks = read_openb_tasks(pods(tmp_path, "ok,1000,1024,1,,,2g.12gb", "a,1000,1024,1,,,3g.20gb"))
    a30 = node_table_from_spec(cluster_from_dict(spec_of("A30", gpus=4)), mig=True)
    with pytest.raises(
        InputError, match="no GPU of the cluster has MIG profile 3g.20gb: .*A30: 1g.6gb, 2g.12gb"
    ) as info:
        run_fill(a30, tasks, "fgd", seed=0, sharing="mig")
    assert (info.value.row, info.value.field) == (2, "mig_profile")
    t4 = node_table_from_spec(cluster_from_dict(spec_of("T4", gpus=4)))
    with pytest.raises(InputError, match=r"none of its GPUs \(T4\) is MIG-capable"):
        run_fill(t4, tasks, "fgd", seed=0)


def test_profile_tasks_must_be_allowed_on_a_model_that_has_it(tmp_path: Path):
    tasks = read_openb_tasks(pods(tmp_path, "a,1000,1024,1,,A30,3g.20gb"))
    table = node_table_from_spec(cluster_from_dict(spec_of("A100")))
    with pytest.raises(InputError, match="allowed models .A30. leave out") as info:
        resolve_mig_profiles(table, tasks)
    assert (info.value.row, info.value.field) == (1, "mig_profile")


# --------------------------------------------------------------------------- the command line
def test_fill_with_profiles_on_a_mig_cluster(tmp_path: Path):
    spec = tmp_path / "a100.yaml"
    spec.write_text("name: a100\nnodes:\n  - {count: 2, gpu: A100, gpus_per_node: 2, cpu_milli: 64000, sharing: mig}\n")
    rows = [f"p{i},4000,8192,1,,,{('3g.20gb', '1g.5gb', '2g.10gb')[i % 3]}" for i in range(9)]
    pod_list = pods(tmp_path, *rows)
    out = tmp_path / "mig"
    r = gpuweave("cluster", "fill", "--cluster", spec, "--pods", pod_list, "--sharing", "mig", "--out", out, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["metrics"]["mig_instances_created"] > 0
    with (out / "gpus.csv").open() as handle:
        labels = [label for row in csv.DictReader(handle) for label in row["mig_instances"].split("+") if label]
    # each task its profile's instance: no 4-slice one, which a 429 milli-GPU share alone would get
    assert {label.split("@")[0] for label in labels} <= {"1", "2", "3"} and any(x.startswith("3@") for x in labels)


@pytest.mark.parametrize(
    ("gpu", "row", "needles"),
    [
        ("A100", "a,1000,1024,1,,,3g20gb", ("row 1", "field 'mig_profile'", "malformed MIG profile")),
        ("A30", "a,1000,1024,1,,,3g.20gb", ("row 1", "field 'mig_profile'", "no GPU of the cluster", "A30: 1g.6gb")),
        ("A100", "a,1000,1024,1,,,1g.10gb", ("row 1", "field 'mig_profile'", "A100-40GB: 1g.5gb", "not model")),
        ("A100", "a,1000,1024,2,,,3g.20gb", ("row 1", "field 'num_gpu'", "one GPU")),
        ("A100", "a,1000,1024,1,1000,,3g.20gb", ("row 1", "field 'gpu_milli'", "disagrees")),
        ("T4", "a,1000,1024,1,,,3g.20gb", ("field 'sharing'", "MIG-capable GPUs; T4")),
    ],
)
def test_fill_bad_profiles_are_one_line_and_write_nothing(tmp_path: Path, gpu: str, row: str, needles: tuple):
    """Under ``--sharing mig``; the last: a cluster that cannot run MIG at all is refused before the pods are read."""
    spec = tmp_path / "c.yaml"
    spec.write_text(f"name: c\nnodes:\n  - {{count: 1, gpu: {gpu}, gpus_per_node: 2}}\n")
    out = tmp_path / "run"
    r = gpuweave("cluster", "fill", "--cluster", spec, "--pods", pods(tmp_path, row), "--sharing", "mig", "--out", out)
    check_one_error(r, *needles)
    assert not out.exists()


def test_trace_info_counts_tasks_per_profile_and_validate_refuses_a_bad_one(tmp_path: Path):
    trace = tmp_path / "jobs.csv"
    body = "job_id,arrival,num_gpus,job_type,duration,mig_profile\n"
    trace.write_text(
        body
        + "".join(f"j{i},{i},1,ResNet-18 (batch size 32),60,{('3g.20gb', '1g.5gb', '')[i % 3]}\n" for i in range(7))
    )
    r = gpuweave("trace", "info", trace, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["sharing"]["jobs_per_mig_profile"] == {"1g.5gb": 2, "3g.20gb": 3}
    trace.write_text(body + "a,0,1,ResNet-18 (batch size 32),60,3g.20gb\nb,1,1,ResNet-18 (batch size 32),60,7g.40\n")
    check_one_error(gpuweave("trace", "validate", trace), "row 2", "field 'mig_profile'", "malformed")
