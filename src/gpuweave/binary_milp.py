"""One exact binary MILP (or a nonnegative LP) in HiGHS, from (row, column, value) triplets; shared by the exact
solvers (ANDREAS's MILP, Hadar's exact round) and the LP bounds of the Hadar reproduction.

Problem: ``min cost . v + offset`` over binary ``v`` with ``lo <= A v <= hi``. HiGHS branch and bound with
zero relative and absolute gaps, one thread; exponential in the worst case, fast on the assignment-shaped
models its callers build. :func:`solve_lp` is the continuous form with ``v >= 0`` (simplex, polynomial in
practice).
"""

from __future__ import annotations

import numpy as np


def solve_lp(cost, ri, rc, rv, lo, hi, time_limit: float = 60.0):
    """min cost·v over v >= 0 with rows lo <= A v <= hi (triplets as in :func:`solve_binary_milp`)."""
    return solve_binary_milp(cost, ri, rc, rv, lo, hi, 0.0, time_limit, integral=False)


def solve_binary_milp(cost, ri, rc, rv, lo, hi, offset: float, time_limit: float, *, integral: bool = True):
    """Solve min cost·v + offset over binaries v with rows lo <= A v <= hi, A given as (row, col, value)
    triplets (duplicates are summed), by one exact HiGHS MILP (``integral=False``: over v >= 0, an LP).
    Returns (objective, solution) or None if infeasible; raises if HiGHS stops without proving optimality."""
    import highspy

    nc = len(cost)
    nr = len(lo)
    srt = np.lexsort((rc, ri))
    ri, rc, rv = ri[srt], rc[srt], rv[srt]
    head = np.ones(ri.size, dtype=bool)
    head[1:] = (ri[1:] != ri[:-1]) | (rc[1:] != rc[:-1])
    rv = np.add.reduceat(rv, np.flatnonzero(head)) if rv.size else rv
    ri, rc = ri[head], rc[head]
    start = np.searchsorted(ri, np.arange(nr + 1))
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 0.0)
    h.setOptionValue("time_limit", float(time_limit))
    h.setOptionValue("threads", 1)
    lp = highspy.HighsLp()
    lp.num_col_ = nc
    lp.num_row_ = nr
    lp.col_cost_ = np.asarray(cost, dtype=float)
    lp.col_lower_ = np.zeros(nc)
    lp.col_upper_ = np.ones(nc) if integral else np.full(nc, highspy.kHighsInf)
    lp.row_lower_ = np.asarray(lo, dtype=float)
    lp.row_upper_ = np.asarray(hi, dtype=float)
    lp.offset_ = float(offset)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = nc
    lp.a_matrix_.num_row_ = nr
    lp.a_matrix_.start_ = start.astype(np.int32)
    lp.a_matrix_.index_ = rc.astype(np.int32)
    lp.a_matrix_.value_ = rv
    if integral:
        lp.integrality_ = [highspy.HighsVarType.kInteger] * nc
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    if status == highspy.HighsModelStatus.kInfeasible:
        return None
    if status != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"HiGHS did not prove optimality: {h.modelStatusToString(status)}")
    return float(h.getInfo().objective_function_value), np.asarray(h.getSolution().col_value)
