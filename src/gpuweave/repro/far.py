"""Reproduction of FAR (Villarrubia et al., JPDC 2025): Rodinia rho/sigma, Tables 3-9, Fig. 12 Gantt charts.

Every number is computed here; the paper's numbers come from ``gpuweave/mig/data/paper_numbers.toml``.
Protocols follow the spec (§5.4): Table 4 and 6-9 with p_sup = 0, Table 5 with p_sup = 0.5, WideTimes
[1, 100] s / NarrowTimes [90, 100] s, Table 1 A100 reconfiguration times; seeds fixed per cell
(``--seed``). ``--reps`` sets the repetitions per cell (the paper: 1000; quick default: 10) and the
number of batch pairs of Tables 7-9 (reps + 1 batches). Where the spec says a number cannot be
reproduced (sigma_FixPart(7) of Rodinia, Table 6 p_ref magnitudes, Tables 7-9 magnitudes) both values
are shown with the reason in the note. Table 6 runs with the never-worse guard off (the paper's
algorithm) and reports how often it would have fired.
"""

from __future__ import annotations

from pathlib import Path

from gpuweave.repro.registry import ComparisonRow, ReproContext, register_reproduction
from gpuweave.units import number_text

QUICK_REPS = 10
CONFIGS = ("poor", "mixed", "good")
WORKLOADS = tuple((s, t) for s in CONFIGS for t in ("narrow", "wide"))


def _paper() -> dict:
    import tomllib
    from importlib import resources

    return tomllib.loads(resources.files("gpuweave.mig").joinpath("data").joinpath("paper_numbers.toml").read_text())


def _rng(ctx: ReproContext, *key: object):
    import random

    return random.Random("far|" + "|".join(map(str, (ctx.seed, *key))))


def _mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def _write_table(out: Path, name: str, title: str, rows: list[ComparisonRow]) -> None:
    import csv

    with open(out / f"{name}.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["metric", "paper", "ours", "diff", "unit", "note"])
        for r in rows:
            d = r.difference
            w.writerow(
                [
                    r.metric,
                    "" if r.paper is None else f"{r.paper:.4g}",
                    "" if r.ours is None else f"{r.ours:.4g}",
                    "" if d is None else f"{d:+.4g}",
                    r.unit,
                    r.note,
                ]
            )
    lines = [f"# {title}", "", "| metric | paper | ours | diff | note |", "|---|---|---|---|---|"]
    for r in rows:
        d = r.difference
        paper = "" if r.paper is None else number_text(r.paper)
        ours = "" if r.ours is None else number_text(r.ours)
        diff = "" if d is None else ("+" if d > 0 else "") + number_text(d)
        lines.append(f"| {r.metric} | {paper} | {ours} | {diff} | {r.note} |")
    (out / f"{name}.md").write_text("\n".join(lines) + "\n")


def _rodinia(ctx: ReproContext, paper: dict) -> list[ComparisonRow]:
    # imported when called: `gpuweave --help` imports this module
    from gpuweave.mig.far import far
    from gpuweave.mig.fixpart import fixpart, fixpart_best, ones_partition, whole_partition
    from gpuweave.mig.gantt import plot_gantt
    from gpuweave.mig.miso import miso_opt
    from gpuweave.mig.problem import bundled_dataset

    p = bundled_dataset("rodinia-a100")
    r = far(p)
    w = r.makespan
    pr = paper["rodinia"]
    exp = "rodinia-a100"
    miso = miso_opt(p)
    miso_c = miso_opt(p, charge_reconfig=True)
    ones = fixpart(p, ones_partition(p))
    best = fixpart_best(p)
    whole = fixpart(p, whole_partition(p))
    rows = [
        ComparisonRow(exp, "rho", pr["rho"], r.rho, "", "FAR makespan / LB, reconfiguration included (Sec. 6.4.1)"),
        ComparisonRow(exp, "rho_without_refinement", None, r.makespan_noref / r.lower_bound, "", "Phase-2 best"),
        ComparisonRow(
            exp,
            "makespan_far",
            None,
            w,
            "s",
            f"{r.stats.moves} move(s), {r.stats.swaps} swap(s), {r.stats.iterations} iteration(s)",
        ),
        ComparisonRow(exp, "lower_bound", None, r.lower_bound, "s", ""),
        ComparisonRow(
            exp,
            "sigma_miso_opt",
            pr["sigma_miso_opt"],
            miso.makespan / w,
            "",
            "no reconfiguration cost (default); " + pr["note_miso"],
        ),
        ComparisonRow(
            exp,
            "sigma_miso_opt_charged",
            pr["sigma_miso_opt"],
            miso_c.makespan / w,
            "",
            "Table 1 costs charged by sequential replay",
        ),
        ComparisonRow(exp, "sigma_fixpart_ones", pr["sigma_fixpart_ones"], ones.makespan / w, "", "FixPart(1,...,1)"),
        ComparisonRow(
            exp,
            "sigma_fixpart_best",
            pr["sigma_fixpart_best"],
            best.makespan / w,
            "",
            f"best partition {best.info['partition']}",
        ),
        ComparisonRow(
            exp, "sigma_fixpart_whole", pr["sigma_fixpart_whole"], whole.makespan / w, "", pr["note_fixpart_whole"]
        ),
    ]
    for name, sched in (("far", r.schedule), ("miso-opt", miso), ("fixpart-best", best), ("fixpart-ones", ones)):
        plot_gantt(
            sched,
            ctx.out_dir / f"fig12_rodinia_{name}.png",
            title=f"Rodinia A100, {name}: makespan {sched.makespan:.3f} s",
        )
    return rows


def _table3(ctx: ReproContext, paper: dict) -> list[ComparisonRow]:
    # imported when called: `gpuweave --help` imports this module
    from gpuweave.mig.far import far
    from gpuweave.mig.problem import bundled_dataset

    p = bundled_dataset("table3-a30")
    r = far(p)
    t3 = paper["table3"]
    ends = {t.task.lower(): t.end for t in r.schedule.tasks}
    rows = []
    for k, sim in zip(t3["kernels"], t3["simulation"]):
        key = "lu" if k == "LU" else k.lower()
        ours = next((v for n, v in ends.items() if n.lower() == key), None)
        rows.append(
            ComparisonRow(
                "table3-a30",
                f"simulated_end_{k}",
                sim,
                ours,
                "s",
                "different profiling run (RL_MIG_scheduler task_info); HotSpot missing there"
                if ours is not None
                else "not in the available A30 profile",
            )
        )
    rows.append(
        ComparisonRow(
            "table3-a30",
            "simulated_makespan",
            t3["simulation"][-1],
            r.makespan,
            "s",
            "paper's profile is not public; spec 6 expects 29.49",
        )
    )
    return rows


def _table4(ctx: ReproContext, paper: dict, reps: int) -> list[ComparisonRow]:
    # imported when called: `gpuweave --help` imports this module
    from gpuweave.mig.far import far
    from gpuweave.mig.generator import workload

    t4 = paper["table4"]
    rows = []
    for cfg in CONFIGS:
        for n, pv in zip(t4["n"], t4[cfg]):
            rng = _rng(ctx, "t4", cfg, n)
            rho = _mean(far(workload("A100", cfg, "wide", n, seed=rng)).rho for _ in range(reps))
            rows.append(ComparisonRow("table4", f"rho_{cfg}_n{n}", pv, rho, "", f"{reps} reps, p_sup=0, WideTimes"))
    for n in t4["n"]:
        rng = _rng(ctx, "t4", "a30", n)
        rho = _mean(far(workload("A30", "mixed", "wide", n, seed=rng)).rho for _ in range(reps))
        rows.append(
            ComparisonRow(
                "table4",
                f"rho_a30_n{n}",
                t4["a30_rho_n10"] if n == 10 else None,
                rho,
                "",
                "A30 (1/3,1/3,1/3), WideTimes (spec 7.23); paper says ~1.01 at n=10, spec expects ~1.05",
            )
        )
    return rows


def _table5(ctx: ReproContext, paper: dict, reps: int) -> list[ComparisonRow]:
    # imported when called: `gpuweave --help` imports this module
    from gpuweave.hardware.mig import get_partition, partitions
    from gpuweave.mig.far import far
    from gpuweave.mig.fixpart import fixpart_makespan
    from gpuweave.mig.generator import workload
    from gpuweave.mig.miso import miso_opt

    t5 = paper["table5"]
    rows = []
    for cfg, times in WORKLOADS:
        rng = _rng(ctx, "t5", cfg, times)
        acc: dict[str, list[float]] = {c: [] for c in t5["columns"]}
        for _ in range(reps):
            p = workload("A100", cfg, times, 15, p_sup=0.5, seed=rng)
            w = far(p).makespan
            parts = partitions(p.geometry)
            fms = [fixpart_makespan(p, part)[0] for part in parts]
            acc["miso-opt"].append(miso_opt(p).makespan / w)
            acc["fixpart-ones"].append(fixpart_makespan(p, get_partition(p.geometry, "1-1-1-1-1-1-1"))[0] / w)
            acc["fixpart-best"].append(min(fms) / w)
            acc["fixpart-whole"].append(fixpart_makespan(p, get_partition(p.geometry, "7"))[0] / w)
        for c, pv in zip(t5["columns"], t5[f"{cfg}_{times}"]):
            rows.append(
                ComparisonRow(
                    "table5", f"sigma_{c}_{cfg}_{times}", pv, _mean(acc[c]), "", f"n=15, p_sup=0.5, {reps} reps"
                )
            )
    return rows


def _table6(ctx: ReproContext, paper: dict, reps: int) -> list[ComparisonRow]:
    # imported when called: `gpuweave --help` imports this module
    from gpuweave.mig.far import FarOptions, far
    from gpuweave.mig.generator import workload

    t6 = paper["table6"]
    rows = []
    fired = total = 0
    for cfg, times in WORKLOADS:
        cell = t6[f"{cfg}_{times}"]
        for j, n in enumerate(t6["n"]):
            rng = _rng(ctx, "t6", cfg, times, n)
            res = [far(workload("A100", cfg, times, n, seed=rng), FarOptions(guard=False)) for _ in range(reps)]
            fired += sum(r.regressed for r in res)
            total += len(res)
            note = f"{reps} reps, guard off; " + t6["note"]
            rows.append(
                ComparisonRow(
                    "table6", f"p_ref_{cfg}_{times}_n{n}", cell["p_ref"][j], _mean(r.p_ref for r in res), "%", note
                )
            )
            rows.append(
                ComparisonRow(
                    "table6", f"moves_{cfg}_{times}_n{n}", cell["moves"][j], _mean(r.stats.moves for r in res), "", ""
                )
            )
            rows.append(
                ComparisonRow(
                    "table6", f"swaps_{cfg}_{times}_n{n}", cell["swaps"][j], _mean(r.stats.swaps for r in res), "", ""
                )
            )
    rows.append(
        ComparisonRow(
            "table6",
            "guard_would_fire_fraction",
            None,
            fired / total,
            "",
            "refinement made the exact makespan worse (guard off)",
        )
    )
    return rows


def _pairs(ctx: ReproContext, cfg: str, times: str, n: int, reps: int, key: str):
    # imported when called: `gpuweave --help` imports this module
    from gpuweave.mig.concat import concat_pair
    from gpuweave.mig.far import far
    from gpuweave.mig.generator import workload

    rng = _rng(ctx, key, cfg, times, n)
    probs = [workload("A100", cfg, times, n, seed=rng) for _ in range(reps + 1)]
    res = [far(p) for p in probs]
    pairs = [concat_pair(res[k], res[k + 1], probs[k + 1]) for k in range(reps)]
    return probs, res, pairs


def _table78(ctx: ReproContext, paper: dict, reps: int) -> list[ComparisonRow]:
    t7, t8 = paper["table7"], paper["table8"]
    rows = []
    for cfg, times in WORKLOADS:
        c7, c8 = t7[f"{cfg}_{times}"], t8[f"{cfg}_{times}"]
        for j, n in enumerate(t7["n"]):
            _, _, pairs = _pairs(ctx, cfg, times, n, reps, "t7")
            note = f"{reps} pairs of independent batches; " + t7["note"]
            rows.append(
                ComparisonRow(
                    "table7", f"p_rev_{cfg}_{times}_n{n}", c7["p_rev"][j], _mean(p.p_rev for p in pairs), "%", note
                )
            )
            rows.append(
                ComparisonRow(
                    "table7", f"p_ms_{cfg}_{times}_n{n}", c7["p_ms"][j], _mean(p.p_ms for p in pairs), "%", ""
                )
            )
            rows.append(
                ComparisonRow(
                    "table8",
                    f"moves_{cfg}_{times}_n{n}",
                    c8["moves"][j],
                    _mean(p.moves for p in pairs),
                    "",
                    "concatenation refinement, cap 20",
                )
            )
            rows.append(
                ComparisonRow(
                    "table8", f"swaps_{cfg}_{times}_n{n}", c8["swaps"][j], _mean(p.swaps for p in pairs), "", ""
                )
            )
    return rows


def _table9(ctx: ReproContext, paper: dict, reps: int) -> list[ComparisonRow]:
    # imported when called: `gpuweave --help` imports this module
    from gpuweave.mig.concat import chain_makespan, p_multi_batch_paper

    t9 = paper["table9"]
    rows = []
    for cfg in CONFIGS:
        for n, pv in zip(t9["n"], t9[cfg]):
            probs, res, pairs = _pairs(ctx, cfg, "wide", n, reps, "t9")
            lbs = [r.lower_bound for r in res]
            rows.append(
                ComparisonRow(
                    "table9",
                    f"p_multi_paper_{cfg}_n{n}",
                    pv,
                    p_multi_batch_paper(pairs, lbs),
                    "%",
                    f"{reps + 1} batches, paper's formula "
                    "(about (2N-2)/N * rho - 1 for N batches, so small N reads low); " + t9["note"],
                )
            )
            chain, _ = chain_makespan(res, probs)
            rows.append(
                ComparisonRow(
                    "table9",
                    f"p_multi_chain_{cfg}_n{n}",
                    None,
                    (chain / sum(lbs) - 1.0) * 100.0,
                    "%",
                    "true chained makespan (spec 5.1 [R])",
                )
            )
    return rows


@register_reproduction(
    "far",
    title="FAR on MIG: Rodinia rho/sigma, Tables 3-9, Fig. 12 Gantt charts",
    paper="Villarrubia et al., JPDC 204 (2025)",
)
def reproduce(ctx: ReproContext) -> list[ComparisonRow]:
    reps = ctx.reps_or(QUICK_REPS)
    paper = _paper()
    out = Path(ctx.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sections = [
        ("rodinia", "Rodinia A100: rho and sigma (Sec. 6.4.1, 6.5.1)", _rodinia(ctx, paper)),
        ("table3", "Table 3 (A30): simulated end times", _table3(ctx, paper)),
        ("table4", "Table 4: average rho, WideTimes, A100 (and A30)", _table4(ctx, paper, reps)),
        ("table5", "Table 5: average sigma, n = 15", _table5(ctx, paper, reps)),
        ("table6", "Table 6: refinement p_ref, moves, swaps", _table6(ctx, paper, reps)),
        ("table7_8", "Tables 7-8: concatenation", _table78(ctx, paper, reps)),
        ("table9", "Table 9: p_multi-batch", _table9(ctx, paper, reps)),
    ]
    rows: list[ComparisonRow] = []
    for name, title, sec in sections:
        _write_table(out, name, title, sec)
        rows.extend(sec)
    return rows
