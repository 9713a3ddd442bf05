"""Statistical efficiency from the gradient noise scale: Pollux's measure of what a larger batch is worth.

Problem (Qiao et al., OSDI'21 sec. 3.1; McCandlish et al. 2018, "An empirical model of large-batch training"):
a step on a batch ``scale`` times the initial batch ``B0`` makes the progress of ``gain(scale)`` steps at ``B0``,

    gain = (var + sqr) / (var / scale + sqr),      efficiency = gain / scale  (per sample, 1 at B0),

where ``sqr`` is the squared norm of the true gradient and ``var`` the trace of the gradients' covariance at
``B0`` (the *preconditioned gradient noise scale* is ``B0 var / sqr``). A job's *goodput* is its throughput in
samples per second times its efficiency. Pollux's job model (:mod:`gpuweave.workload.pollux`) reads ``sqr`` and
``var`` from validation tables; a training job measures them (:class:`NoiseEstimate`).

Measurement (adaptdl's ``GradientNoiseScale``, petuum/adaptdl ``adaptdl/torch/gradient_noise_scale.py``): a step
of ``count`` gradient samples (ranks x accumulation steps), each the mean gradient of ``b`` samples, gives the mean
of their squared norms ``local`` and the squared norm of their mean ``total``; with ``scale = count b / B0``,

    sqr = (count total - local) / (count - 1),     var = (local - total) scale / (count - 1)

are unbiased. A single sample (one rank, no accumulation) is paired with the previous step's gradient instead
(biased: the parameters moved). Both feed exponential moving averages with factor ``0.999 ** scale``, bias
corrected as Adam's are; the estimates are clamped to ``sqr >= 0`` and ``var >= 1e-6``. Complexity: O(1) per step
here; the norms are O(parameters) in the worker.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: adaptdl's per-sample smoothing: a step of ``scale`` initial batches weighs the past by ``SMOOTHING ** scale``
SMOOTHING = 0.999
MIN_VAR = 1e-6  # adaptdl's floor on the variance estimate


def gain(grad_sqr: float | np.ndarray, grad_var: float | np.ndarray, scale: float | np.ndarray) -> np.ndarray:
    """Steps at the initial batch one step at ``scale`` times it is worth (1 where the statistics say nothing)."""
    sqr, var, scale = np.asarray(grad_sqr, float), np.asarray(grad_var, float), np.asarray(scale, float)
    denom = var / scale + sqr
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, (var + sqr) / denom, 1.0)


def efficiency(grad_sqr: float, grad_var: float, batch_size: float, init_batch_size: float) -> float:
    """Statistical efficiency of ``batch_size``: the progress per sample relative to ``init_batch_size`` (<= 1 above
    it)."""
    scale = batch_size / init_batch_size
    return float(gain(grad_sqr, grad_var, scale)) / scale


def noise_scale(grad_sqr: float, grad_var: float, init_batch_size: float) -> float | None:
    """The preconditioned gradient noise scale ``B0 var / sqr`` in samples; None at ``sqr`` 0 (no signal)."""
    return init_batch_size * grad_var / grad_sqr if grad_sqr > 0 else None


@dataclass(slots=True)
class NoiseEstimate:
    """Running estimates of the gradient's squared norm and variance (module docstring), as saved in a checkpoint."""

    sqr_biased: float = 0.0
    var_biased: float = 0.0
    weight: float = 0.0  # 1 - prod(factors): the moving averages' bias correction
    samples: int = 0  # steps that contributed
    biased: bool = False  # the last step paired one gradient with the previous step's (one sample per step)

    @property
    def grad_sqr(self) -> float:
        return max(self.sqr_biased / self.weight, 0.0) if self.weight > 0 else 0.0

    @property
    def grad_var(self) -> float:
        return max(self.var_biased / self.weight, MIN_VAR) if self.weight > 0 else MIN_VAR

    def noise_scale(self, init_batch_size: float) -> float | None:
        """The preconditioned gradient noise scale ``B0 var / sqr`` in samples; None before any step or at sqr 0."""
        return noise_scale(self.grad_sqr, self.grad_var, init_batch_size) if self.samples else None

    def update(self, local_sqr: float, total_sqr: float, count: int, scale: float, *, biased: bool = False) -> None:
        """One step: ``local_sqr`` the mean squared norm of its ``count`` gradient samples, ``total_sqr`` the squared
        norm of their mean, ``scale`` the step's batch over the initial batch; ``biased``: the samples are this step's
        gradient and the previous one's. The first unbiased step after biased ones starts the averages afresh, as
        adaptdl does. Non-finite input is skipped, as adaptdl skips a step whose gradients overflowed."""
        if count < 2 or not (np.isfinite(local_sqr) and np.isfinite(total_sqr)):
            return
        if self.biased and not biased:
            self.sqr_biased = self.var_biased = self.weight = 0.0
        self.biased = biased
        sqr = (count * total_sqr - local_sqr) / (count - 1)
        var = (local_sqr - total_sqr) * scale / (count - 1)
        factor = SMOOTHING**scale
        self.sqr_biased = factor * self.sqr_biased + (1.0 - factor) * sqr
        self.var_biased = factor * self.var_biased + (1.0 - factor) * var
        self.weight = factor * self.weight + (1.0 - factor)
        self.samples += 1

    def as_dict(self) -> dict[str, float | int | bool]:
        return {
            "sqr_biased": self.sqr_biased,
            "var_biased": self.var_biased,
            "weight": self.weight,
            "samples": self.samples,
            "biased": self.biased,
        }

    @classmethod
    def from_dict(cls, data: dict[str, float | int | bool]) -> NoiseEstimate:
        return cls(
            float(data["sqr_biased"]),
            float(data["var_biased"]),
            float(data["weight"]),
            int(data["samples"]),
            bool(data.get("biased", False)),
        )
