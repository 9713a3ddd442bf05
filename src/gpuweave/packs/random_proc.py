"""RANDOM-PROC, heuristic H2 of the paper (Section 5), with its -1 and -9 variants.

Problem: k-in-p-CoSchedule (no guarantee; a baseline).

Algorithm: draw ``sigma(i) ~ U{1..p}`` for every task, build packs with MAKE-PACK(n, p, k, sigma)
(Algorithm 2), then let Algorithm 1 re-assign the processors inside every pack (it overrides the random
``sigma``).

* ``random-proc-1``: one run; ``random-proc-9``: 9 independent runs, keep the minimum cost (R7). The run
  count comes from ``data/paper_numbers.toml``. Randomness: the seeded generator passed in (R6).

Complexity: ``O(n log n + n u + u p log k)`` per run with ``u`` packs.
"""

from __future__ import annotations

import numpy as np

from gpuweave.packs.data import paper_numbers
from gpuweave.packs.makepack import make_pack
from gpuweave.packs.model import Profile
from gpuweave.packs.onepack import reassign
from gpuweave.packs.registry import Solution, register_algorithm
from gpuweave.packs.repeat import best_of_runs


def random_proc_run(
    rows: list[list[float]], n: int, p: int, k: int, rng: np.random.Generator
) -> tuple[list[list[int]], list[int], float]:
    sigma = rng.integers(1, p + 1, size=n).tolist()
    packs = make_pack(rows, sigma, p, k)
    cost = reassign(rows, packs, sigma, p)
    return packs, sigma, cost


def best_of(profile: Profile, k: int, rng: np.random.Generator, runs: int) -> Solution:
    return best_of_runs(random_proc_run, profile, k, rng, runs)


@register_algorithm(
    "random-proc-1", summary="random sigma ~ U{1..p}, MAKE-PACK, Algorithm 1 inside (one run)", randomized=True
)
def random_proc_1(profile: Profile, k: int, rng: np.random.Generator) -> Solution:
    return best_of(profile, k, rng, 1)


@register_algorithm("random-proc-9", summary="Random-Proc, best of 9 runs", randomized=True)
def random_proc_9(profile: Profile, k: int, rng: np.random.Generator) -> Solution:
    return best_of(profile, k, rng, int(paper_numbers()["heuristics"]["runs_multi"]))
