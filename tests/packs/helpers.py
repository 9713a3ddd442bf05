"""Shared helpers of the packs tests: random valid profiles (spec 7 A1) and brute-force references."""

from __future__ import annotations

import numpy as np

from gpuweave.packs.model import Profile


def random_times(rng: np.random.Generator, n: int, p: int, plateau_prob: float = 0.25) -> np.ndarray:
    """``t_{i,1} ~ U(1,100)``, ``t_{i,j+1} ~ U(t_{i,j} j/(j+1), t_{i,j})``, with random plateaus (spec A1)."""
    t = np.empty((n, p))
    for i in range(n):
        t[i, 0] = rng.uniform(1, 100)
        for j in range(1, p):
            if rng.random() < plateau_prob:
                t[i, j] = t[i, j - 1]
            else:
                t[i, j] = rng.uniform(t[i, j - 1] * j / (j + 1), t[i, j - 1])
    return t


def random_profile(rng: np.random.Generator, n: int, p: int, plateau_prob: float = 0.25) -> Profile:
    return Profile(random_times(rng, n, p, plateau_prob), tuple(f"T{i + 1}" for i in range(n)))


def compositions(k: int, total: int):
    """All ``(s_1..s_k)`` with ``s_i >= 1`` and ``sum <= total``."""
    if k == 0:
        yield ()
        return
    for s in range(1, total - (k - 1) + 1):
        for rest in compositions(k - 1, total - s):
            yield (s, *rest)


def brute_one_pack(times: np.ndarray, tasks: list[int], p: int) -> float:
    return min(max(times[i, s - 1] for i, s in zip(tasks, sig)) for sig in compositions(len(tasks), p))


HAND = [[12, 6, 4, 3], [8, 5, 4, 4], [3, 2, 2, 2]]


def hand_profile() -> Profile:
    """The hand example of spec 7 C (p = 4)."""
    return Profile.from_raw(HAND)
