import shutil
from pathlib import Path

import pytest
import yaml

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "live"


@pytest.fixture
def live_config(tmp_path):
    """Write a live run config beside a copy of the example cluster and a small trace; returns a writer."""
    shutil.copy(EXAMPLES / "cluster.yaml", tmp_path / "cluster.yaml")

    def write(rows: list[str], **overrides) -> Path:
        trace = tmp_path / "trace.csv"
        header = "job_id,arrival,num_gpus,job_type,duration"
        if any(r.count(",") > header.count(",") for r in rows):
            header += ",program"
            rows = [r if r.count(",") == header.count(",") else r + "," for r in rows]
        trace.write_text("\n".join([header, *rows]) + "\n")
        executor = {"program": "synthetic", "time_scale": 400, "checkpoint_every": 0.5, "poll_interval": 0.03}
        executor.update(overrides.pop("executor", {}))
        data = {
            "policy": "fifo",
            "cluster": "cluster.yaml",
            "trace": "trace.csv",
            "restart_delay": 10,
            "executor": executor,
            **overrides,
        }
        path = tmp_path / "run.yaml"
        path.write_text(yaml.safe_dump(data))
        return path

    return write


@pytest.fixture(scope="session")
def ray_cluster():
    """One ``ray.cluster_utils.Cluster`` for the whole session: a head with no GPUs and three declared nodes of two
    GPU types (2 x V100, 1 x K80, 2 GPUs each). Every test module whose name starts with ``test_ray`` uses it; they
    all run in one xdist worker (tests/conftest.py), so only one Ray is ever up. Tests that change the cluster
    (remove a node) must restore it."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    for model in ("V100", "V100", "K80"):
        cluster.add_node(num_cpus=1, num_gpus=2, resources={f"gpu_type:{model}": 2})
    ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
    yield cluster
    ray.shutdown()
    cluster.shutdown()
