"""Pollux's job model (Qiao et al., OSDI'21, sec. 5.1 and its artifact's simulator), as a profile source.

Problem: replay Pollux's workloads with the job progress of Pollux's own simulator (petuum/adaptdl, branch
``osdi21-artifact``, ``simulator/simulator.py`` and ``applications.py``; facts in the shared data's README). Each
application (``bert``, ``cifar10``, ...) ships measured tables in ``<traces>/<app>/``:

- ``placements.csv``: step and gradient-sync time (s) per *placement shape* and per-GPU batch (``local_bsz``);
- ``scalability.csv``: the same per (nodes, GPUs) for 6-16 nodes;
- ``validation-<batch>.csv``: per epoch, the progress reached and the gradient statistics at that batch size.

A job is ``(application, batch size, GPUs)``. Its per-GPU batch is ``ceil(batch / GPUs)``, split into gradient
accumulation steps when it exceeds the application's largest local batch (a one-GPU job above the initial batch
always accumulates once). One step takes ``step + accum x (step - sync)`` seconds on its placement and earns
``gain = (var + sqr) / (var / scale + sqr)`` units of progress, ``scale = batch / initial batch``, with ``sqr``
and ``var`` read for the current epoch and interpolated between the validated batch sizes. A job ends after
``max_epochs`` epochs, whose ends are the smallest progress any validated batch size reached.

Mapping onto gpuweave's model (exact, not approximated): under a fixed batch size and GPU count the gain depends
on the epoch only and the step time on the placement only, so *steps* measure a job's advance independently of
where it runs. ``work`` is therefore the job's total steps, ``sum over epochs (progress span / gain)``, and the
rate on a placement is ``1 / step time`` (steps/s). Rates depend on the placement's *shape*: the GPUs per node in
the descending order in which Pollux's greedy allocator takes them, turned to its lexicographically smallest
rotation (``(4, 2)`` is written ``"24"``). A measured shape interpolates linearly over ``local_bsz``; any other
is interpolated over (nodes capped at 16, GPUs, ``local_bsz``) as Pollux does: linearly on the simplex of the
points' 3-D Delaunay triangulation that holds it (:class:`SizeSurface`; the points are the placements table's means
per (nodes, GPUs, local batch) and the scalability table's rows, in Pollux's order, triangulated by qhull as
scipy's ``LinearNDInterpolator`` does there). A separable interpolation between neighbouring node and GPU counts
agrees at measured (nodes, GPUs) pairs only: 2 % off per step for 48 GPUs on 14 nodes, none for 20 GPUs on 5.
The epochs' ends in steps (:meth:`PolluxJobModel.epoch_steps`) let the simulator round each epoch's end as
Pollux's simulator does (:mod:`gpuweave.cluster.epoch_rounding`).

Job types are ``"<app> (batch size <B>)"``; :meth:`PolluxJobModel.job_types` lists the validated batch sizes
(the ones Pollux's workload generator chooses from). The model stands for one homogeneous GPU model.

Complexity: loading is O(table rows); a rate is O(log rows) once per (job type, shape), then cached (the
triangulation of an application's points, O(n log n), is built at its first unmeasured shape); ``work`` is
O(epochs x log batch sizes).
"""

from __future__ import annotations

import bisect
import csv
import io
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from gpuweave.errors import InputError, MissingProfileError
from gpuweave.files import check_unique_columns, csv_rows
from gpuweave.workload.goodput import gain
from gpuweave.workload.traces._tables import read_text

APP_CONSTANTS = "pollux_apps.csv"
# Pollux's simulator caps the node count of an unmeasured placement at its largest scalability row.
MAX_NODES = 16
DEFAULT_GPU_MODEL = "T4"  # Pollux's testbed: 16 nodes x 4 T4 GPUs (AWS g4dn.12xlarge)


def job_type_name(application: str, batch_size: int) -> str:
    """The job type of a Pollux job: ``"cifar10 (batch size 2048)"``."""
    return f"{application} (batch size {int(batch_size)})"


def parse_job_type(job_type: str) -> tuple[str, int] | None:
    """``(application, batch size)`` of a Pollux job type, None if it is not one."""
    app, sep, rest = job_type.partition(" (batch size ")
    if not sep or not rest.endswith(")") or not rest[:-1].isdigit():
        return None
    return app, int(rest[:-1])


def placement_shape(counts: Iterable[int]) -> tuple[int, ...]:
    """GPUs per node, descending (Pollux's greedy order), as the lexicographically smallest rotation."""
    ordered = tuple(sorted((c for c in counts if c > 0), reverse=True))
    return min(ordered[i:] + ordered[:i] for i in range(len(ordered)))


def node_order_shape(counts: Iterable[int]) -> tuple[int, ...]:
    """GPUs per node in node order, zeros dropped, as the smallest rotation (how Pollux's and Sia's simulators key
    their tables for a placement they are given)."""
    kept = tuple(c for c in counts if c > 0)
    return min(kept[i:] + kept[:i] for i in range(len(kept)))


def packed_counts(gpus: int, per_node: int) -> tuple[int, ...]:
    """GPUs per node of ``gpus`` packed on full nodes of ``per_node``: ``(4, 4, 2)`` for 10 on 4-GPU nodes."""
    return (per_node,) * (gpus // per_node) + ((gpus % per_node,) if gpus % per_node else ())


@dataclass(frozen=True, slots=True)
class StepCurve:
    """Step and sync time (s) over ascending local batch sizes; linear in between, nothing outside."""

    local_bsz: np.ndarray
    step_time: np.ndarray
    sync_time: np.ndarray

    def at(self, local_bsz: float) -> tuple[float, float] | None:
        x = self.local_bsz
        if not x[0] <= local_bsz <= x[-1]:
            return None
        return float(np.interp(local_bsz, x, self.step_time)), float(np.interp(local_bsz, x, self.sync_time))


@dataclass(slots=True)
class SizeSurface:
    """Step and sync time (s) over (nodes, GPUs, local batch), linear on each simplex of the points' Delaunay
    triangulation (qhull's, through scipy: Pollux's ``LinearNDInterpolator``), nothing outside their hull.

    ``points`` are in Pollux's order (the placements table's means by (nodes, GPUs, local batch), ascending, then
    the scalability table's rows as written): where points are co-spherical, the triangulation qhull picks depends
    on it."""

    points: np.ndarray  # (n, 3): nodes, GPUs, local batch
    values: np.ndarray  # (n, 2): step time, sync time
    _interpolate: object = field(default=None, init=False, repr=False)

    def gpu_counts(self) -> tuple[int, ...]:
        return tuple(sorted({int(g) for g in self.points[:, 1]}))

    def at(self, nodes: int, gpus: int, local_bsz: float) -> tuple[float, float] | None:
        if self._interpolate is None:
            from scipy.interpolate import LinearNDInterpolator  # scipy loads in ~0.2 s: only when a shape needs it

            self._interpolate = LinearNDInterpolator(self.points, self.values)
        step, sync = self._interpolate([[nodes, gpus, local_bsz]])[0]  # type: ignore[operator]
        if not (np.isfinite(step) and np.isfinite(sync)):
            return None
        return float(step), float(sync)


@dataclass(frozen=True, slots=True)
class BatchPlan:
    """How a job of a given batch size runs on its GPUs: per-GPU batch, accumulation steps, effective batch."""

    atomic_bsz: int
    accum_steps: int
    batch_size: int


class BatchRules:
    """Pollux's batch rules on an application's batch limits (a :class:`PolluxApp`'s, from its tables, or a live
    job's :class:`BatchLimits`)."""

    __slots__ = ()
    init_batch_size: int
    max_batch_size: int
    min_local_bsz: int
    max_local_bsz: int
    replica_cap: int | None

    def batch_plan(self, batch_size: int, replicas: int, *, alone_accumulates: bool = False) -> BatchPlan:
        """Per-GPU batch and accumulation steps of ``batch_size`` on ``replicas`` GPUs (Pollux's rules): accumulate
        above the largest per-GPU batch; a single GPU accumulates at least once above the initial batch, or always
        with ``alone_accumulates`` (how Optimus predicts it in Pollux's simulator); never above the largest batch."""
        local = -(-batch_size // replicas)
        accum = -(-local // self.max_local_bsz) - 1
        if replicas == 1 and (alone_accumulates or batch_size > self.init_batch_size):
            accum = max(1, accum)
        atomic = -(-local // (accum + 1))
        atomic = min(atomic, self.max_batch_size // (replicas * (accum + 1)))
        return BatchPlan(atomic, accum, replicas * atomic * (accum + 1))

    def max_replicas(self, batch_size: int) -> int:
        """The most GPUs an elastic job of ``batch_size`` may take: each needs the smallest local batch; Pollux's
        simulator caps some applications (ncf at 1)."""
        most = max(1, batch_size // self.min_local_bsz)
        return most if self.replica_cap is None else min(most, self.replica_cap)


@dataclass(frozen=True, slots=True)
class BatchLimits(BatchRules):
    """The batch sizes an adaptive job may run at, without the job model's tables: a live job's (its trace's
    ``batch_size``, ``max_batch_size``, ``min_local_bsz``, ``max_local_bsz``), which its agent
    (:class:`~gpuweave.workload.pollux_agent.AgentState`) picks from as a :class:`PolluxApp`'s."""

    name: str
    init_batch_size: int
    max_batch_size: int
    min_local_bsz: int
    max_local_bsz: int
    replica_cap: int | None = None
    per_placement_limits: bool = False  # Sia's per-placement rule needs the tables
    calibration: float = 1.0

    def placement_batch_plan(
        self, batch_size: int, counts: tuple[int, ...], *, alone_accumulates: bool = False, capped: bool = True
    ) -> BatchPlan:
        return self.batch_plan(batch_size, sum(counts), alone_accumulates=alone_accumulates)


@dataclass(frozen=True, slots=True)
class Validation:
    """One validated batch size: per epoch, the progress reached at its end and the gradient statistics."""

    progress: np.ndarray
    grad_sqr: np.ndarray
    grad_var: np.ndarray
    iteration: np.ndarray | None = None  # steps taken by each epoch's end (Optimus' remaining work); optional


@dataclass(slots=True)
class PolluxApp(BatchRules):
    """One application's tables and constants."""

    name: str
    max_epochs: int
    max_local_bsz: int
    by_shape: dict[tuple[int, ...], StepCurve]
    by_size: SizeSurface  # any other shape, by (nodes, GPUs, local batch)
    validation: dict[int, Validation]  # ascending batch sizes
    replica_cap: int | None = None  # Pollux's simulator's cap on an elastic job's GPUs (ncf: 1), None: none
    # Sia's simulator (:mod:`gpuweave.workload.sia`): a job's progress multiplied by its calibration (1 / the
    # application's slowdown), and a batch split by the largest local batch measured on its placement
    # (:meth:`placement_batch_plan`)
    calibration: float = 1.0
    scalability: np.ndarray | None = None  # (n, 3): nodes, GPUs, local batch of the scalability rows
    per_placement_limits: bool = False
    init_batch_size: int = field(init=False)
    max_batch_size: int = field(init=False)
    min_local_bsz: int = field(init=False)
    _ends: np.ndarray | None = field(default=None, init=False, repr=False)
    _memory_caps: dict[int, int] | None = field(default=None, init=False, repr=False)  # GPUs -> largest local batch
    # (shape, local batch) -> (step, sync): Pollux's simulator memoizes its throughput look-ups too; an adaptive
    # job asks the same one every interval, and an unmeasured shape's interpolation can take milliseconds
    _times: dict[tuple[tuple[int, ...], float], tuple[float, float] | None] = field(
        default_factory=dict, init=False, repr=False
    )

    def __post_init__(self) -> None:
        self.init_batch_size = min(self.validation)
        self.max_batch_size = max(self.validation)
        self.min_local_bsz = int(min(float(c.local_bsz[0]) for c in self.by_shape.values()))

    # ------------------------------------------------------------------ batch sizes
    def placement_batch_plan(
        self, batch_size: int, counts: tuple[int, ...], *, alone_accumulates: bool = False, capped: bool = True
    ) -> BatchPlan:
        """A given ``batch_size`` split on GPUs ``counts`` per node: :meth:`batch_plan`, or with
        ``per_placement_limits`` Sia's rule: accumulate above the largest local batch measured on this placement
        (else on the scalability rows with at least its nodes and GPUs), cap the per-GPU batch at the largest
        measured for this GPU count (not with ``capped`` False: how Sia's Gavel predicts it), then at the largest
        batch (Sia's ``Job.update_local_bsz``). ``alone_accumulates``: one GPU always accumulates at least once."""
        replicas = sum(counts)
        if not self.per_placement_limits:
            return self.batch_plan(batch_size, replicas, alone_accumulates=alone_accumulates)
        local = -(-batch_size // replicas)
        most = self.placement_max_local_bsz(counts)
        accum = math.ceil(local / most - 1e-8) - 1
        if replicas == 1 and (alone_accumulates or batch_size > self.init_batch_size):
            accum = max(1, accum)
        atomic = math.ceil(local / (accum + 1) - 1e-8)
        if capped:
            atomic = self.memory_cap(atomic, replicas)
        atomic = min(atomic, int(self.max_batch_size / (replicas * (accum + 1))))
        return BatchPlan(atomic, accum, replicas * atomic * (accum + 1))

    def memory_cap(self, atomic_bsz: int, replicas: int) -> int:
        """``atomic_bsz`` capped at the largest local batch measured on any placement of ``replicas`` GPUs (Sia's
        memory rule; unchanged for a GPU count the placements table never measured)."""
        caps = self._memory_caps
        if caps is None:
            caps = self._memory_caps = {}
            for shape, curve in self.by_shape.items():
                caps[sum(shape)] = max(caps.get(sum(shape), 0), int(curve.local_bsz[-1]))
        cap = caps.get(replicas)
        return atomic_bsz if cap is None else min(atomic_bsz, cap)

    def placement_max_local_bsz(self, counts: tuple[int, ...]) -> float:
        """The largest local batch measured on GPUs ``counts`` per node (node order, rotated as the tables are
        keyed), else on the scalability rows with at least as many nodes and GPUs (Sia's ``get_max_local_bsz``)."""
        shape = node_order_shape(counts)
        curve = self.by_shape.get(shape)
        if curve is not None:
            return float(curve.local_bsz[-1])
        rows = self.scalability
        if rows is not None:
            fit = rows[(rows[:, 0] >= len(shape)) & (rows[:, 1] >= sum(shape))]
            if len(fit):
                return float(fit[:, 2].max())
        raise InputError(f"{self.name}: no measured local batch for placement {shape}", field="placement")

    def _bracket(self, batch_size: int) -> tuple[int, int]:
        sizes = list(self.validation)
        if not sizes[0] <= batch_size <= sizes[-1]:
            raise InputError(
                f"{self.name}: batch size {batch_size} outside the validated {sizes[0]}..{sizes[-1]}",
                field="batch_size",
            )
        upper = sizes[bisect.bisect_left(sizes, batch_size)]
        lower = sizes[bisect.bisect_right(sizes, batch_size) - 1]
        return lower, upper

    def epoch_ends(self) -> np.ndarray:
        """Progress at the end of epochs 1..max_epochs: the least any validated batch size reached."""
        return np.min(np.stack([v.progress[: self.max_epochs] for v in self.validation.values()]), axis=0)

    def progress_at(self, epoch: int) -> float:
        """Progress at the end of epoch ``epoch`` (1-based; 0 at the start), Pollux's ``get_progress``."""
        if epoch == 0:
            return 0.0
        ends = self._ends
        if ends is None:
            ends = self._ends = self.epoch_ends()
        return float(ends[epoch - 1])

    def grad_stats(self, batch_size: int, epoch: int) -> tuple[float, float]:
        """(grad_sqr, grad_var) during epoch index ``epoch`` at ``batch_size``, linear between the validated batch
        sizes around it (Pollux's ``get_grad_stats``)."""
        lower, upper = self._bracket(batch_size)
        lo, hi = self.validation[lower], self.validation[upper]
        if lower == upper:
            return float(lo.grad_sqr[epoch]), float(lo.grad_var[epoch])
        w = (batch_size - lower) / (upper - lower)
        return (
            float((1 - w) * lo.grad_sqr[epoch] + w * hi.grad_sqr[epoch]),
            float((1 - w) * lo.grad_var[epoch] + w * hi.grad_var[epoch]),
        )

    def gains(self, batch_size: int) -> np.ndarray:
        """Statistical-efficiency gain of each epoch at an effective ``batch_size``."""
        lower, upper = self._bracket(batch_size)
        lo, hi = self.validation[lower], self.validation[upper]
        w = 0.0 if upper == lower else (batch_size - lower) / (upper - lower)
        sqr = (1 - w) * lo.grad_sqr[: self.max_epochs] + w * hi.grad_sqr[: self.max_epochs]
        var = (1 - w) * lo.grad_var[: self.max_epochs] + w * hi.grad_var[: self.max_epochs]
        return gain(sqr, var, batch_size / self.init_batch_size)

    def work(self, batch_size: int, replicas: int) -> float:
        """Steps a job takes to finish ``max_epochs`` epochs: per epoch, its progress span over its gain."""
        return float(np.sum(self._epoch_spans(batch_size, replicas)))

    def epoch_steps(self, batch_size: int, replicas: int) -> list[float]:
        """Steps done at the end of each epoch, the last one :meth:`work` (up to rounding)."""
        return np.cumsum(self._epoch_spans(batch_size, replicas)).tolist()

    def _epoch_spans(self, batch_size: int, replicas: int) -> np.ndarray:
        """Steps per epoch: the epoch's progress span over its gain at the effective batch."""
        plan = self.batch_plan(batch_size, replicas)
        ends = self.epoch_ends()
        spans = np.diff(np.concatenate(([0.0], ends)))
        return spans / self.gains(plan.batch_size)

    def epoch_gains(self, batch_size: int, replicas: int) -> np.ndarray:
        """Each epoch's gain at the effective batch ``batch_size`` takes on ``replicas`` GPUs."""
        return self.gains(self.batch_plan(batch_size, replicas).batch_size)

    # ------------------------------------------------------------------ Optimus' oracle (Pollux's optimus.py)
    def iterations(self, batch_size: int, epoch: int) -> float:
        """Steps the validation run had taken by the end of epoch index ``epoch``, linear between the validated
        batch sizes around ``batch_size`` (Pollux's ``get_iteration``)."""
        lower, upper = self._bracket(batch_size)
        lo, hi = self.validation[lower].iteration, self.validation[upper].iteration
        if lo is None or hi is None:
            raise InputError(f"{self.name}: the validation tables have no 'iteration' column", field="iteration")
        if lower == upper:
            return float(lo[epoch])
        return float(((batch_size - lower) * hi[epoch] + (upper - batch_size) * lo[epoch]) / (upper - lower))

    def packed_step_time(self, batch_size: int, replicas: int, gpus_per_node: int) -> float | None:
        """Seconds per step of ``batch_size`` on ``replicas`` GPUs packed on full nodes, as Optimus predicts it in
        Pollux's simulator: one GPU always accumulates at least once; None where the tables cannot answer."""
        plan = self.batch_plan(batch_size, replicas, alone_accumulates=True)
        times = self.step_times(placement_shape(packed_counts(replicas, gpus_per_node)), plan.atomic_bsz)
        if times is None:
            return None
        step, sync = times
        return step + (step - sync) * plan.accum_steps

    # ------------------------------------------------------------------ speed
    def step_times(self, shape: tuple[int, ...], local_bsz: int) -> tuple[float, float] | None:
        """(step, sync) seconds on ``shape`` at ``local_bsz``; None outside the measured ranges."""
        key = (shape, local_bsz)
        if key in self._times:
            return self._times[key]
        curve = self.by_shape.get(shape)
        if curve is not None:
            found = curve.at(local_bsz)
        else:
            found = self.by_size.at(min(len(shape), MAX_NODES), sum(shape), local_bsz)
        self._times[key] = found
        return found

    def rate(self, batch_size: int, counts: tuple[int, ...]) -> float:
        """Steps/s of a job of ``batch_size`` on GPUs ``counts`` per node; 0.0 where the tables say nothing."""
        shape = placement_shape(counts)
        plan = self.batch_plan(batch_size, sum(shape))
        times = self.step_times(shape, plan.atomic_bsz)
        if times is None:
            return 0.0
        step, sync = times
        return 1.0 / (step + plan.accum_steps * (step - sync))


class PolluxJobModel:
    """A profile source over Pollux's application traces: rates per placement shape, work per job.

    It answers :meth:`rate` like :class:`~gpuweave.workload.profiles.ProfileStore` (consolidated = one node,
    unconsolidated = packed on full nodes of ``gpus_per_node``) and :meth:`placement_rate` with the exact
    per-node counts, which the simulator uses whenever a profile source offers it.
    """

    extrapolate = False

    def __init__(
        self, apps: dict[str, PolluxApp], *, source: str, gpu_model: str = DEFAULT_GPU_MODEL, gpus_per_node: int = 4
    ) -> None:
        self.apps = apps
        self.source = source
        self.gpu_model = gpu_model
        self.gpus_per_node = gpus_per_node
        self._rates: dict[tuple[str, tuple[int, ...]], float] = {}
        self._job_types = tuple(sorted(job_type_name(a, b) for a, app in apps.items() for b in app.validation))

    def app_of(self, job_type: str) -> tuple[PolluxApp, int]:
        parsed = parse_job_type(job_type)
        if parsed is None or parsed[0] not in self.apps:
            raise MissingProfileError(f"unknown job type {job_type!r}", file=self.source, field="job_type")
        return self.apps[parsed[0]], parsed[1]

    def placement_rate(self, job_type: str, gpu_model: str, counts: tuple[int, ...]) -> float:
        """Steps/s on GPUs ``counts`` per node of ``gpu_model``; 0.0 = the tables cannot answer (do not place)."""
        if gpu_model != self.gpu_model:
            return 0.0
        key = (job_type, placement_shape(counts))
        value = self._rates.get(key)
        if value is None:
            app, batch_size = self.app_of(job_type)
            value = self._rates[key] = app.rate(batch_size, key[1])
        return value

    def rate(self, job_type: str, gpu_model: str, num_gpus: int, consolidated: bool) -> float:
        counts = (num_gpus,) if consolidated or num_gpus == 1 else packed_counts(num_gpus, self.gpus_per_node)
        return self.placement_rate(job_type, gpu_model, counts)

    def has(self, job_type: str, gpu_model: str, num_gpus: int, consolidated: bool | None = None) -> bool:
        return job_type in self and gpu_model == self.gpu_model

    def work(self, job_type: str, num_gpus: int) -> float:
        """Steps a job of ``job_type`` on ``num_gpus`` GPUs takes to finish (see the module docstring)."""
        app, batch_size = self.app_of(job_type)
        return app.work(batch_size, num_gpus)

    def epoch_steps(self, job_type: str, num_gpus: int) -> list[float]:
        """Steps done at the end of each epoch of a job of ``job_type`` on ``num_gpus`` GPUs (its work last)."""
        app, batch_size = self.app_of(job_type)
        return app.epoch_steps(batch_size, num_gpus)

    def epoch_step_factors(self, job_type: str, num_gpus: int, gpus: int) -> list[float]:
        """Per epoch, what one step on ``gpus`` GPUs is worth in steps on ``num_gpus``: the ratio of the epoch's
        gains at the two effective batches (an elastic job's work is counted in steps at its trace's size)."""
        app, batch_size = self.app_of(job_type)
        return (app.epoch_gains(batch_size, gpus) / app.epoch_gains(batch_size, num_gpus)).tolist()

    def optimus_remaining(self, job_type: str, epoch: int) -> float:
        """Optimus' remaining steps after ``epoch`` finished epochs (Pollux's ``optimus.py``: the validation run's
        steps from that epoch to the completion epoch, 1 once there)."""
        app, batch_size = self.app_of(job_type)
        last = app.max_epochs - 1
        if last <= epoch:
            return 1.0
        return app.iterations(batch_size, last) - app.iterations(batch_size, epoch)

    def optimus_step_time(self, job_type: str, replicas: int) -> float | None:
        """Optimus' predicted seconds per step of ``job_type`` on ``replicas`` GPUs packed on full nodes."""
        app, batch_size = self.app_of(job_type)
        return app.packed_step_time(batch_size, replicas, self.gpus_per_node)

    def max_replicas(self, job_type: str) -> int:
        """The most GPUs an elastic job of ``job_type`` may take (see :meth:`PolluxApp.max_replicas`)."""
        app, batch_size = self.app_of(job_type)
        return app.max_replicas(batch_size)

    def job_types(self) -> tuple[str, ...]:
        return self._job_types

    def gpu_models(self) -> tuple[str, ...]:
        return (self.gpu_model,)

    def scale_factors(self, job_type: str) -> tuple[int, ...]:
        app, _ = self.app_of(job_type)
        return app.by_size.gpu_counts()

    def __contains__(self, job_type: object) -> bool:
        parsed = parse_job_type(job_type) if isinstance(job_type, str) else None
        return parsed is not None and parsed[0] in self.apps

    def __len__(self) -> int:
        return len(self._job_types)

    def __repr__(self) -> str:
        return f"PolluxJobModel({sorted(self.apps)}, GPU {self.gpu_model}, source={self.source!r})"


# --------------------------------------------------------------------- loading
def is_pollux_traces(path: str | Path) -> bool:
    """True for a directory holding at least one ``<app>/placements.csv``."""
    folder = Path(path)
    return folder.is_dir() and any(folder.glob("*/placements.csv"))


def _rows(path: Path, columns: tuple[str, ...], optional: tuple[str, ...] = ()) -> list[list[float]]:
    """Numeric rows of a CSV with the named columns, in that order, then those of ``optional`` the file has;
    InputError naming file, row and column."""
    reader = csv_rows(io.StringIO(read_text(path)), file=path)
    header = [name.strip() for name in next(reader, [])]
    check_unique_columns(header, file=path)
    missing = [c for c in columns if c not in header]
    if missing:
        raise InputError(
            f"missing column '{missing[0]}' (expected {', '.join(columns)})", file=path, row=0, field=missing[0]
        )
    columns = columns + tuple(c for c in optional if c in header)
    index = [header.index(c) for c in columns]
    rows = []
    for number, record in enumerate(reader, start=1):
        if not record:
            continue
        try:
            rows.append([float(record[i]) for i in index])
        except (ValueError, IndexError):
            raise InputError(f"expected numbers in {', '.join(columns)}", file=path, row=number) from None
    return rows


def _curves(groups: dict, what: Path) -> dict:
    """Mean step/sync time per (key, local_bsz), as one ascending curve per key."""
    out = {}
    for key, points in groups.items():
        by_bsz: dict[float, list[tuple[float, float]]] = {}
        for bsz, step, sync in points:
            by_bsz.setdefault(bsz, []).append((step, sync))
        xs = sorted(by_bsz)
        steps = [sum(s for s, _ in by_bsz[x]) / len(by_bsz[x]) for x in xs]
        syncs = [sum(s for _, s in by_bsz[x]) / len(by_bsz[x]) for x in xs]
        out[key] = StepCurve(np.array(xs), np.array(steps), np.array(syncs))
    if not out:
        raise InputError("no measurements", file=what)
    return out


def _app_constants() -> dict[str, tuple[int, int | None, int | None]]:
    """``{application: (max_epochs, max_local_bsz or None, replica cap or None)}`` from the bundled table."""
    text = resources.files("gpuweave.workload").joinpath("data", APP_CONSTANTS).read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    out = {}
    for record in list(csv.DictReader(lines)):
        local, cap = record["max_local_bsz"].strip(), record["max_replicas"].strip()
        out[record["application"]] = (
            int(record["max_epochs"]),
            int(local) if local else None,
            int(cap) if cap else None,
        )
    return out


def load_app(
    folder: Path, constants: tuple[int, int | None, int | None] | None = None, *, suffix: str = ""
) -> PolluxApp:
    """One application's tables from ``folder`` (``placements.csv``, ``scalability.csv``, ``validation-*.csv``;
    with ``suffix`` ``-aws``: ``placements-aws.csv`` and ``scalability-aws.csv``, Sia's per-GPU-type tables)."""
    shapes: dict[tuple[int, ...], list] = {}
    sizes: dict[tuple[int, int, float], list[tuple[float, float]]] = {}
    for shape_id, bsz, step, sync in _rows(
        folder / f"placements{suffix}.csv", ("placement", "local_bsz", "step_time", "sync_time")
    ):
        shape = tuple(int(d) for d in str(int(shape_id)))
        shapes.setdefault(shape, []).append((bsz, step, sync))
        sizes.setdefault((len(shape), sum(shape), bsz), []).append((step, sync))
    # Pollux's points: the placements' means by (nodes, GPUs, local batch), ascending, then the scalability rows.
    points = [key for key in sorted(sizes)]
    values = [tuple(float(np.mean(column)) for column in zip(*sizes[key])) for key in points]
    scalability = folder / f"scalability{suffix}.csv"
    scalability_rows = []
    if scalability.exists():
        for nodes, gpus, bsz, step, sync in _rows(
            scalability, ("num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time")
        ):
            points.append((int(nodes), int(gpus), bsz))
            values.append((step, sync))
            scalability_rows.append((nodes, gpus, bsz))
    validation = {}
    for path in sorted(folder.glob("validation-*.csv")):
        batch = path.stem.removeprefix("validation-")
        if not batch.isdigit():
            raise InputError("expected validation-<batch size>.csv", file=path)
        table = np.array(_rows(path, ("progress", "grad_sqr", "grad_var"), optional=("iteration",)))
        iteration = table[:, 3] if table.ndim == 2 and table.shape[1] == 4 else None
        validation[int(batch)] = Validation(table[:, 0], table[:, 1], table[:, 2], iteration)
    if not validation:
        raise InputError("no validation-<batch size>.csv files", file=folder)
    max_epochs, max_local, cap = constants or (None, None, None)
    by_shape = _curves(shapes, folder / f"placements{suffix}.csv")
    epochs = min(len(v.progress) for v in validation.values())
    if max_epochs is not None and max_epochs > epochs:
        raise InputError(f"{folder.name}: {max_epochs} epochs configured, validation tables have {epochs}", file=folder)
    return PolluxApp(
        name=folder.name,
        max_epochs=max_epochs or epochs,
        max_local_bsz=max_local or int(max(float(c.local_bsz[-1]) for c in by_shape.values())),
        by_shape=by_shape,
        by_size=SizeSurface(np.array(points, dtype=float), np.array(values, dtype=float)),
        validation=dict(sorted(validation.items())),
        replica_cap=cap,
        scalability=np.array(scalability_rows, dtype=float).reshape(-1, 3),
    )


def load_pollux_job_model(path: str | Path, *, gpu_model: str = DEFAULT_GPU_MODEL) -> PolluxJobModel:
    """The job model of every application under ``path`` (Pollux's ``simulator/traces`` layout).

    Loaded once per process while its files stay the same (their sizes and modification times): an import and the
    simulation after it, or a crosscheck's runs, share one model and its caches (rates, triangulations)."""
    folder = Path(path)
    if not is_pollux_traces(folder):
        raise InputError("not a Pollux traces directory: expected <app>/placements.csv inside", file=folder)
    files = sorted(p for p in folder.glob("*/*.csv") if p.is_file())
    stamp = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files)
    key = (str(folder.resolve()), gpu_model)
    cached = _LOADED.get(key)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    constants = _app_constants()
    apps = {}
    for placements in sorted(folder.glob("*/placements.csv")):
        app_dir = placements.parent
        apps[app_dir.name] = load_app(app_dir, constants.get(app_dir.name))
    model = PolluxJobModel(apps, source=str(folder), gpu_model=gpu_model)
    _LOADED[key] = (stamp, model)
    return model


_LOADED: dict[tuple[str, str], tuple[tuple[tuple[str, int, int], ...], PolluxJobModel]] = {}
