"""Best of R independent runs of a randomized pack heuristic (the paper's "-9" variants, Sec. 5).

``run(rows, n, p, k, rng) -> (packs, sigma, cost)`` is one seeded run; the lowest cost wins, the first
on ties, so the result depends only on the generator's stream. O(R x one run).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from gpuweave.packs.model import Profile
from gpuweave.packs.registry import Solution

Run = Callable[[list[list[float]], int, int, int, np.random.Generator], tuple[list[list[int]], list[int], float]]


def best_of_runs(run: Run, profile: Profile, k: int, rng: np.random.Generator, runs: int) -> Solution:
    if runs < 1:
        raise ValueError("runs must be >= 1")
    best: tuple[list[list[int]], list[int], float] | None = None
    for _ in range(runs):
        packs, sigma, cost = run(profile.rows, profile.n, profile.p, k, rng)
        if best is None or cost < best[2]:
            best = (packs, sigma, cost)
    assert best is not None  # runs >= 1
    return Solution(best[0], np.asarray(best[1], dtype=np.int64), {"runs": float(runs)})
