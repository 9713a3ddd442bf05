"""The one HiGHS model builder: triplets (duplicates summed) or an already compressed matrix give the same model,
row-wise or column-wise, LP or MILP, and a model HiGHS refuses is an error, not a silent empty model."""

from __future__ import annotations

import numpy as np
import pytest

from gpuweave.highs_models import compressed_model, highs_model, run_model, solve_binary_milp


def _lp_arrays(h):
    lp = h.getLp()
    a = lp.a_matrix_
    return [
        np.asarray(getattr(lp, f)) for f in ("col_cost_", "col_lower_", "col_upper_", "row_lower_", "row_upper_")
    ] + [
        np.asarray(a.start_),
        np.asarray(a.index_),
        np.asarray(a.value_),
    ]


@pytest.mark.parametrize("orientation", ["row", "col"])
def test_triplets_and_their_compressed_form_are_one_model(orientation):
    rng = np.random.default_rng(7)
    nr, nc, nnz = 6, 9, 30
    ri, rc = rng.integers(0, nr, nnz), rng.integers(0, nc, nnz)
    rv = rng.uniform(0.5, 2.0, nnz)
    cost = -rng.uniform(0.1, 1.0, nc)
    lo, hi = np.full(nr, -np.inf), rng.uniform(1.0, 3.0, nr)
    h = highs_model(cost, ri, rc, rv, lo, hi, col_upper=np.ones(nc), orientation=orientation)
    # The compressed form, by hand: duplicates summed, each major's entries by minor index.
    dense = np.zeros((nr, nc))
    np.add.at(dense, (ri, rc), rv)
    mat = dense if orientation == "row" else dense.T
    major, minor = np.nonzero(mat)  # row-major order: by major, then minor
    start = np.searchsorted(major, np.arange(mat.shape[0] + 1))
    c = compressed_model(cost, start, minor, mat[major, minor], lo, hi, col_upper=np.ones(nc), orientation=orientation)
    *same, values = _lp_arrays(c)
    *want, want_values = _lp_arrays(h)
    for got, expected in zip(same, want):
        assert np.array_equal(got, expected)
    assert values == pytest.approx(want_values, rel=1e-15)  # duplicates summed in another order: last bits only
    assert run_model(c)[0] == pytest.approx(run_model(h)[0])


def test_a_binary_milp_is_solved_in_integers():
    # max 5a + 4b + 3c s.t. 2a + 3b + 2c <= 4: the LP relaxation is fractional (b = 2/3), the MILP picks a and c.
    obj, x = solve_binary_milp(
        np.array([-5.0, -4.0, -3.0]), [0, 0, 0], [0, 1, 2], [2.0, 3.0, 2.0], [-np.inf], [4.0], 0.0, 10.0
    )
    assert obj == pytest.approx(-8.0)
    assert np.allclose(x, [1, 0, 1])


def test_a_model_highs_refuses_is_an_error():
    with pytest.raises(ValueError, match="HiGHS refused the model"):
        compressed_model([1.0], [0, 1], [5], [1.0], [0.0], [1.0], orientation="col")  # row 5 of a 1-row model
    with pytest.raises(ValueError, match="orientation"):
        compressed_model([1.0], [0, 1], [0], [1.0], [0.0], [1.0], orientation="diagonal")
