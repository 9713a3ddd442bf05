"""Registry of co-scheduling algorithms, by name.

An algorithm is ``fn(profile, k, rng) -> Solution``: packs as lists of task indices and the processor
assignment ``sigma`` (plus statistics). Register it with :func:`register_algorithm`; :func:`solve` runs it,
times it and returns a validated-by-construction :class:`~gpuweave.packs.model.PackSchedule`.
The algorithm modules are imported by :func:`_load_all` (listed in :data:`ALGORITHM_MODULES`).
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from gpuweave.errors import InputError
from gpuweave.packs.model import PackSchedule, Profile, build_schedule

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


AlgoFn = Callable[[Profile, int, np.random.Generator], Solution]


@dataclass(frozen=True, slots=True)
class Algorithm:
    name: str
    fn: AlgoFn
    summary: str
    exact: bool = False
    randomized: bool = False
    max_n: int | None = None
    only_k: int | None = None

    def check(self, profile: Profile, k: int) -> None:
        """Raise :class:`InputError` when this algorithm cannot handle the instance."""
        if self.max_n is not None and profile.n > self.max_n:
            raise InputError(f"--algo {self.name} handles at most {self.max_n} tasks, the profile has {profile.n}")
        if self.only_k is not None and k != self.only_k:
            raise InputError(f"--algo {self.name} solves only k = {self.only_k}, got k = {k}")


_REGISTRY: dict[str, Algorithm] = {}


def register_algorithm(
    name: str,
    *,
    summary: str,
    exact: bool = False,
    randomized: bool = False,
    max_n: int | None = None,
    only_k: int | None = None,
) -> Callable[[AlgoFn], AlgoFn]:
    """Decorator: ``@register_algorithm("pack-by-pack-1", summary=...)``."""

    def deco(fn: AlgoFn) -> AlgoFn:
        if name in _REGISTRY and _REGISTRY[name].fn is not fn:
            raise RuntimeError(f"packs algorithm {name!r} registered twice")
        _REGISTRY[name] = Algorithm(name, fn, summary, exact, randomized, max_n, only_k)
        return fn

    return deco


def _load_all() -> None:
    for module in ALGORITHM_MODULES:
        importlib.import_module(module)


def algorithms() -> dict[str, Algorithm]:
    _load_all()
    return dict(sorted(_REGISTRY.items()))


def algorithm_names() -> list[str]:
    return list(algorithms())


def get_algorithm(name: str) -> Algorithm:
    algos = algorithms()
    if name not in algos:
        raise InputError(f"unknown packs algorithm '{name}' (known: {', '.join(algos)})")
    return algos[name]


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
