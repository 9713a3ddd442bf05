"""``gpuweave plan andreas STATE.json``: plan one ANDREAS rescheduling point and print it.

Reads a snapshot (:mod:`gpuweave.andreas.snapshot`), runs Randomized Greedy (or a first-principle
baseline) and prints job -> node and GPU count, or postponed, with the proxy's cost terms (energy E,
tardiness T, postponement W; spec §5). ``--exact`` also solves the exact MILP (small queues) and prints
RG's optimality gap. Bad input: one line on stderr, exit code 2.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import typer


def plan_snapshot(
    path: Path, method: str = "andreas", seed: int = 0, max_it: int = 1000, variant: str = "code", exact: bool = False
) -> dict:
    from gpuweave.andreas.fpm import fpm_schedule
    from gpuweave.andreas.randomized_greedy import RGConfig, randomized_greedy
    from gpuweave.andreas.snapshot import load_snapshot
    from gpuweave.errors import InputError

    if method not in ("andreas", "fifo", "edf", "priority"):
        raise InputError(f"unknown method {method!r} (andreas, fifo, edf, priority)", field="method")
    if variant not in ("code", "paper"):
        raise InputError(f"unknown proxy variant {variant!r} (code, paper)", field="variant")
    if max_it < 1:
        raise InputError(f"--max-it must be >= 1, got {max_it}", field="max_it")
    inst = load_snapshot(path)
    if method == "andreas":
        sched = randomized_greedy(inst, seed, RGConfig(max_it=max_it, proxy_variant=variant))
    else:
        sched = fpm_schedule(inst, method, variant)
    jobs = []
    for j, jid in enumerate(inst.job_ids):
        n = int(sched.node_of[j])
        row = {"job": jid, "due": inst.due[j], "weight": inst.weight[j]}
        if n >= 0:
            k = int(sched.cfg_of[j])
            t = float(inst.times[j, k])
            row.update(
                node=inst.nodes[n].name,
                gpus=int(inst.cfg_g[k]),
                config=inst.label(k),
                time_s=t,
                end=inst.now + t,
                late_s=max(0.0, inst.now + t - inst.due[j]),
            )
        else:
            row.update(node=None, gpus=0, config="postponed", postpone_cost=float(inst.postpone_cost()[j]))
        jobs.append(row)
    out = {
        "now": inst.now,
        "method": method,
        "variant": variant,
        "jobs": jobs,
        "f_obj": sched.f,
        "energy": sched.energy,
        "tardiness": sched.tardiness,
        "postpone": sched.postpone,
        "f_greedy": sched.f_greedy,
        "iterations": sched.iterations,
    }
    if exact:
        from gpuweave.andreas.milp import exact_optimum, optimality_gap

        opt = exact_optimum(inst, variant=variant)
        out["f_opt"] = opt.f
        out["gap"] = optimality_gap(sched.f, opt.f)
    return out


def register(cli) -> None:
    @cli.plan.command("andreas")
    def plan_andreas(
        state: Path = typer.Argument(
            ..., help="Snapshot JSON: now, nodes, queued and running jobs (see gpuweave.andreas.snapshot)."
        ),
        method: str = typer.Option("andreas", "--method", help="andreas (Randomized Greedy), fifo, edf or priority."),
        seed: int = typer.Option(0, "--seed", help="RG seed."),
        max_it: int = typer.Option(1000, "--max-it", help="MaxIt_RG (capped at N*|Q|*G_cat)."),
        variant: str = typer.Option("code", "--variant", help="Proxy objective: code (default) or paper."),
        exact: bool = typer.Option(
            False, "--exact", help="Also solve the exact MILP (small queues) and print RG's gap."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print the plan as JSON."),
    ) -> None:
        """Plan one ANDREAS rescheduling point: job -> node and GPUs, or postponed, with the cost terms."""
        out = plan_snapshot(state, method, seed, max_it, variant, exact)
        if as_json:
            typer.echo(
                json.dumps(out, indent=2, default=lambda x: None if isinstance(x, float) and math.isinf(x) else x)
            )
            return
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"ANDREAS plan at t={out['now']:g} s ({method}, proxy {variant})")
        for col in ("job", "decision", "time [s]", "ends", "due", "late [s]"):
            table.add_column(col)
        for r in out["jobs"]:
            if r["node"] is None:
                table.add_row(r["job"], f"postponed (W={r['postpone_cost']:.4g} €)", "", "", f"{r['due']:g}", "")
            else:
                table.add_row(
                    r["job"],
                    f"{r['node']} × {r['gpus']} ({r['config']})",
                    f"{r['time_s']:.1f}",
                    f"{r['end']:.1f}",
                    f"{r['due']:g}",
                    f"{r['late_s']:.1f}",
                )
        console = Console()
        console.print(table)
        line = (
            f"f_OBJ = {out['f_obj']:.6g} € = energy {out['energy']:.6g} + tardiness {out['tardiness']:.6g} + "
            f"postponement {out['postpone']:.6g}; greedy {out['f_greedy']:.6g}; {out['iterations']} iterations"
        )
        if "f_opt" in out:
            line += f"; exact optimum {out['f_opt']:.6g} (RG gap {out['gap']:.2%})"
        console.print(line)
