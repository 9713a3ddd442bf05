"""The ``O(k p^2)`` dynamic program for one pack (paper 4.2, the cross-check of Algorithm 1).

Problem: as :mod:`gpuweave.packs.onepack`: minimise ``max_i t_{i,sigma(i)}`` with ``sum sigma <= p``.

Recurrence: ``c(1,q) = t_{1,q}``, ``c(i,0) = +inf`` and
``c(i,q) = min_{1<=q'<=q} max(c(i-1, q-q'), t_{i,q'})``; the optimum is ``c(k,p)`` (``c`` is
non-increasing in ``q`` because ``t`` is, so using all ``p`` processors is optimal).

Complexity: ``O(k p^2)`` time (vectorised over ``q'``), ``O(k p)`` memory for the back-pointers.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def one_pack_dp(times: np.ndarray, tasks: Sequence[int], p: int) -> tuple[list[int], float]:
    """Return ``(sigma, cost)`` for ``tasks`` on ``p`` processors; ``times[i, j-1] = t_{i,j}``."""
    k = len(tasks)
    if k == 0:
        return [], 0.0
    if k > p:
        raise ValueError(f"a pack of {k} tasks does not fit on {p} processors")
    t = np.asarray(times, dtype=float)
    inf = np.inf
    # c[q] for q = 0..p; t_{i,0} = +inf.
    ti = lambda i: np.concatenate(([inf], t[tasks[i], :p]))  # noqa: E731
    c = ti(0)
    choice = np.zeros((k, p + 1), dtype=np.int64)
    choice[0, :] = np.arange(p + 1)
    q = np.arange(p + 1)
    for r in range(1, k):
        tr = ti(r)
        # cand[q, q'] = max(c[q - q'], t[q']) for 1 <= q' <= q
        qp = np.arange(1, p + 1)
        prev_idx = q[:, None] - qp[None, :]
        valid = prev_idx >= 0
        prev = np.where(valid, c[np.clip(prev_idx, 0, p)], inf)
        cand = np.maximum(prev, tr[qp][None, :])
        best = np.argmin(cand, axis=1)
        new_c = cand[q, best]
        new_c[0] = inf
        choice[r, :] = best + 1
        c = new_c
    cost = float(c[p])
    sigma = [0] * k
    rem = p
    for r in range(k - 1, 0, -1):
        sigma[r] = int(choice[r, rem])
        rem -= sigma[r]
    sigma[0] = rem
    return sigma, cost
