"""Pollux's allocation search: a genetic algorithm over (jobs x nodes) replica counts, two objectives.

Problem (Qiao et al., OSDI'21 sec. 4.2; its artifact's ``simulator/pollux.py``, petuum/adaptdl branch
``osdi21-artifact``, searched there with pymoo 0.4's NSGA-II): choose, for each job, how many GPUs of each node it
holds. A solution is an integer array ``(jobs, nodes)``. Objectives, both minimised:

1. ``-mean``: the power mean (``p = -1``) over jobs of ``speedup x dominant share x nodes + 1e-3``, where a job
   whose row differs from its current one is charged its restart penalty ``max(age - restarts x 30, 0) /
   (age + 30)`` (a factor on its term);
2. ``-utility``: the GPUs' share of ideal speedup, ``sum over jobs (speedup / GPUs) x (GPUs / GPUs of the nodes in
   use)``.

Search (NSGA-II as pymoo 0.4.2 runs it, our implementation): the initial population is the given states (the last
round's Pareto front carried over, or today's allocation), repaired and without duplicates; each of 99 further
generations makes up to ``pop_size`` new unique offspring (binary tournaments by Pareto dominance, then larger
crowding distance, then a coin; Pollux's operators: single-point crossover over jobs with probability 0.9;
mutation that resets a job to its current row (0.1), zeroes a job's entries (0.1 of jobs, 0.1 each) and raises
entries on nodes with a free GPU; a repair that keeps one distributed job per node, at most ``max_replicas`` per job
on at most 16 nodes (nodes visited in random order), and each node's GPUs, jobs in order), and keeps the best
``pop_size`` of parents and offspring by non-dominated rank, then crowding distance (ties at random). The result
is the final population's first front.

Complexity: O(generations x pop_size x jobs x nodes) array work, plus O(pop_size^2) per generation for the
non-dominated sort of two objectives.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

import numpy as np

POWER = -1.0  # Pollux's power-mean exponent: more negative is fairer
RESTART_DELAY = 30.0  # s, the restart cost the penalty assumes
MAX_NODES = 16  # the most nodes one job may span
CROSSOVER_PROB = 0.9  # pymoo's default for a crossover
MAX_MATING_TRIES = 101  # pymoo's attempts to fill a generation with unique offspring


@dataclass(frozen=True, slots=True)
class AllocationProblem:
    """One round's inputs. ``speedups[j, n, r]``: job ``j``'s speedup on ``n`` nodes and ``r`` GPUs (0 at 0)."""

    speedups: np.ndarray  # (jobs, MAX_NODES + 1, max over jobs of max_replicas + 1)
    base: np.ndarray  # (jobs, nodes) int: today's allocation
    max_replicas: np.ndarray  # (jobs,) int
    restart_factor: np.ndarray  # (jobs,) the factor on a moved job's term
    node_gpus: np.ndarray  # (nodes,) int
    dominant_share: np.ndarray  # (jobs,) one replica's share of the cluster's GPUs

    @property
    def shape(self) -> tuple[int, int]:
        jobs, nodes = self.base.shape
        return jobs, nodes

    def job_speedups(self, states: np.ndarray) -> np.ndarray:
        """(pop, jobs) speedups of each solution's allocations."""
        nodes = np.minimum(np.count_nonzero(states, axis=2), self.speedups.shape[1] - 1)
        replicas = states.sum(axis=2)
        jobs = np.arange(states.shape[1])
        return self.speedups[jobs, nodes, replicas]

    def evaluate(self, states: np.ndarray) -> np.ndarray:
        """(pop, 2) objectives of solutions ``(pop, jobs, nodes)`` (module docstring)."""
        speedups = self.job_speedups(states)
        scaled = speedups * self.dominant_share * self.shape[1]
        moved = np.any(states != self.base, axis=2)
        scaled = scaled * np.where(moved, self.restart_factor, 1.0)
        mean = np.mean((scaled + 1e-3) ** POWER, axis=1) ** (1.0 / POWER)
        return np.column_stack([-mean, -self.utilities(states, speedups)])

    def utilities(self, states: np.ndarray, speedups: np.ndarray | None = None) -> np.ndarray:
        """(pop,) cluster utility of each solution: speedup per GPU weighted by each job's share of used nodes."""
        if speedups is None:
            speedups = self.job_speedups(states)
        replicas = states.sum(axis=2)
        total = (states.sum(axis=1) > 0) @ self.node_gpus
        with np.errstate(divide="ignore", invalid="ignore"):
            shares = np.where(replicas > 0, replicas / total[:, None], 0.0)
            per_gpu = np.where(replicas > 0, speedups / replicas, 0.0)
        return np.sum(per_gpu * shares, axis=1)

    # ------------------------------------------------------------------ Pollux's operators
    def repair(self, states: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Feasible solutions (module docstring: one distributed job per node, per-job and per-node limits)."""
        states = states.copy()
        distributed = np.count_nonzero(states, axis=2) > 1
        later = np.cumsum((states > 0) & distributed[:, :, None], axis=1) > 1
        states[later] = 0  # past a node's first distributed job, as Pollux's cumulative mask reads
        order = np.argsort(rng.random(states.shape), axis=2)
        shuffled = np.take_along_axis(states, order, axis=2)
        shuffled = np.diff(np.minimum(np.cumsum(shuffled, axis=2), self.max_replicas[None, :, None]), axis=2, prepend=0)
        spans = np.diff(np.minimum(np.cumsum(shuffled > 0, axis=2), MAX_NODES), axis=2, prepend=0)
        shuffled[spans == 0] = 0
        states = np.take_along_axis(shuffled, np.argsort(order, axis=2), axis=2)
        return np.diff(np.minimum(np.cumsum(states, axis=1), self.node_gpus), axis=1, prepend=0)

    def mutate(self, states: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Pollux's three mutations (module docstring)."""
        pop, jobs, nodes = states.shape
        reset = rng.random((pop, jobs)) < 0.1
        states = np.where(reset[:, :, None], self.base, states)
        prob = np.where(rng.random((pop, jobs)) < 0.1, 0.1, 0.0)
        states[rng.random(states.shape) < prob[:, :, None]] = 0
        has_free = np.broadcast_to((self.node_gpus - states.sum(axis=1))[:, None, :] >= 1, states.shape)
        prob1 = has_free / np.maximum(has_free.sum(axis=1, keepdims=True), 1.0)
        holds = (states > 0) & has_free
        prob2 = holds / np.maximum(holds.sum(axis=1, keepdims=True), 1.0)
        raise_ = rng.random(states.shape) < prob1 + prob2 - prob1 * prob2
        raised = rng.integers(states, self.node_gpus[None, None, :] + 1)
        states[raise_] = raised[raise_]
        return states

    def crossover(self, parents: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Two children per pair ``parents (2, pairs, jobs, nodes)``: jobs before a random point swapped, for a
        pair with probability 0.9 (else the parents' copies)."""
        _, pairs, jobs, _ = parents.shape
        swap = (np.arange(jobs) < rng.integers(jobs, size=(pairs, 1)))[None, :, :, None]
        children = np.where(swap, parents[::-1], parents)
        keep = rng.random(pairs) >= CROSSOVER_PROB
        children[:, keep] = parents[:, keep]
        return children.reshape(-1, *parents.shape[2:])


# ---------------------------------------------------------------------- NSGA-II
def fronts(values: np.ndarray) -> list[np.ndarray]:
    """Non-dominated fronts of ``values (n, 2)``, minimised, best first: points in order of (f0, f1), each to the
    first front whose last point does not dominate it (the fronts' last f1 grow, so a binary search finds it)."""
    order = np.lexsort((values[:, 1], values[:, 0]))
    last0: list[float] = []
    last1: list[float] = []  # per front, its last point's objectives; last1 increases from front to front
    members: list[list[int]] = []
    for i in order.tolist():
        f0, f1 = float(values[i, 0]), float(values[i, 1])
        k = bisect_left(last1, f1)  # fronts before k end below f1: their last point dominates
        while k < len(last1) and last1[k] == f1 and last0[k] < f0:
            k += 1  # same f1, smaller f0: dominated by it as well (such fronts' last f0 grow)
        if k == len(members):
            members.append([])
            last0.append(f0)
            last1.append(f1)
        members[k].append(i)
        last0[k], last1[k] = f0, f1
    return [np.array(front, dtype=int) for front in members]


def crowding(values: np.ndarray) -> np.ndarray:
    """Crowding distance of one front's points (inf at the extremes, duplicates 0), as pymoo computes it."""
    n, m = values.shape
    if n <= 2:
        return np.full(n, np.inf)
    unique = ~_duplicates(values)
    kept = values[unique]
    order = np.argsort(kept, axis=0, kind="mergesort")
    ranked = kept[order, np.arange(m)]
    gaps = np.vstack([ranked, np.full(m, np.inf)]) - np.vstack([np.full(m, -np.inf), ranked])
    span = ranked.max(axis=0) - ranked.min(axis=0)
    span[span == 0] = np.nan
    with np.errstate(invalid="ignore"):
        before, after = gaps[:-1] / span, gaps[1:] / span
    before[np.isnan(before)] = 0.0
    after[np.isnan(after)] = 0.0
    back = np.argsort(order, axis=0)
    out = np.zeros(n)
    out[unique] = np.sum(before[back, np.arange(m)] + after[back, np.arange(m)], axis=1) / m
    return out


def _duplicates(rows: np.ndarray) -> np.ndarray:
    """True for each row equal to an earlier one (pymoo's tolerances, 1e-16 and 1e-24, are equality here)."""
    flat = np.ascontiguousarray(rows.reshape(len(rows), -1))
    seen: set[bytes] = set()
    out = np.zeros(len(flat), bool)
    for i, row in enumerate(flat):
        key = row.tobytes()
        out[i] = key in seen
        seen.add(key)
    return out


def _new_rows(candidates: np.ndarray, seen: set[bytes], most: int) -> np.ndarray:
    """The first ``most`` candidates not in ``seen`` nor equal to an earlier candidate; their keys join ``seen``."""
    flat = np.ascontiguousarray(candidates.reshape(len(candidates), -1))
    fresh: list[int] = []
    for i, row in enumerate(flat):
        if len(fresh) == most:
            break
        key = row.tobytes()
        if key not in seen:
            seen.add(key)
            fresh.append(i)
    return candidates[fresh]


def _keys(states: np.ndarray) -> set[bytes]:
    flat = np.ascontiguousarray(states.reshape(len(states), -1))
    return {row.tobytes() for row in flat}


@dataclass(slots=True)
class _Population:
    states: np.ndarray  # (pop, jobs, nodes)
    values: np.ndarray  # (pop, 2)
    rank: np.ndarray
    crowd: np.ndarray


def _survive(states: np.ndarray, values: np.ndarray, size: int, rng: np.random.Generator) -> _Population:
    """The best ``size`` by rank, then crowding (the last front cut by crowding, ties broken at random)."""
    chosen: list[int] = []
    rank, crowd = np.zeros(len(values), int), np.zeros(len(values))
    for k, front in enumerate(fronts(values)):
        if len(chosen) >= size:
            break
        distance = crowding(values[front])
        rank[front], crowd[front] = k, distance
        if len(chosen) + len(front) > size:
            perm = rng.permutation(len(front))
            front = front[perm[np.argsort(distance[perm], kind="quicksort")][::-1][: size - len(chosen)]]
        chosen.extend(front.tolist())
    index = np.array(chosen, dtype=int)
    return _Population(states[index], values[index], rank[index], crowd[index])


def _tournament(pop: _Population, pairs: int, rng: np.random.Generator) -> np.ndarray:
    """(pairs, 2) parent indices, each the winner of a binary tournament."""
    n = len(pop.values)
    draws = pairs * 2 * 2
    contest = np.concatenate([rng.permutation(n) for _ in range(-(-draws // n))])[:draws].reshape(-1, 2)
    a, b = contest[:, 0], contest[:, 1]
    fa, fb = pop.values[a], pop.values[b]
    a_wins = np.all(fa <= fb, axis=1) & np.any(fa < fb, axis=1)
    b_wins = np.all(fb <= fa, axis=1) & np.any(fb < fa, axis=1)
    ca, cb = pop.crowd[a], pop.crowd[b]
    coin = rng.random(len(a)) < 0.5
    by_crowd = np.where(ca > cb, a, np.where(cb > ca, b, np.where(coin, a, b)))
    winners = np.where(a_wins, a, np.where(b_wins, b, by_crowd))
    return winners.reshape(pairs, 2)


def search(
    problem: AllocationProblem,
    initial: np.ndarray,
    rng: np.random.Generator,
    *,
    pop_size: int = 100,
    generations: int = 100,
) -> tuple[np.ndarray, np.ndarray]:
    """``(states, values)`` of the final population's first front, from ``initial (k, jobs, nodes)``."""
    states = _new_rows(problem.repair(initial.astype(np.int64), rng), set(), len(initial))
    pop = _survive(states, problem.evaluate(states), len(states), rng)
    for _ in range(generations - 1):
        offspring = np.empty((0, *problem.shape), dtype=states.dtype)
        seen = _keys(pop.states)
        for _ in range(MAX_MATING_TRIES):
            need = pop_size - len(offspring)
            if need <= 0:
                break
            parents = _tournament(pop, -(-need // 2), rng)
            children = problem.crossover(pop.states[parents.T], rng)
            children = problem.repair(problem.mutate(children, rng), rng)
            children = _new_rows(children.astype(states.dtype), seen, need)
            offspring = np.concatenate([offspring, children])
        if not len(offspring):
            break
        merged = np.concatenate([pop.states, offspring])
        pop = _survive(merged, np.concatenate([pop.values, problem.evaluate(offspring)]), pop_size, rng)
    best = pop.rank == 0
    return pop.states[best], pop.values[best]
