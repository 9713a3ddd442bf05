"""Pollux's throughput model: a job's step time over (nodes, GPUs, per-GPU batch), fitted to its measured steps.

Problem (Qiao et al., OSDI'21 sec. 3.2, "Modeling system throughput"; adaptdl's ``goodput.py``, petuum/adaptdl,
whose rules Pollux's simulator uses): predict the time of one optimizer step of a data-parallel job from a few
measured configurations, so a scheduler can ask what a placement it has never tried would give. Seven parameters:

- compute time of one atomic batch ``b``: ``T_acc = alpha_c + beta_c b``;
- network time, by the slowest link the replicas span (``nodes > 1``: inter-node, else ``replicas > 1``:
  intra-node, else none): ``T_net = alpha + beta max(replicas - 2, 0)`` with that link's ``(alpha, beta)``;
- overlap of the last batch's compute with the all-reduce, a ``gamma``-norm (1: none, 10: nearly full):
  ``T_sync = (T_acc^gamma + T_net^gamma)^(1/gamma)``; a step of ``s`` accumulation steps takes
  ``s T_acc + T_sync``.

Fit (adaptdl's ``fit_perf_params``): minimise the root-mean-square error of ``log T_acc`` and of ``log T_sync``
over the measurements, plus ``1e-3 (gamma - 1)^2`` and ``1e-2 ((beta_n / alpha_n)^2 + (beta_r / alpha_r)^2)``
(an optimistic model that extrapolates few points gently), by L-BFGS-B from ``(0.1, 0.01) x 3, 1.001`` within
``[1e-8, inf)`` (``gamma`` in ``[1, 10]``). Parameters the data cannot tell are fixed: ``alpha_c`` at half the mean
compute time when one batch size was measured; the inter-node pair without multi-node measurements (then raised to
1.1 x the intra-node pair afterwards); the intra-node pair without single-node multi-GPU ones; both ``beta`` without
more than 2 replicas. The objective's gradient is written out here (adaptdl differentiates it with autograd).

Complexity: a prediction is O(1) per configuration (vectorised over arrays); a fit is O(iterations x
measurements), a few milliseconds for the tens of configurations a job visits.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass

import numpy as np

TINY = 1e-8  # adaptdl's lower bounds and the network time of a single replica


@dataclass(frozen=True, slots=True)
class PerfParams:
    """The seven parameters of the model (module docstring)."""

    alpha_c: float
    beta_c: float
    alpha_n: float
    beta_n: float
    alpha_r: float
    beta_r: float
    gamma: float

    def as_array(self) -> np.ndarray:
        return np.array(astuple(self), dtype=float)


def accum_time(p: PerfParams, atomic_bsz: np.ndarray | float) -> np.ndarray:
    """Seconds of compute for one atomic batch (a forward and backward pass)."""
    return p.alpha_c + p.beta_c * np.asarray(atomic_bsz, float)


def network_time(p: PerfParams, nodes: np.ndarray | float, replicas: np.ndarray | float) -> np.ndarray:
    """Seconds of all-reduce over the slowest link the replicas span (TINY for one replica)."""
    nodes, replicas = np.asarray(nodes), np.asarray(replicas)
    conds = [nodes > 1, replicas > 1]
    alpha = np.select(conds, [p.alpha_n, p.alpha_r], TINY)
    beta = np.select(conds, [p.beta_n, p.beta_r], TINY)
    return alpha + beta * np.maximum(replicas - 2, TINY)


def log_sync_time(p: PerfParams, compute: np.ndarray, network: np.ndarray) -> np.ndarray:
    """log of the last atomic batch's compute overlapped with the all-reduce (the ``gamma``-norm)."""
    g = p.gamma
    return np.log(compute**g + network**g) / g


def step_time(
    p: PerfParams, nodes: np.ndarray | float, replicas: np.ndarray | float, atomic_bsz, accum_steps
) -> np.ndarray:
    """Seconds per optimizer step: ``accum_steps`` atomic batches, then one overlapped with the all-reduce."""
    compute = accum_time(p, atomic_bsz)
    sync = np.exp(log_sync_time(p, compute, network_time(p, nodes, replicas)))
    return np.asarray(accum_steps) * compute + sync


def _objective(theta: np.ndarray, data: tuple[np.ndarray, ...]) -> tuple[float, np.ndarray]:
    """The fit's loss (module docstring) and its gradient over the seven parameters."""
    nodes, replicas, atomic, log_acc_true, log_opt_true = data
    a_c, b_c, a_n, b_n, a_r, b_r, g = theta
    inter, intra = nodes > 1, (nodes <= 1) & (replicas > 1)
    extra = np.maximum(replicas - 2, TINY)
    acc = a_c + b_c * atomic
    net = np.where(inter, a_n + b_n * extra, np.where(intra, a_r + b_r * extra, TINY + TINY * extra))
    u, v = acc**g, net**g
    total = u + v
    log_opt = np.log(total) / g
    e1, e2 = np.log(acc) - log_acc_true, log_opt - log_opt_true
    err1, err2 = np.sqrt(np.mean(e1**2)), np.sqrt(np.mean(e2**2))
    loss = err1 + err2 + 1e-3 * (g - 1) ** 2 + 1e-2 * ((b_n / a_n) ** 2 + (b_r / a_r) ** 2)
    grad = np.zeros(7)
    n = len(atomic)
    w1 = e1 / (n * err1) if err1 > 0 else np.zeros(n)  # d err1 / d log(acc), per measurement
    w2 = e2 / (n * err2) if err2 > 0 else np.zeros(n)
    d_acc = w1 / acc + w2 * acc ** (g - 1) / total  # d loss / d acc through both errors
    d_net = w2 * net ** (g - 1) / total
    grad[0] = np.sum(d_acc)
    grad[1] = np.sum(d_acc * atomic)
    grad[2] = np.sum(d_net * inter)
    grad[3] = np.sum(d_net * inter * extra)
    grad[4] = np.sum(d_net * intra)
    grad[5] = np.sum(d_net * intra * extra)
    with np.errstate(divide="ignore", invalid="ignore"):
        d_g = (u * np.log(acc) + v * np.log(net)) / (g * total) - log_opt / g
    grad[6] = np.sum(w2 * d_g) + 2e-3 * (g - 1)
    grad[2] -= 2e-2 * b_n**2 / a_n**3
    grad[3] += 2e-2 * b_n / a_n**2
    grad[4] -= 2e-2 * b_r**2 / a_r**3
    grad[5] += 2e-2 * b_r / a_r**2
    return float(loss), grad


_CONTROLLER: list = []  # threadpoolctl's controller, made at the first fit (it inspects the loaded libraries)


def _one_blas_thread():
    """A context with one BLAS thread: L-BFGS-B's 7x7 LAPACK calls ran 4x slower on a loaded machine while
    OpenBLAS' threads waited for a busy core (78 ms a fit beside another process, 20 ms with one thread)."""
    from threadpoolctl import ThreadpoolController

    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=1, user_api="blas")


def fit_perf_params(
    nodes, replicas, atomic_bsz, accum_step_time, optim_step_time, tol: float | None = None
) -> PerfParams:
    """Fit the model to measurements: per configuration, its nodes, GPUs, atomic batch, compute time of one atomic
    batch and time of the step's last (synchronising) batch (module docstring). ``tol``: the minimiser's tolerance
    (None: scipy's default, as adaptdl; Sia's simulator passes 1e-5)."""
    from scipy.optimize import minimize  # ~0.2 s to import: only where a job is fitted

    nodes, replicas = np.asarray(nodes, float), np.asarray(replicas, float)
    atomic = np.asarray(atomic_bsz, float)
    init = [1e-1, 1e-2] * 3 + [1.0 + 1e-3]
    lower = [TINY, TINY] * 3 + [1.0]
    upper = [np.inf, np.inf] * 3 + [10.0]

    def fix(i: int, value: float) -> None:
        init[i] = lower[i] = upper[i] = value

    if len(np.unique(atomic)) == 1:
        fix(0, float(np.mean(accum_step_time)) / 2)
    if not np.any(nodes > 1):
        fix(2, TINY)
        fix(3, TINY)
    if not np.any((nodes == 1) & (replicas > 1)):
        fix(4, TINY)
        fix(5, TINY)
    if not np.any(replicas > 2):
        fix(3, TINY)
        fix(5, TINY)
    data = (nodes, replicas, atomic, np.log(accum_step_time), np.log(optim_step_time))
    with _one_blas_thread():
        result = minimize(_objective, np.array(init), args=(data,), jac=True, bounds=list(zip(lower, upper)), tol=tol)
    theta = np.clip(result.x, lower, upper)
    if not np.any(nodes > 1):  # the prior: inter-node links are no faster than intra-node ones
        theta[2] = max(theta[2], theta[4] * 1.1)
        theta[3] = max(theta[3], theta[5] * 1.1)
    return PerfParams(*(float(x) for x in theta))
