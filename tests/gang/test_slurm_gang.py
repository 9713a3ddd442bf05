"""A gang on a Slurm of three slurmd, each in its own network namespace (issue 37): the policy's placement (a GPU on
each of two nodes) becomes one Slurm job (``--nodes=2 --gres=gpu:v100:1``) whose ``srun`` tasks start the two
nodes' gang agents; sacct lists that one job with both GPUs, and the gang trains across the namespaces to the
parameters of one process on the same global batches."""

import csv
import json
import subprocess
import threading
import time

import pytest
import yaml

torch = pytest.importorskip("torch")

from gpuweave.live.launch import run_live  # noqa: E402
from tests.checkpoints import has_checkpoint  # noqa: E402

from .test_ddp import TOLERANCE, _max_difference, reference  # noqa: E402

STEPS = 30


def _config(tmp_path, names: list[str], steps: int, checkpoint_every: float = 0.2):
    group = {"gpu": "V100", "gpus_per_node": 1, "count": len(names), "names": names}
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump({"name": "slurm3", "nodes": [group]}))
    trace = f"job_id,arrival,num_gpus,job_type,work\ng4,0,2,ResNet-18 (batch size 128),{steps}\n"
    (tmp_path / "trace.csv").write_text(trace)
    executor = {
        "kind": "slurm",
        "program": "torch",
        "time_scale": 1,
        "checkpoint_every": checkpoint_every,
        "report_timeout": 120,
        "slurm": {"poll_interval": 0.1, "gpus": "emulated"},
    }
    run = {"policy": "fifo", "cluster": "cluster.yaml", "trace": "trace.csv", "restart_delay": 0, "executor": executor}
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(run))
    return tmp_path / "run.yaml"


def test_a_gang_is_one_slurm_allocation_over_two_namespaced_nodes(slurm_bed, tmp_path, monkeypatch):
    bed, box = slurm_bed
    for key, value in box.env.items():
        monkeypatch.setenv(key, value)
    out = tmp_path / "out"
    summary = run_live(_config(tmp_path, ["gw0-v100", "gw1-v100"], STEPS), None, None, out)
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
    assert sacct[1:3] == ["COMPLETED", "2"] and "gres/gpu:v100=2" in sacct[4], sacct
    rendezvous = json.loads((out / "channels" / "g4" / "a1-c0.rendezvous.json").read_text())
    assert rendezvous["addr"] in {n.addr for n in bed.nodes[1:3]}  # node 0's NodeAddr, a namespace's address
    final = torch.load(out / "checkpoints" / "g4" / "model.ckpt", map_location="cpu")
    assert final["position"] == STEPS
    assert _max_difference(final, reference(STEPS)) < TOLERANCE


def test_an_uneven_gang_is_one_heterogeneous_slurm_job_with_an_srun_task_per_rank(slurm_bed, tmp_path, monkeypatch):
    """A 4-GPU job on a node with 3 GPUs and one with 1: one heterogeneous Slurm job (a component per node, each
    with its GPUs in sacct), whose one srun step starts 3 + 1 tasks, each a rank, training to the parameters of one
    process on the same global batches."""
    _, box = slurm_bed
    for key, value in box.env.items():
        monkeypatch.setenv(key, value)
    groups = [{"gpu": "V100", "gpus_per_node": 3, "names": ["gw0-v100"]},
              {"gpu": "V100", "gpus_per_node": 1, "names": ["gw1-v100"]}]  # fmt: skip
    config = _config(tmp_path, [], STEPS)
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump({"name": "uneven", "nodes": groups}))
    trace = f"job_id,arrival,num_gpus,job_type,work\ng4,0,4,ResNet-18 (batch size 128),{STEPS}\n"
    (tmp_path / "trace.csv").write_text(trace)
    out = tmp_path / "out"
    summary = run_live(config, None, None, out)
    assert summary["completed"] == 1
    with open(out / "slurm.csv") as fh:
        launches = list(csv.DictReader(fh))
    assert len({r["slurm_job_id"] for r in launches}) == 1 and {r["node"] for r in launches} == {"gw0", "gw1"}
    sid = launches[0]["slurm_job_id"]
    rows = subprocess.run(
        ["sacct", "-n", "-P", "--format=JobID,State,NodeList,NTasks,AllocTRES", f"--jobs={sid}"],
        capture_output=True, text=True, check=True,
    ).stdout.strip().splitlines()  # fmt: skip
    jobs = {r.split("|")[0]: r.split("|") for r in rows}
    assert jobs[f"{sid}+0"][1:3] == ["COMPLETED", "gw0"] and "gres/gpu:v100=3" in jobs[f"{sid}+0"][4], rows
    assert jobs[f"{sid}+1"][1:3] == ["COMPLETED", "gw1"] and "gres/gpu:v100=1" in jobs[f"{sid}+1"][4], rows
    assert jobs[f"{sid}+0.0"][3] == "3" and jobs[f"{sid}+1.0"][3] == "1", rows  # an srun task per rank
    final = torch.load(out / "checkpoints" / "g4" / "model.ckpt", map_location="cpu")
    assert final["position"] == STEPS
    assert _max_difference(final, reference(STEPS)) < TOLERANCE


@pytest.mark.elastic
def test_pollux_resizes_an_adaptive_job_across_slurm_nodes(slurm_bed, tmp_path, monkeypatch):
    """issue 38: pollux on the job's measured agent grows it from 1 GPU to 3 or 4 over two slurmd namespaces (one
    Slurm allocation per size; Slurm's launches take seconds, so the second job may arrive before the 4-GPU step)
    and shares the GPUs with a second job (tests/gang/test_pollux_live.py)."""
    from .test_pollux_live import check_elastic_run, pollux_config

    _, box = slurm_bed
    for key, value in box.env.items():
        monkeypatch.setenv(key, value)
    nodes = [{"gpu": "V100", "gpus_per_node": 2, "count": 2, "names": ["gw0-v100", "gw1-v100"]}]
    slurm = {"kind": "slurm", "slurm": {"poll_interval": 0.1, "gpus": "emulated"}}
    out = tmp_path / "out"
    summary = run_live(pollux_config(tmp_path, nodes, slurm, late=300, time_scale=10), None, None, out)
    assert summary["completed"] == 2
    check_elastic_run(out, 3, late=300)


def _fail_rank0s_node(bed, out, tmp_path, fail, steps: int = 100) -> str:
    """Run a 2-GPU gang on two of the three nodes and ``fail(testbed node)`` the one holding rank 0 at the first
    checkpoint; check the job ran again on the other two from it, to the parameters of an uninterrupted run, with
    the node's loss in live.csv and nothing left in Slurm's queue. The failed node's Slurm name."""
    # 100 steps: about 3 s at 35 steps per second; the node fails at the first checkpoint
    config = _config(tmp_path, ["gw0-v100", "gw1-v100", "gw2-v100"], steps, checkpoint_every=0.1)
    failed: list[str] = []

    def fail_once_saved() -> None:
        status = out / "channels" / "g4" / "a1-c0-r0" / "status.json"
        deadline = time.time() + 120
        while time.time() < deadline:
            if has_checkpoint(status):
                rendezvous = json.loads((out / "channels" / "g4" / "a1-c0.rendezvous.json").read_text())
                index = next(i for i, n in enumerate(bed.nodes) if n.addr == rendezvous["addr"])
                fail(index)
                failed.append(f"gw{index - 1}")
                return
            time.sleep(0.1)

    thread = threading.Thread(target=fail_once_saved, daemon=True)
    thread.start()
    summary = run_live(config, None, None, out)
    thread.join(timeout=5)
    assert failed and summary["completed"] == 1
    with open(out / "live.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert rows[-1]["outcome"] == "done" and failed[0] not in rows[-1]["placement"]
    assert any(r["outcome"] == "node-lost" and r["cause"] == f"node {failed[0]}-v100 lost" for r in rows), rows
    final = torch.load(out / "checkpoints" / "g4" / "model.ckpt", map_location="cpu")
    assert final["position"] == steps
    assert _max_difference(final, reference(steps)) < TOLERANCE
    left = subprocess.run(["squeue", "-h", "-o", "%i|%k"], capture_output=True, text=True).stdout
    assert str(out) not in left  # no job of the run is left in Slurm's queue
    return failed[0]


def test_a_killed_slurmd_sends_the_gang_back_to_its_checkpoint_on_other_nodes(slurm_bed, tmp_path, monkeypatch):
    """Only the slurmd of the node holding rank 0 dies (the machine, its link and its ranks live on): Slurm declares
    the node DOWN once its slurmd has not answered for SlurmdTimeout (5 s here), and the job goes back to the queue
    and runs on the two other nodes from its last checkpoint. The slurmd is started again afterwards."""
    bed, box = slurm_bed
    for key, value in box.env.items():
        monkeypatch.setenv(key, value)
    killed: list[int] = []

    def kill_slurmd(index: int) -> None:
        assert bed.kill_program(index, "slurmd")
        killed.append(index)

    try:
        # the ranks train on until Slurm declares the node DOWN (5 s): 400 steps outlast that
        _fail_rank0s_node(bed, tmp_path / "out", tmp_path, kill_slurmd, steps=400)
    finally:
        for index in killed:
            box.restart_slurmd(index - 1)  # testbed node i holds slurmd gw(i-1)


def test_a_node_that_leaves_slurm_sends_the_gang_back_to_its_checkpoint_on_other_nodes(
    slurm_bed, tmp_path, monkeypatch
):
    """The node holding rank 0 dies mid-run (every process in its namespace, its slurmd too): Slurm declares it DOWN
    once its slurmd has not answered for SlurmdTimeout (5 s here), the executor reads that from ``scontrol show
    node``, and the job goes back to the queue and runs on the two other nodes from its last checkpoint, to the
    parameters of an uninterrupted run. The module's last test: the node stays dead."""
    bed, box = slurm_bed
    for key, value in box.env.items():
        monkeypatch.setenv(key, value)
    # the machine dies: its slurmd, agents and ranks
    name = _fail_rank0s_node(bed, tmp_path / "out", tmp_path, bed.kill)
    shown = subprocess.run(["scontrol", "show", "node", name], capture_output=True, text=True).stdout
    state = next(part for part in shown.split() if part.startswith("State="))
    # Slurm itself still holds the node gone (DOWN once SlurmdTimeout passed, NOT_RESPONDING before), as the
    # executor read it
    assert any(flag in state for flag in ("DOWN", "NOT_RESPONDING")), shown
