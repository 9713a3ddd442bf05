"""A real PyTorch training job: a small MLP regressing generated data, for a given number of steps.

Data come from a fixed-seed generator (a random linear teacher plus noise), so runs are reproducible without
any download. The checkpoint is ``{"model": state_dict, "optimizer": state_dict, "steps": n}`` (torch.save),
which is what HadarE consolidation averages. Runs on CPU unless CUDA is visible (then on the first visible GPU).
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

from gpuweave.live import api


def build(width: int, seed: int) -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    inputs = torch.randn(512, 32, generator=gen)
    teacher = torch.randn(32, 1, generator=gen)
    targets = inputs @ teacher + 0.01 * torch.randn(512, 1, generator=gen)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(32, width), torch.nn.ReLU(), torch.nn.Linear(width, 1))
    return model, inputs, targets


def save(model: torch.nn.Module, optimizer: torch.optim.Optimizer, steps: int) -> None:
    path = api.checkpoint_path()
    tmp = path.with_name(path.name + ".tmp")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "steps": steps}, tmp)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model, inputs, targets = build(args.width, args.seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    resume = api.resume_path()
    if resume is not None:
        state = torch.load(resume, map_location="cpu")
        model.load_state_dict(state["model"])
        if "optimizer" in state:
            optimizer.load_state_dict(state["optimizer"])
    model.to(device)
    inputs, targets = inputs.to(device), targets.to(device)
    # Each attempt, and each forked copy of one, draws its own batches (copies of one round are data-parallel
    # shards, so their parameters differ and consolidation averages distinct models).
    attempt = int(os.environ.get("GPUWEAVE_ATTEMPT", "0"))
    copy = int(os.environ.get("GPUWEAVE_COPY", "0"))
    gen = torch.Generator().manual_seed(args.seed + 1000 * attempt + copy)
    steps, target = 0, api.target_steps()
    while steps < target:
        idx = torch.randint(0, inputs.shape[0], (args.batch,), generator=gen)
        loss = torch.nn.functional.mse_loss(model(inputs[idx.to(device)]), targets[idx.to(device)])
        optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]  # torch's Tensor.backward carries no annotations
        optimizer.step()
        steps += 1
        api.report(steps)
        if api.should_checkpoint():
            save(model, optimizer, steps)
            api.checkpointed(steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
