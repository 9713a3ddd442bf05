"""The one way gpuweave builds and solves a HiGHS LP or MILP: a model from (row, column, value) triplets.

Problem: ``min cost . v + offset`` subject to ``row_lower <= A v <= row_upper`` and ``col_lower <= v <=
col_upper``, with some columns integral (a MILP) or none (an LP). ``A`` comes as triplets (duplicates are
summed) and is handed to HiGHS in one ``passModel`` call, row-wise or column-wise (``orientation``; both
orders are kept because HiGHS' pivoting, and so the vertex it returns on a degenerate LP, follows the order
it is given). Used by ANDREAS' exact MILP, Hadar's exact round and LP bounds, Gavel's allocation LPs and the
packs exact ILP.

Complexity: O(nnz log nnz) to build; HiGHS simplex (polynomial in practice) for an LP, branch and bound
(exponential in the worst case) for a MILP. ``EXACT`` asks for a proven optimum: zero gaps, one thread.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# Options for a proven MILP optimum (zero relative and absolute gap) that does not depend on thread timing.
EXACT: dict[str, Any] = {"mip_rel_gap": 0.0, "mip_abs_gap": 0.0, "threads": 1}


def highs_model(cost, ri, rc, rv, row_lower, row_upper, *, orientation: str = "row", **model: Any):
    """A ``highspy.Highs`` holding the model (not yet run), its matrix from triplets ``(ri, rc, rv)`` (duplicates
    summed). ``model``: :func:`compressed_model`'s other keywords (column bounds, integrality, offset, options)."""
    nc, nr = len(cost), len(row_lower)
    ri, rc, rv = np.asarray(ri, dtype=np.int64), np.asarray(rc, dtype=np.int64), np.asarray(rv, dtype=float)
    major, minor, count = (ri, rc, nr) if orientation == "row" else (rc, ri, nc)
    srt = np.lexsort((minor, major))
    major, minor, rv = major[srt], minor[srt], rv[srt]
    head = np.ones(major.size, dtype=bool)
    head[1:] = (major[1:] != major[:-1]) | (minor[1:] != minor[:-1])
    rv = np.add.reduceat(rv, np.flatnonzero(head)) if rv.size else rv
    major, minor = major[head], minor[head]
    start = np.searchsorted(major, np.arange(count + 1))
    return compressed_model(cost, start, minor, rv, row_lower, row_upper, orientation=orientation, **model)


def compressed_model(
    cost,
    start,
    index,
    value,
    row_lower,
    row_upper,
    *,
    col_lower=None,
    col_upper=None,
    integral=None,
    offset: float = 0.0,
    orientation: str = "row",
    options: dict[str, Any] | None = None,
):
    """A ``highspy.Highs`` holding the model (not yet run), its matrix already compressed by rows
    (``orientation="row"``) or columns: entry k of row (column) i is ``(index[k], value[k])`` for
    ``start[i] <= k < start[i + 1]``, each row's (column's) indices ascending and distinct. ``col_lower``
    defaults to 0, ``col_upper`` to +inf; ``integral`` is a boolean mask of integer columns (None = an LP);
    ``options`` are HiGHS options (output is always off). :func:`highs_model` builds these arrays from triplets;
    a caller that knows its matrix's layout (Gavel's LPs, built every round) skips the sort."""
    # Imported here, not at module level: highspy costs ~0.1 s to import and most commands never solve.
    import highspy

    if orientation not in ("row", "col"):
        raise ValueError(f"orientation must be 'row' or 'col', got {orientation!r}")
    nc, nr = len(cost), len(row_lower)
    start = np.asarray(start, dtype=np.int32)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    for name, setting in (options or {}).items():
        h.setOptionValue(name, setting)
    # The pointer form of passModel: the arrays go to HiGHS as they are, where assigning them to a HighsLp converts
    # them element by element (most of the cost of building a round's LP). Every column gets an integrality
    # entry (0 continuous, 1 integer); all 0 is an LP, as with none.
    status = h.passModel(
        nc,
        nr,
        int(start[-1]),
        int(highspy.MatrixFormat.kRowwise if orientation == "row" else highspy.MatrixFormat.kColwise),
        int(highspy.ObjSense.kMinimize),
        float(offset),
        np.asarray(cost, dtype=float),
        np.zeros(nc) if col_lower is None else np.asarray(col_lower, dtype=float),
        np.full(nc, highspy.kHighsInf) if col_upper is None else np.asarray(col_upper, dtype=float),
        np.asarray(row_lower, dtype=float),
        np.asarray(row_upper, dtype=float),
        start[:-1],
        np.asarray(index, dtype=np.int32),
        np.asarray(value, dtype=float),
        np.zeros(nc, dtype=np.int32) if integral is None else np.asarray(integral, dtype=bool).astype(np.int32),
    )
    if status == highspy.HighsStatus.kError:
        raise ValueError(f"HiGHS refused the model ({nc} columns, {nr} rows, {int(start[-1])} entries)")
    return h


def run_model(h, *, strict: bool = True) -> tuple[float, np.ndarray] | None:
    """Run ``h``: (objective, column values), None if infeasible; raises if HiGHS stops without an optimum
    (``strict=False``: None for every status but optimal, for feasibility probes)."""
    import highspy  # see highs_model

    h.run()
    status = h.getModelStatus()
    if status == highspy.HighsModelStatus.kInfeasible or (not strict and status != highspy.HighsModelStatus.kOptimal):
        return None
    if status != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"HiGHS did not prove optimality: {h.modelStatusToString(status)}")
    return float(h.getInfo().objective_function_value), np.asarray(h.getSolution().col_value)


def solve_lp(cost, ri, rc, rv, lo, hi, time_limit: float = 60.0):
    """min cost·v over v >= 0 with rows lo <= A v <= hi (triplets as in :func:`highs_model`)."""
    return solve_binary_milp(cost, ri, rc, rv, lo, hi, 0.0, time_limit, integral=False)


def solve_binary_milp(cost, ri, rc, rv, lo, hi, offset: float, time_limit: float, *, integral: bool = True):
    """min cost·v + offset over binaries v (``integral=False``: over v >= 0, an LP) with rows lo <= A v <= hi,
    solved to a proven optimum. Returns (objective, solution) or None if infeasible."""
    nc = len(cost)
    h = highs_model(
        cost,
        ri,
        rc,
        rv,
        lo,
        hi,
        col_upper=np.ones(nc) if integral else None,
        integral=np.ones(nc, dtype=bool) if integral else None,
        offset=offset,
        options={**EXACT, "time_limit": float(time_limit)},
    )
    return run_model(h)
