"""Pollux live (issue 38, item 4): the ``pollux`` policy drives an adaptive torch job on a multi-node test cluster
(two network namespaces of 2 emulated V100 each, the local executor), deciding on what the job's workers measure
(their seconds per step and sync, their gradient noise: gpuweave.live.agents), as adaptdl's agent reports them.
Unprofiled, the job may take 1 GPU, then twice what it was measured on: it grows from 1 GPU to 4, each time
stopped at a checkpoint and resumed at its new size with the batch its agent picks; a second job arriving takes
GPUs from it; both finish, and the adaptive job's model reaches the loss one process reaches at its initial batch
after the same progress (AdaScale: tests/gang/test_elastic.py)."""

import csv

import pytest
import yaml

torch = pytest.importorskip("torch")

from gpuweave.live.launch import run_live  # noqa: E402

from .test_elastic import _checkpoint_loss, reference_losses  # noqa: E402

WORK = 6000  # steps at the initial batch of 32
LATE = 400  # when the second job arrives (simulated s)
PROGRESS_TOLERANCE = 0.1  # the final loss is the reference's after WORK steps, give or take 10 % of them


def _config(tmp_path, bed) -> object:
    nodes = [{"gpu": "V100", "gpus_per_node": 2, "count": 2, "name_prefix": "n"}]
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump({"name": "elastic", "nodes": nodes}))
    # steps/s at batch 32 (the emulated GPU: 1 GPU's rate sets its time per sample; the rest are the book's)
    rows = ["job_type,gpu_model,num_gpus,consolidated,throughput"]
    rows += [f"mlp,V100,{g},{c},{10.0 * g * (1 if c else 0.9):g}" for g in (1, 2, 3, 4) for c in (1, 0)]
    (tmp_path / "profiles.csv").write_text("\n".join(rows) + "\n")
    columns = "job_id,arrival,num_gpus,job_type,work,moldable,batch_size,max_batch_size,min_local_bsz,max_local_bsz"
    jobs = [f"elastic,0,1,mlp,{WORK},4,32,256,8,64", f"late,{LATE},1,mlp,300,4,32,256,8,64"]
    (tmp_path / "trace.csv").write_text("\n".join([columns, *jobs]) + "\n")
    config = {
        "policy": "pollux",
        "policy_options": {"population": 30, "generations": 20},
        "cluster": "cluster.yaml",
        "trace": "trace.csv",
        "profiles": "profiles.csv",
        "restart_delay": 30,
        "executor": {
            "kind": "local",
            "program": "torch --adascale",
            "time_scale": 20,
            "checkpoint_every": 0.5,
            "poll_interval": 0.05,
            "report_timeout": 30,
            "launch_timeout": 120,
            "local": {"namespaces": bed.namespaces[1:]},
        },
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_pollux_grows_an_adaptive_job_from_one_gpu_to_four_on_its_measurements_and_shrinks_it_for_another(
    netns_bed, tmp_path
):
    out = tmp_path / "out"
    summary = run_live(_config(tmp_path, netns_bed), None, None, out)
    assert summary["completed"] == 2
    with open(out / "live.csv") as fh:
        rows = list(csv.DictReader(fh))
    print([(r["job_id"], r["placement"], r["batch_size"], r["outcome"], r["planned_start"]) for r in rows])
    mine = [r for r in rows if r["job_id"] == "elastic"]
    gpus = [sum(int(part.split(":")[1]) for part in r["placement"].split(";")) for r in mine]
    # unprofiled it may take 1 GPU, then twice the most it was measured on
    assert gpus[0] == 1 and max(gpus) == 4
    assert all(b <= 2 * a for a, b in zip(gpus, gpus[1:]))
    grown = gpus.index(4)
    assert all(r["outcome"] == "stopped" for r in mine[:-1]) and mine[-1]["outcome"] == "done"
    # each attempt at the batch its agent picked for the placement (the worker ran it: live.csv's batch_size)
    batches = [int(r["batch_size"]) for r in mine]
    assert batches[0] == 32 and batches[grown] > 32 and all(32 <= b <= 256 for b in batches)
    # the late job took GPUs from it: an attempt on fewer than 4 GPUs after the 4-GPU one, started once it came
    assert any(g < 4 and float(r["planned_start"]) >= LATE for g, r in zip(gpus[grown:], mine[grown:]))
    # the loss it reached is the one-process reference's after the same progress, within PROGRESS_TOLERANCE of it
    final = torch.load(out / "checkpoints" / "elastic" / "model.ckpt", map_location="cpu")
    loss, curve = _checkpoint_loss(final), reference_losses(set(range(100, 2 * WORK, 100)))
    equivalent = next(step for step in sorted(curve) if curve[step] <= loss)
    print(f"loss {loss:.6g}: the reference's after {equivalent} steps ({equivalent / WORK - 1:+.1%} of its progress)")
    assert abs(equivalent / WORK - 1) <= PROGRESS_TOLERANCE
