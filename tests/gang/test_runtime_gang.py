"""Gangs through the live runtime (issue 37): the policy's placement becomes one torchrun-style gang across nodes,
on the local executor with each node in its own network namespace. A rank that crashes, or one that hangs (its
peers wait for it in an all-reduce, so nobody reports a step), sends the gang back to its last checkpoint, after
which it ends with the parameters of an uninterrupted run (nothing lost, nothing trained twice)."""

import csv
import json

import pytest
import yaml

torch = pytest.importorskip("torch")

from gpuweave.live.launch import run_live  # noqa: E402

from .test_ddp import TOLERANCE, _max_difference, reference  # noqa: E402

STEPS = 30
RESNET = "ResNet-18 (batch size 128)"


def _config(tmp_path, bed, program: str, report_timeout: float = 120) -> object:
    (tmp_path / "cluster.yaml").write_text(
        yaml.safe_dump({"name": "gang", "nodes": [{"gpu": "V100", "gpus_per_node": 2, "count": 2, "name_prefix": "n"}]})
    )
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
            "report_timeout": report_timeout,
            "launch_timeout": 120,
            "local": {"namespaces": bed.namespaces[1:]},
        },
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_crashed_rank_sends_the_gang_back_to_its_checkpoint_and_the_result_matches_an_uninterrupted_run(
    netns_bed, tmp_path
):
    config = _config(tmp_path, netns_bed, "torch --crash-attempts 1 --crash-step 20")
    out = tmp_path / "out"
    summary = run_live(config, None, None, out)
    assert summary["completed"] == 1
    with open(out / "live.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["outcome"] for r in rows] == ["crash", "done"]
    assert all(r["placement"] == "n0:2;n1:2" for r in rows)  # one gang over both nodes, 4 ranks
    assert 0 < int(rows[0]["steps"]) <= 20  # the last rank died before step 21 (reports lag a little)
    assert int(rows[1]["steps"]) >= STEPS - 20  # the retry redid what the last checkpoint did not hold
    assert "exited with status" in rows[0]["cause"] and "gang agent: rank" in rows[0]["cause"]
    assert rows[1]["cause"] == ""
    rendezvous = json.loads((out / "channels" / "g4" / "a2-c0.rendezvous.json").read_text())
    assert rendezvous["addr"] == netns_bed.nodes[1].addr
    final = torch.load(out / "checkpoints" / "g4" / "model.ckpt", map_location="cpu")
    assert final["position"] == STEPS
    assert _max_difference(final, reference(STEPS)) < TOLERANCE


def test_a_hung_rank_stalls_its_gang_which_is_retried_from_its_checkpoint_after_report_timeout(netns_bed, tmp_path):
    config = _config(tmp_path, netns_bed, "torch --hang-attempts 1 --crash-step 20", report_timeout=8)
    out = tmp_path / "out"
    summary = run_live(config, None, None, out)
    assert summary["completed"] == 1
    with open(out / "live.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["outcome"] for r in rows] == ["crash", "done"]
    assert rows[0]["cause"] == "no report from the workers for 8 s"
    final = torch.load(out / "checkpoints" / "g4" / "model.ckpt", map_location="cpu")
    assert final["position"] == STEPS
    assert _max_difference(final, reference(STEPS)) < TOLERANCE
