"""Gangs through the live runtime (issue 37): the policy's placement becomes one torchrun-style gang across nodes
(uneven: 3 ranks and 1), on the local executor with each node in its own network namespace. A rank that crashes,
then one that hangs (its peers wait for it in an all-reduce, so nobody reports a step), each send the gang back to
its last checkpoint, after which it ends with the parameters of an uninterrupted run (nothing lost, nothing trained
twice)."""

import csv
import json

import pytest
import yaml

torch = pytest.importorskip("torch")

from gpuweave.live.launch import run_live  # noqa: E402

from .test_ddp import TOLERANCE, _max_difference, reference  # noqa: E402

STEPS = 30
RESNET = "ResNet-18 (batch size 128)"


def _config(tmp_path, bed, program: str) -> object:
    nodes = [  # an uneven gang: 3 ranks on one node, 1 on the other (3 GPUs alone have no profile to pace them)
        {"gpu": "V100", "gpus_per_node": 3, "count": 1, "name_prefix": "a"},
        {"gpu": "V100", "gpus_per_node": 1, "count": 1, "name_prefix": "b"},
    ]
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump({"name": "gang", "nodes": nodes}))
    (tmp_path / "trace.csv").write_text(f"job_id,arrival,num_gpus,job_type,work\ng4,0,4,{RESNET},{STEPS}\n")
    config = {
        "policy": "fifo",
        "cluster": "cluster.yaml",
        "trace": "trace.csv",
        "restart_delay": 0,
        "executor": {
            "kind": "local",
            "program": program,
            "time_scale": 1,
            "checkpoint_every": 0.05,
            "poll_interval": 0.05,
            "report_timeout": 8,  # a hung rank is caught after 8 s without a step
            "launch_timeout": 120,  # while starting, the ranks may take longer (torch's import on a loaded machine)
            "max_retries": 2,
            "local": {"namespaces": bed.namespaces[1:]},
        },
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_crashed_rank_then_a_hung_one_send_the_gang_back_to_its_checkpoint_and_it_ends_as_if_uninterrupted(
    netns_bed, tmp_path
):
    config = _config(tmp_path, netns_bed, "torch --batch 30 --crash-attempts 1 --hang-attempts 1 --crash-step 5")
    out = tmp_path / "out"
    summary = run_live(config, None, None, out)
    assert summary["completed"] == 1
    with open(out / "live.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["outcome"] for r in rows] == ["crash", "crash", "done"]
    assert all(r["placement"] == "a0:3;b0:1" for r in rows)  # one uneven gang over both nodes, 4 ranks
    assert 0 < int(rows[0]["steps"]) <= 5  # the last rank died before step 6 (reports lag a little)
    assert "exited with status" in rows[0]["cause"] and "gang agent: rank 3 (local rank 0)" in rows[0]["cause"]
    assert rows[1]["cause"] == "no report from the workers for 8 s"  # its last rank hung: nobody stepped
    assert rows[2]["cause"] == ""
    # the finished attempt's gradient statistics (the worker's estimates) and Pollux's efficiency and goodput
    done = rows[2]
    assert done["batch_size"] == "30" and float(done["grad_sqr"]) > 0 and float(done["grad_var"]) > 0
    eff = float(done["efficiency"])
    assert eff == 1.0  # at its initial batch (--batch 30)
    assert float(done["noise_scale"]) == pytest.approx(30 * float(done["grad_var"]) / float(done["grad_sqr"]), 1e-4)
    assert float(done["goodput"]) == pytest.approx(float(done["steps_per_s"]) * 30 * eff, rel=1e-4)
    rendezvous = json.loads((out / "channels" / "g4" / "a3-c0.rendezvous.json").read_text())
    assert rendezvous["addr"] == netns_bed.nodes[1].addr
    final = torch.load(out / "checkpoints" / "g4" / "model.ckpt", map_location="cpu")
    assert final["position"] == STEPS
    assert _max_difference(final, reference(STEPS, batch=30)) < TOLERANCE  # 30 samples over 4 ranks: 8, 8, 7, 7
