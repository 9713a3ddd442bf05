"""Reproduction of ANDREAS (Filippini et al.): simulations (Figures 2–3) and the ARMIDA replay (Table III).

``gpuweave repro andreas [--seeds S] [--n-max N] [--rg-seeds R] [--load-scale K] [--out DIR]``

* Simulations (Sec. V-B, spec §9.3): scenario 1 (2×V100 / 1×T4 nodes) and 2 (4×V100 / 2×T4), N = 10, 20,
  …, n_max nodes, J = 10N jobs, S workload seeds (1000, 4000, 9000, …), R RG seeds each; RG vs FIFO, EDF,
  PS. Reported: mean total-cost and energy reduction of RG per N and over N, beside the paper's "around
  62%" (scenario 1) and "almost 30%" (scenario 2), and RG's optimizer time per call beside "< 0.1 s" and
  "< 0.01 s on average". The paper's figures are images, so per-N values have no paper number. Our
  generator follows the spec's defaults, which reach the paper's magnitude only at N = 10–20 (the
  reduction shrinks with N at this load; spec §9.4, A15); ``--load-scale`` multiplies the arrival rates.
* ARMIDA replay (Sec. V-C, spec §10.4): predicted energy of RG (periodic 300 s, 20 RG seeds) beside the
  paper's predicted 1.08438 € and real 0.95111 €, the deviation arithmetic of Table III, the Figure 4 trace
  checks (AC10), the baselines' prediction, and RG's optimality gap to the exact MILP at every call.

* AC14 (spec §12): per scenario and N, whether RG's mean total cost and mean energy are ≤ every FPM's
  (one row each; the paper gives no per-N numbers).
* ``--overload`` (AC16, spec §12 item 8): scenario 1, N = 10 with the [C-br] arrival constants (1.7, 1.7/4,
  G_max = 2): EDF's tardiness share of its total cost (spec: > 80%) and RG's total cost vs EDF and PS (the
  spec's prototype: RG ~60% worse, the proxy's myopia under overload). Written to overload_runs.csv.

Quick default (CI): S = 1, R = 1, n_max = 10. The paper-sized run is ``--seeds 3 --rg-seeds 5 --n-max 100``
(``--full`` sets these). Writes comparison.csv, runs.csv, reductions.csv, armida_calls.csv,
fig_scenario1.png, fig_scenario2.png, armida_trace.png.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gpuweave.andreas.catalog import paper_numbers
from gpuweave.andreas.cost import deviation
from gpuweave.andreas.milp import optimality_gap
from gpuweave.errors import InputError
from gpuweave.limits import check_limit
from gpuweave.repro.andreas.armida import armida_setup, plot_trace, replay
from gpuweave.repro.andreas.experiments import BASELINE_LABEL, BASELINES, means, reductions, scenario_runs
from gpuweave.repro.andreas.simulate import RunResult
from gpuweave.repro.registry import ComparisonRow, ReproContext, register_reproduction


def _write_csv(path: Path, rows: list[dict]) -> None:
    if not rows:
        return
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _plot_scenario(rows: list[dict], scenario: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = sorted({r["N"] for r in rows if r["scenario"] == scenario})
    policies = ["andreas", "andreas-fifo", "edf", "priority"]
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.4))
    panels = [
        ("energy_eur", "energy cost [€]"),
        ("total_eur", "total cost [€]"),
        ("makespan_h", "simulation time [h]"),
        ("opt_mean_s", "optimizer time per call [s]"),
    ]
    for ax, (key, label) in zip(axes, panels):
        for i, p in enumerate(policies):
            ys = [means(rows, scenario, n, p, key) for n in ns]
            ax.plot(ns, ys, marker="o", label=BASELINE_LABEL[p], linestyle="-" if p == "andreas" else "--")
        ax.set_xlabel("N nodes")
        ax.set_title(label, fontsize=9)
        if key == "opt_mean_s":
            ax.set_yscale("log")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"ANDREAS scenario {scenario}: RG vs first-principle methods (means over seeds)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


@dataclass(frozen=True)
class _Setup:
    """Sizes of the run: nodes N = 10..n_max, workload and RG seeds, load scale, ARMIDA seeds."""

    n_max: int
    seeds: int
    rg_n: int
    kappa: float
    armida_n: int

    @property
    def ns(self) -> list[int]:
        return list(range(10, self.n_max + 1, 10))

    @property
    def label(self) -> str:
        return f"S={self.seeds} workload seeds x {self.rg_n} RG seeds, load_scale={self.kappa:g}"


def _setup(ctx: ReproContext) -> _Setup:
    """Options with their quick/--full defaults; a bad value raises InputError naming the flag."""

    def option(name: str, default):
        value = ctx.options.get(name)
        return default if value is None else value  # 0 is a value (and an error below), not "use the default"

    n_max = int(option("n_max", 100 if ctx.full else 10))
    seeds = ctx.reps_or(3 if ctx.full else 1)
    rg_n = int(option("rg_seeds", 5 if ctx.full else 1))
    kappa = float(option("load_scale", 1.0))
    armida_n = int(option("armida_seeds", 20))
    for flag, bad, expected, value in (
        ("n_max", n_max < 10, ">= 10", n_max),
        ("seeds", seeds < 1, ">= 1", seeds),
        ("rg_seeds", rg_n < 1, ">= 1", rg_n),
        ("armida_seeds", armida_n < 1, ">= 1", armida_n),
        ("load_scale", not (math.isfinite(kappa) and 0 < kappa <= 100), "> 0 and <= 100", kappa),
    ):
        if bad:
            raise InputError(f"--{flag.replace('_', '-')} must be {expected}, got {value}", field=flag)
    # sizes of work: the scenarios' largest N is a job count, the seed counts are repetitions
    check_limit("andreas_jobs", n_max, "--n-max", field="n_max")
    for flag, value in (("rg_seeds", rg_n), ("armida_seeds", armida_n)):
        check_limit("reps", value, f"--{flag.replace('_', '-')}", field=flag)
    return _Setup(n_max, seeds, rg_n, kappa, armida_n)


@register_reproduction(
    "andreas",
    title="RG vs FIFO/EDF/PS cost reduction (Figs. 2-3), optimizer time, ARMIDA replay (Table III)",
    paper="Filippini et al., ANDREAS (FiCloud 2021)",
    options={"n_max": int, "rg_seeds": int, "load_scale": float, "armida_seeds": int, "overload": bool},
)
def reproduce(ctx: ReproContext) -> list[ComparisonRow]:
    paper = paper_numbers()
    out = Path(ctx.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    setup = _setup(ctx)
    all_runs, red = _simulations(out, setup)
    rows: list[ComparisonRow] = []
    for scenario, key in ((1, "scenario1"), (2, "scenario2")):
        rows += _reduction_rows(paper[key], scenario, red, setup)
        rows += _dominance_rows(scenario, all_runs, setup)
        rows += _optimizer_rows(paper[key], scenario, all_runs)
    if ctx.options.get("overload"):
        rows += _overload_rows(out, setup.seeds, setup.rg_n)
    rows += _armida_rows(paper["armida"], _armida_replays(out, setup.armida_n), setup.armida_n)
    return rows


def _simulations(out: Path, setup: _Setup) -> tuple[list[dict], dict]:
    """Both scenarios (Sec. V-B): every run, and RG's reductions per (scenario, N, baseline); CSVs and figures."""
    all_runs: list[dict] = []
    for scenario in (1, 2):
        runs = scenario_runs(scenario, setup.ns, setup.seeds, setup.rg_n, load_scale=setup.kappa)
        all_runs.extend(runs)
        _plot_scenario(all_runs, scenario, out / f"fig_scenario{scenario}.png")
    _write_csv(out / "runs.csv", all_runs)
    red = reductions(all_runs)
    _write_csv(
        out / "reductions.csv",
        [
            {
                "scenario": sc,
                "N": N,
                "baseline": BASELINE_LABEL[b],
                "total_cost_reduction": v["total"],
                "energy_reduction": v["energy"],
            }
            for (sc, N, b), v in sorted(red.items())
        ],
    )
    return all_runs, red


def _reduction_rows(claims: dict, scenario: int, red: dict, setup: _Setup) -> list[ComparisonRow]:
    """RG's total-cost reduction per baseline (mean over N, beside the paper's figure) and per N vs EDF."""
    rows: list[ComparisonRow] = []
    sec, ns = claims["section"], setup.ns
    for b in BASELINES:
        vals = [red[(scenario, N, b)]["total"] for N in ns]
        rows.append(
            ComparisonRow(
                f"scenario {scenario}",
                f"total-cost reduction vs {BASELINE_LABEL[b]}, mean over N={ns[0]}..{ns[-1]}",
                claims["total_cost_reduction"],
                float(np.mean(vals)),
                "fraction",
                f"{sec}; {setup.label}; spec §9.4: the default generator reaches the paper's magnitude at N=10-20 only",
            )
        )
    for N in ns:
        r = red[(scenario, N, "edf")]
        rows.append(
            ComparisonRow(
                f"scenario {scenario}",
                f"N={N}: total-cost reduction vs EDF",
                None,
                r["total"],
                "fraction",
                f"energy reduction {r['energy']:.3f}; FIFO/PS in reductions.csv",
            )
        )
    return rows


def _dominance_rows(scenario: int, all_runs: list[dict], setup: _Setup) -> list[ComparisonRow]:
    """AC14: per N, whether RG's mean total cost and energy are <= every FPM's."""
    rows: list[ComparisonRow] = []
    for N in setup.ns:
        m_tot = [
            (means(all_runs, scenario, N, b, "total_eur") - means(all_runs, scenario, N, "andreas", "total_eur"))
            / means(all_runs, scenario, N, b, "total_eur")
            for b in BASELINES
        ]
        m_en = [
            (means(all_runs, scenario, N, b, "energy_eur") - means(all_runs, scenario, N, "andreas", "energy_eur"))
            / means(all_runs, scenario, N, b, "energy_eur")
            for b in BASELINES
        ]
        dom = min(m_tot) >= -1e-12 and min(m_en) >= -1e-12
        rows.append(
            ComparisonRow(
                f"scenario {scenario}",
                f"N={N}: RG total cost and energy <= every FPM's (means over seeds)",
                None,
                1.0 if dom else 0.0,
                "bool",
                f"AC14; min margin over FIFO/EDF/PS: total {min(m_tot):.4f}, energy {min(m_en):.4f}; {setup.label}",
            )
        )
    return rows


def _optimizer_rows(claims: dict, scenario: int, all_runs: list[dict]) -> list[ComparisonRow]:
    """Optimizer time per call (RG beside the paper's bound, FPMs) and RG's tardiness against the FPMs'."""
    rows: list[ComparisonRow] = []
    rg = [r for r in all_runs if r["scenario"] == scenario and r["policy"] == "andreas"]
    fpm = [r for r in all_runs if r["scenario"] == scenario and r["policy"] != "andreas"]
    if scenario == 1:
        rows.append(
            ComparisonRow(
                "scenario 1",
                "RG optimizer time per call, max over runs",
                claims["optimizer_time_max_s"],
                max(r["opt_max_s"] for r in rg),
                "s",
                "paper: 'always below 0.1 s' (C++); ours: Python+numpy",
            )
        )
    else:
        rows.append(
            ComparisonRow(
                "scenario 2",
                "RG optimizer time per call, mean",
                claims["optimizer_time_mean_s"],
                float(np.mean([r["opt_mean_s"] for r in rg])),
                "s",
                "paper: 'lower than 0.01 s on average'",
            )
        )
    rows.append(
        ComparisonRow(
            f"scenario {scenario}",
            "FPM optimizer time per call, mean",
            None,
            float(np.mean([r["opt_mean_s"] for r in fpm])),
            "s",
            "paper: RG takes longer than FPMs",
        )
    )
    late_rg = float(np.mean([r["tardiness_eur"] for r in rg]))
    late_b = float(np.mean([r["tardiness_eur"] for r in fpm]))
    rows.append(
        ComparisonRow(
            f"scenario {scenario}",
            "tardiness cost RG / FPM (means)",
            None,
            late_rg / late_b if late_b > 0 else 0.0,
            "ratio",
            "spec AC12: <= 0.10 in scenario 1",
        )
    )
    return rows


@dataclass
class _ArmidaReplays:
    """The ARMIDA replays over RG seeds: energies, Figure 4 checks per seed, seed 0's run, calls and gaps."""

    energies: list[float] = field(default_factory=list)
    shared_2400: int = 0
    preempt_7200: int = 0
    gaps: list[float] = field(default_factory=list)
    first: RunResult | None = None  # seed 0's run
    fpm_energy: dict = field(default_factory=dict)


def _armida_replays(out: Path, armida_n: int) -> _ArmidaReplays:
    """Replay ARMIDA (Sec. V-C) with RG per seed and with each baseline; writes armida_calls.csv and the trace."""
    rep = _ArmidaReplays()
    energies, gaps = rep.energies, rep.gaps
    shared_2400 = preempt_7200 = 0
    call_rows = []
    for s in range(armida_n):
        res = replay("andreas", seed=s, mode="periodic", exact_gap_max_queue=8 if s == 0 else 0)
        energies.append(res.real.energy)
        by_t = {c.time: c for c in res.calls}
        c24 = by_t.get(2400.0)
        if (
            c24
            and c24.plan.get("J10") == ("armida-06", 1)
            and sorted(g for n, g in c24.plan.values() if n == "armida-06") == [1, 1]
        ):
            shared_2400 += 1
        c72 = by_t.get(7200.0)
        if c72 and "J2" in c72.plan and "J7" not in c72.plan:
            preempt_7200 += 1
        if s == 0:
            first = res
            for c in res.calls:
                f_opt = c.extra.get("f_opt")
                gap = optimality_gap(c.f, f_opt) if f_opt is not None else None
                if gap is not None:
                    gaps.append(gap)
                call_rows.append(
                    {
                        "time_s": c.time,
                        "queue": c.queue,
                        "plan": " ".join(f"{j}->{n}x{g}" for j, (n, g) in c.plan.items()),
                        "f_obj": c.f,
                        "f_greedy": c.f_greedy,
                        "f_opt": "" if f_opt is None else f_opt,
                        "gap": "" if gap is None else gap,
                        "opt_ms": c.opt_seconds * 1e3,
                    }
                )
    rep.shared_2400, rep.preempt_7200, rep.first = shared_2400, preempt_7200, first
    _write_csv(out / "armida_calls.csv", call_rows)
    names = [n.name for n in armida_setup().nodes]
    plot_trace(first, names, out / "armida_trace.png", "ARMIDA replay (RG, periodic 300 s, seed 0): node -> job x GPUs")
    rep.fpm_energy = {b: replay(b, mode="periodic").real for b in BASELINES}
    return rep


def _armida_rows(arm: dict, rep: _ArmidaReplays, armida_n: int) -> list[ComparisonRow]:
    """Table III: predicted energy beside the paper's, deviation arithmetic, Figure 4 checks, the MILP gap."""
    energies, fpm_e = rep.energies, rep.fpm_energy
    pred = float(np.mean(energies))
    sec = arm["section"]
    return [
        ComparisonRow(
            "ARMIDA replay",
            "predicted energy cost, RG mean",
            arm["predicted_cost_eur"],
            pred,
            "EUR",
            f"{sec}; periodic 300 s, {armida_n} RG seeds, range {min(energies):.4f}-{max(energies):.4f}; "
            "spec AC9 band [1.030, 1.139]",
        ),
        ComparisonRow(
            "ARMIDA replay",
            "real (measured) energy cost",
            arm["real_cost_eur"],
            None,
            "EUR",
            "measured on ARMIDA with ExaMon; a simulation cannot reproduce it",
        ),
        ComparisonRow(
            "ARMIDA replay",
            "deviation (pred - real)/pred, Table III arithmetic",
            arm["deviation"],
            deviation(arm["predicted_cost_eur"], arm["real_cost_eur"]),
            "fraction",
            "AC11: recomputed from the paper's two costs",
        ),
        ComparisonRow(
            "ARMIDA replay",
            "deviation of our prediction from the paper's real cost",
            arm["worst_case_deviation_bound"],
            deviation(pred, arm["real_cost_eur"]),
            "fraction",
            "paper: worst case below 13% (abstract)",
        ),
        ComparisonRow(
            "ARMIDA replay",
            "average deviation per optimizer call",
            arm["avg_deviation_per_call"],
            None,
            "fraction",
            "needs the measured per-interval power traces (Figure 5), not published",
        ),
        ComparisonRow(
            "ARMIDA replay",
            "predicted energy cost, FIFO/EDF/PS",
            None,
            float(np.mean([r.energy for r in fpm_e.values()])),
            "EUR",
            "spec [PROTO] 1.14327; >= RG",
        ),
        *_figure4_rows(rep, armida_n),
    ]


def _figure4_rows(rep: _ArmidaReplays, armida_n: int) -> list[ComparisonRow]:
    """Figure 4 checks (AC10: sharing at T=2400, preemption at T=7200, J9 late) and RG's gap to the MILP."""
    gaps, first, fpm_e = rep.gaps, rep.first, rep.fpm_energy
    assert first is not None, "seed 0 always runs"
    j9_late_all = (
        all(rr.late_jobs >= 1 for rr in fpm_e.values())
        and first.real.late_jobs >= 1
        and any(js.job.job_id == "J9" and js.end > js.job.deadline for js in first.records.jobs)  # type: ignore[operator]  # J9 ends, with a deadline
    )
    return [
        ComparisonRow(
            "ARMIDA replay",
            "J10 shares armida-06 (1 GPU each) at T=2400, share of seeds",
            None,
            rep.shared_2400 / armida_n,
            "fraction",
            "Figure 4 GPU sharing (AC10a; partner identity not checked)",
        ),
        ComparisonRow(
            "ARMIDA replay",
            "J2 started and J7 not running at T=7200, share of seeds",
            None,
            rep.preempt_7200 / armida_n,
            "fraction",
            "Figure 4 preemption (AC10b: >= 0.5)",
        ),
        ComparisonRow(
            "ARMIDA replay",
            "J9 late under every method",
            None,
            1.0 if j9_late_all else 0.0,
            "bool",
            "its fastest time 2848.672 s exceeds its 2600 s due date (spec §10.4, AC10c)",
        ),
        ComparisonRow(
            "ARMIDA replay",
            "RG optimality gap vs exact MILP, mean over calls",
            None,
            float(np.mean(gaps)) if gaps else None,
            "fraction",
            f"code proxy, non-idling plans; {len(gaps)} calls (seed 0); max {max(gaps) if gaps else float('nan'):.3f}",
        ),
    ]


def _overload_rows(out: Path, seeds: int, rg_n: int) -> list[ComparisonRow]:
    """AC16 (spec §12 item 8): scenario 1, N = 10, [C-br] arrival constants; not a paper claim."""

    runs = scenario_runs(1, [10], seeds, rg_n, overload=True)
    _write_csv(out / "overload_runs.csv", runs)
    tot = {p: means(runs, 1, 10, p, "total_eur") for p in ("andreas", "andreas-fifo", "edf", "priority")}
    edf_share = means(runs, 1, 10, "edf", "tardiness_eur") / tot["edf"]
    setup = f"scenario 1, N=10, m_high=1.7, m_low=1.7/4, G_max=2 ([C-br]); {seeds} workload x {rg_n} RG seeds"
    return [
        ComparisonRow(
            "overload (AC16)",
            "EDF tardiness share of its total cost",
            None,
            edf_share,
            "fraction",
            f"AC16: > 0.80 (spec [PROTO] 0.87); {setup}",
        ),
        ComparisonRow(
            "overload (AC16)",
            "RG total cost / EDF total cost - 1",
            None,
            tot["andreas"] / tot["edf"] - 1.0,
            "fraction",
            f"spec [PROTO]: RG worse than EDF/PS by ~60% (proxy myopia under overload; not a paper claim); "
            f"RG {tot['andreas']:.1f} EUR, EDF {tot['edf']:.1f}, PS {tot['priority']:.1f}, "
            f"FIFO {tot['andreas-fifo']:.1f}",
        ),
        ComparisonRow(
            "overload (AC16)",
            "RG total cost / PS total cost - 1",
            None,
            tot["andreas"] / tot["priority"] - 1.0,
            "fraction",
            f"spec [PROTO]: ~+60%; {setup}",
        ),
    ]
