"""Shared helpers of the MIG tests."""

from __future__ import annotations

import dataclasses
import random

from gpuweave.hardware.catalog import get_mig_geometry
from gpuweave.mig.problem import MigProblem


def random_problem(
    rng: random.Random, gpu: str = "A100", n: int | None = None, gpus: int = 1, inf_prob: float = 0.0
) -> MigProblem:
    """A small random batch with non-monotone times and occasional infeasible sizes."""
    geom = get_mig_geometry(gpu)
    sizes = sorted(geom.sizes)
    n = n if n is not None else rng.randint(1, 9)
    rows = []
    for _ in range(n):
        base = rng.uniform(0.05, 30.0)
        row = [base * (s ** -rng.uniform(0.0, 1.2)) * rng.uniform(0.8, 1.25) for s in sizes]
        if inf_prob and rng.random() < inf_prob:
            row[rng.randrange(len(row) - 1)] = float("inf")
        rows.append(tuple(row))
    return MigProblem(tuple(f"T{i}" for i in range(n)), tuple(rows), geom, gpus, gpu)


def zero_cost(gpu: str):
    """The geometry with all create/destroy times 0 (for the theory bounds of spec §3)."""
    g = get_mig_geometry(gpu)
    return dataclasses.replace(g, create_s={s: 0.0 for s in g.sizes}, destroy_s={s: 0.0 for s in g.sizes})
