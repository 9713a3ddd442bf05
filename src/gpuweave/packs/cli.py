"""``gpuweave plan packs`` and ``gpuweave run packs``: plan a co-schedule from a profile CSV, run it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def _fmt_metrics(m) -> str:
    rt = f", running time {m.runtime_ms:.3f} ms" if m.runtime_ms is not None else ""
    return (
        f"relative cost {m.relative_cost:.4f}, packing ratio {m.packing_ratio:.4f}, "
        f"relative response time {m.relative_response_time:.4f}{rt}"
    )


def register(cli) -> None:
    @cli.plan.command("packs")
    def plan_packs(
        profile: Path = typer.Argument(..., help="Profile CSV: a 'task' column and columns 1..P of times in seconds."),
        procs: Optional[int] = typer.Option(
            None, "--procs", help="Processors p (default: the profile's largest column)."
        ),
        k: Optional[int] = typer.Option(None, "--k", help="At most K tasks per pack (default: p)."),
        algo: str = typer.Option(
            "pack-by-pack-9",
            "--algo",
            help="Algorithm name, e.g. exact, pack-approx, pack-by-pack-9, random-proc-9, matching.",
        ),
        seed: int = typer.Option(0, "--seed", help="Seed of the random heuristics."),
        json_out: Optional[Path] = typer.Option(
            None, "--json", help="Write the plan as JSON (input of `gpuweave run packs`)."
        ),
        gantt: Optional[Path] = typer.Option(None, "--gantt", help="Write the pack chart (PNG)."),
        out: Optional[Path] = typer.Option(
            None, "--out", help="Write a result directory here (plan.json, packs.csv, summary.json)."
        ),
    ) -> None:
        """Co-schedule the tasks of PROFILE into packs of at most K tasks on P processors."""
        import json
        import warnings

        from rich.console import Console
        from rich.table import Table

        from gpuweave.files import IMAGE_SUFFIXES, prepare_output_dir, prepare_output_file
        from gpuweave.packs.metrics import evaluate
        from gpuweave.packs.plan_io import plan_to_dict
        from gpuweave.packs.registry import check_k, get_algorithm, solve
        from gpuweave.packs.workloads import load_profile_csv

        get_algorithm(algo)  # unknown names fail before the file is read
        if json_out is not None:
            prepare_output_file(json_out, field="json")
        if gantt is not None:
            prepare_output_file(gantt, field="gantt", suffixes=IMAGE_SUFFIXES)
        if out is not None:
            prepare_output_dir(out, field="out", create=False)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            prof = load_profile_csv(profile, procs=procs)
        for w in caught:
            typer.echo(f"warning: {w.message}", err=True)
        kk = prof.p if k is None else k
        check_k(prof, kk)
        sched = solve(algo, prof, kk, seed=seed)
        sched.validate(prof, kk)
        metrics = evaluate(prof, sched)

        table = Table(title=f"{algo}: n={prof.n}, p={prof.p}, k={kk}")
        for col in ("pack", "start (s)", "cost (s)", "procs used", "tasks (procs -> time s)"):
            table.add_column(col)
        for b, pk in enumerate(sched.packs):
            tasks = ", ".join(f"{prof.names[i]} ({j} -> {t:.4g})" for i, j, t in zip(pk.tasks, pk.procs, pk.times))
            table.add_row(str(b), f"{pk.start:.4g}", f"{pk.cost:.4g}", f"{pk.used}/{prof.p}", tasks)
        console = Console()
        console.print(table)
        opt = " (proven optimum)" if get_algorithm(algo).exact else ""
        console.print(f"cost {sched.cost:.6g} s{opt}; baseline (each task alone on p) {prof.baseline_cost():.6g} s")
        console.print(_fmt_metrics(metrics))
        if json_out is not None:
            json_out.write_text(json.dumps(plan_to_dict(prof, sched, kk, metrics, seed=seed), indent=2) + "\n")
            console.print(f"wrote {json_out}")
        if gantt is not None:
            from gpuweave.packs.gantt import plot_packs

            plot_packs(prof, sched, gantt)
            console.print(f"wrote {gantt}")
        if out is not None:
            from gpuweave.packs.results import write_packs_result

            config = {"profile": str(profile), "procs": prof.p, "k": kk, "algo": algo, "seed": seed}
            console.print(f"wrote {write_packs_result(out, prof, sched, kk, config, seed)}")

    @cli.run.command("packs")
    def run_packs(
        schedule: Path = typer.Argument(..., help="Plan JSON written by `gpuweave plan packs --json`."),
        cpus_per_proc: int = typer.Option(1, "--cpus-per-proc", help="CPUs of this machine per schedule processor."),
        command: Optional[str] = typer.Option(
            None, "--command", help="Command template for tasks without one: {procs}, {cpus}, {task}, {python}."
        ),
        report: Optional[Path] = typer.Option(None, "--report", help="Write the planned-vs-measured report as JSON."),
        timeout: Optional[float] = typer.Option(None, "--timeout", help="Kill a task after this many seconds."),
    ) -> None:
        """Run SCHEDULE here: packs in order, tasks of a pack together on disjoint CPU sets."""
        import json

        from rich.console import Console
        from rich.table import Table

        from gpuweave.errors import InputError
        from gpuweave.files import prepare_output_file
        from gpuweave.packs.plan_io import read_plan
        from gpuweave.packs.runner import run_plan

        if timeout is not None and not timeout > 0:  # also rejects NaN
            raise InputError(f"--timeout must be > 0 seconds, got {timeout}", field="timeout")
        if report is not None:
            prepare_output_file(report, field="report")  # before the run, not after it
        plan = read_plan(schedule)
        rep = run_plan(plan, cpus_per_proc=cpus_per_proc, command=command, timeout=timeout)
        table = Table(title=f"run of {schedule} ({plan.procs} processors x {cpus_per_proc} CPU)")
        for col in ("pack", "task", "procs", "cpus", "planned (s)", "measured (s)", "rc"):
            table.add_column(col)
        for pk in rep.packs:
            table.add_row(str(pk.index), "[b]pack[/b]", "", "", f"{pk.planned:.4g}", f"{pk.measured:.4g}", "")
            for tr in pk.tasks:
                table.add_row(
                    "",
                    tr.task,
                    str(tr.procs),
                    ",".join(map(str, tr.cpus)),
                    f"{tr.planned:.4g}",
                    f"{tr.measured:.4g}",
                    str(tr.returncode),
                )
        console = Console()
        console.print(table)
        console.print(f"planned cost {rep.planned_cost:.4g} s, measured {rep.measured_cost:.4g} s")
        if report is not None:
            report.write_text(json.dumps(rep.as_dict(), indent=2) + "\n")
            console.print(f"wrote {report}")
        if not rep.ok:
            failed = [tr.task for pk in rep.packs for tr in pk.tasks if tr.returncode != 0]
            typer.echo(
                f"error: task(s) failed: {', '.join(failed)}; the run stopped after pack {rep.packs[-1].index}",
                err=True,
            )
            raise typer.Exit(1)
