"""A Pollux job in Pollux's simulator: it learns its throughput, picks its batch, and advances epoch by epoch.

Problem (Qiao et al., OSDI'21 sec. 3-5; petuum/adaptdl branch ``osdi21-artifact``, ``simulator/simulator.py``,
``Job``): under Pollux a job adapts itself to what the scheduler gives it. Its agent records the step and sync time
of every (nodes, GPUs, atomic batch) it runs at, refits its throughput model on each new one
(:mod:`gpuweave.workload.throughput_model`), keeps the gradient statistics of its current epoch and batch, and
re-picks its batch (:mod:`gpuweave.workload.goodput_model`) on every allocation, after every epoch and at the end of
every scheduling interval; before its first fit it runs at ``max(B0, min_atomic x GPUs)``. Progress follows the
job model's truth (:mod:`gpuweave.workload.pollux`): per stretch, ``gain / step time`` progress units per second
at the current epoch's statistics. An interval of ``seconds`` is stepped as that simulator steps it: the re-scale
delay first, then stretch by stretch to epoch ends, each stretch that ends an epoch rounded to whole seconds;
the job completes at the end of its last epoch. A job with a fixed batch (ncf there: 32768) keeps it, split by the
job model's rules. Placements are GPUs per node in node order, rotated to the lexicographically smallest as
Pollux's tables are keyed.

Complexity: per interval O(epochs crossed) steps, each with one batch choice (O(50)); a fit per new configuration.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from gpuweave.errors import InputError
from gpuweave.workload.goodput_model import BatchChoice, GoodputModel
from gpuweave.workload.pollux import BatchLimits, PolluxApp, node_order_shape
from gpuweave.workload.throughput_model import PerfParams, fit_perf_params

REFIT_CHANGE = 0.05  # a live measurement refits the model when it moved by more than this share of the step time


@lru_cache(maxsize=65536)
def _fit(profile: tuple[tuple[tuple[int, int, int], tuple[float, float]], ...], tol: float | None) -> PerfParams:
    """The throughput model fitted to a profile (the same profile again, on a trajectory walked anew after a job
    moved, is not fitted twice: a fit is deterministic)."""
    keys = np.array([key for key, _ in profile], dtype=float)
    times = np.array([value for _, value in profile])
    return fit_perf_params(keys[:, 0], keys[:, 1], keys[:, 2], times[:, 0] - times[:, 1], times[:, 0], tol)


@lru_cache(maxsize=65536)
def _best_batch(model: GoodputModel, nodes: int, replicas: int) -> BatchChoice:
    """The model's best batch on (nodes, GPUs): an agent re-picks after every stretch it steps, mostly with the
    same fit and statistics (an epoch's), so the choice is remembered (a pure function of its arguments)."""
    return model.optimize(nodes, replicas)


@dataclass(slots=True)
class AgentState:
    """Everything a Pollux job carries from interval to interval."""

    app: PolluxApp | BatchLimits  # the job model's tables (simulated), or a live job's batch limits alone
    target_batch: int | None = None  # a fixed batch size, else None (the agent picks)
    profile: dict[tuple[int, int, int], tuple[float, float]] = field(default_factory=dict)
    perf: PerfParams | None = None
    grad: tuple[float, float] | None = None
    atomic_bsz: int = 0
    accum_steps: int = 0
    epoch: int = 0
    progress: float = 0.0
    restarts: int | None = None  # None before the first allocation, as Pollux counts
    completion: float | None = None
    learns: bool = True  # refit the throughput model on each new configuration (False: a rigid job, Sia's Gavel)
    fit_tol: float | None = None  # the fit's tolerance (None: adaptdl's; Sia's simulator: 1e-5)
    # Sia's job model: the GPU type ``profile`` and ``perf`` are of, the other types' (profile, fit), and when the
    # current placement's re-scale delay ends (Sia's scheduler keeps such a job where it is)
    gpu_type: str | None = None
    other_types: dict[str, tuple[dict[tuple[int, int, int], tuple[float, float]], PerfParams | None]] = field(
        default_factory=dict
    )
    busy_until: float = 0.0

    def copy(self) -> AgentState:
        out = copy.copy(self)
        out.profile = dict(self.profile)
        if self.other_types:
            out.other_types = {k: (dict(p), perf) for k, (p, perf) in self.other_types.items()}
        return out

    def switch_type(self, gpu_type: str, app: PolluxApp | BatchLimits) -> None:
        """Run on ``gpu_type`` with its tables ``app`` (a live job: its batch limits, the same on every type): its own
        profile and fit (Sia's per-type ones) come in."""
        if gpu_type != self.gpu_type:
            if self.gpu_type is not None:
                self.other_types[self.gpu_type] = (self.profile, self.perf)
            self.profile, self.perf = self.other_types.pop(gpu_type, ({}, None))
            self.gpu_type = gpu_type
        self.app = app

    def perf_on(self, gpu_type: str) -> PerfParams | None:
        """The throughput fit on ``gpu_type`` (None: never measured there)."""
        if gpu_type == self.gpu_type:
            return self.perf
        return self.other_types.get(gpu_type, ({}, None))[1]

    def profiled_replicas_on(self, gpu_type: str) -> int:
        """The most GPUs the job has been measured on of ``gpu_type`` (Sia's ``max_profiled_replicas``)."""
        profile = self.profile if gpu_type == self.gpu_type else self.other_types.get(gpu_type, ({}, None))[0]
        return max((key[1] for key in profile), default=0)

    @property
    def max_profiled_replicas(self) -> int:
        return max((key[1] for key in self.profile), default=0)

    @property
    def done(self) -> bool:
        return self.completion is not None

    def goodput_model(self) -> GoodputModel | None:
        """The job's current goodput model, None before its first measurement."""
        if self.perf is None or self.grad is None:
            return None
        app = self.app
        return GoodputModel(
            self.perf,
            self.grad[0],
            self.grad[1],
            app.init_batch_size,
            app.max_batch_size,
            app.min_local_bsz,
            app.max_local_bsz,
        )

    def batch_size(self, replicas: int) -> int:
        return replicas * self.atomic_bsz * (self.accum_steps + 1)

    # ------------------------------------------------------------------ the agent
    def pick_batch(self, placement: tuple[int, ...]) -> None:
        """Pollux's ``update_local_bsz``: the batch for ``placement`` (module docstring)."""
        app = self.app
        counts = tuple(c for c in placement if c > 0)
        nodes, replicas = len(counts), sum(counts)
        batch = self.target_batch
        model = self.goodput_model()
        if batch is None and model is None:
            batch = max(app.init_batch_size, app.min_local_bsz * replicas)
        if batch is not None:  # a given batch, split by the job model's rules (capped at the largest batch)
            plan = app.placement_batch_plan(batch, counts)
            self.atomic_bsz, self.accum_steps = plan.atomic_bsz, plan.accum_steps
            return
        assert model is not None
        sia = app.per_placement_limits and isinstance(app, PolluxApp)
        if sia:  # Sia: the placement's largest measured local batch bounds the search
            assert isinstance(app, PolluxApp)
            model = dataclasses.replace(model, max_atomic_bsz=int(app.placement_max_local_bsz(counts)))
        choice = _best_batch(model, nodes, replicas)
        self.accum_steps = choice.accum_steps
        atomic = choice.atomic_bsz
        if sia:
            assert isinstance(app, PolluxApp)
            atomic = app.memory_cap(atomic, replicas)
        self.atomic_bsz = min(atomic, app.max_batch_size // (replicas * (choice.accum_steps + 1)))

    def reallocate(self, placement: tuple[int, ...]) -> None:
        """A new allocation (Pollux's ``reallocate``): the batch re-picked, one more restart counted."""
        self.pick_batch(placement)
        self.restarts = 0 if self.restarts is None else self.restarts + 1

    def _measure(self, nodes: int, replicas: int, step: float, sync: float, grad: tuple[float, float]) -> None:
        """Pollux's ``update_params``: keep the statistics; a new configuration is recorded and the model refitted."""
        self.grad = grad
        key = (nodes, replicas, self.atomic_bsz)
        if not self.learns or key in self.profile:
            return
        self.profile[key] = (step, sync)
        self.perf = _fit(tuple(self.profile.items()), self.fit_tol)

    def _iteration(
        self, shape: tuple[int, ...], replicas: int
    ) -> tuple[float, float, tuple[float, float], float, float]:
        """The job model's truth at the current batch on ``shape``: (step time, sync time, gradient statistics,
        statistical gain of the batch over the initial one, seconds per optimizer step with accumulation)."""
        app = self.app
        if not isinstance(app, PolluxApp):
            raise TypeError("a live job's agent measures its job; only the job model's can be stepped")
        batch = self.batch_size(replicas)
        times = app.step_times(shape, self.atomic_bsz)
        if times is None:
            raise InputError(
                f"{app.name}: no step time for placement {shape} at per-GPU batch {self.atomic_bsz}",
                field="placement",
            )
        step, sync = times
        grad = app.grad_stats(batch, self.epoch)
        scale = batch / app.init_batch_size
        gain = (grad[1] + grad[0]) / (grad[1] / scale + grad[0])
        return step, sync, grad, gain, step + (step - sync) * self.accum_steps

    def speed(self, placement: tuple[int, ...]) -> tuple[float, float]:
        """(throughput in samples per second, statistical efficiency) at the current batch on ``placement``: Pollux's
        goodput is their product, in samples of the initial batch's worth per second (Qiao et al. sec. 3.1-3.2;
        efficiency = gain / (batch / initial batch), 1 at the initial batch)."""
        counts = tuple(c for c in placement if c > 0)
        replicas = sum(counts)
        _, _, _, gain, iteration = self._iteration(node_order_shape(counts), replicas)
        batch = self.batch_size(replicas)
        return batch / iteration * self.app.calibration, gain * self.app.init_batch_size / batch

    def record(self, nodes: int, replicas: int, step: float, sync: float) -> None:
        """A live measurement of the current configuration (adaptdl's profile): kept, the latest for a configuration
        measured again, and the throughput model refitted when it is new or its times moved by more than
        :data:`REFIT_CHANGE` of its step time (a worker reports running averages many times a second)."""
        key = (nodes, replicas, self.atomic_bsz)
        old = self.profile.get(key)
        if old is not None and max(abs(old[0] - step), abs(old[1] - sync)) <= REFIT_CHANGE * old[0]:
            return
        self.profile[key] = (step, sync)
        self.perf = _fit(tuple(self.profile.items()), self.fit_tol)

    def step(self, placement: tuple[int, ...], start: float, seconds: float, delay: float = 0.0) -> None:
        """Advance ``seconds`` from ``start`` on ``placement`` (GPUs per node), the first ``delay`` of them idle."""
        if self.done:
            return
        app = self.app
        if not isinstance(app, PolluxApp):
            raise TypeError("a live job's agent measures its job; only the job model's can be stepped")
        now = start + min(delay, seconds)
        seconds -= min(delay, seconds)
        counts = tuple(c for c in placement if c > 0)
        nodes, replicas = len(counts), sum(counts)
        shape = node_order_shape(counts)
        while seconds > 0 and not self.done:
            step, sync, grad, gain, iteration = self._iteration(shape, replicas)
            self._measure(nodes, replicas, step, sync, grad)
            goodput = gain / iteration * app.calibration
            target = app.progress_at(self.epoch + 1)
            if self.progress + goodput * seconds < target:
                self.progress += goodput * seconds
                now += seconds
                seconds = 0
            else:
                self.epoch += 1
                delta = round(float((target - self.progress) / goodput))
                if self.epoch >= app.max_epochs:
                    self.completion = now + delta
                self.progress = target
                now += delta
                seconds -= delta
            self.pick_batch(placement)
