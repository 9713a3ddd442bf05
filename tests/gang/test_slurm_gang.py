"""A gang on a Slurm of three slurmd, each in its own network namespace (issue 37): the policy's placement (2 GPUs
on each of two nodes) becomes one Slurm job (``--nodes=2 --gres=gpu:v100:2``) whose ``srun`` tasks start the two
nodes' gang agents; sacct lists that one job with all four GPUs, and the gang trains across the namespaces to the
parameters of one process on the same global batches."""

import csv
import json
import subprocess

import pytest
import yaml

torch = pytest.importorskip("torch")

from gpuweave.live.launch import run_live  # noqa: E402

from .test_ddp import TOLERANCE, _max_difference, reference  # noqa: E402

STEPS = 30


def test_a_gang_is_one_slurm_allocation_over_two_namespaced_nodes(slurm_bed, tmp_path, monkeypatch):
    bed, box = slurm_bed
    for key, value in box.env.items():
        monkeypatch.setenv(key, value)
    group = {"gpu": "V100", "gpus_per_node": 2, "count": 2, "names": ["gw0-v100", "gw1-v100"]}
    cluster = {"name": "slurm3", "nodes": [group]}
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    (tmp_path / "trace.csv").write_text(
        f"job_id,arrival,num_gpus,job_type,work\ng4,0,4,ResNet-18 (batch size 128),{STEPS}\n"
    )
    executor = {
        "kind": "slurm",
        "program": "torch",
        "time_scale": 1,
        "checkpoint_every": 0.2,
        "report_timeout": 120,
        "slurm": {"poll_interval": 0.1, "gpus": "emulated"},
    }
    run = {"policy": "fifo", "cluster": "cluster.yaml", "trace": "trace.csv", "restart_delay": 0, "executor": executor}
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(run))
    out = tmp_path / "out"
    summary = run_live(tmp_path / "run.yaml", None, None, out)
    assert summary["completed"] == 1
    with open(out / "slurm.csv") as fh:
        launches = list(csv.DictReader(fh))
    assert len(launches) == 2 and len({r["slurm_job_id"] for r in launches}) == 1  # one Slurm job, two nodes
    assert {r["node"] for r in launches} == {"gw0", "gw1"} and all(r["state"] == "COMPLETED" for r in launches)
    sid = launches[0]["slurm_job_id"]
    sacct = subprocess.run(
        ["sacct", "-X", "-n", "-P", "--format=JobID,State,NNodes,NodeList,AllocTRES", f"--jobs={sid}"],
        capture_output=True, text=True, check=True,
    ).stdout.strip().split("|")  # fmt: skip
    assert sacct[1:3] == ["COMPLETED", "2"] and "gres/gpu:v100=4" in sacct[4], sacct
    rendezvous = json.loads((out / "channels" / "g4" / "a1-c0.rendezvous.json").read_text())
    assert rendezvous["addr"] in {n.addr for n in bed.nodes[1:3]}  # node 0's NodeAddr, a namespace's address
    final = torch.load(out / "checkpoints" / "g4" / "model.ckpt", map_location="cpu")
    assert final["position"] == STEPS
    assert _max_difference(final, reference(STEPS)) < TOLERANCE
