"""Live runs on Ray, on the session's shared ``ray_cluster`` (tests/live/conftest.py)."""

import json

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
