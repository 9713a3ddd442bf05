"""RANDOM-PACK, heuristic H1 of the paper (Section 5), with its -1 and -9 variants.

Problem: k-in-p-CoSchedule (no guarantee; a baseline).

Algorithm: repeatedly draw a pack size ``j ~ U{1..k}`` and a uniform random sample of ``min(j, remaining)``
tasks without replacement (spec R5), until no task is left; then Algorithm 1 assigns the processors inside
every pack. Implementation: one uniform permutation cut into consecutive chunks of the drawn sizes, which
has exactly the distribution of successive samples without replacement, with two vectorised draws.

* ``random-pack-1``: one run; ``random-pack-9``: 9 independent runs, keep the minimum cost (R7). The run
  count comes from ``data/paper_numbers.toml``. Randomness: the seeded generator passed in (R6).

Complexity: ``O(n + u p log k)`` per run with ``u`` packs.
"""

from __future__ import annotations

import numpy as np

from gpuweave.packs.data import paper_numbers
from gpuweave.packs.model import Profile
from gpuweave.packs.onepack import reassign
from gpuweave.packs.registry import Solution, register_algorithm
from gpuweave.packs.repeat import best_of_runs


def random_pack_run(
    rows: list[list[float]], n: int, p: int, k: int, rng: np.random.Generator
) -> tuple[list[list[int]], list[int], float]:
    perm = rng.permutation(n).tolist()
    sizes = rng.integers(1, k + 1, size=n).tolist()
    packs: list[list[int]] = []
    pos = 0
    for j in sizes:
        if pos >= n:
            break
        packs.append(perm[pos : pos + j])
        pos += j
    sigma = [1] * n
    cost = reassign(rows, packs, sigma, p)
    return packs, sigma, cost


def best_of(profile: Profile, k: int, rng: np.random.Generator, runs: int) -> Solution:
    return best_of_runs(random_pack_run, profile, k, rng, runs)


@register_algorithm(
    "random-pack-1", summary="random packs of U{1..k} tasks, Algorithm 1 inside (one run)", randomized=True
)
def random_pack_1(profile: Profile, k: int, rng: np.random.Generator) -> Solution:
    return best_of(profile, k, rng, 1)


@register_algorithm("random-pack-9", summary="Random-Pack, best of 9 runs", randomized=True)
def random_pack_9(profile: Profile, k: int, rng: np.random.Generator) -> Solution:
    return best_of(profile, k, rng, int(paper_numbers()["heuristics"]["runs_multi"]))
