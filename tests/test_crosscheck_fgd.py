"""FGD's experiment from the command line and ``crosscheck fgd`` against FGD's own expected results.

The fidelity test runs FGD's experiment on openb's default workload for all six placements and two seeds and
asserts the issue's band: allocation within 1.0 percentage point of FGD's mean over the same seeds at every
compared load (FGD's own seed-to-seed spread is 0.1-0.6 points, up to about 1 for GpuClustering/GpuPacking)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from gpuweave.repro.crosscheck import run_crosscheck
from tests.test_cli_bad_input import check_one_error, gpuweave
from tests.workload.conftest import shared_dir

FGD = shared_dir() / "data" / "fgd"
REFERENCE = shared_dir() / "data" / "fgd-reference"
NODES = FGD / "csv" / "openb_node_list_gpu_node.csv"
NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"
POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
needs_data = pytest.mark.skipif(
    not (NODES.is_file() and REFERENCE.is_dir()), reason=f"shared FGD data not found at {FGD}"
)


@needs_data
@pytest.mark.parametrize("policy", ["Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD"])
def test_allocation_within_one_point_of_fgd(tmp_path: Path, policy: str):
    rows = run_crosscheck("fgd", FGD, tmp_path / "out", {"workloads": "default", "policies": policy, "seeds": "42,43"})
    allocation = [r for r in rows if r.metric.startswith("allocation")]
    assert len(allocation) == 7
    for row in allocation:
        assert row.ours is not None and row.paper is not None
        assert abs(row.ours - row.paper) <= 1.0, (policy, row.metric, row.ours, row.paper)
    ratio = [r for r in rows if r.metric.startswith("fragmentation ratio")]
    assert len(ratio) == 7 and all(r.ours is not None for r in ratio)
    with (tmp_path / "out" / "curves.csv").open() as handle:
        curves = list(csv.DictReader(handle))
    assert len(curves) == 2 * 131 and {c["seed"] for c in curves} == {"42", "43"}


def test_fill_command_writes_a_result_and_a_report(tmp_path: Path):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text(NODE_HEADER + "n0,64000,262144,8,T4\nn1,32000,131072,2,P100\nn2,16000,65536,1,T4\n")
    pods = tmp_path / "pods.csv"
    pods.write_text(
        POD_HEADER + "".join(f"p{i},4000,8192,1,{300 + 100 * (i % 7)},\n" for i in range(12)) + "cpu,2000,1024,0,0,\n"
    )
    out = tmp_path / "run"
    r = gpuweave("cluster", "fill", "--nodes", nodes, "--pods", pods, "--placement", "fgd", "--out", out, "--json")
    assert r.returncode == 0, r.stderr
    metrics = json.loads(r.stdout)["metrics"]
    # 11 GPUs filled to 130 %: about 14.3 GPUs of requests arrive, at most 11 can be placed. Each task is ~5 % of
    # this cluster, so some 1 % load points have no event within +-1 and stay empty (None), as in FGD's analysis
    allocated = [v for k, v in metrics.items() if k.startswith("allocation_at") and v is not None]
    assert metrics["tasks_failed"] > 0 and allocated and max(allocated) <= 100.0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["kind"] == "sharing" and summary["config"]["placement"] == "fgd"
    assert {p.name for p in out.iterdir()} == {"summary.json", "curves.csv", "events.csv", "gpus.csv"}
    with (out / "gpus.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == 11
    whole = gpuweave("cluster", "fill", "--nodes", nodes, "--pods", pods, "--sharing", "whole", "--out", tmp_path / "w")
    assert whole.returncode == 0, whole.stderr
    whole_summary = json.loads((tmp_path / "w" / "summary.json").read_text())
    assert whole_summary["config"]["sharing"] == "whole"
    # shares rounded up to whole GPUs: fewer tasks fit, and they hold more than they asked
    assert whole_summary["metrics"]["tasks_failed"] > metrics["tasks_failed"]
    report = gpuweave("report", out, tmp_path / "w", "--out", tmp_path / "report")
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "report" / "sharing_allocation.png").is_file()
    assert (tmp_path / "report" / "sharing_gpus_00.png").is_file()


@pytest.mark.parametrize(
    ("pod", "needles"),
    [
        ("a,1000,1024,2,500,", ("row 1", "field 'gpu_milli'", "1-GPU tasks only")),
        ("a,1000,1024,1,1200,", ("row 1", "field 'gpu_milli'", "1..1000")),
        ("a,1000,1024,1,500,H100", ("row 1", "field 'gpu_spec'", "no node has")),
        ("a,1000,1024,16,1000,", ("row 1", "field 'num_gpu'", "largest node")),
        ("a,999000,1024,1,1000,", ("row 1", "field 'cpu_milli'", "largest node")),
    ],
)
def test_fill_bad_tasks_are_one_line_and_write_nothing(tmp_path: Path, pod: str, needles: tuple[str, ...]):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text(NODE_HEADER + "n0,64000,262144,8,T4\nn1,64000,262144,2,G2\n")
    pods = tmp_path / "pods.csv"
    pods.write_text(POD_HEADER + pod + "\n")
    out = tmp_path / "run"
    check_one_error(gpuweave("cluster", "fill", "--nodes", nodes, "--pods", pods, "--out", out), *needles)
    assert not out.exists()


def test_fill_on_a_cluster_spec_with_mig(tmp_path: Path):
    spec = tmp_path / "a100.yaml"
    spec.write_text("name: a100\nnodes:\n  - {count: 2, gpu: A100, gpus_per_node: 2, cpu_milli: 64000}\n")
    pods = tmp_path / "pods.csv"
    pods.write_text(POD_HEADER + "".join(f"p{i},4000,8192,1,{200 + 150 * (i % 5)},\n" for i in range(10)))
    out = tmp_path / "mig"
    r = gpuweave("cluster", "fill", "--cluster", spec, "--pods", pods, "--sharing", "mig", "--out", out, "--json")
    assert r.returncode == 0, r.stderr
    metrics = json.loads(r.stdout)["metrics"]
    assert metrics["mig_instances_created"] > 0
    with (out / "gpus.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 4 and any("@" in row["mig_instances"] for row in rows)
    check_one_error(
        gpuweave("cluster", "fill", "--nodes", NODES, "--pods", pods, "--sharing", "mig", "--out", tmp_path / "x"),
        "--cluster",
    )
    check_one_error(gpuweave("cluster", "fill", "--pods", pods, "--out", tmp_path / "y"), "--nodes", "--cluster")


def test_fill_refuses_a_gang_rule_before_reading(tmp_path: Path):
    check_one_error(
        gpuweave(
            "cluster", "fill", "--nodes", tmp_path / "n.csv", "--pods", tmp_path / "p.csv", "--placement", "packed"
        ),
        "packed",
        "shared GPUs",
    )


def test_crosscheck_options_are_for_fgd_only(tmp_path: Path):
    check_one_error(gpuweave("crosscheck", "gavel", "--seeds", "1", "--out", tmp_path / "x"), "--seeds", "gavel")


@needs_data
def test_crosscheck_unknown_workload_names_the_known(tmp_path: Path):
    check_one_error(
        gpuweave("crosscheck", "fgd", "--workloads", "nosuch", "--out", tmp_path / "x"), "nosuch", "default"
    )
