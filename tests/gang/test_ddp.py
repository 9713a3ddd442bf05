"""The bundled torch worker as a gang (issue 37's correctness target): a 4-rank gang across two network namespaces
ends with the parameters one process gets training on the same global batches (within 1e-5), and a gang resumed at
2 ranks from the 4-rank gang's checkpoint at step 10 ends step 20 with those of one process after 20 steps. The
gradient-noise estimates in their checkpoints are adaptdl's estimator applied here, by hand, to each rank's gradient.

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
from gpuweave.workload.goodput import NoiseEstimate  # noqa: E402

WORKER = [sys.executable, "-m", "gpuweave.live.workers.torch_train"]
TOLERANCE = 1e-5


def _train(
    bed, root: Path, sizes: list[int], steps: int, resume: Path | None = None, batch: int = 32, program=None
) -> dict:
    """Run one gang of ``sizes`` ranks per node (node i in namespace i + 1) for ``steps`` steps (``program``:
    default the worker at global batch ``batch``); its checkpoint."""
    program = program or [*WORKER, "--batch", str(batch)]
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
    if codes != [0] * len(sizes):  # the logs' ends in full (an assertion's message is cut short)
        pytest.fail(f"exit statuses {codes}; the nodes' logs end:\n" + "\n----\n".join(logs), pytrace=False)
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


def noise_reference(schedule: list[tuple[int, int]], batch: int = 32, seed: int = 0) -> NoiseEstimate:
    """adaptdl's gradient-noise estimate after ``(steps, ranks)`` stretches of one process's training: each step, the
    gradient of each rank's part of the global batch (mean squared error over it), their mean squared norm against
    their mean's, at scale ``batch / batch`` (the initial batch is the job's)."""
    from gpuweave.live.workers.torch_train import GlobalBatchSampler, build

    model, inputs, targets = build(64, seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    estimate, start = NoiseEstimate(), 0
    params = list(model.parameters())
    for steps, ranks in schedule:
        parts = [GlobalBatchSampler(inputs.shape[0], batch, r, ranks, seed).batches(start) for r in range(ranks)]
        for _ in range(steps):
            grads = []
            for part in parts:
                idx = torch.tensor(next(part))
                loss = torch.nn.functional.mse_loss(model(inputs[idx]), targets[idx])
                grads.append(torch.cat([g.reshape(-1) for g in torch.autograd.grad(loss, params)]).double())
            local = sum(float(g.pow(2).sum()) for g in grads) / ranks
            mean = torch.stack(grads).mean(dim=0)
            estimate.update(local, float(mean.pow(2).sum()), ranks, 1.0)
            offset = 0
            for p in params:  # the step on the mean gradient, as DDP's average makes it
                p.grad = mean[offset : offset + p.numel()].reshape(p.shape).float()
                offset += p.numel()
            optimizer.step()
        start += steps
    return estimate


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
    for state, schedule in ((four, [(10, 4)]), (resumed, [(10, 4), (10, 2)])):
        measured, expected = NoiseEstimate.from_dict(state["noise"]), noise_reference(schedule)
        assert measured.samples == expected.samples == sum(steps for steps, _ in schedule)
        assert measured.grad_sqr == pytest.approx(expected.grad_sqr, rel=1e-4)
        assert measured.grad_var == pytest.approx(expected.grad_var, rel=1e-4)
        assert measured.grad_var > 1e-3 and measured.grad_sqr > 0
