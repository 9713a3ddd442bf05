"""``gpuweave plan hadar STATE.json``: one Hadar round on a cluster snapshot, printed or as JSON.

Reads a snapshot (:mod:`gpuweave.cluster.hadar_snapshot`), runs the Hadar policy's round (the same code the simulator
runs; its options as flags) and prints, per job, the decision (start, keep, move, stop or wait), the
placement by node and GPU model and the rate it gives, plus the DP's value, states and fallback. Bad input:
one line on stderr, exit code 2.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer

from gpuweave.cluster.hadar_snapshot import load_snapshot
from gpuweave.cluster.policies import make_policy
from gpuweave.hadar.throughput import RateTable


def plan_snapshot(path: Path, **options) -> dict:
    view = load_snapshot(path)
    policy = make_policy("hadar", round_length=view.round_length, work_conserving=False, **options)
    t0 = time.perf_counter()
    wanted = policy.plan_round(view)
    seconds = time.perf_counter() - t0
    table = RateTable(view.profiles, view.models)
    col = {m: i for i, m in enumerate(view.models)}
    jobs = []
    for js in [*view.running.values(), *view.pending.values()]:
        placement = wanted.get(js.job.job_id)
        row = {"job": js.job.job_id, "job_type": js.job.job_type, "gpus": js.job.num_gpus, "remaining": js.remaining}
        if placement is None:
            row.update(decision="stop" if js.placement else "wait", placement=[], rate=0.0)
        else:
            cons, uncons = table.get(js.job.job_type, js.job.num_gpus)
            rates = uncons if len(placement) > 1 else cons
            rate = min(float(rates[col[view.nodes[h].gpu_model]]) for h, _ in placement)
            decision = (
                "start" if js.placement is None else ("keep" if tuple(placement) == tuple(js.placement) else "move")
            )
            row.update(
                decision=decision,
                rate=rate,
                placement=[
                    {"node": view.nodes[h].name, "gpu": view.nodes[h].gpu_model, "gpus": g} for h, g in placement
                ],
            )
        jobs.append(row)
    result = policy.last_result
    return {
        "now": view.now,
        "round_length": view.round_length,
        "options": {k: v for k, v in options.items()},
        "jobs": jobs,
        "value": result.value if result else 0.0,
        "states": result.states if result else 0,
        "fallback": bool(result.fallback) if result else False,
        "decision_seconds": seconds,
    }


def register(cli) -> None:
    @cli.plan.command("hadar")
    def plan_hadar(
        state: Path = typer.Argument(
            ...,
            help="Snapshot JSON: cluster, jobs with work, remaining and running placements (see gpuweave.cluster.hadar_snapshot).",
        ),
        variant: str = typer.Option(
            "replan", "--variant", help="replan (spec §2.8), sticky (paper §IV-B) or literal (printed Alg. 2)."
        ),
        utility: str = typer.Option("raw", "--utility", help="raw (effective throughput) or normalized."),
        solver: str = typer.Option(
            "dp", "--solver", help="dp (memoised DP with a state budget) or exact (the round's optimum, HiGHS)."
        ),
        order: str = typer.Option("fifo", "--order", help="Q order: fifo (spec), srpt or slack-srpt (named variants)."),
        backfill: bool = typer.Option(False, "--backfill", help="Offer jobs the DP skipped the GPUs left free."),
        max_states: int = typer.Option(64, "--max-states", help="DP memo budget per round."),
        as_json: bool = typer.Option(False, "--json", help="Print the plan as JSON."),
    ) -> None:
        """Plan one Hadar round: start, keep, move, stop or wait per job, with placements and rates."""
        from gpuweave.errors import InputError

        if max_states < 1:
            raise InputError(f"--max-states must be >= 1, got {max_states}", field="max_states")
        out = plan_snapshot(
            state,
            variant=variant,
            utility=utility,
            solver=solver,
            order=order,
            backfill=backfill,
            max_states=max_states,
        )
        if as_json:
            typer.echo(json.dumps(out, indent=2))
            return
        from rich.console import Console
        from rich.table import Table

        table = Table(
            title=f"Hadar round at t={out['now']:g} s (L = {out['round_length']:g} s; {variant}, {solver}, {order})"
        )
        for c in ("job", "job type", "W", "decision", "placement", "rate [it/s]", "remaining [it]"):
            table.add_column(c)
        for r in out["jobs"]:
            where = " + ".join(f"{p['node']} ({p['gpu']}) × {p['gpus']}" for p in r["placement"])
            table.add_row(
                r["job"],
                r["job_type"],
                str(r["gpus"]),
                r["decision"],
                where,
                f"{r['rate']:.4g}" if r["placement"] else "",
                f"{r['remaining']:.6g}",
            )
        console = Console()
        console.print(table)
        console.print(
            f"payoff {out['value']:.6g}; {out['states']} FIND_ALLOC calls; "
            f"{'state budget hit (greedy fallback)' if out['fallback'] else 'no fallback'}; {out['decision_seconds'] * 1000:.1f} ms"
        )
