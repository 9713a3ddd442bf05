"""A real PyTorch job for the FIKIT checks on a real GPU (run by tools/real_gpu/check.py, never by the tests).

    python torch_job.py infer --iters N   # ResNet-18 inference, batch 8: the latency-critical service
    python torch_job.py train --seconds S # ResNet-50 training, batch 64: the best-effort filler
    python torch_job.py train --steps N   # the same for exactly N steps (the same kernels every run: profiles)
    python torch_job.py count             # CUDA kernels of set-up + 2 inferences, counted by torch.profiler (CUPTI)

Prints one JSON line: per-iteration latencies (ms) or iterations done. Weights are random (no download).
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import torchvision


def _infer_model():
    model = torchvision.models.resnet18(weights=None).cuda().eval()
    x = torch.randn(8, 3, 224, 224, device="cuda")
    return model, x


def infer(iters: int, warmup: int) -> dict:
    model, x = _infer_model()
    lat = []
    with torch.inference_mode():
        for i in range(warmup + iters):
            t0 = time.perf_counter()
            model(x)
            torch.cuda.synchronize()
            if i >= warmup:
                lat.append(1000 * (time.perf_counter() - t0))
            time.sleep(0.002)  # a service between requests: gaps the filler may use
    return {"latency_ms": lat}


def train(seconds: float, steps_wanted: int | None = None) -> dict:
    """Train for ``seconds``, or for exactly ``steps_wanted`` steps (a fixed kernel sequence, for profiling)."""
    model = torchvision.models.resnet50(weights=None).cuda().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (64,), device="cuda")
    t_end, steps = time.perf_counter() + seconds, 0
    t0 = time.perf_counter()
    while (steps < steps_wanted) if steps_wanted is not None else (time.perf_counter() < t_end):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        steps += 1
    return {"steps": steps, "steps_per_s": steps / (time.perf_counter() - t0)}


def count() -> dict:
    """Every CUDA kernel this process runs (model set-up and two inferences), as CUPTI sees them: run it under
    the shim in ``measure`` mode and compare with the shim's own count of gated launches of the same process."""
    torch.cuda.init()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        model, x = _infer_model()
        with torch.inference_mode():
            for _ in range(2):
                model(x)
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    names = [e.name for e in kernels if not e.name.startswith(("Memcpy", "Memset"))]
    return {"kernels": len(names), "distinct": len(set(names)), "names": sorted({n[:80] for n in names})[:20]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["infer", "train", "count"])
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--steps", type=int, default=None, help="train exactly this many steps (overrides --seconds)")
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = False
    if args.what == "infer":
        out = infer(args.iters, args.warmup)
    elif args.what == "train":
        out = train(args.seconds, args.steps)
    else:
        out = count()
    out["torch"] = torch.__version__
    out["cuda"] = torch.version.cuda
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
