"""Per-job agreement of two JCT series: Pearson's r and Spearman's rho (Pearson's r of the ranks, ties given
their mean rank). O(n log n) for the sort plus O(n * distinct values) for the ties; n is a trace's job count."""

from __future__ import annotations

import numpy as np

PEARSON = "per-job JCT Pearson r"
SPEARMAN = "per-job JCT Spearman rho"


def ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 0..n-1, tied values sharing their mean rank."""
    order = np.argsort(values, kind="stable")
    out = np.empty(len(values), dtype=float)
    out[order] = np.arange(len(values), dtype=float)
    for value in np.unique(values):
        tied = values == value
        if tied.sum() > 1:
            out[tied] = out[tied].mean()
    return out


def per_job_correlations(ours, peer) -> tuple[float, float]:
    """Pearson and Spearman correlation of two equally ordered per-job series (NaN below two jobs)."""
    a, b = np.asarray(ours, dtype=float), np.asarray(peer, dtype=float)
    if len(a) < 2:
        return float("nan"), float("nan")
    return float(np.corrcoef(a, b)[0, 1]), float(np.corrcoef(ranks(a), ranks(b))[0, 1])
