"""The paper's baseline "1-pack schedule" (Section 6.2, spec R9): every task alone on all ``p`` processors.

Problem: none; it is the reference of the relative metrics. It is also the optimum for ``k = 1``
(Theorem 1: ``OPT_1 = sum_i t_{i,p}``).

Complexity: ``O(n)``.
"""

from __future__ import annotations

import numpy as np

from gpuweave.packs.model import Profile
from gpuweave.packs.registry import Solution, register_algorithm


@register_algorithm("one-by-one", summary="baseline: each task alone on all p processors (optimal for k=1)")
def one_by_one(profile: Profile, k: int, rng: np.random.Generator) -> Solution:
    return Solution([[i] for i in range(profile.n)], np.full(profile.n, profile.p, dtype=np.int64))
