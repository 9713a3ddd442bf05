"""SchedulerCore: Algorithms 0 and 1 of FIKIT (paper §3.2, Figs 7–12; spec §2, §4.2).

Problem: one GPU is shared by tasks with priorities 0 (highest) … 9. Each kernel launch of a task
is a request that waits until the scheduler answers GO. The scheduler must run the highest-priority
active task's kernels first (10 FIFO queues, highest non-empty first), and fill that task's
predicted inter-kernel gaps with lower-priority kernels that fit (BestPrioFit, Algorithm 2), so the
high-priority task keeps its exclusive-mode latency while the GPU stays busy.

This core is pure and deterministic: it never reads a clock. Every entry point takes ``now`` (ms)
and returns a list of actions, :class:`Go` (release a request) and :class:`SetTimer` (call
:meth:`SchedulerCore.timer` at that time). The kernel simulator and the UDP server drive the same
core (spec §4.2). Inputs: :meth:`register`, :meth:`request`, :meth:`timer`, :meth:`unregister`, and from real
hook clients :meth:`complete` (a kernel's real end; the simulator does not use it).

Algorithm 0 (event glue, spec §2.2) and Algorithm 1 (FIKIT, spec §2.3) are implemented as
written in the spec, including its [rev] notes:

- per-task ``g``/``gap_deadline``; before Algorithm 1 the budget is the minimum over active
  holder-class tasks (R-11) and each filler is charged to all of them;
- without feedback the holder's early request is *held* until the predicted gap end and filling
  continues meanwhile (AC-6 expects 6 fillers, not 3);
- timers due at ``now`` are drained before an input at ``now`` is handled, so the order in which a
  driver delivers a timer and a request with equal time stamps does not change decisions (this is
  what makes the simulator/server twin test exact; not in the paper).

Three rules not in the paper (spec §2.7), on in the ``recommended`` preset, off in ``paper_literal``:
just-in-time filler release (R-8), ``holder_grace`` 0.5 ms (R-9), and ``cap_lower`` (R-10: a
lower-priority holder keeps at most one predicted kernel outstanding while a higher-priority task is
registered). Measuring tasks are admitted exclusively (R-14): while one is registered, only its
requests are released (the earliest-registered measuring task first).

Where the spec and the paper differ, the spec is followed: the paper's Algorithm 1 issues every
fitting filler at once (``pacing="eager"``); the spec's recommended preset releases them one at a
time when the device is predicted idle.

Complexity per call: O(P + W) with P = 10 priority levels and W the waiting requests scanned by
BestPrioFit, plus O(log timers) for the timer heap.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from gpuweave.errors import InputError
from gpuweave.kernel import PRIORITY_LEVELS
from gpuweave.kernel.bestfit import best_prio_fit
from gpuweave.kernel.ids import parse_priority
from gpuweave.kernel.profile import Profile

INF = math.inf

#: Tie tolerance (ms) added to a holder's expiry: a request that arrives exactly at the predicted end of
#: the gap (exact profiles, grace 0) still finds its task holding the GPU, whatever the float rounding.
TIE_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """Parameters of spec §2.7. Use :func:`preset` for the named presets."""

    pacing: Literal["jit", "eager"] = "jit"
    jit_lookahead: float = 0.0
    max_inflight_fillers: int = 1
    accounting: Literal["budget", "deadline"] = "budget"
    feedback: bool = True
    holder_grace: float = 0.5
    cap_lower: bool = True
    t_skip: float = 0.1

    def __post_init__(self) -> None:
        if self.pacing not in ("jit", "eager"):
            raise InputError(f"pacing must be 'jit' or 'eager', got {self.pacing!r}", field="pacing")
        if self.accounting not in ("budget", "deadline"):
            raise InputError(f"accounting must be 'budget' or 'deadline', got {self.accounting!r}", field="accounting")
        for name in ("jit_lookahead", "holder_grace", "t_skip"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise InputError(f"{name} must be a finite number >= 0, got {v!r}", field=name)
        if not isinstance(self.max_inflight_fillers, int) or self.max_inflight_fillers < 1:
            raise InputError("max_inflight_fillers must be an integer >= 1", field="max_inflight_fillers")


PRESETS: dict[str, SchedulerConfig] = {
    "recommended": SchedulerConfig(),
    "paper_literal": SchedulerConfig(pacing="eager", feedback=True, holder_grace=0.0, cap_lower=False),
    "no_feedback": SchedulerConfig(feedback=False),
}


def preset(name: str, **overrides: Any) -> SchedulerConfig:
    """A named preset (``recommended``, ``paper_literal``, ``no_feedback``) with optional field overrides."""
    if name not in PRESETS:
        raise InputError(f"unknown scheduler preset {name!r} (known: {', '.join(PRESETS)})", field="preset")
    return replace(PRESETS[name], **overrides) if overrides else PRESETS[name]


@dataclass(slots=True, eq=False)
class LaunchRequest:
    """One waiting kernel launch. ``fill_d`` is its predicted duration as a filler (+inf if unknown)."""

    task: str
    kid: str
    seq: int
    t_arrival: float
    fill_d: float
    prio: int


@dataclass(frozen=True, slots=True)
class Go:
    """Release ``request`` now. ``filler`` is True when it was placed into a holder's gap."""

    request: LaunchRequest
    time: float
    filler: bool


@dataclass(frozen=True, slots=True)
class SetTimer:
    time: float


Action = Go | SetTimer


@dataclass(slots=True, eq=False)
class _Task:
    name: str
    prio: int
    mode: str
    sk: dict[str, float]
    sg: dict[str, float]
    mean_d: float
    order: int
    active_until: float = -INF
    g: float = 0.0
    gap_deadline: float = -INF
    pending: int = 0
    last_seq: int = -1  # the seq of its latest request released as holder (completion feedback)


@dataclass(slots=True)
class CoreStats:
    gos: int = 0
    fillers: int = 0
    early_stops: int = 0
    held: int = 0
    dropped: int = 0
    per_task_gos: dict[str, int] = field(default_factory=dict)


class SchedulerCore:
    """The FIKIT decision maker for one GPU. Pure: time only enters through the ``now`` arguments."""

    def __init__(self, config: SchedulerConfig | None = None) -> None:
        self.config = config or PRESETS["recommended"]
        self.queues: list[deque[LaunchRequest]] = [deque() for _ in range(PRIORITY_LEVELS)]
        self.tasks: dict[str, _Task] = {}
        self._task_list: list[_Task] = []
        self._measuring: list[_Task] = []
        self._min_prio = PRIORITY_LEVELS
        self._order = 0
        self.hp = PRIORITY_LEVELS  # current holder class (PRIORITY_LEVELS = none)
        self.busy_until = -INF
        self.filled_in_gap = False
        self._filler_ends: deque[float] = deque()
        self._timers: list[float] = []
        self._timer_set: set[float] = set()
        self.stats = CoreStats()

    # ------------------------------------------------------------------ inputs
    def register(
        self, task: str, priority: object, profile: Profile | None = None, mode: str = "share", now: float = 0.0
    ) -> str:
        """Add a task. Returns the effective mode: a task without a profile is measured (spec §2.5)."""
        if not isinstance(task, str) or not task:
            raise InputError("task name must be a non-empty string", field="task")
        if task in self.tasks:
            raise InputError(f"task {task!r} is already registered", field="task")
        prio = parse_priority(priority)
        if mode not in ("share", "measure"):
            raise InputError(f"mode must be 'share' or 'measure', got {mode!r}", field="mode")
        if mode == "share" and profile is None:
            mode = "measure"
        sk = dict(profile.sk) if profile is not None else {}
        sg = dict(profile.sg) if profile is not None else {}
        mean_d = profile.mean_duration() if profile is not None else 0.0
        t = _Task(task, prio, mode, sk, sg, mean_d, self._order)
        self._order += 1
        self.tasks[task] = t
        self._task_list.append(t)
        if mode == "measure":
            self._measuring.append(t)
        self._min_prio = min(self._min_prio, prio)
        self.stats.per_task_gos.setdefault(task, 0)
        return mode

    def unregister(self, task: str, now: float) -> tuple[list[Action], list[LaunchRequest]]:
        """Remove a task; its waiting requests are dropped and returned. Others are rescheduled."""
        t = self._get(task)
        out: list[Action] = []
        self._drain_timers(now, out)
        dropped: list[LaunchRequest] = []
        q = self.queues[t.prio]
        if t.pending:
            keep: deque[LaunchRequest] = deque()
            for r in q:
                (dropped if r.task == task else keep).append(r)
            self.queues[t.prio] = keep
        self.stats.dropped += len(dropped)
        del self.tasks[task]
        self._task_list.remove(t)
        if t in self._measuring:
            self._measuring.remove(t)
        self._min_prio = min((x.prio for x in self._task_list), default=PRIORITY_LEVELS)
        self._schedule(now, out)
        return out, dropped

    def request(self, task: str, kid: str, seq: int, now: float) -> list[Action]:
        """ON_REQUEST (Alg. 0): a hook client asks to launch kernel ``kid``."""
        t = self._get(task)
        out: list[Action] = []
        self._drain_timers(now, out)
        d = t.sk.get(kid)
        r = LaunchRequest(task, kid, seq, now, d if d is not None else INF, t.prio)
        self.queues[t.prio].append(r)
        t.pending += 1
        if self.config.feedback and t.prio <= self.hp:
            if t.g > 0.0 and self.filled_in_gap:
                self.stats.early_stops += 1
            t.g = 0.0  # Fig. 12 early stop: the holder's next launch closes its gap
            t.gap_deadline = now
        self._schedule(now, out)
        return out

    def complete(self, task: str, seq: int, now: float) -> list[Action]:
        """A hook client saw kernel ``seq`` of ``task`` finish at ``now`` (completion feedback, not in the paper).

        When it is the holder's latest kernel and nothing was filled into its gap yet, the device is idle from
        ``now``, not from the predicted end: the gap and the holder's hold are re-based on the real end. Other
        completions change nothing. Unknown tasks are ignored (a client may report after unregistering).
        """
        out: list[Action] = []
        t = self.tasks.get(task)
        if t is None:
            return out
        self._drain_timers(now, out)
        if seq != t.last_seq or t.prio != self.hp or t.pending or self.filled_in_gap:
            return out
        self.busy_until = now
        t.gap_deadline = now + t.g
        t.active_until = now + t.g + self.config.holder_grace + TIE_EPS
        self._set_timer(t.active_until, out)
        self._schedule(now, out)
        return out

    def released_at_once(self) -> set[str]:
        """Tasks whose requests :meth:`request` releases on arrival whatever the queue holds: the measuring owner
        while one is registered, else (with feedback) the highest registered class. A hook client of such a task may
        launch without waiting for its GO and report the launch afterwards."""
        if self._measuring:
            return {self._measuring[0].name}
        if not self.config.feedback:
            return set()
        return {t.name for t in self._task_list if t.prio == self._min_prio}

    def timer(self, now: float) -> list[Action]:
        """ON_TIMER: run the scan if a requested timer is due (stale timers are no-ops)."""
        out: list[Action] = []
        self._drain_timers(now, out)
        return out

    # ------------------------------------------------------------------ queries
    def next_timer(self) -> float | None:
        return self._timers[0] if self._timers else None

    def pending(self) -> int:
        return sum(len(q) for q in self.queues)

    def active_tasks(self, now: float) -> list[str]:
        return [t.name for t in self._task_list if t.pending or now < t.active_until]

    # ------------------------------------------------------------------ internals
    def _get(self, task: str) -> _Task:
        t = self.tasks.get(task)
        if t is None:
            raise InputError(f"unknown task {task!r} (not registered)", field="task")
        return t

    def _set_timer(self, at: float, out: list[Action]) -> None:
        if at not in self._timer_set:
            self._timer_set.add(at)
            heapq.heappush(self._timers, at)
            out.append(SetTimer(at))

    def _drain_timers(self, now: float, out: list[Action]) -> None:
        timers = self._timers
        if timers and timers[0] <= now:
            while timers and timers[0] <= now:
                self._timer_set.discard(heapq.heappop(timers))
            self._schedule(now, out)

    def _go(self, r: LaunchRequest, now: float, filler: bool, out: list[Action]) -> None:
        st = self.stats
        st.gos += 1
        st.per_task_gos[r.task] = st.per_task_gos.get(r.task, 0) + 1
        if filler:
            st.fillers += 1
        out.append(Go(r, now, filler))

    def _schedule_measuring(self, now: float, out: list[Action]) -> None:
        owner = self._measuring[0]
        if not owner.pending:
            return
        q = self.queues[owner.prio]
        keep: deque[LaunchRequest] = deque()
        for r in q:
            if r.task == owner.name:
                owner.pending -= 1
                self.busy_until = max(now, self.busy_until)
                self._go(r, now, False, out)
            else:
                keep.append(r)
        self.queues[owner.prio] = keep

    def _schedule(self, now: float, out: list[Action]) -> None:
        """SCHEDULE (Alg. 0): highest active class dispatches; FIKIT fills its predicted gap."""
        if self._measuring:
            self._schedule_measuring(now, out)
            return
        hp = PRIORITY_LEVELS
        for t in self._task_list:
            if (t.pending or now < t.active_until) and t.prio < hp:
                hp = t.prio
        if hp == PRIORITY_LEVELS:
            return
        self.hp = hp
        cfg = self.config
        q = self.queues[hp]
        held = False
        while q:
            r = q[0]
            t = self.tasks[r.task]
            if not cfg.feedback and self.filled_in_gap and now < t.gap_deadline:
                held = True  # "purely profile-based": hold the holder until its predicted gap end
                self.stats.held += 1
                self._set_timer(t.gap_deadline, out)
                break
            if cfg.cap_lower and self._min_prio < hp and self.busy_until > now:
                self._set_timer(self.busy_until, out)  # one outstanding kernel below a registered higher task
                break
            q.popleft()
            t.pending -= 1
            d = t.sk.get(r.kid)
            if d is None:  # unknown ID → mean duration for the busy prediction, no gap after it
                d = t.mean_d
                g = 0.0
            else:
                g = t.sg.get(r.kid, 0.0)
            pe = (now if now > self.busy_until else self.busy_until) + d
            self.busy_until = pe
            t.g = g
            t.gap_deadline = pe + g
            self.filled_in_gap = False
            t.active_until = pe + g + cfg.holder_grace + TIE_EPS
            t.last_seq = r.seq
            self._set_timer(t.active_until, out)
            self._go(r, now, False, out)
        if not q or held:
            self._fikit(hp, now, out)

    def _fikit(self, hp: int, now: float, out: list[Action]) -> None:
        """Algorithm 1: fill the holder class's predicted gap with BestPrioFit picks."""
        cfg = self.config
        holders = [t for t in self._task_list if t.prio == hp and (t.pending or now < t.active_until)]
        if not holders:
            return
        feedback = cfg.feedback
        g = min(0.0 if (t.pending and feedback) else t.g for t in holders)
        t_skip = cfg.t_skip
        if g < t_skip:  # Alg. 1 l.6-8: skip negligible gaps
            return
        deadline = min(t.gap_deadline for t in holders) if cfg.accounting == "deadline" else 0.0
        jit = cfg.pacing == "jit"
        ends = self._filler_ends
        while True:
            if cfg.accounting == "budget":
                g_eff = g
            else:
                g_eff = deadline - (now if now > self.busy_until else self.busy_until)
            if g_eff < t_skip:  # re-check inside the loop
                return
            if jit:
                if self.busy_until - now > cfg.jit_lookahead:  # release when the device is (nearly) idle
                    self._set_timer(self.busy_until - cfg.jit_lookahead, out)
                    return
                while ends and ends[0] <= now:
                    ends.popleft()
                if len(ends) >= cfg.max_inflight_fillers:
                    self._set_timer(ends[0], out)
                    return
            r, d = best_prio_fit(self.queues, g_eff, hp)
            if r is None:
                return
            owner = self.tasks[r.task]
            owner.pending -= 1
            self._go(r, now, True, out)
            g -= d
            for t in holders:
                t.g -= d
            self.busy_until = (now if now > self.busy_until else self.busy_until) + d
            if jit:
                ends.append(self.busy_until)
            self.filled_in_gap = True
