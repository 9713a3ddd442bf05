"""Tasks sharing GPUs in live runs: the book's ledger chooses each task's GPU, Ray (fractional ``num_gpus`` on the
session's declared GPU nodes, tests/live/conftest.py) and the local executor run them there."""

from __future__ import annotations

import csv
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
    config = _shared_run(tmp_path, policy="hadar")
    with pytest.raises(InputError, match="places jobs by its own rule"):
        LiveRuntime(load_live_config(config), LocalExecutor(), tmp_path / "out", config_dir=tmp_path)
    config = _shared_run(tmp_path, policy="gavel")  # Gavel shares GPU time: the CPU-only task is refused by name
    with pytest.raises(InputError, match="job 'cpu' asks no GPU"):
        LiveRuntime(load_live_config(config), LocalExecutor(), tmp_path / "out", config_dir=tmp_path)


def test_gavel_runs_two_halves_on_one_gpu_live_and_rotates_a_third_in(tmp_path):
    """Gavel on shared GPUs, live (local executor): its round counts shares, so two half-GPU tasks run together on
    the one GPU; the third gets its turn by Gavel's priorities (a running half stopped at a checkpoint for it)."""
    out, summary = _one_gpu_run(tmp_path, "gavel", [f"half{i},0,1,any,300,500,2000,4096" for i in range(3)])
    assert summary["completed"] == 3
    rows = list(csv.DictReader((out / "live.csv").open()))
    starts = sorted(float(r["planned_start"]) for r in rows if r["kind"] == "start")
    assert starts[0] == starts[1] < starts[2]  # two halves at once on the one GPU, the third at a later round
    assert any(r["outcome"] == "stopped" for r in rows)  # Gavel rotated a running half out for the third
    used = [int(r["used_milli_gpus"]) for r in csv.DictReader((out / "sharing.csv").open())]
    assert max(used) == 1000  # the whole GPU in two halves, never more


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


def test_tiresias_preempts_a_shared_task_live_and_it_resumes_from_its_checkpoint(tmp_path):
    """Tiresias on shared GPUs, live (local executor): a task demoted past the first threshold gives its GPU to a new
    one at the next round, is stopped at a checkpoint, and resumes once the new task has finished (the new task's
    60 s at 0.6 of the GPU stay below the threshold of 60 GPU-seconds, however slow the machine)."""
    rows = ["long,0,1,any,600,1000,2000,4096", "new,150,1,any,60,600,2000,4096"]
    out, summary = _one_gpu_run(tmp_path, "tiresias", rows, {"thresholds": [60]})
    assert summary["completed"] == 2
    rows = list(csv.DictReader((out / "live.csv").open()))
    long = [r for r in rows if r["job_id"] == "long"]
    new = [r for r in rows if r["job_id"] == "new"]
    assert [r["outcome"] for r in long] == ["stopped", "done"] and [r["outcome"] for r in new] == ["done"]
    assert float(long[1]["planned_start"]) >= float(new[0]["planned_start"])  # resumed after the new task started
    steps = [int(float(r["steps"])) for r in long]
    assert steps[0] > 0 and sum(steps) <= 600 + 1  # the second attempt went on from the first's checkpoint


def _one_gpu_run(tmp_path: Path, policy: str, tasks: list[str], options: dict | None = None) -> tuple[Path, dict]:
    """Run ``tasks`` (rows of ``job_id,arrival,num_gpus,job_type,duration,gpu_milli,cpu_milli,memory_mib``) live
    under ``policy`` on one shared V100 (local executor, best fit, 100 s rounds, time scale 200): its out folder and
    summary."""
    (tmp_path / "cluster.yaml").write_text(
        "name: one-v100\nnodes:\n- {gpu: V100, gpus_per_node: 1, cpu_milli: 16000, memory_mib: 65536, "
        "sharing: fraction}\n"
    )
    header = "job_id,arrival,num_gpus,job_type,duration,gpu_milli,cpu_milli,memory_mib"
    (tmp_path / "trace.csv").write_text("\n".join([header, *tasks]) + "\n")
    config = {
        "policy": policy,
        "policy_options": options or {},
        "round_length": 100,
        "cluster": "cluster.yaml",
        "trace": "trace.csv",
        "profiles": "traced",
        "placement_rule": "best-fit",
        "restart_delay": 0,
        "executor": {"time_scale": 200, "checkpoint_every": 0.2, "poll_interval": 0.03},
    }
    (tmp_path / "run.json").write_text(json.dumps(config))
    out = tmp_path / "out"
    runtime = LiveRuntime(load_live_config(tmp_path / "run.json"), LocalExecutor(), out, config_dir=tmp_path)
    runtime.run()
    return out, write_live_run(runtime, out)
