"""Tasks sharing GPUs in live runs: the book's ledger chooses each task's GPU, Ray (fractional ``num_gpus`` on the
session's declared GPU nodes, tests/live/conftest.py) and the local executor run them there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuweave.errors import InputError
from gpuweave.live.config import load_live_config
from gpuweave.live.local import LocalExecutor
from gpuweave.live.results import write_live_run
from gpuweave.live.runtime import LiveRuntime

# A worker that says which GPU it was given, then trains as the synthetic worker does.
PROGRAM = """import json, os, runpy
from pathlib import Path
keys = ("GPUWEAVE_GPU_SLOTS", "GPUWEAVE_GPU_SHARE", "CUDA_VISIBLE_DEVICES", "GPUWEAVE_JOB")
Path(os.environ["GPUWEAVE_CHANNEL"], "env.json").write_text(json.dumps({k: os.environ.get(k) for k in keys}))
runpy.run_module("gpuweave.live.workers.synthetic", run_name="__main__")
"""


def _shared_run(tmp_path: Path, *, policy: str = "fifo") -> Path:
    """Five half-GPU tasks and a CPU-only one on one node of 2 V100s that share GPUs: four halves fit at once."""
    (tmp_path / "cluster.yaml").write_text(
        "name: one-v100-node\nnodes:\n- {gpu: V100, gpus_per_node: 2, cpu_milli: 16000, memory_mib: 65536, "
        "sharing: fraction}\n"
    )
    rows = ["job_id,arrival,num_gpus,job_type,duration,gpu_milli,cpu_milli,memory_mib"]
    rows += [f"half{i},0,1,any,200,500,2000,4096" for i in range(5)] + ["cpu,0,0,cpu-only,100,,2000,1024"]
    (tmp_path / "trace.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "show_env.py").write_text(PROGRAM)
    config = {
        "policy": policy,
        "cluster": "cluster.yaml",
        "trace": "trace.csv",
        "profiles": "traced",
        "placement_rule": "best-fit",
        "restart_delay": 0,
        "executor": {"program": "show_env.py", "time_scale": 400, "checkpoint_every": 0.5, "poll_interval": 0.03},
    }
    path = tmp_path / "run.json"
    path.write_text(json.dumps(config))
    return path


def _check_shared(out: Path, summary: dict) -> None:
    assert summary["completed"] == 6
    envs = {e["GPUWEAVE_JOB"]: e for e in (json.loads(p.read_text()) for p in out.glob("channels/*/*/env.json"))}
    halves = {job: env for job, env in envs.items() if job.startswith("half")}
    assert len(halves) == 5 and {env["GPUWEAVE_GPU_SHARE"] for env in halves.values()} == {"0.5"}
    assert {env["GPUWEAVE_GPU_SLOTS"] for env in halves.values()} == {"0", "1"}  # both GPUs, shared
    assert envs["cpu"]["GPUWEAVE_GPU_SLOTS"] == ""  # a CPU-only task holds no GPU
    jobs = {row.split(",")[0]: row.split(",") for row in (out / "jobs.csv").read_text().splitlines()[1:]}
    header = (out / "jobs.csv").read_text().splitlines()[0].split(",")
    start = {job: float(cells[header.index("start")]) for job, cells in jobs.items()}
    first = sorted(start[f"half{i}"] for i in range(5))
    assert first[3] == first[0] < first[4]  # four halves at once on two GPUs, the fifth once one has finished
    assert (out / "sharing.csv").is_file()


def test_shared_run_on_ray(ray_cluster, tmp_path):
    from gpuweave.live.ray_executor import RayExecutor

    config = _shared_run(tmp_path)
    runtime = LiveRuntime(load_live_config(config), RayExecutor(None), tmp_path / "out", config_dir=tmp_path)
    runtime.run()
    _check_shared(tmp_path / "out", write_live_run(runtime, tmp_path / "out"))


def test_shared_run_on_the_local_executor(tmp_path):
    config = _shared_run(tmp_path)
    runtime = LiveRuntime(load_live_config(config), LocalExecutor(), tmp_path / "out", config_dir=tmp_path)
    runtime.run()
    _check_shared(tmp_path / "out", write_live_run(runtime, tmp_path / "out"))


def test_a_policy_with_its_own_placement_cannot_run_shared(tmp_path):
    config = _shared_run(tmp_path, policy="gavel")
    with pytest.raises(InputError, match="places jobs by its own rule"):
        LiveRuntime(load_live_config(config), LocalExecutor(), tmp_path / "out", config_dir=tmp_path)


def test_slurm_shards_are_read_from_the_nodes_and_required_for_a_shared_run(tmp_path):
    """Slurm runs shares as gres/shard (tests/slurm/test_slurm_sharing.py runs it): the shards per GPU come from
    scontrol's Gres, and a node without them is refused by name before anything starts."""
    from gpuweave.hardware.cluster_spec import Node
    from gpuweave.live.slurm import SlurmExecutor, shards_per_gpu
    from gpuweave.workload.traces.slurm_nodes import GpuSlot

    text = (
        "NodeName=gw0 Arch=x86_64 Gres=gpu:v100:4,gpu:k80:2,shard:v100:400,shard:k80:200 State=IDLE\n"
        "NodeName=gw1 Gres=gpu:2(S:0),shard:16 State=MIXED\nNodeName=gw2 Gres=gpu:a100:8 State=IDLE"
    )
    assert shards_per_gpu(text) == {("gw0", "v100"): 100, ("gw0", "k80"): 100, ("gw1", ""): 8}
    executor = SlurmExecutor(tmp_path / "s")
    executor._slots = {0: GpuSlot("gw2", "a100", "A100-40GB", 8, "gw2-a100")}
    executor._shards = shards_per_gpu(text)
    node = Node(0, "gw2-a100", "A100-40GB", 8, 0.1, 1.0, sharing="fraction")
    with pytest.raises(InputError, match="Slurm node gw2 has no shard GRES for its a100s"):
        executor.check_shares([node])
