"""Gangs on a Ray cluster whose head and three worker nodes each live in their own network namespace (issue 37).

The driver runs `gpuweave cluster run --executor ray` on the head, as on a real cluster. The policy's placement (a
GPU on each of two worker nodes) becomes one placement group, one bundle per node, and the gang trains across the
namespaces. Mid-run the link of the node holding rank 0 is cut: Ray declares the node dead, the runtime kills the
gang's ranks left waiting on it, and the job runs again on the other two nodes from its last checkpoint, ending with
the parameters of one process on the same global batches (nothing lost, nothing trained twice).
"""

import csv
import json
import subprocess
import sys
import time

import pytest
import yaml

torch = pytest.importorskip("torch")
pytest.importorskip("ray")

from tests.checkpoints import has_checkpoint  # noqa: E402

from .test_ddp import TOLERANCE, _max_difference, reference  # noqa: E402

pytestmark = pytest.mark.ray  # Ray's tests share one xdist worker (tests/conftest.py)
RUN_LIMIT_S = 240


def _setup(tmp_path, nodes: int, steps: int, checkpoint_every: float) -> list[str]:
    cluster = {"name": "tb", "nodes": [{"gpu": "V100", "gpus_per_node": 1, "count": nodes, "name_prefix": "w"}]}
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    trace = f"job_id,arrival,num_gpus,job_type,work\ng4,0,2,ResNet-18 (batch size 128),{steps}\n"
    (tmp_path / "trace.csv").write_text(trace)
    executor = {"program": "torch", "time_scale": 1, "checkpoint_every": checkpoint_every, "report_timeout": 120}
    run = {"policy": "fifo", "cluster": "cluster.yaml", "trace": "trace.csv", "restart_delay": 0, "executor": executor}
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(run))
    return [sys.executable, "-m", "gpuweave.cli", "cluster", "run", str(tmp_path / "run.yaml")]


def _on_head(bed, argv: list[str], out) -> list[str]:
    return ["ip", "netns", "exec", bed.nodes[0].namespace, *argv, "--executor", "ray", "--address", bed.ray_address,
            "--out", str(out)]  # fmt: skip


def _rows(out) -> list[dict]:
    with open(out / "live.csv") as fh:
        return list(csv.DictReader(fh))


def run_and_fail_rank0s_node(bed, tmp_path, fail) -> tuple[list[dict], int, object]:
    """Run a 2-rank gang on two of the three Ray worker nodes; at its first checkpoint ``fail(victim)`` on the node
    that holds rank 0. The rows of live.csv, the victim and the run's folder."""
    steps = 100  # long enough to fail midway (about 35 steps per second; failed at the first checkpoint)
    out = tmp_path / "out"
    run = subprocess.Popen(
        _on_head(bed, _setup(tmp_path, 3, steps, 0.1), out), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        status = out / "channels" / "g4" / "a1-c0-r0" / "status.json"
        deadline = time.monotonic() + RUN_LIMIT_S
        while time.monotonic() < deadline and not has_checkpoint(status):
            assert run.poll() is None, run.stderr.read().decode()[-3000:]
            time.sleep(0.1)
        rendezvous = json.loads((out / "channels" / "g4" / "a1-c0.rendezvous.json").read_text())
        victim = next(i for i, n in enumerate(bed.nodes) if n.addr == rendezvous["addr"])
        assert victim != 0  # a worker node's address, not the head's
        fail(victim)
        _, err = run.communicate(timeout=RUN_LIMIT_S)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, err.decode()[-3000:]
    rows = _rows(out)
    assert all(r["placement"].count(":1") == 2 for r in rows)  # each attempt one gang over two Ray nodes
    final = torch.load(out / "checkpoints" / "g4" / "model.ckpt", map_location="cpu")
    assert final["position"] == steps
    assert _max_difference(final, reference(steps)) < TOLERANCE  # nothing lost, nothing trained twice
    return rows, victim, out


@pytest.mark.elastic
def test_pollux_resizes_an_adaptive_job_across_ray_nodes(ray_bed, tmp_path):
    """issue 38: pollux on the job's measured agent grows it over the Ray worker nodes (1, then 2, then 3 GPUs:
    one placement group per size) and shrinks it for a second job (tests/gang/test_pollux_live.py)."""
    from .test_pollux_live import check_elastic_run, pollux_config

    nodes = [{"gpu": "V100", "gpus_per_node": 1, "count": 3, "name_prefix": "w"}]
    config = pollux_config(tmp_path, nodes, {}, late=300, time_scale=10)
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "gpuweave.cli", "cluster", "run", str(config)]
    run = subprocess.run(_on_head(ray_bed, argv, out), capture_output=True, timeout=RUN_LIMIT_S)
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    check_elastic_run(out, 3, late=300)


def test_a_node_whose_link_goes_down_sends_the_gang_back_to_its_checkpoint_on_the_other_nodes(ray_bed, tmp_path):
    rows, _, _ = run_and_fail_rank0s_node(ray_bed, tmp_path, lambda victim: ray_bed.set_link(victim, up=False))
    assert [r["outcome"] for r in rows] == ["node-lost", "done"]
    lost = rows[0]["cause"]
    assert lost.startswith("node w") and lost.endswith(" lost")
    assert lost.split()[1] not in rows[1]["placement"]  # it ran again elsewhere: on the two other nodes
