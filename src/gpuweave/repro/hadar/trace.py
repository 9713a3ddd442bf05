"""Trace experiment (spec §5, checks B0-B5): the 480-job Philly workload on gavel-60 under Hadar, HadarE, Gavel,
Tiresias, YARN-CS and our slack-srpt variant; TTD and 50%-time ratios, GRU (Fig. 3), completions (Fig. 4)."""

from __future__ import annotations

import csv
import time
from pathlib import Path

import numpy as np

from gpuweave.cluster.policies import make_policy
from gpuweave.cluster.policies.hadar import HadarPolicy
from gpuweave.cluster.rate_table import RateTable
from gpuweave.repro.hadar.common import SLACK, TRACE_POLICIES, in_range, paper_numbers
from gpuweave.repro.registry import ComparisonRow, ReproContext


def _trace_env():
    # imported when called: `gpuweave --help` imports this module
    from gpuweave.hardware.catalog import get_gpu
    from gpuweave.hardware.cluster_spec import load_cluster
    from gpuweave.workload.profiles import load_profiles

    profiles = load_profiles()
    nodes = load_cluster("gavel-60").expand()
    power = {n.gpu_model: (get_gpu(n.gpu_model).power_idle_w, get_gpu(n.gpu_model).power_max_w) for n in nodes}
    return profiles, nodes, power


def _rank_corr(a, b) -> float:
    """Spearman rank correlation (no ties handling needed for diagnostics)."""
    ra = np.argsort(np.argsort(a, kind="stable"), kind="stable")
    rb = np.argsort(np.argsort(b, kind="stable"), kind="stable")
    if ra.size < 2:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def simulate_policy(name: str, jobs, env, seed: int, round_length: float = 360.0, **options) -> dict:
    """One 480-job run of one policy on gavel-60 and the §5.6 metrics plus diagnostics."""
    # imported here, not at the top: gpuweave.repro.hadar imports this module
    from gpuweave.cluster.simulator import Simulator
    from gpuweave.repro.hadar import metrics as hm

    profiles, nodes, power = env
    if name in ("tiresias", "yarn-cs"):
        # Tiresias and YARN-CS pick a GPU type without looking at throughput, uniformly among those with room
        # (spec §4.2-4.3, A10; seeded): YARN-CS's own default ("fixed", cluster order = V100 first on gavel-60)
        # would make it heterogeneity-aware by accident.
        options = {"type_choice": "random", **options}
    policy = make_policy(name, round_length=round_length, seed=seed, **options)
    t0 = time.perf_counter()
    rec = Simulator(nodes, jobs, policy, profiles, power).run()
    wall = time.perf_counter() - t0
    gru = hm.gru_per_round(rec, round_length)
    w = hm.round_weights(rec, round_length)
    gru_x = hm.gru_per_round(rec, round_length, include_restart=False)
    times = [d for _, _, d in policy.decision_times]
    hadar = policy if isinstance(policy, HadarPolicy) else None  # Hadar's own diagnostics (fallbacks, prices)
    # Diagnostics for the notes: GPU-seconds on multi-server placements (task-level heterogeneity / kappa only
    # matter there), the job that finishes last and where it ran, completion order vs queue order and length.
    total = spread = 0.0
    for seg in rec.segments:
        g = sum(k for _, k in seg.placement) * (seg.end - seg.start)
        total += g
        if len(seg.placement) > 1:
            spread += g
    last = max(rec.jobs, key=lambda js: js.end)  # type: ignore[arg-type,return-value]  # every job ended
    held = sum(last.gpu_seconds_by_model.values()) or 1.0
    ordered = sorted(rec.jobs, key=lambda js: js.job.job_id)
    ends = np.array([js.end for js in ordered])
    return {
        "rec": rec,
        "ttd": hm.ttd(rec),
        "t50": hm.time_to_fraction(rec, 0.5),
        "mean_jct": hm.mean_jct(rec),
        "gru": gru,
        "weights": w,
        "gru_median": hm.weighted_median(gru, w),
        "gru_median_no_restart": hm.weighted_median(gru_x, w),
        "gru_median_backlog": _backlog_median(gru, w, hm.backlog_rounds(rec, round_length)),
        "churn": hm.churn(rec, round_length),
        "wall_s": wall,
        "decision_mean_s": float(np.mean(times)) if times else float("nan"),
        "fallback_fraction": hadar.fallback_rounds / max(1, hadar.rounds) if hadar else 0.0,
        "work_v100_gpu_h": sum(j.duration * j.num_gpus for j in jobs) / 3600.0,
        "spread_fraction": spread / total if total else 0.0,
        "last_job": (
            f"{last.job.job_id} {last.job.job_type} W={last.job.num_gpus} (V100 {last.job.duration / 3600:.1f} h)"  # type: ignore[operator]  # has one
        ),
        "last_job_k80": last.gpu_seconds_by_model.get("K80", 0.0) / held,
        "rho_queue": _rank_corr(ends, np.arange(ends.size)),
        "rho_length": _rank_corr(ends, np.array([js.job.duration for js in ordered])),
        "u_min": float(np.max(hadar.last_constants.u_min)) if hadar and hadar.last_constants else float("nan"),
        "u_max": float(np.max(hadar.last_constants.u_max)) if hadar and hadar.last_constants else float("nan"),
    }


def _backlog_median(gru, weights, mask) -> float:
    # imported here, not at the top: gpuweave.repro.hadar imports this module
    from gpuweave.repro.hadar import metrics as hm

    return hm.weighted_median(gru[mask], weights[mask]) if mask.any() else float("nan")


def critical_path_h(jobs, env) -> float:
    """B0 sanity bound: max_j E_jN_j / (best single-allocation rate), in hours."""
    profiles, nodes, _ = env
    models = list(dict.fromkeys(n.gpu_model for n in nodes))
    table = RateTable(profiles, models)
    best = 0.0
    for j in jobs:
        cons, uncons = table.get(j.job_type, j.num_gpus)
        rate = max(float(np.max(cons)), float(np.max(uncons)))
        best = max(best, j.work / rate)
    return best / 3600.0


def run_trace(
    seed: int,
    n_jobs: int = 480,
    policies=TRACE_POLICIES,
    round_length: float = 360.0,
    window: str = "busiest",
    reference_gpu: str = "V100",
) -> dict:
    # imported when called: `gpuweave --help` imports this module
    from gpuweave.hadar.trace import hadar_workload

    env = _trace_env()
    jobs = hadar_workload(seed, n_jobs, env[0], window=window, reference_gpu=reference_gpu)
    out = {name: simulate_policy(name, jobs, env, seed, round_length) for name in policies}
    out[SLACK] = simulate_policy("hadar", jobs, env, seed, round_length, order="slack-srpt")
    lb = critical_path_h(jobs, env)
    widths = sorted({j.num_gpus for j in jobs})
    for r in out.values():
        r["critical_path_h"] = lb
        r["single_gpu_fraction"] = sum(j.num_gpus == 1 for j in jobs) / len(jobs)
        r["widths"] = widths
        r["xl_jobs"] = sum(j.attrs.get("category") == "XL" for j in jobs)
        r["multi_gpu_fraction"] = sum(j.num_gpus > 1 for j in jobs) / len(jobs)
        r["xl_fraction"] = r["xl_jobs"] / len(jobs)
    return out


def _plot_trace(results: dict, out_dir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # imported here, not at the top: gpuweave.repro.hadar imports this module
    from gpuweave.repro.hadar import metrics as hm

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, r in results.items():
        x, c = hm.gru_cdf(r["gru"], r["weights"])
        ax.step(100 * x, c, where="post", label=name)
    ax.set_xlabel("GPU resource utilization (%)")
    ax.set_ylabel("fraction of time")
    ax.set_title("Fig. 3: GRU CDF (480 jobs, gavel-60)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "fig3_gru_cdf.png", dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, r in results.items():
        t, f = hm.completion_curve(r["rec"])
        ax.step(t / 3600.0, f, where="post", label=name)
    ax.axhline(0.5, color="gray", lw=0.8)
    ax.set_xlabel("time (h)")
    ax.set_ylabel("fraction of jobs completed")
    ax.set_title("Fig. 4: completed jobs over time")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "fig4_completed.png", dpi=110)
    plt.close(fig)


WINDOW_NOTES = {
    "busiest": "busiest-window pool is one burst of 1-GPU jobs, trace.py",
    "daily-03-10": "daily 03:00-10:00 pool: clock hours on every day, trace.py",
    "busiest-diverse": "busiest window not counting its top virtual cluster, trace.py",
}


def slack_rows(ttd: dict, t50: dict, mean, k: str) -> list[ComparisonRow]:
    """Our named variant (Hadar with the slack-srpt Q order) against the same baselines, beside the paper's
    ratios: report only, the spec's checks apply to the default Hadar above."""
    note = (
        f"{k}; NOT the paper's Hadar: our named variant order=slack-srpt (shortest first unless a job's slack "
        "to the makespan bound is under one round), report only; spec range "
    )
    v = SLACK
    rows = [
        ComparisonRow(
            "trace",
            f"{v} TTD",
            None,
            ttd[v] / 3600,
            "h",
            f"{k}; critical-path bound {mean('critical_path_h', 'hadar'):.1f} h",
        )
    ]
    for p, lo, hi, key in (
        ("gavel", 1.05, 1.45, "ttd_ratio_gavel"),
        ("tiresias", 1.10, 1.75, "ttd_ratio_tiresias"),
        ("yarn-cs", 1.25, 2.30, "ttd_ratio_yarn"),
    ):
        x = ttd[p] / ttd[v]
        rows.append(
            ComparisonRow(
                "trace", f"{v} TTD {p}/Hadar", paper_numbers()["trace"][key], x, "x", note + in_range(x, lo, hi)
            )
        )
    for p, lo, hi, key in (("gavel", 1.00, 1.50, "t50_ratio_gavel"), ("tiresias", 1.05, 1.90, "t50_ratio_tiresias")):
        x = t50[p] / t50[v]
        rows.append(
            ComparisonRow(
                "trace", f"{v} 50%-time {p}/Hadar", paper_numbers()["trace"][key], x, "x", note + in_range(x, lo, hi)
            )
        )
    rows.append(
        ComparisonRow(
            "trace",
            f"{v} mean JCT",
            None,
            mean("mean_jct", v) / 3600,
            "h",
            f"{k}; default Hadar {mean('mean_jct', 'hadar') / 3600:.1f} h, "
            f"Gavel {mean('mean_jct', 'gavel') / 3600:.1f} h",
        )
    )
    return rows


def trace_rows(
    ctx: ReproContext, seeds: list[int], n_jobs: int, window: str = "busiest", reference_gpu: str = "V100"
) -> list[ComparisonRow]:
    """The trace experiment (Figs. 3-4): every policy per seed, compared with the paper's TTD and 50%-time ratios."""
    P = paper_numbers()["trace"]
    per_seed = []
    for s in seeds:
        res = run_trace(ctx.seed + s, n_jobs, window=window, reference_gpu=reference_gpu)
        per_seed.append(res)
        if s == seeds[0]:
            _plot_trace(res, ctx.out_dir)
    _write_trace_csv(ctx.out_dir / "trace_results.csv", [ctx.seed + s for s in seeds], per_seed)
    mean = _SeedMean(per_seed)
    ttd = {p: mean("ttd", p) for p in (*TRACE_POLICIES, SLACK)}
    t50 = {p: mean("t50", p) for p in (*TRACE_POLICIES, SLACK)}
    gru = {p: mean("gru_median", p) for p in TRACE_POLICIES}
    k = (
        f"mean of {len(seeds)} seed(s), {n_jobs}-job Philly sample (window {window}, "
        f"work = duration x {reference_gpu} rate), L=360 s"
    )
    lb = mean("critical_path_h", "hadar")
    workload, ttd_reason, t50_reason = _explanations(mean, ttd, lb, window)
    rows = _ttd_rows(P, ttd, mean, k, lb, per_seed[0], workload, ttd_reason)
    rows += _t50_and_workload_rows(P, ttd, t50, mean, k, workload, t50_reason)
    rows += _per_policy_rows(ttd, t50, gru, mean, k)
    rows += _gru_rows(gru, mean)
    return rows


class _SeedMean:
    """mean(key, policy): a result's mean over the seeds."""

    def __init__(self, per_seed: list[dict]) -> None:
        self.per_seed = per_seed

    def __call__(self, key: str, name: str) -> float:
        return float(np.mean([res[name][key] for res in self.per_seed]))


def _write_trace_csv(path: Path, seeds: list[int], per_seed: list[dict]) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "seed",
                "policy",
                "ttd_h",
                "t50_h",
                "mean_jct_h",
                "gru_median",
                "gru_median_no_restart",
                "churn",
                "sim_wall_s",
                "decision_mean_s",
                "fallback_fraction",
            ]
        )
        for s, res in zip(seeds, per_seed):
            for name, r in res.items():
                w.writerow(
                    [
                        s,
                        name,
                        f"{r['ttd'] / 3600:.4f}",
                        f"{r['t50'] / 3600:.4f}",
                        f"{r['mean_jct'] / 3600:.4f}",
                        f"{r['gru_median']:.4f}",
                        f"{r['gru_median_no_restart']:.4f}",
                        f"{r['churn']:.4f}",
                        f"{r['wall_s']:.3f}",
                        f"{r['decision_mean_s']:.6f}",
                        f"{r['fallback_fraction']:.4f}",
                    ]
                )


def _explanations(mean: _SeedMean, ttd: dict, lb: float, window: str) -> tuple[str, str, str]:
    """The notes that explain the numbers: the workload's shape, what sets TTD, why 50%-time differs."""
    workload = (
        f"workload: {100 * mean('single_gpu_fraction', 'hadar'):.0f}% of jobs W=1, "
        f"{mean('xl_jobs', 'hadar'):.1f} XL jobs "
        f"({WINDOW_NOTES[window]}), so Hadar's multi-server/mixed-type "
        f"allocations hold {100 * mean('spread_fraction', 'hadar'):.1f}% of its GPU-seconds"
    )
    if ttd["hadar"] / 3600 <= 1.1 * lb:
        ttd_reason = (
            f"why: TTD is set by one long job, not by cluster throughput: Hadar TTD {ttd['hadar'] / 3600:.1f} h vs "
            f"critical-path bound {lb:.1f} h (B0 sanity: max_j work/best rate); "
        )
    else:
        ttd_reason = (
            f"Hadar TTD {ttd['hadar'] / 3600:.1f} h vs critical-path bound {lb:.1f} h (B0 sanity: max_j work/best "
            f"rate): more than 10% above it, so throughput, not one job, sets TTD; "
        )
    t50_reason = (
        f"why: Hadar completes jobs in near-queue (FIFO) order, Spearman rho(end, queue position) "
        f"{mean('rho_queue', 'hadar'):.2f}, rho(end, length) {mean('rho_length', 'hadar'):.2f}; "
        "Gavel's LAS time-sharing "
        f"and Tiresias' 2D-LAS finish short jobs first (rho(end, length) Gavel {mean('rho_length', 'gavel'):.2f}, "
        f"Tiresias {mean('rho_length', 'tiresias'):.2f}). Spec §2.8 puts running jobs first in Q with a free KEEP "
        f"candidate, and the per-round payoff U_j(tau)-cost (effective throughput) has no term for job length or "
        f"attained service; same with utility=normalized, sticky, a 16x DP budget and the round's exact optimum "
        f"(solver=exact); only the named srpt / slack-srpt Q orders change it (see sensitivity)"
    )
    return workload, ttd_reason, t50_reason


def _ttd_rows(P, ttd, mean, k, lb, first, workload, ttd_reason) -> list[ComparisonRow]:
    """B0 and B2: Hadar's TTD beside the paper's and the critical-path bound; TTD ratios of the baselines."""

    def critical(p):
        r = first[p]
        return f"{p}'s last job {r['last_job']} spent {100 * r['last_job_k80']:.0f}% of its GPU time on K80"

    return [
        ComparisonRow(
            "trace",
            "Hadar TTD",
            P["hadar_ttd_h"],
            ttd["hadar"] / 3600,
            "h",
            "B0 "
            + in_range(ttd["hadar"] / 3600, 26, 54)
            + f"; {k}; V100 work {mean('work_v100_gpu_h', 'hadar'):.0f} GPU-h; critical-path bound {lb:.1f} h",
        ),
        ComparisonRow(
            "trace",
            "B0 critical-path bound max_j work/best rate",
            None,
            lb,
            "h",
            "Hadar's TTD cannot be below it; " + workload,
        ),
        ComparisonRow(
            "trace",
            "TTD Gavel/Hadar",
            P["ttd_ratio_gavel"],
            ttd["gavel"] / ttd["hadar"],
            "x",
            "B2 "
            + in_range(ttd["gavel"] / ttd["hadar"], 1.05, 1.45)
            + "; "
            + critical("gavel")
            + " (Gavel rotates it over types)",
        ),
        ComparisonRow(
            "trace",
            "TTD Tiresias/Hadar",
            P["ttd_ratio_tiresias"],
            ttd["tiresias"] / ttd["hadar"],
            "x",
            "B2 "
            + in_range(ttd["tiresias"] / ttd["hadar"], 1.10, 1.75)
            + "; "
            + ttd_reason
            + critical("tiresias")
            + " (random type choice, spec §4.2/A10; K80 is 2-7x slower), "
            "so the ratio is a per-seed lottery on where the longest jobs land",
        ),
        ComparisonRow(
            "trace",
            "TTD YARN-CS/Hadar",
            P["ttd_ratio_yarn"],
            ttd["yarn-cs"] / ttd["hadar"],
            "x",
            "B2 "
            + in_range(ttd["yarn-cs"] / ttd["hadar"], 1.25, 2.30)
            + "; "
            + ttd_reason
            + critical("yarn-cs")
            + " (random type choice, non-preemptive: it never leaves K80)",
        ),
    ]


def _t50_and_workload_rows(P, ttd, t50, mean, k, workload, t50_reason) -> list[ComparisonRow]:
    """B3 50%-time ratios, the slack variant, HadarE, churn, DP fallbacks and the workload's shape."""
    return [
        ComparisonRow(
            "trace",
            "50%-time Gavel/Hadar",
            P["t50_ratio_gavel"],
            t50["gavel"] / t50["hadar"],
            "x",
            "B3 " + in_range(t50["gavel"] / t50["hadar"], 1.00, 1.50) + "; " + t50_reason,
        ),
        ComparisonRow(
            "trace",
            "50%-time Tiresias/Hadar",
            P["t50_ratio_tiresias"],
            t50["tiresias"] / t50["hadar"],
            "x",
            "B3 " + in_range(t50["tiresias"] / t50["hadar"], 1.05, 1.90) + "; same reason as Gavel/Hadar",
        ),
        *slack_rows(ttd, t50, mean, k),
        ComparisonRow(
            "trace",
            "TTD HadarE/Hadar",
            None,
            ttd["hadare"] / ttd["hadar"],
            "x",
            "HadarE forks jobs into copies (simulator opt-in forking): it can beat the single-copy critical-path bound",
        ),
        ComparisonRow(
            "trace",
            "Hadar allocation churn",
            P["churn"],
            mean("churn", "hadar"),
            "fraction of rounds",
            "B5 flag if outside [0.1, 0.6]; running jobs ordered by first start in Q (spec §2.8)",
        ),
        ComparisonRow(
            "trace",
            "Hadar DP fallback rounds",
            None,
            mean("fallback_fraction", "hadar"),
            "fraction of rounds",
            "state budget hit (max_states=64; spec 200 000, see sensitivity for a 16x budget)",
        ),
        ComparisonRow(
            "trace",
            "Hadar GPU-seconds on multi-server allocations",
            None,
            mean("spread_fraction", "hadar"),
            "fraction",
            workload,
        ),
        ComparisonRow(
            "trace", "workload share of multi-GPU jobs (W>1)", None, mean("multi_gpu_fraction", "hadar"), "fraction", k
        ),
        ComparisonRow("trace", "workload share of XL jobs", None, mean("xl_fraction", "hadar"), "fraction", k),
    ]


def _per_policy_rows(ttd, t50, gru, mean, k) -> list[ComparisonRow]:
    """TTD, 50%-time, median GRU and wall time of every policy, and the B1 TTD order."""
    rows: list[ComparisonRow] = []
    for p in TRACE_POLICIES:
        rows.append(ComparisonRow("trace", f"TTD {p}", None, ttd[p] / 3600, "h", k))
        rows.append(ComparisonRow("trace", f"50%-time {p}", None, t50[p] / 3600, "h", k))
        rows.append(
            ComparisonRow("trace", f"median GRU {p}", None, gru[p], "fraction", "Fig. 3 (allocated incl. restart)")
        )
        rows.append(ComparisonRow("trace", f"sim wall time {p}", None, mean("wall_s", p), "s", "one 480-job run"))
    order_ok = ttd["hadar"] < ttd["gavel"] < ttd["tiresias"] and ttd["tiresias"] < ttd["yarn-cs"]
    rows.append(
        ComparisonRow(
            "trace",
            "B1 TTD order Hadar<Gavel<Tiresias<YARN-CS",
            None,
            float(order_ok),
            "bool",
            "order: " + " < ".join(sorted(TRACE_POLICIES, key=lambda p: ttd[p])),
        )
    )

    return rows


def _b4(g: dict) -> bool:
    """B4: GRU YARN >= Gavel, Tiresias; Hadar > Gavel, Tiresias; |Hadar - YARN| <= 10 points."""
    return (
        g["yarn-cs"] >= g["gavel"]
        and g["yarn-cs"] >= g["tiresias"]
        and g["hadar"] > g["gavel"]
        and g["hadar"] > g["tiresias"]
        and abs(g["hadar"] - g["yarn-cs"]) <= 0.10
    )


def _gru_rows(gru, mean) -> list[ComparisonRow]:
    """B4 on the median GRU of all rounds, and (report only) on the rounds with a backlog."""
    rows: list[ComparisonRow] = []
    rows.append(
        ComparisonRow(
            "trace",
            "B4 GRU YARN>=Gavel,Tiresias; Hadar>Gavel,Tiresias; |Hadar-YARN|<=10pt",
            None,
            float(_b4(gru)),
            "bool",
            "median GRU "
            + ", ".join(f"{p} {gru[p]:.2f}" for p in TRACE_POLICIES)
            + "; the round-weighted median is dominated by each policy's tail, where one long job runs alone "
            "(YARN-CS's tail is longest: its critical job sits on K80)",
        )
    )
    backlog = {p: mean("gru_median_backlog", p) for p in TRACE_POLICIES}
    for p in TRACE_POLICIES:
        rows.append(
            ComparisonRow(
                "trace",
                f"median GRU {p}, rounds with a backlog",
                None,
                backlog[p],
                "fraction",
                "report only (ours): only rounds that start with an arrived job not running (metrics.backlog_rounds)",
            )
        )
    rows.append(
        ComparisonRow(
            "trace",
            "B4 on rounds with a backlog (report)",
            None,
            float(_b4(backlog)),
            "bool",
            "the B4 conditions on the backlog window: " + ", ".join(f"{p} {backlog[p]:.2f}" for p in TRACE_POLICIES),
        )
    )
    return rows
