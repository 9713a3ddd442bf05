"""The k-in-p-CoSchedule model: profiles, packs and co-schedules (paper Section 3, spec Section 1).

* A :class:`Profile` holds ``t[i, j-1] = t_{i,j}``, the time of task ``i`` on ``j`` processors,
  ``1 <= j <= p``, with the paper's assumptions (1) non-increasing time and (2) non-decreasing work
  ``j * t_{i,j}``. :func:`repair` enforces both, left to right, exactly as the spec's ``enforce``.
* A :class:`Pack` is a set of tasks with their processor counts ``sigma`` that start together; its cost is
  ``max_i t_{i,sigma(i)}``.
* A :class:`PackSchedule` is the packs in execution order; each pack starts when the previous one ends,
  and the co-schedule cost is the sum of the pack costs. :meth:`PackSchedule.validate` checks every rule.

Pack order does not change the cost; :func:`build_schedule` orders the packs by increasing cost, larger
pack first on ties (spec R14), which is the order the relative response time assumes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from gpuweave.checks import DURATION
from gpuweave.errors import InputError
from gpuweave.limits import check_limit

REL_TOL = 1e-9


@dataclass(frozen=True, slots=True)
class Profile:
    """Execution-time profile of ``n`` tasks on ``1..p`` processors; ``times`` has shape ``(n, p)``.

    ``repaired`` names the tasks whose raw times were changed by :func:`repair` (empty when the input
    already satisfied Eq. (1) and (2)). ``commands`` optionally holds, per task, the command line the real
    runner starts (see :mod:`gpuweave.packs.runner`); empty when the profile has none. ``rows`` is
    ``times`` as nested Python lists, built once, for the algorithms' scalar loops. Treat it as read-only.
    """

    times: np.ndarray
    names: tuple[str, ...]
    repaired: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    rows: list[list[float]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        t = np.asarray(self.times, dtype=float)
        if t.ndim != 2 or t.shape[0] < 1 or t.shape[1] < 1:
            raise InputError(f"a profile needs at least one task and one processor column, got shape {t.shape}")
        if len(self.names) != t.shape[0]:
            raise InputError(f"{len(self.names)} task names for {t.shape[0]} profile rows")
        if not np.all(np.isfinite(t)) or np.any(t <= 0) or np.any(t > DURATION.hi):
            raise InputError(f"profile times must be positive finite seconds, at most {DURATION.hi:g}")
        check_limit("packs_tasks", t.shape[0], "tasks in the profile", field="task")
        check_limit("packs_procs", t.shape[1], "processors of the profile", field="procs")
        if self.commands and len(self.commands) != t.shape[0]:
            raise InputError(f"{len(self.commands)} commands for {t.shape[0]} profile rows")
        t.setflags(write=False)
        object.__setattr__(self, "times", t)
        # Python lists of the same times: the algorithms' hot loops index them (faster than numpy scalars).
        object.__setattr__(self, "rows", t.tolist())

    @property
    def n(self) -> int:
        return int(self.times.shape[0])

    @property
    def p(self) -> int:
        return int(self.times.shape[1])

    def t(self, i: int, j: int) -> float:
        """``t_{i,j}``: time of task ``i`` (0-based) on ``j`` processors (1-based), ``+inf`` for ``j = 0``."""
        return math.inf if j == 0 else float(self.times[i, j - 1])

    def baseline_cost(self) -> float:
        """``C_1 = sum_i t_{i,p}``: every task alone on all ``p`` processors (the paper's 1-pack schedule, R9)."""
        return float(self.times[:, -1].sum())

    @classmethod
    def from_raw(
        cls,
        times: Sequence[Sequence[float]] | np.ndarray,
        names: Sequence[str] | None = None,
        commands: Sequence[str] = (),
    ) -> "Profile":
        """Build a profile from raw times, repairing Eq. (1)/(2) violations and recording the tasks changed."""
        raw = np.asarray(times, dtype=float)
        if raw.ndim != 2:
            raise InputError(f"profile times must be a table (tasks x processors), got shape {raw.shape}")
        names = tuple(names) if names is not None else tuple(f"T{i + 1}" for i in range(raw.shape[0]))
        if not np.all(np.isfinite(raw)) or np.any(raw <= 0):
            raise InputError("profile times must be finite and positive")
        fixed = repair(raw)
        changed = np.any(~np.isclose(fixed, raw, rtol=REL_TOL, atol=0.0), axis=1)
        return cls(fixed, names, tuple(n for n, c in zip(names, changed) if c), tuple(commands))


def repair(raw: np.ndarray) -> np.ndarray:
    """Enforce Eq. (1) ``t_{j+1} <= t_j`` and Eq. (2) ``j t_j <= (j+1) t_{j+1}``, left to right (spec 4.1).

    ``out[j] = min(out[j-1], max(raw[j], out[j-1] * j / (j+1)))`` (0-based ``j`` counts processors
    ``j+1``). A time that rises after a minimum is flattened to the minimum (the paper's rule for real
    profiles); a super-linear drop is raised to the constant-work bound. ``O(n p)``.
    """
    raw = np.asarray(raw, dtype=float)
    out = raw.copy()
    for j in range(1, raw.shape[1]):
        prev = out[:, j - 1]
        out[:, j] = np.minimum(prev, np.maximum(raw[:, j], prev * j / (j + 1)))
    return out


def satisfies_assumptions(times: np.ndarray, rtol: float = REL_TOL) -> bool:
    """True when Eq. (1) and Eq. (2) hold (within ``rtol``)."""
    t = np.asarray(times, dtype=float)
    j = np.arange(1, t.shape[1] + 1, dtype=float)
    work = t * j
    dec = np.all(t[:, 1:] <= t[:, :-1] * (1 + rtol))
    inc = np.all(work[:, :-1] <= work[:, 1:] * (1 + rtol))
    return bool(dec and inc)


@dataclass(frozen=True, slots=True)
class Pack:
    """Tasks (0-based indices) that start together at ``start``, task ``tasks[r]`` on ``procs[r]`` processors."""

    tasks: tuple[int, ...]
    procs: tuple[int, ...]
    times: tuple[float, ...]
    start: float

    @property
    def cost(self) -> float:
        return max(self.times)

    @property
    def end(self) -> float:
        return self.start + self.cost

    @property
    def used(self) -> int:
        return sum(self.procs)


@dataclass(frozen=True, slots=True)
class PackSchedule:
    """A co-schedule: packs in execution order. ``info`` carries algorithm statistics (iterations, runtime)."""

    packs: tuple[Pack, ...]
    n: int
    p: int
    algo: str = ""
    info: dict[str, float] = field(default_factory=dict)

    @property
    def cost(self) -> float:
        return float(sum(pk.cost for pk in self.packs))

    def sigma(self) -> np.ndarray:
        """Processor count of every task, indexed by task."""
        s = np.zeros(self.n, dtype=np.int64)
        for pk in self.packs:
            for i, j in zip(pk.tasks, pk.procs):
                s[i] = j
        return s

    def task_intervals(self) -> dict[int, tuple[float, float]]:
        """Task -> (start, end)."""
        return {i: (pk.start, pk.start + t) for pk in self.packs for i, t in zip(pk.tasks, pk.times)}

    def validate(self, profile: Profile, k: int) -> None:
        """Raise ``ValueError`` naming the first broken rule: every task exactly once, ``|B| <= k``,
        ``sum sigma <= p``, ``1 <= sigma <= p``, times from the profile, packs back to back from 0."""
        if self.n != profile.n or self.p != profile.p:
            raise ValueError(f"schedule is for n={self.n}, p={self.p}; profile has n={profile.n}, p={profile.p}")
        seen: list[int] = []
        clock = 0.0
        for b, pk in enumerate(self.packs):
            if not pk.tasks:
                raise ValueError(f"pack {b} is empty")
            if not (len(pk.tasks) == len(pk.procs) == len(pk.times)):
                raise ValueError(f"pack {b}: tasks, procs and times differ in length")
            if len(pk.tasks) > k:
                raise ValueError(f"pack {b} has {len(pk.tasks)} tasks > k={k}")
            if pk.used > self.p:
                raise ValueError(f"pack {b} uses {pk.used} processors > p={self.p}")
            for i, j, t in zip(pk.tasks, pk.procs, pk.times):
                if not 1 <= j <= self.p:
                    raise ValueError(f"pack {b}: task {i} has {j} processors, outside 1..{self.p}")
                if not math.isclose(t, profile.t(i, j), rel_tol=REL_TOL):
                    raise ValueError(f"pack {b}: task {i} time {t} != profile t({i},{j}) = {profile.t(i, j)}")
            if not math.isclose(pk.start, clock, rel_tol=REL_TOL, abs_tol=1e-12):
                raise ValueError(f"pack {b} starts at {pk.start}, expected {clock} (end of the previous pack)")
            clock = pk.start + pk.cost
            seen.extend(pk.tasks)
        if sorted(seen) != list(range(self.n)):
            raise ValueError("every task must appear in exactly one pack")


def pack_order_key(cost: float, size: int) -> tuple[float, int]:
    """R14: packs by increasing cost; on equal cost the larger pack first."""
    return (cost, -size)


def build_schedule(
    profile: Profile,
    packs: Sequence[Sequence[int]],
    sigma: Sequence[int] | np.ndarray,
    *,
    algo: str = "",
    info: dict[str, float] | None = None,
) -> PackSchedule:
    """Turn packs (lists of task indices) and a processor assignment into a timed :class:`PackSchedule`.

    Packs are ordered by R14 (increasing cost, larger first on ties, then creation order) and placed back
    to back from time 0. Tasks keep their order inside a pack.
    """
    t = profile.times
    raw = []
    for order, members in enumerate(packs):
        members = tuple(int(i) for i in members)
        procs = tuple(int(sigma[i]) for i in members)
        times = tuple(float(t[i, j - 1]) for i, j in zip(members, procs))
        raw.append((pack_order_key(max(times), len(members)), order, members, procs, times))
    raw.sort(key=lambda r: (r[0], r[1]))
    out = []
    clock = 0.0
    for _, _, members, procs, times in raw:
        out.append(Pack(members, procs, times, clock))
        clock += max(times)
    return PackSchedule(tuple(out), profile.n, profile.p, algo, dict(info or {}))
