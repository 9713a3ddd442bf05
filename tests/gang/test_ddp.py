"""The bundled torch worker as a gang (issue 37's correctness target): a 4-rank gang across two network namespaces
ends with the parameters one process gets training on the same global batches (within 1e-5), and a gang resumed at
2 ranks from the 4-rank gang's checkpoint at step 10 ends step 20 with those of one process after 20 steps.

Each gang is two node agents (gpuweave.live.gang), each in its own namespace of the testbed, so the all-reduces
cross the testbed's veth links (gloo over TCP).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gpuweave.live import gang  # noqa: E402

WORKER = [sys.executable, "-m", "gpuweave.live.workers.torch_train"]
TOLERANCE = 1e-5


def _train(bed, root: Path, sizes: list[int], steps: int, resume: Path | None = None, batch: int = 32) -> dict:
    """Run one gang of ``sizes`` ranks per node (node i in namespace i + 1) for ``steps`` steps; its checkpoint."""
    program = [*WORKER, "--batch", str(batch)]
    root.mkdir(parents=True)
    procs = []
    for node, _ in enumerate(sizes):
        channel = root / f"node{node}"
        channel.mkdir()
        env = dict(
            os.environ,
            GPUWEAVE_CHANNEL=str(channel),
            GPUWEAVE_TARGET_STEPS=str(steps),
            GPUWEAVE_CHECKPOINT=str(root / "model.ckpt" if node == 0 else channel / "rank.ckpt"),
            GPUWEAVE_RESUME_FROM=str(resume or ""),
        )
        if sum(sizes) > 1:
            member = bed.nodes[node + 1]
            env.update(gang.agent_env(sizes, node, root / "rdv.json", root.name), GPUWEAVE_NODE_ADDR=member.addr)
            argv = ["ip", "netns", "exec", member.namespace, *gang.agent_argv(program)]
        else:
            argv = program
        with open(channel / "worker.log", "wb") as log:
            procs.append(subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT))
    codes = [p.wait(timeout=180) for p in procs]
    logs = [(root / f"node{i}" / "worker.log").read_text()[-2000:] for i in range(len(sizes))]
    assert codes == [0] * len(sizes), logs
    return torch.load(root / "model.ckpt", map_location="cpu")


def _max_difference(a: dict, b: dict) -> float:
    return max((a["model"][k] - b["model"][k]).abs().max().item() for k in a["model"])


def reference(steps: int, batch: int = 32, width: int = 64, lr: float = 0.01, seed: int = 0) -> dict:
    """One process without torch.distributed, written here apart from the worker: the same model and the same
    global batches (the worker's sampler at world 1), mean squared error, plain SGD."""
    from gpuweave.live.workers.torch_train import GlobalBatchSampler, build

    model, inputs, targets = build(width, seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    batches = GlobalBatchSampler(inputs.shape[0], batch, 0, 1, seed).batches(0)
    for _ in range(steps):
        idx = torch.tensor(next(batches))
        loss = torch.nn.functional.mse_loss(model(inputs[idx]), targets[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"model": model.state_dict()}


def test_a_four_rank_gang_and_one_resumed_at_two_ranks_train_as_one_process(netns_bed, tmp_path):
    first = tmp_path / "four"
    four = _train(netns_bed, first, [2, 2], 10)
    assert netns_bed.nodes[1].addr in (first / "rdv.json").read_text()  # node 0's agent published its address
    assert (four["steps"], four["position"]) == (10, 10)
    assert four["optimizer"]["param_groups"][0]["lr"] == 0.01
    assert _max_difference(four, reference(10)) < TOLERANCE
    assert _max_difference(four, reference(0)) > 1e-3  # it trained
    resumed = _train(netns_bed, tmp_path / "two", [1, 1], 10, resume=first / "model.ckpt")
    assert (resumed["steps"], resumed["position"]) == (10, 20)
    assert _max_difference(resumed, reference(20)) < TOLERANCE
