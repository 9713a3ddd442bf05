"""Reproduction of Hadar/HadarE (Sultana et al., arXiv 2503.10918v1; spec hadar.md): ours beside the paper's.

Experiments (each computed here, paper numbers from ``gpuweave/hadar/data/paper_numbers.toml``):

* ``trace``: the 480-job Philly-derived workload (:mod:`gpuweave.hadar.trace`) on gavel-60 (15 x 4 GPUs,
  20 V100/P100/K80), L = 360 s for every policy (YARN-CS too: decisions at round boundaries, spec §5.5),
  10 s restart; Hadar, HadarE, Gavel, Tiresias, YARN-CS; TTD and 50%-time ratios vs Hadar (Fig. 4 text),
  GRU per round and its CDF (Fig. 3), completed jobs over time (Fig. 4), churn, DP fallbacks. Seeds:
  ``--seeds N`` (quick default 1; ``--full`` 3). ``--window busiest|daily-03-10|busiest-diverse`` picks
  the Philly window rule of the workload (:mod:`gpuweave.hadar.trace`; default ``busiest``, the spec's
  §5.2 step 1 resolution); it applies to ``trace`` and ``sensitivity``. ``--reference-gpu`` (default V100,
  spec §5.2 step 9) is the GPU whose rate turns a duration into work (trace only).
* ``fig5``: decision time of one round vs #jobs (32...2048), Hadar and Gavel, log-log slopes.
* ``physical``: HadarE/Hadar/Gavel emulation on the AWS and lab clusters (:mod:`gpuweave.hadar.emulation`),
  mixes M-1...M-12, slots 90/180/360 s: CRU, TTD, JCT ratios (Figs. 8-12), checks C1, C3, C4; the C3 ratios
  again for the named emulation variants (the paper's beta-node last round, backfill, sticky Hadar, the sqrt
  PMI form, normalized utility) at slot 360 s.
* ``fig1``: the motivating example (A7): brute-force optimum, Gavel's mechanism, Hadar's round count.
* ``sensitivity`` (``--sensitivity``, spec §8 B7): slot length 90/180/360 s for Hadar, Gavel, Tiresias and
  YARN-CS; Hadar's normalized utility, sticky variant, a 16x DP state budget, the exact round optimum
  (HiGHS), backfill and the srpt / slack-srpt Q orders (named variants, ours); Gavel's
  ``min_total_duration`` policy; strict-FIFO YARN-CS; the communication-cost sweep kappa in {0, 1, 10}
  (spec A6). C5 (the CRU-best slot per mix, HadarE and Hadar) is part of ``physical``.

Outputs: comparison.csv, trace_results.csv, fig5_decision_time.csv, physical_results.csv, fig3_gru_cdf.png,
fig4_completed.png, fig5_decision_time.png, fig8_12_physical.png; with --sensitivity also sensitivity_results.csv.
"""

from __future__ import annotations

import csv
import time
import tomllib
from importlib import resources
from pathlib import Path

import numpy as np

from gpuweave.repro.registry import ComparisonRow, ReproContext, register_reproduction

TRACE_POLICIES = ("hadar", "hadare", "gavel", "tiresias", "yarn-cs")
SLACK = "hadar[slack-srpt]"  # our named variant, run beside the paper's Hadar in the trace experiment
SIZES = (32, 64, 128, 256, 512, 1024, 2048)
MIXES = ("M-1", "M-3", "M-4", "M-5", "M-8", "M-10", "M-12")
SLOTS = (90.0, 180.0, 360.0)


def paper_numbers() -> dict:
    return tomllib.loads(resources.files("gpuweave.hadar").joinpath("data", "paper_numbers.toml").read_text())


def _inrange(x: float, lo: float, hi: float) -> str:
    return f"spec range [{lo}, {hi}]: {'ok' if lo <= x <= hi else 'OUT'}"


def _trace_env():
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
    from gpuweave.cluster.policies import make_policy
    from gpuweave.cluster.simulator import Simulator
    from gpuweave.hadar import metrics as hm

    profiles, nodes, power = env
    if name in ("tiresias", "yarn-cs"):
        # Tiresias and YARN-CS pick a GPU type without looking at throughput, uniformly among those with room
        # (spec §4.2-4.3, A10; seeded): YARN-CS's own default ("fixed", cluster order = V100 first on gavel-60)
        # would make it heterogeneity-aware by accident.
        options = {"seed": seed, "type_choice": "random", **options}
    policy = make_policy(name, **options)
    policy.round_length = round_length
    t0 = time.perf_counter()
    rec = Simulator(nodes, jobs, policy, profiles, power).run()
    wall = time.perf_counter() - t0
    gru = hm.gru_per_round(rec, round_length)
    w = hm.round_weights(rec, round_length)
    gru_x = hm.gru_per_round(rec, round_length, include_restart=False)
    times = [d for _, _, d in getattr(policy, "decision_times", [])]
    # Diagnostics for the notes: GPU-seconds on multi-server placements (task-level heterogeneity / kappa only
    # matter there), the job that finishes last and where it ran, completion order vs queue order and length.
    total = spread = 0.0
    for seg in rec.segments:
        g = sum(k for _, k in seg.placement) * (seg.end - seg.start)
        total += g
        if len(seg.placement) > 1:
            spread += g
    last = max(rec.jobs, key=lambda js: js.end)
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
        "fallback_fraction": getattr(policy, "fallback_rounds", 0) / max(1, getattr(policy, "rounds", 1)),
        "work_v100_gpu_h": sum(j.duration * j.num_gpus for j in jobs) / 3600.0,
        "spread_fraction": spread / total if total else 0.0,
        "last_job": f"{last.job.job_id} {last.job.job_type} W={last.job.num_gpus} (V100 {last.job.duration / 3600:.1f} h)",
        "last_job_k80": last.gpu_seconds_by_model.get("K80", 0.0) / held,
        "rho_queue": _rank_corr(ends, np.arange(ends.size)),
        "rho_length": _rank_corr(ends, np.array([js.job.duration for js in ordered])),
        "u_min": float(np.max(policy.last_constants.u_min)) if getattr(policy, "last_constants", None) else float("nan"),
        "u_max": float(np.max(policy.last_constants.u_max)) if getattr(policy, "last_constants", None) else float("nan"),
    }


def _backlog_median(gru, weights, mask) -> float:
    from gpuweave.hadar import metrics as hm

    return hm.weighted_median(gru[mask], weights[mask]) if mask.any() else float("nan")


def critical_path_h(jobs, env) -> float:
    """B0 sanity bound: max_j E_jN_j / (best single-allocation rate), in hours."""
    from gpuweave.hadar.throughput import RateTable

    profiles, nodes, _ = env
    models = list(dict.fromkeys(n.gpu_model for n in nodes))
    table = RateTable(profiles, models)
    best = 0.0
    for j in jobs:
        cons, uncons = table.get(j.job_type, j.num_gpus)
        rate = max(float(np.max(cons)), float(np.max(uncons)))
        best = max(best, j.work / rate)
    return best / 3600.0


def run_trace(seed: int, n_jobs: int = 480, policies=TRACE_POLICIES, round_length: float = 360.0,
              window: str = "busiest", reference_gpu: str = "V100") -> dict:
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

    from gpuweave.hadar import metrics as hm

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
    note = (f"{k}; NOT the paper's Hadar: our named variant order=slack-srpt (shortest first unless a job's slack "
            "to the makespan bound is under one round), report only; spec range ")
    v = SLACK
    rows = [ComparisonRow("trace", f"{v} TTD", None, ttd[v] / 3600, "h", f"{k}; critical-path bound {mean('critical_path_h', 'hadar'):.1f} h")]
    for p, lo, hi, key in (("gavel", 1.05, 1.45, "ttd_ratio_gavel"), ("tiresias", 1.10, 1.75, "ttd_ratio_tiresias"), ("yarn-cs", 1.25, 2.30, "ttd_ratio_yarn")):
        x = ttd[p] / ttd[v]
        rows.append(ComparisonRow("trace", f"{v} TTD {p}/Hadar", paper_numbers()["trace"][key], x, "x", note + _inrange(x, lo, hi)))
    for p, lo, hi, key in (("gavel", 1.00, 1.50, "t50_ratio_gavel"), ("tiresias", 1.05, 1.90, "t50_ratio_tiresias")):
        x = t50[p] / t50[v]
        rows.append(ComparisonRow("trace", f"{v} 50%-time {p}/Hadar", paper_numbers()["trace"][key], x, "x", note + _inrange(x, lo, hi)))
    rows.append(ComparisonRow("trace", f"{v} mean JCT", None, mean("mean_jct", v) / 3600, "h",
                              f"{k}; default Hadar {mean('mean_jct', 'hadar') / 3600:.1f} h, Gavel {mean('mean_jct', 'gavel') / 3600:.1f} h"))
    return rows


def trace_rows(ctx: ReproContext, seeds: list[int], n_jobs: int, window: str = "busiest",
               reference_gpu: str = "V100") -> list[ComparisonRow]:
    P = paper_numbers()["trace"]
    per_seed = []
    for s in seeds:
        res = run_trace(ctx.seed + s, n_jobs, window=window, reference_gpu=reference_gpu)
        per_seed.append(res)
        if s == seeds[0]:
            _plot_trace(res, ctx.out_dir)
    with open(ctx.out_dir / "trace_results.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["seed", "policy", "ttd_h", "t50_h", "mean_jct_h", "gru_median", "gru_median_no_restart", "churn", "sim_wall_s", "decision_mean_s", "fallback_fraction"])
        for s, res in zip(seeds, per_seed):
            for name, r in res.items():
                w.writerow([ctx.seed + s, name, f"{r['ttd']/3600:.4f}", f"{r['t50']/3600:.4f}", f"{r['mean_jct']/3600:.4f}", f"{r['gru_median']:.4f}",
                            f"{r['gru_median_no_restart']:.4f}", f"{r['churn']:.4f}", f"{r['wall_s']:.3f}", f"{r['decision_mean_s']:.6f}", f"{r['fallback_fraction']:.4f}"])

    def mean(key, name):
        return float(np.mean([res[name][key] for res in per_seed]))

    ttd = {p: mean("ttd", p) for p in (*TRACE_POLICIES, SLACK)}
    t50 = {p: mean("t50", p) for p in (*TRACE_POLICIES, SLACK)}
    gru = {p: mean("gru_median", p) for p in TRACE_POLICIES}
    k = f"mean of {len(seeds)} seed(s), {n_jobs}-job Philly sample (window {window}, work = duration x {reference_gpu} rate), L=360 s"
    first = per_seed[0]
    lb = mean("critical_path_h", "hadar")
    workload = (f"workload: {100 * mean('single_gpu_fraction', 'hadar'):.0f}% of jobs W=1, {mean('xl_jobs', 'hadar'):.1f} XL jobs "
                f"({WINDOW_NOTES[window]}), so Hadar's multi-server/mixed-type "
                f"allocations hold {100 * mean('spread_fraction', 'hadar'):.1f}% of its GPU-seconds")

    def critical(p):
        r = first[p]
        return f"{p}'s last job {r['last_job']} spent {100 * r['last_job_k80']:.0f}% of its GPU time on K80"

    if ttd["hadar"] / 3600 <= 1.1 * lb:
        ttd_reason = (f"why: TTD is set by one long job, not by cluster throughput: Hadar TTD {ttd['hadar'] / 3600:.1f} h vs "
                      f"critical-path bound {lb:.1f} h (B0 sanity: max_j work/best rate); ")
    else:
        ttd_reason = (f"Hadar TTD {ttd['hadar'] / 3600:.1f} h vs critical-path bound {lb:.1f} h (B0 sanity: max_j work/best "
                      f"rate): more than 10% above it, so throughput, not one job, sets TTD; ")
    t50_reason = (f"why: Hadar completes jobs in near-queue (FIFO) order, Spearman rho(end, queue position) "
                  f"{mean('rho_queue', 'hadar'):.2f}, rho(end, length) {mean('rho_length', 'hadar'):.2f}; Gavel's LAS time-sharing "
                  f"and Tiresias' 2D-LAS finish short jobs first (rho(end, length) Gavel {mean('rho_length', 'gavel'):.2f}, "
                  f"Tiresias {mean('rho_length', 'tiresias'):.2f}). Spec §2.8 puts running jobs first in Q with a free KEEP "
                  f"candidate, and the per-round payoff U_j(tau)-cost (effective throughput) has no term for job length or "
                  f"attained service; same with utility=normalized, sticky, a 16x DP budget and the round's exact optimum "
                  f"(solver=exact); only the named srpt / slack-srpt Q orders change it (see sensitivity)")
    rows = [
        ComparisonRow("trace", "Hadar TTD", P["hadar_ttd_h"], ttd["hadar"] / 3600, "h", "B0 " + _inrange(ttd["hadar"] / 3600, 26, 54) + f"; {k}; V100 work {mean('work_v100_gpu_h', 'hadar'):.0f} GPU-h; critical-path bound {lb:.1f} h"),
        ComparisonRow("trace", "B0 critical-path bound max_j work/best rate", None, lb, "h", "Hadar's TTD cannot be below it; " + workload),
        ComparisonRow("trace", "TTD Gavel/Hadar", P["ttd_ratio_gavel"], ttd["gavel"] / ttd["hadar"], "x", "B2 " + _inrange(ttd["gavel"] / ttd["hadar"], 1.05, 1.45) + "; " + critical("gavel") + " (Gavel rotates it over types)"),
        ComparisonRow("trace", "TTD Tiresias/Hadar", P["ttd_ratio_tiresias"], ttd["tiresias"] / ttd["hadar"], "x", "B2 " + _inrange(ttd["tiresias"] / ttd["hadar"], 1.10, 1.75) + "; " + ttd_reason + critical("tiresias") + " (random type choice, spec §4.2/A10; K80 is 2-7x slower), so the ratio is a per-seed lottery on where the longest jobs land"),
        ComparisonRow("trace", "TTD YARN-CS/Hadar", P["ttd_ratio_yarn"], ttd["yarn-cs"] / ttd["hadar"], "x", "B2 " + _inrange(ttd["yarn-cs"] / ttd["hadar"], 1.25, 2.30) + "; " + ttd_reason + critical("yarn-cs") + " (random type choice, non-preemptive: it never leaves K80)"),
        ComparisonRow("trace", "50%-time Gavel/Hadar", P["t50_ratio_gavel"], t50["gavel"] / t50["hadar"], "x", "B3 " + _inrange(t50["gavel"] / t50["hadar"], 1.00, 1.50) + "; " + t50_reason),
        ComparisonRow("trace", "50%-time Tiresias/Hadar", P["t50_ratio_tiresias"], t50["tiresias"] / t50["hadar"], "x", "B3 " + _inrange(t50["tiresias"] / t50["hadar"], 1.05, 1.90) + "; same reason as Gavel/Hadar"),
        *slack_rows(ttd, t50, mean, k),
        ComparisonRow("trace", "TTD HadarE/Hadar", None, ttd["hadare"] / ttd["hadar"], "x", "HadarE forks jobs into copies (simulator opt-in forking): it can beat the single-copy critical-path bound"),
        ComparisonRow("trace", "Hadar allocation churn", P["churn"], mean("churn", "hadar"), "fraction of rounds", "B5 flag if outside [0.1, 0.6]; running jobs ordered by first start in Q (spec §2.8)"),
        ComparisonRow("trace", "Hadar DP fallback rounds", None, mean("fallback_fraction", "hadar"), "fraction of rounds", "state budget hit (max_states=64; spec 200 000, see sensitivity for a 16x budget)"),
        ComparisonRow("trace", "Hadar GPU-seconds on multi-server allocations", None, mean("spread_fraction", "hadar"), "fraction", workload),
        ComparisonRow("trace", "workload share of multi-GPU jobs (W>1)", None, mean("multi_gpu_fraction", "hadar"), "fraction", k),
        ComparisonRow("trace", "workload share of XL jobs", None, mean("xl_fraction", "hadar"), "fraction", k),
    ]
    for p in TRACE_POLICIES:
        rows.append(ComparisonRow("trace", f"TTD {p}", None, ttd[p] / 3600, "h", k))
        rows.append(ComparisonRow("trace", f"50%-time {p}", None, t50[p] / 3600, "h", k))
        rows.append(ComparisonRow("trace", f"median GRU {p}", None, gru[p], "fraction", "Fig. 3 (allocated incl. restart)"))
        rows.append(ComparisonRow("trace", f"sim wall time {p}", None, mean("wall_s", p), "s", "one 480-job run"))
    order_ok = ttd["hadar"] < ttd["gavel"] < ttd["tiresias"] and ttd["tiresias"] < ttd["yarn-cs"]
    rows.append(ComparisonRow("trace", "B1 TTD order Hadar<Gavel<Tiresias<YARN-CS", None, float(order_ok), "bool",
                              "order: " + " < ".join(sorted(TRACE_POLICIES, key=lambda p: ttd[p]))))
    def b4(g):
        return (g["yarn-cs"] >= g["gavel"] and g["yarn-cs"] >= g["tiresias"] and g["hadar"] > g["gavel"]
                and g["hadar"] > g["tiresias"] and abs(g["hadar"] - g["yarn-cs"]) <= 0.10)

    rows.append(ComparisonRow("trace", "B4 GRU YARN>=Gavel,Tiresias; Hadar>Gavel,Tiresias; |Hadar-YARN|<=10pt", None, float(b4(gru)), "bool",
                              "median GRU " + ", ".join(f"{p} {gru[p]:.2f}" for p in TRACE_POLICIES)
                              + "; the round-weighted median is dominated by each policy's tail, where one long job runs alone "
                              "(YARN-CS's tail is longest: its critical job sits on K80)"))
    backlog = {p: mean("gru_median_backlog", p) for p in TRACE_POLICIES}
    for p in TRACE_POLICIES:
        rows.append(ComparisonRow("trace", f"median GRU {p}, rounds with a backlog", None, backlog[p], "fraction",
                                  "report only (ours): only rounds that start with an arrived job not running (metrics.backlog_rounds)"))
    rows.append(ComparisonRow("trace", "B4 on rounds with a backlog (report)", None, float(b4(backlog)), "bool",
                              "the B4 conditions on the backlog window: " + ", ".join(f"{p} {backlog[p]:.2f}" for p in TRACE_POLICIES)))
    return rows


SENS_POLICIES = ("hadar", "gavel", "tiresias", "yarn-cs")


def sensitivity_rows(ctx: ReproContext, seeds: list[int], n_jobs: int, window: str = "busiest") -> list[ComparisonRow]:
    """Spec §8 B7 (report only): slot length, utility variant, sticky variant, Gavel's makespan policy, strict
    YARN, the DP state budget, and the communication-cost sweep kappa in {0, 1, 10} (spec A6); and our named
    Hadar variants beside the paper's (report only, never the defaults): the round's exact optimum by HiGHS
    (``solver=exact``, about 30 s per seed), backfill after the DP, and the ``srpt`` / ``slack-srpt`` Q
    orders (:func:`gpuweave.cluster.policies.hadar.queue_order`).

    Every case is compared against the default runs of the same seeds; ratios against the paper's numbers are
    shown where the paper states one for that comparison (it reports only the L = 360 s defaults)."""
    from gpuweave.hadar.trace import hadar_workload

    P = paper_numbers()["trace"]
    env = _trace_env()
    cases = {
        "default": {p: (360.0, {}) for p in SENS_POLICIES},
        "L=90 s": {p: (90.0, {}) for p in SENS_POLICIES},
        "L=180 s": {p: (180.0, {}) for p in SENS_POLICIES},
        "utility=normalized": {"hadar": (360.0, {"utility": "normalized"})},
        "hadar_variant=sticky": {"hadar": (360.0, {"variant": "sticky"})},
        "gavel=min_total_duration": {"gavel": (360.0, {"policy": "min_total_duration"})},
        "yarn strict FIFO": {"yarn-cs": (360.0, {"strict": True})},
        "kappa=0": {"hadar": (360.0, {"kappa": 0.0})},
        "kappa=10": {"hadar": (360.0, {"kappa": 10.0})},
        "DP budget 1024 states": {"hadar": (360.0, {"max_states": 1024})},
        "solver=exact": {"hadar": (360.0, {"solver": "exact"})},
        "backfill": {"hadar": (360.0, {"backfill": True})},
        "order=srpt": {"hadar": (360.0, {"order": "srpt"})},
        "order=slack-srpt": {"hadar": (360.0, {"order": "slack-srpt"})},
    }
    res: dict[str, dict[str, list[dict]]] = {c: {} for c in cases}
    for s in seeds:
        jobs = hadar_workload(ctx.seed + s, n_jobs, env[0], window=window)
        for case, runs in cases.items():
            for p, (L, opts) in runs.items():
                r = simulate_policy(p, jobs, env, ctx.seed + s, L, **opts)
                r.pop("rec")
                res[case].setdefault(p, []).append(r)

    def m(case, p, key):
        runs = res[case].get(p) or res["default"][p]
        return float(np.mean([r[key] for r in runs]))

    with open(ctx.out_dir / "sensitivity_results.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["case", "policy", "runs", "ttd_h", "t50_h", "gru_median", "churn", "spread_fraction", "fallback_fraction", "sim_wall_s"])
        for case, by_p in res.items():
            for p, runs in by_p.items():
                w.writerow([case, p, len(runs), f"{m(case, p, 'ttd') / 3600:.4f}", f"{m(case, p, 't50') / 3600:.4f}", f"{m(case, p, 'gru_median'):.4f}",
                            f"{m(case, p, 'churn'):.4f}", f"{m(case, p, 'spread_fraction'):.4f}", f"{m(case, p, 'fallback_fraction'):.4f}", f"{m(case, p, 'wall_s'):.3f}"])
    k = f"B7 report only; mean of {len(seeds)} seed(s), window {window}"
    rows: list[ComparisonRow] = []
    # Slot length: TTD and GRU of every policy, and the ratios, at L = 90 / 180 / 360 s.
    for case in ("L=90 s", "L=180 s", "default"):
        label = "L=360 s" if case == "default" else case
        for p in SENS_POLICIES:
            rows.append(ComparisonRow("sensitivity", f"{label} TTD {p}", P["hadar_ttd_h"] if (p == "hadar" and case == "default") else None,
                                      m(case, p, "ttd") / 3600, "h", k))
            rows.append(ComparisonRow("sensitivity", f"{label} median GRU {p}", None, m(case, p, "gru_median"), "fraction", k + "; GRU per round of length L (spec §5.6)"))
        paper_or_none = (lambda v: v) if case == "default" else (lambda v: None)
        for p, key in (("gavel", "ttd_ratio_gavel"), ("tiresias", "ttd_ratio_tiresias"), ("yarn-cs", "ttd_ratio_yarn")):
            rows.append(ComparisonRow("sensitivity", f"{label} TTD {p}/Hadar", paper_or_none(P[key]), m(case, p, "ttd") / m(case, "hadar", "ttd"), "x",
                                      k + ("" if case == "default" else "; the paper reports only L=360 s")))
    # Hadar variants: their ratios against the default baselines (the paper does not say which utility it used, A8).
    for case in ("utility=normalized", "hadar_variant=sticky", "DP budget 1024 states", "solver=exact", "backfill",
                 "order=srpt", "order=slack-srpt"):
        h_ttd, h_t50 = m(case, "hadar", "ttd"), m(case, "hadar", "t50")
        note = f"{k}; Hadar {case}, baselines default"
        rows += [
            ComparisonRow("sensitivity", f"{case}: Hadar TTD", P["hadar_ttd_h"], h_ttd / 3600, "h", note),
            ComparisonRow("sensitivity", f"{case}: Hadar 50%-time", None, h_t50 / 3600, "h", note),
            ComparisonRow("sensitivity", f"{case}: Hadar median GRU", None, m(case, "hadar", "gru_median"), "fraction", note),
            ComparisonRow("sensitivity", f"{case}: Hadar churn", P["churn"] if case in ("utility=normalized", "hadar_variant=sticky") else None, m(case, "hadar", "churn"), "fraction of rounds",
                          note + ("; sticky = the paper's §IV-B incremental mode, never changes a running job" if "sticky" in case else "")),
            ComparisonRow("sensitivity", f"{case}: TTD Gavel/Hadar", P["ttd_ratio_gavel"], m("default", "gavel", "ttd") / h_ttd, "x", note),
            ComparisonRow("sensitivity", f"{case}: TTD Tiresias/Hadar", P["ttd_ratio_tiresias"], m("default", "tiresias", "ttd") / h_ttd, "x", note),
            ComparisonRow("sensitivity", f"{case}: TTD YARN-CS/Hadar", P["ttd_ratio_yarn"], m("default", "yarn-cs", "ttd") / h_ttd, "x", note),
            ComparisonRow("sensitivity", f"{case}: 50%-time Gavel/Hadar", P["t50_ratio_gavel"], m("default", "gavel", "t50") / h_t50, "x", note),
            ComparisonRow("sensitivity", f"{case}: 50%-time Tiresias/Hadar", P["t50_ratio_tiresias"], m("default", "tiresias", "t50") / h_t50, "x", note),
        ]
    rows.append(ComparisonRow("sensitivity", "DP budget 1024 states: fallback rounds", None, m("DP budget 1024 states", "hadar", "fallback_fraction"), "fraction of rounds",
                              f"{k}; default 64 states: {m('default', 'hadar', 'fallback_fraction'):.2f}; spec default 200 000 is too slow here (dp.py)"))
    # Gavel's makespan policy and strict YARN.
    g_ttd = m("gavel=min_total_duration", "gavel", "ttd")
    rows += [
        ComparisonRow("sensitivity", "gavel=min_total_duration: Gavel TTD", None, g_ttd / 3600, "h", k + "; Gavel min_total_duration_perf (binary search on T, HiGHS), spec §4.1/A11"),
        ComparisonRow("sensitivity", "gavel=min_total_duration: TTD Gavel/Hadar", P["ttd_ratio_gavel"], g_ttd / m("default", "hadar", "ttd"), "x", k + "; Hadar default"),
        ComparisonRow("sensitivity", "gavel=min_total_duration: 50%-time Gavel/Hadar", P["t50_ratio_gavel"], m("gavel=min_total_duration", "gavel", "t50") / m("default", "hadar", "t50"), "x", k),
        ComparisonRow("sensitivity", "gavel=min_total_duration: median GRU", None, m("gavel=min_total_duration", "gavel", "gru_median"), "fraction", k),
        ComparisonRow("sensitivity", "yarn strict FIFO: YARN-CS TTD", None, m("yarn strict FIFO", "yarn-cs", "ttd") / 3600, "h", k + "; head-of-line blocking (spec §4.3/A10)"),
        ComparisonRow("sensitivity", "yarn strict FIFO: TTD YARN-CS/Hadar", P["ttd_ratio_yarn"], m("yarn strict FIFO", "yarn-cs", "ttd") / m("default", "hadar", "ttd"), "x", k),
        ComparisonRow("sensitivity", "yarn strict FIFO: median GRU", None, m("yarn strict FIFO", "yarn-cs", "gru_median"), "fraction", k),
    ]
    # Communication cost kappa (spec A6): comm(a) = kappa (servers - 1) max_r U_min^r.
    for kap, case in ((0.0, "kappa=0"), (1.0, "default"), (10.0, "kappa=10")):
        note = (f"{k}; comm = kappa (servers-1) max U_min (spec A6); Hadar's multi-server share "
                f"{100 * m(case, 'hadar', 'spread_fraction'):.1f}% of GPU-seconds: kappa can only act on jobs that must or may span servers; "
                f"last round's max U_min {m(case, 'hadar', 'u_min'):.3g} vs U_max {m(case, 'hadar', 'u_max'):.3g}, so even kappa=10 is a "
                f"tie-breaker-scale penalty (spec §2.8)")
        rows += [
            ComparisonRow("sensitivity", f"kappa={kap:g}: Hadar TTD", None, m(case, "hadar", "ttd") / 3600, "h", note),
            ComparisonRow("sensitivity", f"kappa={kap:g}: Hadar 50%-time", None, m(case, "hadar", "t50") / 3600, "h", note),
            ComparisonRow("sensitivity", f"kappa={kap:g}: Hadar multi-server GPU-seconds", None, m(case, "hadar", "spread_fraction"), "fraction", note),
        ]
    return rows


def fig5_rows(ctx: ReproContext, reps: int) -> list[ComparisonRow]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gpuweave.hadar.scalability import cpu_model, curve, loglog_slope

    data = curve(("hadar", "gavel"), SIZES, reps)
    with open(ctx.out_dir / "fig5_decision_time.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["policy", "jobs", "gpus", "seconds", "dp_fallback", "cpu"])
        for d in data:
            w.writerow([d["policy"], d["jobs"], d["gpus"], f"{d['seconds']:.6f}", d.get("fallback", ""), cpu_model()])
    fig, ax = plt.subplots(figsize=(6, 4))
    slopes = {}
    for p in ("hadar", "gavel"):
        xs = [d["jobs"] for d in data if d["policy"] == p]
        ys = [d["seconds"] for d in data if d["policy"] == p]
        slopes[p] = loglog_slope(xs, ys)
        ax.loglog(xs, ys, marker="o", label=f"{p} (slope {slopes[p]:.2f})")
    ax.set_xlabel("# jobs")
    ax.set_ylabel("decision time per round (s)")
    ax.set_title("Fig. 5: scheduling time vs jobs")
    ax.legend()
    fig.tight_layout()
    fig.savefig(ctx.out_dir / "fig5_decision_time.png", dpi=110)
    plt.close(fig)
    P = paper_numbers()["scalability"]
    at = {d["policy"]: d["seconds"] for d in data if d["jobs"] == SIZES[-1]}
    rows = [ComparisonRow("fig5", f"{p} decision time at {d['jobs']} jobs", None, d["seconds"], "s", cpu_model()) for d in data for p in [d["policy"]]]
    rows.append(ComparisonRow("fig5", "Hadar decision time at ~2000 jobs", P["hadar_round_s_at_2000"], at["hadar"], "s", "paper: < 7 min; issue target < 2 s; B6 must be <= 420 s"))
    hit = [d["jobs"] for d in data if d["policy"] == "hadar" and d.get("fallback")]
    rows.append(ComparisonRow("fig5", "Hadar DP fallback (sizes where the state budget was hit)", None, len(hit), "sizes",
                              "B6 report: " + (", ".join(map(str, hit)) + " jobs" if hit else "none") + "; the budget's greedy completion is "
                              "the spec's fallback (dp.py, max_states=64)"))
    rows.append(ComparisonRow("fig5", "log-log slope Hadar - Gavel", None, slopes["hadar"] - slopes["gavel"], "", f"B6 within +-0.5: {'ok' if abs(slopes['hadar'] - slopes['gavel']) <= 0.5 else 'OUT'}; Hadar {slopes['hadar']:.2f}, Gavel {slopes['gavel']:.2f}"))
    return rows


def emulate_grid(seeds: list[int], base_seed: int, slots=SLOTS, **options) -> dict:
    """Mean CRU/TTD/JCT per (cluster, mix, slot, scheduler) over ``seeds`` (physical-cluster emulation)."""
    from gpuweave.hadar.emulation import emulate

    res = {}
    for cluster in ("aws", "lab"):
        for mix in MIXES:
            for slot in slots:
                for s in ("hadare", "hadar", "gavel"):
                    rs = [emulate(s, cluster, mix, slot, seed=base_seed + k, **options) for k in seeds]
                    res[(cluster, mix, slot, s)] = {
                        "cru": float(np.mean([r.cru for r in rs])),
                        "ttd": float(np.mean([r.ttd for r in rs])),
                        "jct": float(np.mean([r.mean_jct for r in rs])),
                        "spread": float(np.mean([max(r.jct) - min(r.jct) for r in rs])),
                        "cru_round0": float(np.mean([np.mean(r.round_cru[:-1]) for r in rs if len(r.round_cru) > 1]))
                        if any(len(r.round_cru) > 1 for r in rs) else float("nan"),
                    }
    return res


C3_RATIOS = (  # (label, paper key, metric, numerator, denominator, spec range)
    ("CRU Hadar/Gavel", "cru_hadar_vs_gavel", "cru", "hadar", "gavel", (1.00, 1.45)),
    ("CRU HadarE/Gavel", "cru_hadare_vs_gavel", "cru", "hadare", "gavel", (1.25, 2.20)),
    ("TTD speedup Hadar vs Gavel", "ttd_hadar_vs_gavel", "ttd", "gavel", "hadar", (1.00, 1.40)),
    ("TTD speedup HadarE vs Hadar", "ttd_hadare_vs_hadar", "ttd", "hadar", "hadare", (1.30, 2.60)),
    ("TTD speedup HadarE vs Gavel", "ttd_hadare_vs_gavel", "ttd", "gavel", "hadare", (1.40, 3.00)),
    ("mean-JCT reduction Hadar vs Gavel", "jct_hadar_vs_gavel", "jct", "gavel", "hadar", (1.00, 1.50)),
    ("mean-JCT reduction HadarE vs Gavel", "jct_hadare_vs_gavel", "jct", "gavel", "hadare", (1.50, 3.50)),
)
EMULATION_VARIANTS = {  # named variants beside the spec's round model (gpuweave.hadar.emulation)
    "beta": {"variant": "beta"},
    "beta-backfill": {"variant": "beta-backfill"},
    "hadar sticky": {"hadar_variant": "sticky"},
    "sqrt PMI": {"pmi_form": "sqrt_tflops_over_vram"},
    "utility normalized": {"utility": "normalized"},
}


def c3_rows(res: dict, cluster: str, label: str = "") -> list[ComparisonRow]:
    """Spec §8 C3: mean over the 7 mixes at slot 360 s of each ratio, with the spec's range."""
    P = paper_numbers()["physical"]
    rows = []
    for name, key, metric, a, b, (lo, hi) in C3_RATIOS:
        x = float(np.mean([res[(cluster, m, 360.0, a)][metric] / res[(cluster, m, 360.0, b)][metric] for m in MIXES]))
        prefix = f"{label}: " if label else ""
        rows.append(ComparisonRow("physical", f"{prefix}{cluster} {name}", P[key][cluster], x, "x",
                                  f"C3 {_inrange(x, lo, hi)}; mean over 7 mixes, slot 360 s" + (f"; variant {label}" if label else "")))
    return rows


def c1_c4_rows(res: dict, cluster: str) -> list[ComparisonRow]:
    """Spec §8 C1 (CRU HadarE >= Hadar >= Gavel on every mix, slots 360 and 90 s) and C4 (JCT range under
    HadarE <= under Gavel for mixes of more than one model), as counts of mixes that hold."""
    rows = []
    for slot in (360.0, 90.0):
        bad = [m for m in MIXES if not (res[(cluster, m, slot, "hadare")]["cru"] >= res[(cluster, m, slot, "hadar")]["cru"] - 1e-9
                                        >= res[(cluster, m, slot, "gavel")]["cru"] - 2e-9)]
        rows.append(ComparisonRow("physical", f"{cluster} C1 CRU HadarE >= Hadar >= Gavel, slot {int(slot)} s", len(MIXES), len(MIXES) - len(bad), "mixes",
                                  "C1 must hold on every mix: " + ("ok" if not bad else "fails on " + ", ".join(bad))))
    multi = [m for m in MIXES if m != "M-1"]
    bad = [m for m in multi if res[(cluster, m, 360.0, "hadare")]["spread"] > res[(cluster, m, 360.0, "gavel")]["spread"] + 1e-9]
    rows.append(ComparisonRow("physical", f"{cluster} C4 JCT range HadarE <= Gavel", len(multi), len(multi) - len(bad), "mixes",
                              "C4 must hold on every mix with more than one model: " + ("ok" if not bad else "fails on " + ", ".join(bad))))
    return rows


def c2_speedup_row(res: dict, cluster: str, seeds: list[int], base_seed: int) -> ComparisonRow:
    """Spec §8 C2: HadarE's TTD speed-up over Hadar on M-1 within +-25 % of the aggregate-rate bound
    sum_i X(i) (T_S - 17) / (X(best) (T_S - 5)), true rates, slot 360 s, mean over seeds."""
    from gpuweave.hadar.emulation import load_physical, rate_tables

    data = load_physical()
    bounds = []
    for k in seeds:
        _nodes, _est, true, _steps = rate_tables(data, cluster, list(data["mix"]["M-1"]), base_seed + k, "tflops_over_sqrt_vram")
        x = true[data["mix"]["M-1"][0]]
        bounds.append(float(np.sum(x) * (360.0 - 17.0) / (np.max(x) * (360.0 - 5.0))))
    bound = float(np.mean(bounds))
    ours = res[(cluster, "M-1", 360.0, "hadar")]["ttd"] / res[(cluster, "M-1", 360.0, "hadare")]["ttd"]
    return ComparisonRow("physical", f"{cluster} C2 M-1 TTD speedup HadarE vs Hadar", bound, ours, "x",
                         f"paper column = the spec's aggregate-rate bound; C2 {_inrange(ours, round(0.75 * bound, 3), round(1.25 * bound, 3))}"
                         "; the job lasts a few slots, so whole-slot effects move the ratio")


def forking_bound_row(cluster: str, seeds: list[int], base_seed: int) -> ComparisonRow:
    """How much TTD any forking scheduler can gain over the best unforked one on these inputs (LP bound,
    :func:`gpuweave.hadar.emulation.forking_speedup_bound`), mean over the 7 mixes and the seeds."""
    from gpuweave.hadar.emulation import forking_speedup_bound

    per_mix = {m: float(np.mean([forking_speedup_bound(cluster, m, base_seed + k) for k in seeds])) for m in MIXES}
    mean = float(np.mean(list(per_mix.values())))
    return ComparisonRow("physical", f"{cluster} bound: TTD speedup of forking over the best unforked schedule",
                         paper_numbers()["physical"]["ttd_hadare_vs_hadar"][cluster], mean, "x",
                         "LP bound (true rates, free preemption, no overheads), mean over 7 mixes; per mix "
                         + ", ".join(f"{m} {v:.2f}" for m, v in per_mix.items())
                         + f"; C3 asks HadarE vs Hadar >= 1.30: {'reachable' if mean >= 1.30 else 'unreachable'} against an optimal Hadar "
                         "on these inputs (Eq. 10 rates, our job sizes); the paper's 1.79 needs a Hadar far from optimal")


def physical_rows(ctx: ReproContext, seeds: list[int]) -> list[ComparisonRow]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    P = paper_numbers()["physical"]
    res = emulate_grid(seeds, ctx.seed)
    with open(ctx.out_dir / "physical_results.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["variant", "cluster", "mix", "slot_s", "scheduler", "cru", "ttd_s", "mean_jct_s", "jct_spread_s"])
        variants = {"spec": res}
        for name, options in EMULATION_VARIANTS.items():
            variants[name] = emulate_grid(seeds, ctx.seed, slots=(360.0,), **options)
        for name, vres in variants.items():
            for (c, m, sl, s), r in vres.items():
                w.writerow([name, c, m, int(sl), s, f"{r['cru']:.4f}", f"{r['ttd']:.1f}", f"{r['jct']:.1f}", f"{r['spread']:.1f}"])
    rows = []
    fig, axes = plt.subplots(2, 3, figsize=(12, 6))
    for ci, cluster in enumerate(("aws", "lab")):
        rows += c3_rows(res, cluster) + c1_c4_rows(res, cluster)
        rows += [
            ComparisonRow("physical", f"{cluster} M-5 TTD Gavel", P["m5_ttd_gavel_s"][cluster], res[(cluster, "M-5", 360.0, "gavel")]["ttd"], "s", "Fig. 9 (approx.)"),
            ComparisonRow("physical", f"{cluster} M-5 TTD Hadar", P["m5_ttd_hadar_s"][cluster], res[(cluster, "M-5", 360.0, "hadar")]["ttd"], "s", "Fig. 9 (approx.)"),
            ComparisonRow("physical", f"{cluster} M-1 HadarE CRU (rounds before the last)", None, res[(cluster, "M-1", 360.0, "hadare")]["cru_round0"], "fraction", "C2 must be >= 0.75 (nan: the job finished in one round)"),
        ]
        rows.append(c2_speedup_row(res, cluster, seeds, ctx.seed))
        rows.append(forking_bound_row(cluster, seeds, ctx.seed))
        for mi, metric in enumerate(("cru", "ttd", "jct")):
            ax = axes[ci][mi]
            for s in ("hadare", "hadar", "gavel"):
                ax.plot(range(len(MIXES)), [res[(cluster, m, 360.0, s)][metric] for m in MIXES], marker="o", label=s)
            ax.set_xticks(range(len(MIXES)), MIXES, fontsize=7)
            ax.set_title(f"{cluster}: {metric} (slot 360 s)")
            ax.legend(fontsize=7)
        for slot in SLOTS:
            rows.append(ComparisonRow("physical", f"{cluster} CRU HadarE slot {int(slot)} s (mean over mixes)", None,
                                      float(np.mean([res[(cluster, m, slot, 'hadare')]['cru'] for m in MIXES])), "fraction", "Figs. 11-12"))
        for name in EMULATION_VARIANTS:
            rows += c3_rows(variants[name], cluster, name)
    fig.tight_layout()
    fig.savefig(ctx.out_dir / "fig8_12_physical.png", dpi=100)
    plt.close(fig)
    return rows + c5_rows(res)


# Best CRU slot per mix as the paper's text states it (§VII-D, Figs. 11-12); None where it says "90 or 180".
C5_PAPER_BEST = {
    ("hadare", "aws"): {"M-1": 90, "M-3": 90, "M-4": 90, "M-5": 90, "M-8": 360, "M-10": 360, "M-12": 360},
    ("hadare", "lab"): {"M-1": 90, "M-3": 90, "M-4": 90, "M-5": 360, "M-8": 360, "M-10": 360, "M-12": 360},
    ("hadar", "aws"): {"M-1": None, "M-3": 360, "M-4": None, "M-5": None, "M-8": None, "M-10": None, "M-12": None},
    ("hadar", "lab"): {"M-1": 90, "M-3": 90, "M-4": 90, "M-5": 360, "M-8": 360, "M-10": 360, "M-12": 360},
}


def c5_rows(res: dict) -> list[ComparisonRow]:
    """Spec §8 C5 (report): the CRU-best slot (90/180/360 s) per mix for HadarE and Hadar, and the two trends."""
    rows = []
    best: dict[tuple[str, str], dict[str, float]] = {}
    for (sched, cluster), paper in C5_PAPER_BEST.items():
        best[(sched, cluster)] = {}
        for mix in MIXES:
            crus = {slot: res[(cluster, mix, slot, sched)]["cru"] for slot in SLOTS}
            b = max(SLOTS, key=lambda sl: (crus[sl], -sl))
            best[(sched, cluster)][mix] = b
            note = "C5 report; CRU " + ", ".join(f"{int(sl)} s {crus[sl]:.3f}" for sl in SLOTS) + "; overheads per spec §3.7"
            if paper[mix] is None:
                note += "; paper: 90 or 180 s"
            rows.append(ComparisonRow("physical", f"C5 {cluster} {sched} best slot {mix}", paper[mix], b, "s", note))
    for cluster in ("aws", "lab"):
        e = best[("hadare", cluster)]
        h = best[("hadar", cluster)]
        small = float(np.mean([e[m] for m in ("M-1", "M-3", "M-4")]))
        large = float(np.mean([e[m] for m in ("M-8", "M-10", "M-12")]))
        rows.append(ComparisonRow("physical", f"C5 {cluster} HadarE best slot M-8..M-12 minus M-1..M-4", 270.0, large - small, "s",
                                  "paper: 360 s for large mixes, 90 s for small ones; flag (not fail) if <= 0: "
                                  + ("trend reproduced" if large > small else "NOT reproduced")))
        he = float(np.mean(list(e.values())))
        hh = float(np.mean(list(h.values())))
        rows.append(ComparisonRow("physical", f"C5 {cluster} mean best slot Hadar minus HadarE", None, hh - he, "s",
                                  "paper: Hadar favours shorter slots than HadarE (< 0); "
                                  + ("reproduced" if hh < he else "NOT reproduced" if hh > he else "equal")))
    return rows


def fig1_rows() -> list[ComparisonRow]:
    from gpuweave.hadar import fig1

    P = paper_numbers()["fig1"]
    opt_rounds, busy = fig1.brute_force()
    g_rounds, g_util, _ = fig1.gavel_mechanism()
    h_rounds, h_util = fig1.hadar_rounds()
    total = sum(P["capacity"])
    return [
        ComparisonRow("fig1", "optimal makespan under strict gang (brute force)", P["hadar_rounds"], opt_rounds, "rounds", "A7: Fig. 1(b)'s 5 rounds are infeasible under P1 (spec A16)"),
        ComparisonRow("fig1", "max CRU of a min-makespan schedule", P["hadar_cru"], busy / (total * opt_rounds), "fraction", f"A7: {busy} busy GPU-rounds"),
        ComparisonRow("fig1", "Gavel mechanism rounds", P["gavel_rounds"], g_rounds, "rounds", "A7: per-type queues V100, P100, K80"),
        ComparisonRow("fig1", "Gavel CRU R1", P["gavel_cru_r1"], g_util[0], "fraction", "J1->P100, J2->V100"),
        ComparisonRow("fig1", "Gavel CRU R2", P["gavel_cru_r2"], g_util[1], "fraction", ""),
        ComparisonRow("fig1", "Gavel overall CRU", P["gavel_cru"], float(np.mean(g_util)), "fraction", "A7 range [0.71, 0.78]"),
        ComparisonRow("fig1", "Hadar rounds (spec §2.8 DP)", P["hadar_rounds"], h_rounds, "rounds", "reported only; spec prototype gives 7"),
        ComparisonRow("fig1", "Hadar overall CRU", P["hadar_cru"], float(np.mean(h_util)), "fraction", "reported only"),
    ]


@register_reproduction(
    "hadar",
    title="Hadar/HadarE vs Gavel, Tiresias, YARN-CS: trace TTD ratios, GRU, scalability, physical-cluster emulation",
    paper="Sultana et al., arXiv 2503.10918 (Hadar, IPDPS'24 + HadarE)",
    options={"jobs": int, "skip_trace": bool, "skip_physical": bool, "sensitivity": bool, "window": str, "reference_gpu": str},
)
def reproduce(ctx: ReproContext) -> list[ComparisonRow]:
    """``--sensitivity`` adds the spec's B7 runs and the kappa sweep (about a minute per seed). ``--window``
    picks the Philly window rule of the trace workload (busiest, daily-03-10, busiest-diverse; default busiest
    by the spec's §5.2 step 1, see :mod:`gpuweave.hadar.trace`). ``--reference-gpu V100|P100|K80``: the GPU whose
    rate turns a Philly duration into work (default V100, spec §5.2 step 9)."""
    from gpuweave.hadar.trace import DEFAULT_WINDOW, check_reference_gpu, check_window

    seeds = list(range(ctx.reps if ctx.reps is not None else (3 if ctx.full else 1)))
    n_jobs = int(ctx.options.get("jobs", 480))
    if n_jobs < 1:
        from gpuweave.errors import InputError

        raise InputError(f"--jobs must be at least 1, got {n_jobs}", field="jobs")
    window = check_window(str(ctx.options.get("window", DEFAULT_WINDOW)))
    reference_gpu = check_reference_gpu(str(ctx.options.get("reference_gpu", "V100")))
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    rows = fig1_rows()
    if not ctx.options.get("skip_trace"):
        rows += trace_rows(ctx, seeds, n_jobs, window, reference_gpu)
    if ctx.options.get("sensitivity"):
        rows += sensitivity_rows(ctx, seeds, n_jobs, window)
    rows += fig5_rows(ctx, 3 if ctx.full else 1)
    if not ctx.options.get("skip_physical"):
        rows += physical_rows(ctx, seeds)
    return rows
