"""Paper arithmetic: checks on the numbers FIKIT states (spec §6.2, AC-9…AC-11; §3.6, §3.7).

Problem: the paper's tables and summary statements must be internally consistent, and our report
generator must state the speedup range and the "more than 3.4× in more than half of the cases"
claim only when the per-pair values support it. The per-pair values exist only in the Fig. 16 image,
so :func:`speedup_statement` is tested on fixtures (spec AC-11 [rev]).

Paper numbers come from ``data/paper_numbers.toml`` (with their section/table). Complexity O(rows).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=1)
def paper_numbers() -> dict:
    """The paper's numbers (``data/paper_numbers.toml``)."""
    with resources.files("gpuweave.kernel.data").joinpath("paper_numbers.toml").open("rb") as fh:
        return tomllib.load(fh)


@dataclass(frozen=True, slots=True)
class Table3Check:
    cv_from_sigma_mu: list[float]
    max_rel_error: float
    cv_min: float
    cv_max: float


def table3_check() -> Table3Check:
    """AC-9: σ/μ against the CV column; CV range."""
    t = paper_numbers()["table3"]
    calc = [s / m for s, m in zip(t["sigma_ms"], t["mu_ms"])]
    err = max(abs(c - cv) / cv for c, cv in zip(calc, t["cv"]))
    return Table3Check(calc, err, min(t["cv"]), max(t["cv"]))


@dataclass(frozen=True, slots=True)
class Table2Check:
    window_s: float
    a_whole_run_ratio: float
    b_total_ratio: float
    share_a_mean_ms: float
    share_b_mean_ms: float
    fikit_a_mean_ms: float
    fikit_b_mean_ms: float


def table2_check() -> Table2Check:
    """AC-10: window = min of the four totals; A whole-run ratio share/FIKIT; B total ratio FIKIT/share."""
    t = paper_numbers()["table2"]
    n = t["tasks"]
    totals = [t["share_a_s"], t["share_b_s"], t["fikit_a_s"], t["fikit_b_s"]]
    return Table2Check(
        window_s=min(totals),
        a_whole_run_ratio=t["share_a_s"] / t["fikit_a_s"],
        b_total_ratio=t["fikit_b_s"] / t["share_b_s"],
        share_a_mean_ms=1000 * t["share_a_s"] / n,
        share_b_mean_ms=1000 * t["share_b_s"] / n,
        fikit_a_mean_ms=1000 * t["fikit_a_s"] / n,
        fikit_b_mean_ms=1000 * t["fikit_b_s"] / n,
    )


def speedup_statement(speedups: list[float], threshold: float | None = None) -> str:
    """The summary sentence for per-pair high-priority speedups (AC-11).

    Always states the range; adds "more than T× in more than half of the N cases" only when the
    count of values strictly above T is strictly greater than N/2.
    """
    if not speedups:
        return "no pairs"
    if threshold is None:
        threshold = paper_numbers()["abstract"]["hi_speedup_majority"]
    lo, hi = min(speedups), max(speedups)
    text = f"high-priority speedup {lo:.2f}-{hi:.2f}x over {len(speedups)} pairs"
    above = sum(1 for s in speedups if s > threshold)
    if above * 2 > len(speedups):
        text += f"; more than {threshold:g}x in more than half of the cases ({above} of {len(speedups)})"
    return text
