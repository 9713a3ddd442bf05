"""Synthetic kernel traces for the twelve Table 1 models (paper Table 1; spec §3.1, R-18, R-19).

Problem: the paper's workloads are torchvision models on an RTX 3090; their kernel traces are not
published and no GPU is available here. To let the experiments run on *model-shaped* workloads, this
module builds a deterministic **synthetic** trace per model from a few stated assumptions in
``data/synthetic_models.toml`` (kernel count, median kernel duration and spread, median host time
per launch, how often the host synchronises, host time after a sync). They are assumptions, not
measurements; absolute numbers from them mean nothing for the real models. Import real traces with
:mod:`gpuweave.kernel.torch_import` where a GPU exists.

Construction for model m: RNG = PCG64(crc32(m)); kernel i has ID ``m_op{j}`` with j = i mod
max(8, kernels // 4) (so IDs repeat within a run, as real kernels do), duration = dur_ms·exp(σ·z_j)
(the same for every instance of an ID), host time before launch = cpu_ms·exp(0.5·z'_i), sync after
every ``sync_every``-th kernel, plus ``sync_cpu_ms`` of host time after each sync.

The ten default pairs (R-18): the three pairs the paper names plus seven of our own choice,
labelled as such. Complexity O(kernels) per trace.
"""

from __future__ import annotations

import tomllib
import zlib
from functools import lru_cache
from importlib import resources

import numpy as np

from gpuweave.errors import InputError
from gpuweave.kernel.ids import KernelId
from gpuweave.kernel.trace_format import Op, Trace

#: (high-priority A, low-priority B, source). "paper" pairs are named in the text; "ours" are our choice (R-18).
DEFAULT_PAIRS: list[tuple[str, str, str]] = [
    ("keypointrcnn_resnet50_fpn", "fcn_resnet50", "paper (Table 2)"),
    ("deeplabv3_resnet50", "resnet101", "paper (IV.c bad pair)"),
    ("maskrcnn_resnet50_fpn", "fcn_resnet50", "paper (§5)"),
    ("fasterrcnn_resnet50_fpn", "deeplabv3_resnet101", "ours"),
    ("fcos_resnet50_fpn", "fcn_resnet101", "ours"),
    ("resnet50", "deeplabv3_resnet50", "ours"),
    ("resnet101", "vgg16", "ours"),
    ("alexnet", "fcn_resnet50", "ours"),
    ("vgg16", "maskrcnn_resnet50_fpn", "ours"),
    ("keypointrcnn_resnet50_fpn", "resnet50", "ours"),
]


@lru_cache(maxsize=1)
def model_parameters() -> dict[str, dict]:
    with resources.files("gpuweave.kernel.data").joinpath("synthetic_models.toml").open("rb") as fh:
        return tomllib.load(fh)


def model_names() -> list[str]:
    return list(model_parameters())


@lru_cache(maxsize=32)
def model_trace(name: str) -> Trace:
    """The synthetic trace of Table 1 model ``name`` (see module docstring for the assumptions)."""
    params = model_parameters()
    if name not in params:
        raise InputError(f"unknown model {name!r} (known: {', '.join(params)})", field="model")
    p = params[name]
    n = int(p["kernels"])
    rng = np.random.Generator(np.random.PCG64(zlib.crc32(name.encode())))
    n_ids = max(8, n // 4)
    id_dur = p["dur_ms"] * np.exp(p["dur_sigma"] * rng.standard_normal(n_ids))
    cpu = p["cpu_ms"] * np.exp(0.5 * rng.standard_normal(n))
    every = int(p["sync_every"])
    kids = [KernelId(f"{name}_op{j}", (256, 1, 1), (j % 64 + 1, 1, 1)).canonical() for j in range(n_ids)]
    ops = []
    for i in range(n):
        j = i % n_ids
        sync = every > 0 and (i + 1) % every == 0
        before = float(cpu[i])
        if i > 0 and every > 0 and i % every == 0:
            before += float(p["sync_cpu_ms"])
        ops.append(Op(kids[j], float(id_dur[j]), 0.0 if i == 0 else before, sync))
    return Trace(name, tuple(ops))
