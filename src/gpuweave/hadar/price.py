"""Hadar's resource price function (Eq. 5) and its constants U_max, U_min, eta, T (Eqs. 6-7).

Problem (paper §IV-A, Lemma 3; spec hadar.md §2.4): price a type-r GPU on server h by its utilisation::

    k(gamma) = U_min * (U_max / U_min) ** (gamma / c)          (Eq. 5)

so that the first GPU costs ``U_min`` ("lowest to admit any job") and a full server costs ``U_max`` ("high
enough to block other jobs"). Lemma 3: ``k'(gamma) * c / ln(U_max/U_min) = k(gamma)`` and the algorithm is
``2 alpha``-competitive with ``alpha = max(1, ln(U_max/U_min))`` (Theorem 2; the proof drops a factor T,
spec §2.10, so alpha is reported, never "tested").

Constants (spec §2.4 [R], recomputed every round over the queue Q, in slots of length L):

* ``t_min_j = ceil(E_jN_j / (max_r T(m_j, W_j, r) * L))``, ``t_max_j`` likewise with the slowest feasible
  type (consolidated rates, total work; M_j := W_j, spec A7);
* ``U_max^r = max_j U_j(t_min_j) / W_j`` (w_j^r := W_j, so equal for all r);
* ``eta = max(1, max_j G / (t_max_j W_j))`` with G the cluster's GPUs, the smallest eta the proof allows;
* ``T = ceil(sum_j W_j t_max_j / G) + max_j t_max_j`` (a list-scheduling-style horizon, used only here);
* ``U_min^r = (1/(4 eta)) min_j U_j(T - a_j + 1) / (t_max_j W_j)``, floored at 1e-12.

Utilities (spec §1.5): ``raw`` (default) ``U_j(tau) = E_jN_j / (tau L)`` iterations/s (effective
throughput), ``normalized`` ``U_j(tau) = t_min_j / tau`` in (0, 1]. Complexity: O(|Q| R) per round.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

U_MIN_FLOOR = 1e-12


def price(gamma, capacity, u_min: float | np.ndarray, u_max: float | np.ndarray):
    """Eq. 5: unit price at ``gamma`` GPUs already allocated out of ``capacity``."""
    return u_min * (u_max / u_min) ** (np.asarray(gamma, dtype=float) / np.asarray(capacity, dtype=float))


def price_derivative(gamma, capacity, u_min: float, u_max: float):
    """dk/dgamma = k * ln(U_max/U_min) / c (Lemma 3, with equality)."""
    return price(gamma, capacity, u_min, u_max) * math.log(u_max / u_min) / np.asarray(capacity, dtype=float)


def competitive_alpha(u_min: float, u_max: float) -> float:
    """alpha of Theorem 2 for one GPU type; the ratio is 2*alpha."""
    return max(1.0, math.log(u_max / u_min))


def utility(variant: str, total_work, tau, L: float, t_min=None):
    """U_j(tau) for tau >= 1 slots (from arrival through the completion slot)."""
    tau = np.maximum(np.asarray(tau, dtype=float), 1.0)
    if variant == "raw":
        return np.asarray(total_work, dtype=float) / (tau * L)
    if variant == "normalized":
        return np.asarray(t_min, dtype=float) / tau
    raise ValueError(f"unknown utility variant {variant!r} (raw, normalized)")


@dataclass(slots=True)
class PriceConstants:
    u_min: np.ndarray  # per type
    u_max: np.ndarray  # per type
    eta: float
    horizon: int  # T in slots
    t_min: np.ndarray  # per job (slots)
    t_max: np.ndarray  # per job (slots)

    @property
    def alpha(self) -> float:
        return max(competitive_alpha(float(a), float(b)) for a, b in zip(self.u_min, self.u_max))


def price_constants(
    total_work: np.ndarray,
    num_gpus: np.ndarray,
    best_rate: np.ndarray,
    worst_rate: np.ndarray,
    arrival_slot: np.ndarray,
    total_gpus: int,
    num_types: int,
    L: float,
    utility_variant: str = "raw",
) -> PriceConstants:
    """Eqs. 6-7 over the jobs of Q (vectors of length |Q|); rates are whole-job iterations/s (> 0)."""
    total_work = np.asarray(total_work, dtype=float)
    W = np.asarray(num_gpus, dtype=float)
    if total_work.size == 0:
        one = np.ones(num_types)
        return PriceConstants(one * U_MIN_FLOOR, one, 1.0, 1, np.zeros(0), np.zeros(0))
    t_min = np.maximum(1.0, np.ceil(total_work / (np.asarray(best_rate) * L)))
    t_max = np.maximum(1.0, np.ceil(total_work / (np.asarray(worst_rate) * L)))
    G = float(total_gpus)
    eta = max(1.0, float(np.max(G / (t_max * W))))
    horizon = int(math.ceil(float(np.sum(W * t_max)) / G) + float(np.max(t_max)))
    a = np.asarray(arrival_slot, dtype=float)
    u_best = utility(utility_variant, total_work, t_min, L, t_min)
    u_worst = utility(utility_variant, total_work, horizon - a + 1.0, L, t_min)
    u_max = float(np.max(u_best / W))
    u_min = float(np.min(u_worst / (t_max * W))) / (4.0 * eta)
    u_min = max(u_min, U_MIN_FLOOR)
    u_max = max(u_max, u_min * (1.0 + 1e-9))
    return PriceConstants(np.full(num_types, u_min), np.full(num_types, u_max), eta, horizon, t_min, t_max)
