"""Synthetic moldable tasks of the FAR paper (Sec. 6.3; spec §4.4).

Problem. Draw n tasks whose times follow realistic MIG scaling: a fraction p_s of the tasks scale
well up to s slices ("group s"); in groups s >= 2 a fraction p_sup is memory-bound (super-linear).
Per task, t(1) ~ U(t_min, t_max), then for each one-slice increment k -> k+1 (k = 1..max-1):
t(k+1) = (k + r)/(k + 1) * t(k), with r from a clipped normal chosen by the increment type:

* k+1 > s (beyond the task's limit): sub-linear;
* memory-bound and k+1 = 4 on a GPU with sizes 3 and 4 (same memory bandwidth on A100): sub-linear,
  the task stays memory-bound [C];
* memory-bound: super-linear, then with probability ``transition`` it becomes compute-bound;
* otherwise near-linear (compute-bound, or after the transition: spec §7.10, switchable).

Group counts: n_s = floor(n p_s), then one more to the group with the largest remainder (ties ->
smallest s) until they sum to n. Memory-bound count: ceil(p_sup n_s) (paper) or floor (authors'
code). Times of sizes the GPU lacks are generated and dropped. The list is shuffled (FIFO order of
the baselines). Constants: ``data/generator.toml`` (presets ``paper``, default, and ``authors_code``).
r <= 1 keeps times non-increasing. Complexity O(n * max size).
"""

from __future__ import annotations

import math
import random
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from gpuweave.errors import InputError
from gpuweave.hardware.catalog import get_mig_geometry
from gpuweave.mig.problem import MigProblem


@dataclass(frozen=True, slots=True)
class Clipped:
    mu: float
    sigma: float
    low: float
    high: float

    def draw(self, rng: random.Random) -> float:
        x = rng.gauss(self.mu, self.sigma)
        return self.low if x < self.low else self.high if x > self.high else x


@dataclass(frozen=True, slots=True)
class GeneratorPreset:
    name: str
    super_linear: Clipped
    near_linear: Clipped
    sub_linear: Clipped
    transition: float
    memory_count: str  # "ceil" | "floor"
    after_transition: str  # "near" | "sub"


@cache
def _data() -> dict:
    return tomllib.loads(resources.files("gpuweave.mig").joinpath("data").joinpath("generator.toml").read_text())


def preset(name: str = "paper") -> GeneratorPreset:
    presets = _data()["presets"]
    if name not in presets:
        raise InputError(f"unknown generator preset {name!r}; known: {', '.join(presets)}")
    p = presets[name]
    return GeneratorPreset(
        name,
        Clipped(**p["super_linear"]),
        Clipped(**p["near_linear"]),
        Clipped(**p["sub_linear"]),
        float(p["transition"]),
        p["memory_count"],
        p["after_transition"],
    )


def scaling(gpu: str, name: str) -> dict[int, float]:
    """Fractions p_s (summing to 1) of a named task configuration (``poor``, ``mixed``, ``good``)."""
    key = "A30" if get_mig_geometry(gpu).num_slices == 4 else "A100"
    table = _data()["scalings"][key]
    if name.lower() not in table:
        known = ", ".join(k for k in table if k != "source")
        raise InputError(f"unknown scaling {name!r} for {key}; known: {known}")
    return {int(s): v / 100.0 for s, v in table[name.lower()].items()}


def time_range(name: str) -> tuple[float, float]:
    """``wide`` = [1, 100] s, ``narrow`` = [90, 100] s."""
    table = _data()["times"]
    if name.lower() not in table or name.lower() == "source":
        raise InputError(f"unknown time range {name!r}; known: wide, narrow")
    lo, hi = table[name.lower()]
    return float(lo), float(hi)


def group_counts(n: int, fractions: dict[int, float]) -> dict[int, int]:
    """n_s = floor(n p_s), then +1 to the largest remainder n p_s - n_s (ties -> smallest s)."""
    sizes = sorted(fractions)
    counts = {s: math.floor(n * fractions[s] + 1e-9) for s in sizes}
    while sum(counts.values()) < n:
        j = max(sizes, key=lambda s: (n * fractions[s] - counts[s], -s))
        counts[j] += 1
    return counts


def generate(
    n: int,
    fractions: dict[int, float],
    *,
    gpu: str = "A100",
    p_sup: float = 0.0,
    times: tuple[float, float] = (1.0, 100.0),
    seed: int | random.Random = 0,
    preset_name: str = "paper",
    after_transition: str | None = None,
) -> MigProblem:
    """A batch of n synthetic tasks (see module docstring)."""
    if n < 1:
        raise InputError(f"n must be >= 1, got {n}", field="n")
    if not 0.0 <= p_sup <= 1.0:  # also rejects NaN
        raise InputError(f"p_sup is a fraction of tasks: expected 0 <= p_sup <= 1, got {p_sup}", field="p_sup")
    if abs(sum(fractions.values()) - 1.0) > 1e-6:
        raise InputError(f"fractions must sum to 1, got {sum(fractions.values())}")
    geometry = get_mig_geometry(gpu)
    sizes = tuple(sorted(geometry.sizes))
    bad = [s for s in fractions if s not in sizes]
    if bad:
        raise InputError(f"{geometry.name} has no instance size {bad[0]}")
    pre = preset(preset_name)
    after = after_transition or pre.after_transition
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    top = max(sizes)
    memory_rule = 3 in sizes and 4 in sizes
    t_min, t_max = times
    rows: list[tuple[float, ...]] = []
    for s, count in group_counts(n, fractions).items():
        n_mem = 0
        if s >= 2:
            x = p_sup * count
            n_mem = math.ceil(x - 1e-9) if pre.memory_count == "ceil" else math.floor(x + 1e-9)
        for idx in range(count):
            memory = idx < n_mem
            transitioned = False
            t = rng.uniform(t_min, t_max)
            by_size = {1: t}
            for k in range(1, top):
                if k + 1 > s:
                    dist = pre.sub_linear
                elif memory and memory_rule and k + 1 == 4:
                    dist = pre.sub_linear
                elif memory:
                    dist = pre.super_linear
                    if rng.random() < pre.transition:
                        memory = False
                        transitioned = True
                elif transitioned and after == "sub":
                    dist = pre.sub_linear
                else:
                    dist = pre.near_linear
                r = dist.draw(rng)
                t = (k + r) / (k + 1) * t
                by_size[k + 1] = t
            rows.append(tuple(by_size[sz] for sz in sizes))
    rng.shuffle(rows)
    names = tuple(f"T{i}" for i in range(n))
    return MigProblem(names, tuple(rows), geometry, 1, gpu)


def workload(
    gpu: str,
    scaling_name: str,
    times_name: str,
    n: int,
    *,
    p_sup: float = 0.0,
    seed: int | random.Random = 0,
    preset_name: str = "paper",
) -> MigProblem:
    """A named workload, e.g. ``workload("A100", "mixed", "wide", 15)``."""
    return generate(
        n,
        scaling(gpu, scaling_name),
        gpu=gpu,
        p_sup=p_sup,
        times=time_range(times_name),
        seed=seed,
        preset_name=preset_name,
    )
