"""``gpuweave packs plan|run|algos``: the packs grain (co-scheduling moldable tasks into packs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from gpuweave.checks import SEED
from gpuweave.cli.listing import JSON_OPTION_HELP, print_listing
from gpuweave.cli.output import (
    ProgressBar,
    cell,
    is_stdout,
    metric_cell,
    print_json,
    print_table,
    quiet_option,
    show_progress,
)
from gpuweave.errors import InputError

NAME = "packs"
app = typer.Typer(
    help="Packs grain: plan a co-schedule from a profile CSV, run it, list algorithms.", no_args_is_help=True
)


@app.command("plan")
def plan(
    profile: Path = typer.Argument(..., help="Profile CSV: a 'task' column and columns 1..P of times in seconds."),
    procs: Optional[int] = typer.Option(None, "--procs", help="Processors p (default: the profile's largest column)."),
    k: Optional[int] = typer.Option(None, "--k", help="At most K tasks per pack (default: p)."),
    algo: str = typer.Option(
        "pack-by-pack-9",
        "--algo",
        help="Algorithm name, e.g. exact, pack-approx, pack-by-pack-9, random-proc-9, matching.",
    ),
    seed: int = typer.Option(0, "--seed", min=SEED.lo, max=SEED.hi, help="Seed of the random heuristics."),
    json_out: Optional[Path] = typer.Option(
        None,
        "--json",
        metavar="PATH",
        help="Write the plan as JSON here (input of `gpuweave packs run`); `--json -` prints it on stdout "
        "instead of the table (messages go to stderr).",
    ),
    gantt: Optional[Path] = typer.Option(None, "--gantt", help="Write the pack chart (PNG)."),
    out: Optional[Path] = typer.Option(
        None, "--out", help="Write a result directory here (plan.json, packs.csv, summary.json)."
    ),
    quiet: bool = quiet_option(),
) -> None:
    """Co-schedule the tasks of PROFILE into packs of at most K tasks on P processors.

    With `--json -` stdout carries only the plan JSON (the same bytes `--json FILE` writes)."""
    from rich.console import Console

    from gpuweave.files import IMAGE_SUFFIXES, prepare_output_file
    from gpuweave.packs.metrics import evaluate
    from gpuweave.packs.plan_io import plan_to_dict
    from gpuweave.packs.registry import check_k, get_algorithm, solve
    from gpuweave.staging import check_replaceable

    get_algorithm(algo)  # unknown names fail before the file is read
    to_stdout = is_stdout(json_out)
    if json_out is not None and not to_stdout:
        prepare_output_file(json_out, field="json")
    if gantt is not None:
        prepare_output_file(gantt, field="gantt", suffixes=IMAGE_SUFFIXES)
    if out is not None:
        check_replaceable(out)
    prof = _load_profile(profile, procs)
    kk = prof.p if k is None else k
    check_k(prof, kk)
    with ProgressBar(show_progress(quiet or to_stdout)) as bar:
        bar.task(f"packs plan: {algo}")
        sched = solve(algo, prof, kk, seed=seed)
        sched.validate(prof, kk)
        metrics = evaluate(prof, sched)
    text = json.dumps(plan_to_dict(prof, sched, kk, metrics, seed=seed), indent=2) + "\n"
    console = Console(stderr=to_stdout)  # with --json -, stdout carries the plan only
    if to_stdout:
        typer.echo(text, nl=False)
    else:
        _print_plan(console, prof, sched, kk, algo, metrics)
    if json_out is not None and not to_stdout:
        json_out.write_text(text)
        console.print(f"wrote {json_out}", markup=False, highlight=False)
    if gantt is not None:
        from gpuweave.packs.gantt import plot_packs

        plot_packs(prof, sched, gantt)
        console.print(f"wrote {gantt}", markup=False, highlight=False)
    if out is not None:
        from gpuweave.packs.results import write_packs_result

        config = {"profile": str(profile), "procs": prof.p, "k": kk, "algo": algo, "seed": seed}
        written = write_packs_result(out, prof, sched, kk, config, seed)
        console.print(f"wrote {written}", markup=False, highlight=False)


def _load_profile(profile: Path, procs: Optional[int]):
    """The profile, its loader's warnings printed on stderr."""
    import warnings

    from gpuweave.packs.workloads import load_profile_csv

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prof = load_profile_csv(profile, procs=procs)
    for w in caught:
        typer.echo(f"warning: {w.message}", err=True)
    return prof


def _print_plan(console, prof, sched, k: int, algo: str, metrics) -> None:
    from gpuweave.packs.registry import get_algorithm

    rows = []
    for b, pk in enumerate(sched.packs):
        tasks = ", ".join(f"{prof.names[i]} ({j} -> {cell(t)})" for i, j, t in zip(pk.tasks, pk.procs, pk.times))
        rows.append((str(b), cell(pk.start), cell(pk.cost), f"{pk.used}/{prof.p}", tasks))
    columns = ("pack", "start (s)", "cost (s)", "procs used", "tasks (procs -> time s)")
    print_table(console, f"{algo}: n={prof.n}, p={prof.p}, k={k}", columns, rows, right=columns[:4])
    opt = " (proven optimum)" if get_algorithm(algo).exact else ""
    console.print(
        f"cost {metric_cell('cost_s', sched.cost)}{opt}; "
        f"baseline (each task alone on p) {metric_cell('cost_s', prof.baseline_cost())}"
    )
    rt = f", running time {metrics.runtime_ms:.3f} ms" if metrics.runtime_ms is not None else ""
    console.print(
        f"relative cost {metrics.relative_cost:.4f}, packing ratio {metrics.packing_ratio:.4f}, "
        f"relative response time {metrics.relative_response_time:.4f}{rt}"
    )


@app.command("run")
def run(
    schedule: Path = typer.Argument(..., help="Plan JSON written by `gpuweave packs plan --json`."),
    cpus_per_proc: int = typer.Option(1, "--cpus-per-proc", help="CPUs of this machine per schedule processor."),
    command: Optional[str] = typer.Option(
        None, "--command", help="Command template for tasks without one: {procs}, {cpus}, {task}, {python}."
    ),
    report: Optional[Path] = typer.Option(None, "--report", help="Write the planned-vs-measured report as JSON."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Kill a task after this many seconds."),
    quiet: bool = quiet_option(),
    as_json: bool = typer.Option(False, "--json", help="Print the planned-vs-measured report as JSON."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print each task's command and CPUs; run nothing."),
) -> None:
    """Run SCHEDULE here: packs in order, tasks of a pack together on disjoint CPU sets.

    The plan's commands run as written, with your rights (no shell; placeholders filled in after splitting, one
    argument each): run only plans you trust, and check them first with --dry-run.
    """
    from rich.console import Console

    from gpuweave.files import prepare_output_file
    from gpuweave.packs.plan_io import read_plan
    from gpuweave.packs.runner import planned_commands, run_plan

    if timeout is not None and not timeout > 0:  # also rejects NaN
        raise InputError(f"--timeout must be > 0 seconds, got {timeout}", field="timeout")
    if report is not None:
        prepare_output_file(report, field="report")  # before the run, not after it
    plan_ = read_plan(schedule)
    if dry_run:
        import shlex

        for pack, task, cpus, argv in planned_commands(plan_, cpus_per_proc=cpus_per_proc, command=command):
            cpu_list = ",".join(map(str, cpus))
            typer.echo(f"pack {pack}: {task.name} on {task.procs} processor(s), CPUs {cpu_list}: {shlex.join(argv)}")
        return
    with ProgressBar(show_progress(quiet or as_json)) as bar:
        step = bar.task("packs run: packs done", len(plan_.packs))
        rep = run_plan(plan_, cpus_per_proc=cpus_per_proc, command=command, timeout=timeout, on_pack=step)
    if report is not None:
        report.write_text(json.dumps(rep.as_dict(), indent=2) + "\n")
    if as_json:
        print_json({**rep.as_dict(), "report": report and str(report)})
    else:
        console = Console()
        _print_run(console, rep, f"run of {schedule} ({plan_.procs} processors x {cpus_per_proc} CPU)")
        console.print(
            f"planned cost {metric_cell('cost_s', rep.planned_cost)}, "
            f"measured {metric_cell('cost_s', rep.measured_cost)}"
        )
        if report is not None:
            console.print(f"wrote {report}", markup=False, highlight=False)
    if not rep.ok:
        failed = [tr.task for pk in rep.packs for tr in pk.tasks if tr.returncode != 0]
        typer.echo(
            f"error: task(s) failed: {', '.join(failed)}; the run stopped after pack {rep.packs[-1].index}", err=True
        )
        raise typer.Exit(1)


def _print_run(console, rep, title: str) -> None:
    rows = []
    for pk in rep.packs:
        rows.append((str(pk.index), "(whole pack)", "", "", cell(pk.planned), cell(pk.measured), ""))
        for tr in pk.tasks:
            cpus = ",".join(map(str, tr.cpus))
            rows.append(("", tr.task, str(tr.procs), cpus, cell(tr.planned), cell(tr.measured), str(tr.returncode)))
    columns = ("pack", "task", "procs", "cpus", "planned (s)", "measured (s)", "rc")
    print_table(console, title, columns, rows, right=("pack", "procs", "planned (s)", "measured (s)", "rc"))


@app.command("algos")
def algos(as_json: bool = typer.Option(False, "--json", help=JSON_OPTION_HELP)) -> None:
    """List the registered packs algorithms."""
    from gpuweave.packs.registry import ALGORITHMS

    title = "packs algorithms (--algo of `gpuweave packs plan`)"
    print_listing(ALGORITHMS, title, as_json, meta_columns=("exact", "randomized"))
