"""Registry of co-scheduling algorithms, by name.

The contract is :class:`PacksAlgorithm`: ``algorithm(profile, k, rng) -> Solution``, the packs as lists of task
indices and the processor assignment ``sigma`` (plus statistics). Each algorithm module registers its function
with :func:`register_algorithm` on the shared :class:`~gpuweave.registry.Registry` :data:`ALGORITHMS`;
:func:`solve` runs it, times it and returns a validated-by-construction :class:`~gpuweave.packs.model.PackSchedule`.
The algorithm modules (:data:`ALGORITHM_MODULES`) are imported on the first lookup.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from gpuweave.errors import InputError
from gpuweave.limits import check_limit
from gpuweave.packs.model import PackSchedule, Profile, build_schedule
from gpuweave.registry import Entry, Registry

ALGORITHM_MODULES = [
    "gpuweave.packs.exact_dp",
    "gpuweave.packs.exact_enum",
    "gpuweave.packs.exact_ilp",
    "gpuweave.packs.matching",
    "gpuweave.packs.pack_approx",
    "gpuweave.packs.pack_by_pack",
    "gpuweave.packs.random_pack",
    "gpuweave.packs.random_proc",
    "gpuweave.packs.baseline",
]


@dataclass(slots=True)
class Solution:
    """What an algorithm returns: packs (task indices, in creation order) and ``sigma`` (1-based counts)."""

    packs: list[list[int]]
    sigma: np.ndarray
    info: dict[str, float] = field(default_factory=dict)


class PacksAlgorithm(Protocol):
    """What every co-scheduling algorithm is: the profile, the pack size bound ``k`` and a seeded RNG in,
    a :class:`Solution` out."""

    def __call__(self, profile: Profile, k: int, rng: np.random.Generator) -> Solution: ...


ALGORITHMS: Registry[PacksAlgorithm] = Registry("packs algorithm", ALGORITHM_MODULES)


@dataclass(frozen=True, slots=True)
class Algorithm:
    """A registered algorithm as the callers see it: the function and what it can handle."""

    name: str
    fn: PacksAlgorithm
    summary: str
    exact: bool = False
    randomized: bool = False
    max_n: int | None = None
    only_k: int | None = None
    size_limit: str | None = None

    @classmethod
    def of(cls, entry: Entry[PacksAlgorithm]) -> Algorithm:
        m = entry.meta
        return cls(
            entry.name, entry.impl, entry.help, m["exact"], m["randomized"], m["max_n"], m["only_k"], m["size_limit"]
        )

    def check(self, profile: Profile, k: int) -> None:
        """Raise :class:`InputError` when this algorithm cannot handle the instance (or it is over its limit)."""
        if self.max_n is not None and profile.n > self.max_n:
            raise InputError(f"--algo {self.name} handles at most {self.max_n} tasks, the profile has {profile.n}")
        if self.size_limit is not None:
            check_limit(self.size_limit, profile.n, f"tasks for --algo {self.name}", field="algo")
        if self.only_k is not None and k != self.only_k:
            raise InputError(f"--algo {self.name} solves only k = {self.only_k}, got k = {k}")


def register_algorithm(
    name: str,
    *,
    summary: str,
    exact: bool = False,
    randomized: bool = False,
    max_n: int | None = None,
    only_k: int | None = None,
    size_limit: str | None = None,
) -> Callable[[PacksAlgorithm], PacksAlgorithm]:
    """Decorator: ``@register_algorithm("pack-by-pack-1", summary=...)``. ``max_n``: the most tasks the algorithm
    can handle at all; ``size_limit``: the :mod:`gpuweave.limits` limit on its tasks (one a user may raise)."""
    return ALGORITHMS.register(
        name,
        help=summary,
        options=(),
        exact=exact,
        randomized=randomized,
        max_n=max_n,
        only_k=only_k,
        size_limit=size_limit,
    )


def algorithms() -> dict[str, Algorithm]:
    return {name: Algorithm.of(entry) for name, entry in ALGORITHMS.entries().items()}


def algorithm_names() -> list[str]:
    return ALGORITHMS.names()


def get_algorithm(name: str) -> Algorithm:
    return Algorithm.of(ALGORITHMS.get(name))


def check_k(profile: Profile, k: int) -> None:
    """``1 <= k <= p`` (k-in-p-CoSchedule requires ``k <= p``)."""
    if k < 1:
        raise InputError(f"--k must be at least 1, got {k}")
    if k > profile.p:
        raise InputError(f"--k {k} is larger than the {profile.p} processors (k-in-p needs k <= p)")


def solve(name: str, profile: Profile, k: int, *, seed: int = 0) -> PackSchedule:
    """Run algorithm ``name`` on ``profile`` with packs of at most ``k`` tasks; ``info['runtime_ms']`` is its time."""
    algo = get_algorithm(name)
    check_k(profile, k)
    algo.check(profile, k)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    sol = algo.fn(profile, k, rng)
    elapsed = (time.perf_counter() - t0) * 1e3
    info = dict(sol.info)
    info["runtime_ms"] = elapsed
    return build_schedule(profile, sol.packs, sol.sigma, algo=name, info=info)
