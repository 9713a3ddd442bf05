"""Pollux's throughput model and goodput model (workload/throughput_model.py, workload/goodput_model.py)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import approx_fprime

from gpuweave.workload.goodput import gain
from gpuweave.workload.goodput_model import GoodputModel
from gpuweave.workload.throughput_model import (
    PerfParams,
    _objective,
    accum_time,
    fit_perf_params,
    log_sync_time,
    network_time,
    step_time,
)

TRUE = PerfParams(0.05, 0.002, 0.3, 0.01, 0.05, 0.005, 2.0)
NODES = np.array([1, 1, 1, 2, 4, 1, 3])
REPLICAS = np.array([1, 2, 4, 8, 16, 3, 12])
ATOMIC = np.array([32, 64, 128, 64, 32, 100, 50])


def _measured(p: PerfParams = TRUE) -> tuple[np.ndarray, np.ndarray]:
    compute = accum_time(p, ATOMIC)
    return compute, np.exp(log_sync_time(p, compute, network_time(p, NODES, REPLICAS)))


def test_the_written_out_gradient_is_the_objectives_gradient():
    compute, sync = _measured()
    data = (NODES.astype(float), REPLICAS.astype(float), ATOMIC.astype(float), np.log(compute), np.log(sync))
    theta = np.array([0.1, 0.01, 0.2, 0.02, 0.1, 0.01, 1.5])
    numeric = approx_fprime(theta, lambda x: _objective(x, data)[0], 1e-7)
    assert _objective(theta, data)[1] == pytest.approx(numeric, rel=1e-4, abs=1e-6)


def test_a_fit_to_a_models_own_times_predicts_them():
    compute, sync = _measured()
    fitted = fit_perf_params(NODES, REPLICAS, ATOMIC, compute, sync)
    predicted = step_time(fitted, NODES, REPLICAS, ATOMIC, 0)
    assert predicted == pytest.approx(sync, rel=0.03)
    assert accum_time(fitted, ATOMIC) == pytest.approx(compute, rel=1e-3)


def test_what_the_data_cannot_tell_is_fixed_as_adaptdl_fixes_it():
    """One GPU, one batch size: alpha_c is half the compute time, both network pairs at the floor, gamma free."""
    fitted = fit_perf_params([1], [1], [64], [0.2], [0.25])
    assert fitted.alpha_c == pytest.approx(0.1)
    assert fitted.alpha_r == fitted.beta_r == pytest.approx(1e-8)
    # no multi-node measurement: the inter-node pair is raised to 1.1 x the intra-node one
    assert fitted.alpha_n == pytest.approx(1.1e-8) and fitted.beta_n == pytest.approx(1.1e-8)
    single_node = fit_perf_params([1, 1, 1], [1, 2, 4], [64, 64, 32], [0.2, 0.2, 0.1], [0.25, 0.3, 0.2])
    assert single_node.alpha_n >= 1.1 * single_node.alpha_r * (1 - 1e-12)


def _model(**kw) -> GoodputModel:
    values = dict(
        perf=TRUE,
        grad_sqr=1.0,
        grad_var=20.0,
        init_batch_size=128,
        max_batch_size=4096,
        min_atomic_bsz=16,
        max_atomic_bsz=256,
    )
    values.update(kw)
    return GoodputModel(**values)


def test_the_best_batch_is_the_best_of_fifty_geometric_candidates():
    model = _model()
    for nodes, replicas in [(1, 1), (1, 4), (2, 8), (4, 16)]:
        choice = model.optimize(nodes, replicas)
        batch = np.geomspace(max(128, 16 * replicas), 4096, 50)
        local = batch / replicas
        accum = np.ceil(local / 256 - 1e-8) - 1
        if replicas == 1:
            accum = np.where(local > 128 + 1e-8, np.maximum(accum, 1), accum)
        atomic = np.ceil(local / (accum + 1) - 1e-8)
        effective = replicas * atomic * (accum + 1)
        goodput = effective / step_time(TRUE, nodes, replicas, atomic, accum)
        goodput *= gain(1.0, 20.0, effective / 128) / (effective / 128)
        goodput[(atomic < 16) | (atomic > 256)] = 0
        best = int(np.argmax(goodput))
        assert choice.goodput == pytest.approx(goodput[best], rel=1e-12)
        assert (choice.atomic_bsz, choice.accum_steps) == (int(atomic[best]), int(accum[best]))


def test_a_noisier_gradient_takes_a_larger_batch():
    quiet, noisy = _model(grad_var=1.0), _model(grad_var=1000.0)

    def batch(m):
        return (lambda c: 4 * c.atomic_bsz * (c.accum_steps + 1))(m.optimize(1, 4))

    assert batch(noisy) > batch(quiet)


def test_speedups_are_goodputs_over_the_base_allocation():
    model = _model()
    table = model.speedups(4, 8, base=(1, 2))
    assert table[1, 2] == pytest.approx(1.0)
    assert table[0].sum() == 0 and table[3, 2] == 0  # no nodes, or more nodes than GPUs
    assert table[2, 8] == pytest.approx(model.optimize(2, 8).goodput / model.optimize(1, 2).goodput)
