"""The clock of Pollux's adaptive jobs: each job's own agent picks its batch, stepped per interval as in Pollux.

Problem: run Pollux's policy against Pollux's simulator's job behaviour (petuum/adaptdl branch
``osdi21-artifact``, ``simulator/simulator.py``; Qiao et al., OSDI'21 sec. 5.1) on gpuweave's event clock. Under
Pollux a job's progress on a placement depends on the batch its agent picks, which depends on what the agent has
measured so far (:mod:`gpuweave.workload.pollux_agent`), so progress is no longer a rate times time: it is the
agent stepped interval by interval. This clock keeps, per job, the agent's state when the job last stopped and,
for the job's current placement, its *trajectory*: the agent's state at the start of each interval (the policy's
round grid) from the placement's start, computed on demand as far as a question needs (a completion prediction
walks to the job's end; a tick's questions to the tick). A placement that never changes unfolds exactly as
predicted, so nothing is stepped twice; a stop commits the state at that time and a new placement starts a new
trajectory from it (with Pollux's ``reallocate``: a new batch, one more restart). It answers the book and the
view as :class:`~gpuweave.cluster.epoch_rounding.EpochRounding` does (``progress``, ``stop``, ``finish``,
``epochs_done``) and the policy's question :meth:`agent`: the job's agent now (its goodput model, its restarts).

Records: when a placement ends (a stop or the completion), each interval it ran becomes an :class:`Adaptation`
row (:attr:`AdaptiveClock.adaptations`, handed to the run's sink like the allocation changes; ``adaptation.csv``):
the job's GPUs, batch and accumulation, and its throughput, statistical efficiency and goodput at the interval's
start, as Pollux's simulator logs each interval.

Work units: the book counts a job's work in steps at its trace's batch on its trace's GPUs; Pollux's agent in
progress units. They agree at every epoch end (:meth:`PolluxJobModel.epoch_steps` there) and are linear in
between (within an epoch at a fixed batch each is proportional to the other).

Complexity: per job and placement, O(intervals run) agent steps in all, each O(epochs crossed) plus a refit per
new configuration; a query inside an interval steps one partial interval from its start.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from gpuweave.errors import InputError
from gpuweave.workload.pollux import PolluxJobModel
from gpuweave.workload.pollux_agent import AgentState
from gpuweave.workload.sia import SIA_FIT_TOL, SiaJobModel

if TYPE_CHECKING:
    from gpuweave.cluster.state import JobState

MAX_INTERVALS = 10_000_000  # a job that would step longer than this is stuck: raise rather than loop


class Adaptation(NamedTuple):
    """One interval of an adaptive job on one placement, as its agent began it (``adaptation.csv``'s row)."""

    start: float  # the interval's start (the placement's start, then the round grid)
    end: float  # its end, or the placement's, whichever is first
    job_id: str
    gpu_model: str | None  # the placement's GPU type (Sia's job model), else None
    nodes: int
    gpus: int
    batch_size: int  # the global batch: GPUs x per-GPU batch x (accumulation steps + 1)
    atomic_bsz: int  # per GPU and step
    accum_steps: int  # gradient accumulation steps before each optimizer step
    epoch: int
    idle: float  # seconds of the interval in the placement's re-scale delay
    throughput: float  # samples per second once running
    efficiency: float  # statistical efficiency of the batch (1 at the job's initial batch)

    @property
    def goodput(self) -> float:
        """Samples per second, in samples of the initial batch's worth (Pollux's goodput)."""
        return self.throughput * self.efficiency


@dataclass(slots=True)
class _Trajectory:
    version: int
    start: float  # when the placement began (its first interval starts here)
    productive: float  # when the re-scale delay ends
    counts: tuple[int, ...]  # GPUs per node, in node order
    gpu_model: str | None  # the placement's GPU type (Sia's job model), else None
    bounds: list[float]  # interval starts
    states: list[AgentState]  # the agent at each interval start


class AdaptiveClock:
    """Progress of adaptive (Pollux) jobs by their agents (see the module docstring)."""

    __slots__ = (
        "_model",
        "grid",
        "_targets",
        "_agents",
        "_runs",
        "_maps",
        "_node_models",
        "_rigid",
        "_stopped",
        "adaptations",
    )

    def __init__(
        self,
        model: PolluxJobModel,
        grid: float,
        targets: dict[str, int] | None = None,
        *,
        node_models: list[str] | None = None,
        rigid: bool = False,
    ) -> None:
        """``targets``: application -> fixed batch (Pollux's simulator: ncf 32768); ``rigid``: every job keeps
        its job type's batch and learns nothing (Sia's Gavel); ``node_models``: each node's GPU model, needed
        with Sia's job model (:class:`~gpuweave.workload.sia.SiaJobModel`), whose jobs run on the type's tables
        and idle for their application's re-scale time, which the clock then charges (the book's delays are
        not used), except on a move that keeps the GPUs per node on the same type (Sia charges nothing there)."""
        if not grid > 0:
            raise ValueError(f"the interval grid must be positive, got {grid!r}")
        if isinstance(model, SiaJobModel) and node_models is None:
            raise ValueError("Sia's job model needs each node's GPU model")
        self._model = model
        self.grid = float(grid)
        self._targets = targets or {}
        self._node_models = node_models if isinstance(model, SiaJobModel) else None
        self._rigid = rigid
        self._agents: dict[str, AgentState] = {}  # the state when the job last stopped (or its first)
        self._runs: dict[str, _Trajectory] = {}
        self._maps: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        # Sia: a stopped job's (time, GPUs per node, GPU model, end of its re-scale delay), for a move at once
        self._stopped: dict[str, tuple[float, tuple[int, ...], str, float]] = {}
        self.adaptations: list[Adaptation] = []  # the records not yet handed over (module docstring)

    # ------------------------------------------------------------------ units
    def _map(self, js: JobState) -> tuple[np.ndarray, np.ndarray]:
        """(progress, work) at 0 and every epoch end of the job."""
        job = js.job
        found = self._maps.get(job.job_id)
        if found is None:
            app, _ = self._model.app_of(job.job_type)
            steps = np.array(self._model.epoch_steps(job.job_type, job.num_gpus), dtype=float)
            steps *= float(job.work) / steps[-1]
            progress = np.array([app.progress_at(e) for e in range(app.max_epochs + 1)])
            found = self._maps[job.job_id] = (progress, np.concatenate(([0.0], steps)))
        return found

    def _work(self, js: JobState, progress: float) -> float:
        xs, ys = self._map(js)
        return float(np.interp(progress, xs, ys))

    # ------------------------------------------------------------------ agents and trajectories
    def _initial(self, js: JobState) -> AgentState:
        found = self._agents.get(js.job.job_id)
        if found is None:
            app, batch = self._model.app_of(js.job.job_type)
            target = batch if self._rigid else self._targets.get(app.name)
            tol = SIA_FIT_TOL if self._node_models is not None else None
            found = self._agents[js.job.job_id] = AgentState(
                app, target_batch=target, learns=not self._rigid, fit_tol=tol
            )
        return found

    def _trajectory(self, js: JobState) -> _Trajectory:
        run = self._runs.get(js.job.job_id)
        if run is not None and run.version == js.version:
            return run
        assert js.placement is not None
        width = 1 + max(node for node, _ in js.placement)
        counts = [0] * width
        for node, k in js.placement:
            counts[node] += k
        first = self._initial(js).copy()
        productive, gpu_model, shape = js.productive_start, None, tuple(counts)
        if self._node_models is None:
            first.reallocate(shape)
        else:
            productive, gpu_model, shape = self._sia_start(js, first, shape)
        run = _Trajectory(js.version, js.seg_start, productive, shape, gpu_model, [js.seg_start], [first])
        self._runs[js.job.job_id] = run
        return run

    def _sia_start(
        self, js: JobState, first: AgentState, counts: tuple[int, ...]
    ) -> tuple[float, str, tuple[int, ...]]:
        """A placement under Sia's job model: the type's tables; a re-scale delay unless the job moved at once to
        the same GPUs per node on the same type (Sia's ``reallocate`` then changes nothing). Returns when it is
        productive, its type and the GPUs per node it runs as (:meth:`SiaJobModel.physical_counts`)."""
        model = self._model
        assert isinstance(model, SiaJobModel) and self._node_models is not None and js.placement is not None
        gpu_model = self._node_models[js.placement[0][0]]
        first.switch_type(gpu_model, model.app_on(js.job.job_type, gpu_model)[0])
        counts = model.physical_counts(gpu_model, counts)
        used = tuple(c for c in counts if c)
        kept = self._stopped.pop(js.job.job_id, None)
        if kept is not None and kept[:3] == (js.seg_start, used, gpu_model):
            first.pick_batch(counts)
            first.busy_until = max(kept[3], js.seg_start)
        else:
            first.reallocate(counts)
            first.busy_until = js.seg_start + model.rescale_time(js.job.job_type)
        return first.busy_until, gpu_model, counts

    def _next_bound(self, t: float) -> float:
        return (math.floor(t / self.grid + 1e-9) + 1) * self.grid

    def _extend(self, run: _Trajectory) -> None:
        """One more interval of the trajectory."""
        if len(run.states) > MAX_INTERVALS:
            raise RuntimeError("an adaptive job made no progress for too many intervals")
        start, state = run.bounds[-1], run.states[-1].copy()
        end = self._next_bound(start)
        state.step(run.counts, start, end - start, max(0.0, run.productive - start))
        run.bounds.append(end)
        run.states.append(state)

    def _state_at(self, js: JobState, t: float) -> AgentState:
        """The agent of a running job at ``t`` (at an interval start exactly; inside one, stepped to ``t``)."""
        run = self._trajectory(js)
        while run.bounds[-1] < t and not run.states[-1].done:
            self._extend(run)
        i = bisect_right(run.bounds, t) - 1
        state = run.states[i]
        if run.bounds[i] == t or state.done:
            return state
        after = run.states[i + 1].completion if i + 1 < len(run.states) else None
        if after is not None and after <= t:  # the completion inside this interval, asked at or after it
            return run.states[i + 1]
        partial = state.copy()
        partial.step(run.counts, run.bounds[i], t - run.bounds[i], max(0.0, run.productive - run.bounds[i]))
        return partial

    # ------------------------------------------------------------------ the book's and the view's questions
    def progress(self, js: JobState, t: float) -> float:
        """Work units a running job has done from its placement's start to ``t``."""
        run = self._trajectory(js)
        if t <= run.productive:
            return 0.0
        before = run.states[0].progress
        return self._work(js, self._state_at(js, t).progress) - self._work(js, before)

    def stop(self, js: JobState, t: float) -> float:
        """A running job leaves its GPUs at ``t``: its agent's state there is kept; returns :meth:`progress`."""
        done = self.progress(js, t)
        state = self._state_at(js, t).copy()  # (at the placement's start: its first state, the batch just picked)
        state.atomic_bsz = state.accum_steps = 0
        self._agents[js.job.job_id] = state
        run = self._runs.pop(js.job.job_id)
        self._record(js.job.job_id, run, t)
        if run.gpu_model is not None:
            self._stopped[js.job.job_id] = (t, tuple(c for c in run.counts if c), run.gpu_model, run.productive)
        return done

    def _record(self, job_id: str, run: _Trajectory, t: float) -> None:
        """The intervals ``run`` ran before ``t``, as :class:`Adaptation` rows."""
        counts = run.counts
        nodes, gpus = sum(1 for c in counts if c), sum(counts)
        bounds, states, rows = run.bounds, run.states, self.adaptations
        for i, state in enumerate(states):
            start = bounds[i]
            if start >= t or state.done:
                break
            end = min(bounds[i + 1], t) if i + 1 < len(bounds) else t
            try:
                throughput, efficiency = state.speed(counts)
            except InputError:  # stopped in its re-scale delay on a placement the tables lack: never ran there
                throughput = efficiency = 0.0
            idle = min(max(0.0, run.productive - start), end - start)
            batch = state.batch_size(gpus)
            rows.append(
                Adaptation(
                    start, end, job_id, run.gpu_model, nodes, gpus, batch, state.atomic_bsz, state.accum_steps,
                    state.epoch, idle, throughput, efficiency,
                )
            )  # fmt: skip

    def finish(self, js: JobState) -> float:
        """When a running job completes on its placement."""
        run = self._trajectory(js)
        while not run.states[-1].done:
            self._extend(run)
        completion = run.states[-1].completion
        assert completion is not None
        if completion == run.bounds[-2]:
            # Found while stepping the interval that starts then: that interval's decision saw it still running.
            return math.nextafter(completion, math.inf)
        return completion

    def epochs_done(self, js: JobState, t: float) -> int:
        return self.agent(js, t).epoch

    def agent(self, js: JobState, t: float) -> AgentState:
        """The job's agent at ``t`` (running: on its trajectory; else as it last stopped). Do not mutate."""
        if js.placement is None:
            return self._initial(js)
        return self._state_at(js, max(t, js.seg_start))
