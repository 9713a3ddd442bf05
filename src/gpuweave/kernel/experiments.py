"""The FIKIT evaluation in simulation: experiments II, IV.a–IV.d, the feedback ablation, the time-slice
sweep and the literal-vs-recommended comparison (paper §4; spec §3.4, §6.3 AC-12…AC-21).

Problem: reproduce the *mechanisms and shapes* of the paper's evaluation on the canonical traces
(absolute paper numbers need an RTX 3090 and the real models, spec §4.1). Every result states the
default-sharing model it was compared with (R-12): the spec shows it dominates the speedups.

Definitions (spec §3.3): high-priority speedup = mean JCT_A(share) / mean JCT_A(FIKIT);
low-priority ratio = mean JCT_B(share) / mean JCT_B(FIKIT); overhead = JCT_FIKIT / JCT_excl − 1.
Exclusive JCTs are each service run alone (same jitter, same number of tasks).
IV.a window (R-17): W = min over {share, FIKIT} × {A, B} of the service's completion time; means over
tasks completing ≤ W. IV.b exclusive JCT (R-16): all tasks submitted at t = 0, A's first, so
B_k completes at r·M·J_A + k·J_B.

Each function costs one simulation per mode; see the module ``sim`` for the event-loop complexity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from gpuweave.kernel.sched import SchedulerConfig, preset
from gpuweave.kernel.sim import Service, SimConfig, SimResult, Workload, simulate
from gpuweave.kernel.trace_format import Trace
from gpuweave.kernel.traces import hi_trace, light_trace, lo_trace


def base_config(**kw) -> SimConfig:
    """Spec §6.3 common settings: overhead 0.005 ms, IPC 0, T = 20, jitter 0.05, time slice q = 2 ms."""
    return replace(SimConfig(), **kw) if kw else SimConfig()


def share_label(cfg: SimConfig) -> str:
    if cfg.mode == "fikit":
        arb = cfg.device
    else:
        arb = cfg.mode
    return f"{arb} q={cfg.quantum:g} ms" if arb == "share_timeslice" else arb


def _alone(trace: Trace, n: int, cfg: SimConfig, prio: int = 0) -> SimResult:
    return simulate([Service("X", trace, prio, Workload.back_to_back(n))], replace(cfg, mode="exclusive"))


def _mean(x: list[float]) -> float:
    return sum(x) / len(x) if x else math.nan


class _SpeedupRatios:
    """The ratios every two-service experiment reports (A = high priority, B = low priority)."""

    __slots__ = ()
    a_share: float  # fields of the dataclasses below
    a_fikit: float
    a_excl: float
    b_share: float
    b_fikit: float

    @property
    def a_speedup(self) -> float:
        return self.a_share / self.a_fikit

    @property
    def b_ratio(self) -> float:
        return self.b_share / self.b_fikit

    @property
    def a_fikit_over_excl(self) -> float:
        return self.a_fikit / self.a_excl


@dataclass(slots=True)
class PairResult(_SpeedupRatios):
    """IV.a: both services back-to-back from t = 0 (concurrent)."""

    share_model: str
    window: float
    a_excl: float
    b_excl: float
    a_share: float
    b_share: float
    a_fikit: float
    b_fikit: float
    busy_share: float
    busy_fikit: float
    n_a_window: int
    n_b_window: int
    fillers: int
    share: SimResult = field(repr=False)
    fikit: SimResult = field(repr=False)

    @property
    def a_share_over_excl(self) -> float:
        return self.a_share / self.a_excl


def concurrent_pair(
    hi: Trace | None = None,
    lo: Trace | None = None,
    n_a: int = 60,
    n_b: int = 200,
    cfg: SimConfig | None = None,
    scheduler: SchedulerConfig | None = None,
) -> PairResult:
    """Experiment IV.a (Figs 16, 17; Table 2) on one pair: A = hi at priority 0, B = lo at priority 1."""
    hi = hi or hi_trace()
    lo = lo or lo_trace()
    cfg = cfg or base_config()
    sched = scheduler or cfg.scheduler
    services = [Service("A", hi, 0, Workload.back_to_back(n_a)), Service("B", lo, 1, Workload.back_to_back(n_b))]
    both = ("A", "B")
    share_mode = cfg.mode if cfg.mode != "fikit" else cfg.device
    share = simulate(services, replace(cfg, mode=share_mode, stop_when=both))
    fik = simulate(
        services,
        replace(
            cfg,
            mode="fikit",
            device=share_mode if share_mode != "exclusive" else "share_timeslice",
            scheduler=sched,
            stop_when=both,
        ),
    )
    w = min(share.completion_time("A"), share.completion_time("B"), fik.completion_time("A"), fik.completion_time("B"))
    a_excl = _alone(hi, n_a, cfg).mean_jct("X")
    b_excl = _alone(lo, n_b, cfg).mean_jct("X")
    return PairResult(
        share_model=share_label(replace(cfg, mode=share_mode)),
        window=w,
        a_excl=a_excl,
        b_excl=b_excl,
        a_share=share.mean_jct("A", w),
        b_share=share.mean_jct("B", w),
        a_fikit=fik.mean_jct("A", w),
        b_fikit=fik.mean_jct("B", w),
        busy_share=share.busy_fraction(w),
        busy_fikit=fik.busy_fraction(w),
        n_a_window=len(fik.jcts("A", w)),
        n_b_window=len(fik.jcts("B", w)),
        fillers=fik.core_stats.fillers if fik.core_stats else 0,
        share=share,
        fikit=fik,
    )


@dataclass(slots=True)
class BackgroundPairResult:
    """IV.a variant for model pairs: A runs ``n_a`` tasks back-to-back while B runs continuously.

    A's means are over all its tasks (B is running throughout, in both modes); B's efficiency is its
    device throughput under FIKIT relative to sharing (the paper's "efficiency of B", §4.5.2).
    """

    share_model: str
    a_excl: float
    a_share: float
    a_fikit: float
    b_throughput_share: float
    b_throughput_fikit: float

    @property
    def a_speedup(self) -> float:
        return self.a_share / self.a_fikit

    @property
    def a_fikit_over_excl(self) -> float:
        return self.a_fikit / self.a_excl

    @property
    def b_efficiency(self) -> float:
        return self.b_throughput_fikit / self.b_throughput_share if self.b_throughput_share > 0 else math.nan


def background_pair(hi: Trace, lo: Trace, n_a: int = 10, cfg: SimConfig | None = None) -> BackgroundPairResult:
    """A (priority 0) runs ``n_a`` tasks back-to-back; B (priority 1) runs continuously; stop when A is done."""
    cfg = cfg or base_config()
    services = [Service("A", hi, 0, Workload.back_to_back(n_a)), Service("B", lo, 1, Workload.back_to_back(None))]
    share_mode = cfg.mode if cfg.mode not in ("fikit", "exclusive") else cfg.device
    share = simulate(services, replace(cfg, mode=share_mode, stop_when=("A",)))
    fik = simulate(services, replace(cfg, mode="fikit", device=share_mode, stop_when=("A",)))
    a_excl = _alone(hi, n_a, cfg).mean_jct("X")
    return BackgroundPairResult(
        share_label(replace(cfg, mode=share_mode)),
        a_excl,
        share.mean_jct("A"),
        fik.mean_jct("A"),
        share.service_busy["B"] / share.end_time,
        fik.service_busy["B"] / fik.end_time,
    )


@dataclass(slots=True)
class SweepPoint:
    quantum: float
    a_speedup: float
    a_share_over_excl: float
    a_fikit_over_excl: float
    b_ratio: float


def timeslice_sweep(
    quanta=(1.0, 2.0, 4.0, 8.0), n_a: int = 40, n_b: int = 150, cfg: SimConfig | None = None
) -> list[SweepPoint]:
    """AC-15: IV.a under time-slice sharing with q swept; A's speedup should grow with q."""
    cfg = cfg or base_config()
    out = []
    for q in quanta:
        r = concurrent_pair(
            n_a=n_a, n_b=n_b, cfg=replace(cfg, quantum=q, mode="share_timeslice", device="share_timeslice")
        )
        out.append(SweepPoint(q, r.a_speedup, r.a_share_over_excl, r.a_fikit_over_excl, r.b_ratio))
    return out


@dataclass(slots=True)
class RatioResult:
    """IV.b: ratio of B's exclusive (computed) JCT to its FIKIT JCT for task ratios r:1."""

    ratios: list[int]
    b_fikit: list[float]
    b_excl: list[float]
    j_a: float
    j_b: float

    @property
    def excl_over_fikit(self) -> list[float]:
        return [e / f for e, f in zip(self.b_excl, self.b_fikit)]

    def linear_fit(self) -> tuple[float, float, float]:
        """(slope, intercept, R²) of excl/FIKIT against r."""
        xs = [float(r) for r in self.ratios]
        ys = self.excl_over_fikit
        n = len(xs)
        mx, my = sum(xs) / n, sum(ys) / n
        sxx = sum((x - mx) ** 2 for x in xs)
        sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
        slope = sxy / sxx
        icpt = my - slope * mx
        ss_res = sum((y - (icpt + slope * x)) ** 2 for x, y in zip(xs, ys))
        ss_tot = sum((y - my) ** 2 for y in ys)
        return slope, icpt, 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0


def task_ratio(ratios=(1, 10, 20, 30, 40, 50), m: int = 10, cfg: SimConfig | None = None) -> RatioResult:
    """Experiment IV.b (Fig. 18): r·M A tasks and M B tasks all submitted at t = 0 (R-16)."""
    cfg = cfg or base_config()
    hi, lo = hi_trace(), lo_trace()
    j_a = _alone(hi, m, cfg).mean_jct("X")
    j_b = _alone(lo, m, cfg).mean_jct("X")
    b_f, b_e = [], []
    for r in ratios:
        services = [Service("A", hi, 0, Workload.at_t0(r * m)), Service("B", lo, 1, Workload.at_t0(m))]
        res = simulate(services, replace(cfg, mode="fikit", stop_when=("B",)))
        b_f.append(res.mean_jct("B"))
        b_e.append(r * m * j_a + (m + 1) / 2 * j_b)
    return RatioResult(list(ratios), b_f, b_e, j_a, j_b)


@dataclass(slots=True)
class PreemptResult(_SpeedupRatios):
    """IV.c (B continuous, A periodic) or IV.d (A continuous, B periodic)."""

    share_model: str
    a_excl: float
    b_excl: float
    a_share: float
    a_fikit: float
    b_share: float
    b_fikit: float
    b_cv_fikit: float
    a_active_fraction: float
    share: SimResult | None = field(default=None, repr=False)
    fikit: SimResult | None = field(default=None, repr=False)


def preemption(
    hi: Trace | None = None,
    lo: Trace | None = None,
    n_a: int = 30,
    period: float = 1000.0,
    first: float = 500.0,
    cfg: SimConfig | None = None,
) -> PreemptResult:
    """Experiment IV.c (Figs 19, 20): B back-to-back forever; A every ``period`` ms, ``n_a`` tasks."""
    cfg = cfg or base_config()
    hi = hi or hi_trace()
    lo = lo or lo_trace()
    services = [
        Service("A", hi, 0, Workload.periodic(period, n_a, first)),
        Service("B", lo, 1, Workload.back_to_back(None)),
    ]
    share_mode = cfg.mode if cfg.mode not in ("fikit", "exclusive") else cfg.device
    share = simulate(services, replace(cfg, mode=share_mode, stop_when=("A",)))
    fik = simulate(services, replace(cfg, mode="fikit", device=share_mode, stop_when=("A",)))
    a_excl = _alone(hi, n_a, cfg).mean_jct("X")
    b_excl = _alone(lo, 20, cfg).mean_jct("X")
    active = sum(fik.jcts("A")) / fik.end_time
    return PreemptResult(
        share_label(replace(cfg, mode=share_mode)),
        a_excl,
        b_excl,
        share.mean_jct("A"),
        fik.mean_jct("A"),
        share.mean_jct("B"),
        fik.mean_jct("B"),
        fik.cv_jct("B"),
        active,
        share,
        fik,
    )


def stability(
    n_b: int = 40, period: float = 1000.0, first: float = 500.0, cfg: SimConfig | None = None
) -> PreemptResult:
    """Experiment IV.d (Fig. 21, Table 3): A back-to-back forever; B every ``period`` ms, ``n_b`` tasks."""
    cfg = cfg or base_config()
    hi, lo = hi_trace(), lo_trace()
    services = [
        Service("A", hi, 0, Workload.back_to_back(None)),
        Service("B", lo, 1, Workload.periodic(period, n_b, first)),
    ]
    share_mode = cfg.mode if cfg.mode not in ("fikit", "exclusive") else cfg.device
    share = simulate(services, replace(cfg, mode=share_mode, stop_when=("B",)))
    fik = simulate(services, replace(cfg, mode="fikit", device=share_mode, stop_when=("B",)))
    a_excl = _alone(hi, 20, cfg).mean_jct("X")
    b_excl = _alone(lo, n_b, cfg).mean_jct("X")
    return PreemptResult(
        share_label(replace(cfg, mode=share_mode)),
        a_excl,
        b_excl,
        share.mean_jct("A"),
        fik.mean_jct("A"),
        share.mean_jct("B"),
        fik.mean_jct("B"),
        fik.cv_jct("B"),
        1.0,
        share,
        fik,
    )


def single_service_overhead(rtt: float, n: int = 1, cfg: SimConfig | None = None) -> tuple[float, float]:
    """Experiment II analogue (AC-12): HI alone under FIKIT with IPC round trip ``rtt``; (JCT_FIKIT, JCT_excl)."""
    cfg = cfg or base_config(jitter=0.0)
    hi = hi_trace()
    excl = _alone(hi, n, cfg).mean_jct("X")
    fik = simulate([Service("A", hi, 0, Workload.back_to_back(n))], replace(cfg, mode="fikit", ipc_rtt=rtt)).mean_jct(
        "A"
    )
    return fik, excl


@dataclass(slots=True)
class AblationResult:
    overhead_recommended: float
    overhead_no_feedback: float
    fillers_recommended: int
    fillers_no_feedback: int
    early_stops: int


def feedback_ablation(n_a: int = 20, inflation: float = 1.5, cfg: SimConfig | None = None) -> AblationResult:
    """AC-20: HI profile gaps ×``inflation`` (measurement slowdown, R-15), jitter 0, B continuous."""
    cfg = cfg or base_config(jitter=0.0)
    cfg = replace(cfg, measure_gap_inflation=inflation)
    hi, lo = hi_trace(), lo_trace()
    services = [Service("A", hi, 0, Workload.back_to_back(n_a)), Service("B", lo, 1, Workload.back_to_back(None))]
    a_excl = _alone(hi, n_a, cfg).mean_jct("X")
    out = {}
    for name in ("recommended", "no_feedback"):
        r = simulate(services, replace(cfg, mode="fikit", scheduler=preset(name), stop_when=("A",)))
        out[name] = r
    rec, nof = out["recommended"], out["no_feedback"]
    return AblationResult(
        rec.mean_jct("A") / a_excl - 1.0,
        nof.mean_jct("A") / a_excl - 1.0,
        rec.core_stats.fillers,  # type: ignore[union-attr]  # a fikit run has core stats
        nof.core_stats.fillers,  # type: ignore[union-attr]  # a fikit run has core stats
        rec.core_stats.early_stops,  # type: ignore[union-attr]  # a fikit run has core stats
    )


def literal_vs_recommended(n_a: int = 60, n_b: int = 200, cfg: SimConfig | None = None) -> dict[str, PairResult]:
    """AC-21: IV.a with jitter under ``recommended``, ``paper_literal`` and literal pacing with grace 0.5 ms."""
    cfg = cfg or base_config()
    return {
        "recommended": concurrent_pair(n_a=n_a, n_b=n_b, cfg=cfg, scheduler=preset("recommended")),
        "paper_literal": concurrent_pair(n_a=n_a, n_b=n_b, cfg=cfg, scheduler=preset("paper_literal")),
        "paper_literal+grace0.5": concurrent_pair(
            n_a=n_a, n_b=n_b, cfg=cfg, scheduler=preset("paper_literal", holder_grace=0.5)
        ),
    }


__all__ = [
    "base_config",
    "share_label",
    "concurrent_pair",
    "background_pair",
    "timeslice_sweep",
    "task_ratio",
    "preemption",
    "stability",
    "single_service_overhead",
    "feedback_ablation",
    "literal_vs_recommended",
    "light_trace",
]
