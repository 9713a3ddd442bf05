"""Pollux's statistical efficiency and adaptdl's gradient-noise estimator (gpuweave.workload.goodput)."""

from __future__ import annotations

import numpy as np
import pytest

from gpuweave.workload.goodput import MIN_VAR, NoiseEstimate, efficiency, gain


def test_gain_is_one_at_the_initial_batch_and_efficiency_falls_with_the_batch():
    assert float(gain(2.0, 3.0, 1.0)) == 1.0
    # gain = (var + sqr) / (var / scale + sqr): 5 / (3 / 4 + 2) at 4x the batch
    assert float(gain(2.0, 3.0, 4.0)) == pytest.approx(5 / 2.75)
    effs = [efficiency(2.0, 3.0, b, 32) for b in (32, 64, 128, 1024)]
    assert effs[0] == 1.0 and all(a > b for a, b in zip(effs, effs[1:]))
    assert float(gain(0.0, 0.0, 2.0)) == 1.0  # no statistics: no gain either way


def test_a_constant_measurement_is_its_own_average():
    est = NoiseEstimate()
    for _ in range(3):
        # count 4: sqr = (4 x 1.5 - 3) / 3 = 1, var = (3 - 1.5) x 2 / 3 = 1
        est.update(local_sqr=3.0, total_sqr=1.5, count=4, scale=2.0)
    assert est.grad_sqr == pytest.approx(1.0) and est.grad_var == pytest.approx(1.0) and est.samples == 3
    assert est.noise_scale(32) == pytest.approx(32.0)
    assert NoiseEstimate.from_dict(est.as_dict()) == est


def test_the_estimates_recover_the_true_gradient_and_its_noise():
    """Gradients of ``count`` ranks, each the mean of ``b`` samples drawn around a true gradient ``G`` with per-sample
    covariance ``s^2 I``: the estimates approach ``|G|^2`` and the variance at the initial batch, ``d s^2 / B0``."""
    rng = np.random.default_rng(0)
    d, s, b, count, init = 50, 2.0, 8, 4, 16
    true = rng.normal(size=d)
    est = NoiseEstimate()
    for _ in range(4000):
        samples = true + s * rng.normal(size=(count, b, d))
        local = samples.mean(axis=1)  # each rank's gradient
        est.update(
            float((local**2).sum(axis=1).mean()), float((local.mean(axis=0) ** 2).sum()), count, count * b / init
        )
    assert est.grad_sqr == pytest.approx(float(true @ true), rel=0.05)
    assert est.grad_var == pytest.approx(d * s * s / init, rel=0.05)


def test_unbiased_steps_restart_averages_left_by_a_single_rank_and_bad_input_is_skipped():
    est = NoiseEstimate()
    est.update(10.0, 1.0, 2, 2.0, biased=True)
    est.update(3.0, 1.5, 4, 2.0)  # first step of a gang after single-rank steps: only it counts
    assert est.grad_sqr == pytest.approx(1.0) and est.grad_var == pytest.approx(1.0) and not est.biased
    est.update(float("nan"), 1.0, 4, 2.0)
    est.update(3.0, 1.0, 1, 2.0)  # one sample says nothing about the spread
    assert est.samples == 2
    assert NoiseEstimate().grad_var == MIN_VAR and NoiseEstimate().noise_scale(32) is None
