"""Live runs on Ray, on the session's shared ``ray_cluster`` (tests/live/conftest.py)."""

import csv
import json
import threading
import time

import pytest

ray = pytest.importorskip("ray")

from gpuweave.cluster.policies import policy_names  # noqa: E402
from gpuweave.errors import InputError  # noqa: E402
from gpuweave.live.config import load_live_config  # noqa: E402
from gpuweave.live.ray_executor import RayExecutor  # noqa: E402
from gpuweave.live.results import write_live_run  # noqa: E402
from gpuweave.live.runtime import LiveRuntime  # noqa: E402

RESNET = "ResNet-18 (batch size 128)"
TRACE = [f"a,0,1,{RESNET},300", f"b,0,2,{RESNET},400", "c,40,1,A3C,200", f"d,80,1,{RESNET},200"]
# A round of 0.4 wall seconds: every policy gets a few decisions, HadarE a few fork rounds, each run ~2 s.
FAST = {"round_length": 600, "executor": {"time_scale": 1500}}


def _run(config, tmp_path, name):
    executor = RayExecutor(None)
    runtime = LiveRuntime(load_live_config(config), executor, tmp_path / name, config_dir=config.parent)
    runtime.run()
    return write_live_run(runtime, tmp_path / name)


@pytest.mark.parametrize("policy", policy_names())
def test_every_policy_finishes_synthetic_jobs_on_ray(ray_cluster, live_config, tmp_path, policy):
    config = live_config(TRACE, policy=policy, **FAST)
    summary = _run(config, tmp_path, policy)
    assert summary["completed"] == 4
    assert json.loads((tmp_path / policy / "summary.json").read_text())["executor"] == "ray"


def test_cluster_lacking_a_gpu_type_is_an_input_error(ray_cluster, live_config, tmp_path):
    (tmp_path / "cluster.yaml").write_text("name: p100\nnodes:\n  - {gpu: P100, gpus_per_node: 1}\n")
    config = live_config([f"a,0,1,{RESNET},100"])
    with pytest.raises(InputError, match="lacks GPU type P100"):
        _run(config, tmp_path, "t4")


def test_unreachable_address_is_an_input_error(live_config, tmp_path):
    if ray.is_initialized():
        pytest.skip("a Ray connection is already open in this process")
    with pytest.raises(InputError, match="cannot reach"):
        RayExecutor("127.0.0.1:1").check_cluster([])


def test_lost_ray_node_sends_its_jobs_back_from_their_checkpoints(ray_cluster, live_config, tmp_path):
    """A node this test adds (the only P100 one) disappears while two jobs run on it: they resume elsewhere from
    their last checkpoint, no crash is counted, and the run completes on the remaining node."""
    extra = ray_cluster.add_node(num_cpus=1, num_gpus=2, resources={"gpu_type:P100": 2})
    ray_cluster.wait_for_nodes()
    (tmp_path / "cluster.yaml").write_text(
        "name: lose-one\nnodes:\n  - {gpu: V100, gpus_per_node: 2, name_prefix: v100-}\n"
        "  - {gpu: P100, gpus_per_node: 2, name_prefix: p100-}\n"
    )
    rows = [f"j{i},0,1,{RESNET},{2000 + 100 * i}" for i in range(4)]
    config = live_config(rows, executor={"time_scale": 1500, "checkpoint_every": 0.2})
    out = tmp_path / "out"
    remover = threading.Thread(target=_remove_when_checkpointed, args=(ray_cluster, extra, out), daemon=True)
    remover.start()
    summary = _run(config, tmp_path, "out")
    remover.join(timeout=5)
    assert summary["completed"] == 4
    live = list(csv.DictReader(open(out / "live.csv")))
    lost = [r for r in live if r["outcome"] == "node-lost"]
    assert {r["placement"].split(":")[0] for r in lost} == {"p100-0"} and len(lost) == 2
    records = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]
    assert all(r["crashes"] == 0 for r in records if r["ev"] == "end")
    for r in lost:  # the next attempt of a job sent back resumes from what its checkpoint held
        again = next(x for x in records if x["ev"] == "launch" and x["job"] == r["job_id"] and x["attempt"] > 1)
        assert again["committed"] > 0
        assert next(x for x in live if x["job_id"] == r["job_id"] and int(x["attempt"]) > 1)["placement"].startswith(
            "v100-0"
        )


def _remove_when_checkpointed(cluster, node, out) -> None:
    """Remove ``node`` once two attempts on it (the P100 node: cluster node index 1) have saved a checkpoint."""
    deadline = time.time() + 30
    while time.time() < deadline:
        saved = 0
        for status in out.glob("channels/*/*/status.json"):
            try:
                saved += json.loads(status.read_text())["checkpoint_steps"] > 0
            except (ValueError, KeyError):
                continue
        if saved >= 4:
            break
        time.sleep(0.05)
    cluster.remove_node(node)
