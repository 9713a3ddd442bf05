"""A1: the price function, Lemma 3 and alpha; the per-round constants of Eqs. 6-7."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpuweave.hadar.price import competitive_alpha, price, price_constants, price_derivative


def test_a1_price_values_and_endpoints():
    k = price(np.arange(5), 4, 1.0, 1000.0)
    assert k == pytest.approx([1.0, 5.6234, 31.623, 177.83, 1000.0], rel=1e-4)
    assert np.all(np.diff(k) > 0)
    assert price(0, 4, 2.0, 50.0) == pytest.approx(2.0, rel=1e-12)
    assert price(4, 4, 2.0, 50.0) == pytest.approx(50.0, rel=1e-12)


@pytest.mark.parametrize("gamma", [0.0, 0.5, 1.3, 2.0, 3.9, 4.0])
def test_a1_lemma3_identity(gamma):
    u_min, u_max, c = 1.0, 1000.0, 4
    lhs = price_derivative(gamma, c, u_min, u_max) * c / math.log(u_max / u_min)
    assert lhs == pytest.approx(price(gamma, c, u_min, u_max), rel=1e-6)
    # and the derivative matches a finite difference
    h = 1e-6
    fd = (price(gamma + h, c, u_min, u_max) - price(gamma - h, c, u_min, u_max)) / (2 * h)
    assert price_derivative(gamma, c, u_min, u_max) == pytest.approx(fd, rel=1e-5)


def test_a1_alpha():
    assert competitive_alpha(1.0, 1000.0) == pytest.approx(6.9078, rel=1e-4)
    assert 2 * competitive_alpha(1.0, 1000.0) == pytest.approx(13.8155, rel=1e-4)
    assert competitive_alpha(1.0, 2.0) == 1.0


def test_constants_follow_eqs_6_7():
    # two jobs, 60 GPUs, L = 360: job 0 1 GPU 3600 it at best 10 it/s (1 slot), worst 1 it/s (10 slots)
    c = price_constants(
        np.array([3600.0, 72000.0]),
        np.array([1, 4]),
        np.array([10.0, 40.0]),
        np.array([1.0, 10.0]),
        np.zeros(2),
        60,
        3,
        360.0,
    )
    assert list(c.t_min) == [1, 5] and list(c.t_max) == [10, 20]
    assert c.eta == pytest.approx(max(1.0, 60 / (10 * 1), 60 / (20 * 4)))
    assert c.horizon == math.ceil((10 * 1 + 20 * 4) / 60) + 20
    u_best = np.array([3600.0 / 360, 72000.0 / (5 * 360)])
    assert c.u_max[0] == pytest.approx(max(u_best / np.array([1, 4])))
    u_worst = np.array([3600.0, 72000.0]) / ((c.horizon + 1) * 360)
    assert c.u_min[0] == pytest.approx(min(u_worst / (np.array([10, 20]) * np.array([1, 4]))) / (4 * c.eta))
    assert np.all(c.u_min == c.u_min[0]) and np.all(c.u_max > c.u_min)
