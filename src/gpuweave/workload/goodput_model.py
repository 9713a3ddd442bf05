"""Pollux's goodput model: what a job makes of an allocation at its best batch size, and its speedup table.

Problem (Qiao et al., OSDI'21 sec. 3-4; adaptdl's ``GoodputFunction`` and ``SpeedupFunction``, petuum/adaptdl,
the rules Pollux's simulator uses): a job's *goodput* on ``nodes`` nodes and ``replicas`` GPUs at atomic batch
``b`` with ``s`` accumulation steps is its throughput (samples/s, from its fitted throughput model,
:mod:`gpuweave.workload.throughput_model`) times its statistical efficiency at the batch ``B = replicas b (s + 1)``
(from its gradient statistics, :func:`gpuweave.workload.goodput.gain`). The job picks the batch: of 50 batch sizes
spaced geometrically from ``max(B0, min_atomic x replicas)`` to the job's largest, each split into the fewest
accumulation steps that keep the atomic batch within ``max_atomic`` (a single GPU above ``B0`` accumulates at
least once: one atomic batch cannot estimate the gradient's noise), the one of highest goodput whose atomic
batch lies in ``[min_atomic, max_atomic]`` (the first on ties; goodput 0 when none does). A job's *speedup* on an
allocation is its best goodput there over its best goodput on a base allocation (one GPU, or Pollux's fair share).

Complexity: :meth:`GoodputModel.optimize` is O(50 x configurations), vectorised; :meth:`GoodputModel.speedups`
tabulates every (nodes, replicas) a scheduler may ask in one such call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuweave.workload.goodput import gain
from gpuweave.workload.throughput_model import PerfParams, step_time

CANDIDATES = 50  # batch sizes tried per configuration (numpy's geomspace default, as adaptdl)
EPS = 1e-8  # adaptdl's tolerance of its floors and ceilings


@dataclass(frozen=True, slots=True)
class BatchChoice:
    """The best goodput of one configuration and the batch that reaches it."""

    goodput: float
    atomic_bsz: int
    accum_steps: int


@dataclass(frozen=True, slots=True)
class GoodputModel:
    """One job's goodput model: fitted throughput, gradient statistics, its batch limits."""

    perf: PerfParams
    grad_sqr: float
    grad_var: float
    init_batch_size: int
    max_batch_size: int
    min_atomic_bsz: int
    max_atomic_bsz: int

    def goodput(self, nodes, replicas, atomic_bsz, accum_steps) -> np.ndarray:
        """Samples/s times efficiency of each configuration (arrays broadcast)."""
        replicas, atomic_bsz, accum_steps = np.asarray(replicas), np.asarray(atomic_bsz), np.asarray(accum_steps)
        batch = replicas * atomic_bsz * (accum_steps + 1)
        throughput = batch / step_time(self.perf, nodes, replicas, atomic_bsz, accum_steps)
        scale = batch / self.init_batch_size
        return throughput * gain(self.grad_sqr, self.grad_var, scale) / scale

    def optimize_arrays(self, nodes: np.ndarray, replicas: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Best (goodput, atomic batch, accumulation steps) per configuration (module docstring), as arrays."""
        nodes = np.asarray(nodes, dtype=float).ravel()
        replicas = np.asarray(replicas, dtype=float).ravel()
        low = np.maximum(self.init_batch_size, self.min_atomic_bsz * replicas)
        batch = np.geomspace(low, self.max_batch_size, CANDIDATES)  # (50, configurations)
        local = batch / replicas
        accum = np.ceil(local / self.max_atomic_bsz - EPS) - 1
        alone = (replicas == 1) & (local > self.init_batch_size + EPS)
        accum = np.where(alone, np.maximum(accum, 1), accum).astype(int)
        atomic = np.ceil(local / (accum + 1) - EPS).astype(int)
        values = self.goodput(nodes, replicas, atomic, accum)
        values = np.where((self.min_atomic_bsz <= atomic) & (atomic <= self.max_atomic_bsz), values, 0.0)
        best = np.argmax(values, axis=0)
        cols = np.arange(values.shape[1])
        return values[best, cols], atomic[best, cols], accum[best, cols]

    def optimize(self, nodes: int, replicas: int) -> BatchChoice:
        """The best batch of one configuration."""
        value, atomic, accum = self.optimize_arrays(np.array([nodes]), np.array([replicas]))
        return BatchChoice(float(value[0]), int(atomic[0]), int(accum[0]))

    def speedups(self, max_nodes: int, max_replicas: int, base: tuple[int, int] = (1, 1)) -> np.ndarray:
        """``table[n, r]``: best goodput on ``n`` nodes and ``r`` GPUs over the best on ``base`` (nodes, GPUs);
        0 where ``n`` is 0 or exceeds ``r`` (no such allocation)."""
        table = np.zeros((max_nodes + 1, max_replicas + 1))
        n, r = np.meshgrid(np.arange(1, max_nodes + 1), np.arange(1, max_replicas + 1), indexing="ij")
        valid = n <= r
        values, _, _ = self.optimize_arrays(np.append(n[valid], base[0]), np.append(r[valid], base[1]))
        table[1:, 1:][valid] = values[:-1] / values[-1]
        return table
