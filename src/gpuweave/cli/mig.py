"""``gpuweave mig plan|validate|run|algos|generate``: the MIG grain (FAR and the baselines)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from gpuweave.checks import SEED
from gpuweave.cli.listing import JSON_OPTION_HELP, print_listing
from gpuweave.cli.output import ProgressBar, is_stdout, print_json, print_table, quiet_option, show_progress
from gpuweave.errors import InputError

NAME = "mig"
app = typer.Typer(
    help="MIG grain: plan, validate and run batches of moldable tasks; list planners; generate batches.",
    no_args_is_help=True,
)


@app.command("plan")
def plan(
    tasks: Optional[Path] = typer.Argument(
        None, help="TASKS.csv: task, one column per instance size (s), optional command."
    ),
    gpu: str = typer.Option("A100", "--gpu", help="MIG GPU model: A30, A100, H100, H200, B200."),
    gpus: int = typer.Option(1, "--gpus", help="Number of identical GPUs (FAR uses a forest)."),
    algo: str = typer.Option(
        "far",
        "--algo",
        help="far | miso-opt | fixpart-best | fixpart:1-1-1-1-1-1-1 | fixpart:7 | exact (see `gpuweave mig algos`).",
    ),
    json_out: Optional[Path] = typer.Option(
        None,
        "--json",
        metavar="PATH",
        help="Write the schedule JSON here (input of `mig run` and `mig validate`); `--json -` prints it on "
        "stdout instead of the table (messages go to stderr).",
    ),
    gantt: Optional[Path] = typer.Option(None, "--gantt", help="Write a Gantt chart (PNG) here."),
    batches: Optional[Path] = typer.Option(
        None, "--batches", help="Directory of batch CSVs (file-name order) to schedule with FAR and concatenate."
    ),
    out: Optional[Path] = typer.Option(
        None, "--out", help="Write a result directory here (schedule.json, tasks.csv, summary.json)."
    ),
    quiet: bool = quiet_option(),
) -> None:
    """Plan a batch of moldable tasks on MIG and print the schedule, makespan, lower bound and ratio.

    With `--json -` stdout carries only the schedule JSON (the same bytes `--json FILE` writes)."""
    _check_plan_outputs(gpus, json_out, gantt, out)  # before planning: exact can take minutes
    to_stdout = is_stdout(json_out)
    with ProgressBar(show_progress(quiet or to_stdout)) as bar:
        bar.task(f"mig plan: {algo}")
        schedule = (
            _plan_batches(batches, tasks, gpu, gpus, algo)
            if batches is not None
            else _plan_tasks(tasks, gpu, gpus, algo)
        )
    if to_stdout:
        typer.echo(schedule.json_text(), nl=False)
    else:
        _print_schedule(schedule)
    if json_out is not None and not to_stdout:
        typer.echo(f"wrote {schedule.write_json(json_out)}")
    if gantt is not None:
        from gpuweave.mig.gantt import plot_gantt

        typer.echo(f"wrote {plot_gantt(schedule, gantt)}", err=to_stdout)
    if out is not None:
        from gpuweave.mig.results import write_mig_result

        source = {"tasks": str(tasks)} if batches is None else {"batches": str(batches)}
        written = write_mig_result(out, schedule, {**source, "gpu": gpu, "gpus": gpus, "algo": algo})
        typer.echo(f"wrote {written}", err=to_stdout)


def _check_plan_outputs(gpus: int, json_out: Optional[Path], gantt: Optional[Path], out: Optional[Path]) -> None:
    from gpuweave.files import IMAGE_SUFFIXES, prepare_output_file
    from gpuweave.limits import check_limit
    from gpuweave.staging import check_replaceable

    if gpus < 1:
        raise InputError(f"--gpus must be at least 1, got {gpus}", field="gpus")
    check_limit("mig_gpus", gpus, "--gpus", field="gpus")  # planning time grows with the GPU count
    if json_out is not None and not is_stdout(json_out):
        prepare_output_file(json_out, field="json")
    if gantt is not None:
        prepare_output_file(gantt, field="gantt", suffixes=IMAGE_SUFFIXES)
    if out is not None:
        check_replaceable(out)


def _plan_batches(batches: Path, tasks: Optional[Path], gpu: str, gpus: int, algo: str):
    """FAR on each batch CSV of the directory, concatenated."""
    from gpuweave.mig.concat import chain_schedule
    from gpuweave.mig.far import far
    from gpuweave.mig.problem import read_batches_dir
    from gpuweave.mig.validate import check_schedule

    if tasks is not None:
        raise InputError("give either TASKS.csv or --batches DIR, not both")
    if algo != "far":
        raise InputError("--batches concatenates FAR schedules; use --algo far", field="algo")
    problems = read_batches_dir(batches, gpu, gpus)
    labels = [p.stem for p in sorted(Path(batches).glob("*.csv"))]
    schedule = chain_schedule([far(p) for p in problems], problems, labels)
    check_schedule(schedule)
    return schedule


def _plan_tasks(tasks: Optional[Path], gpu: str, gpus: int, algo: str):
    from gpuweave.mig.problem import read_tasks_csv
    from gpuweave.mig.registry import plan as plan_problem
    from gpuweave.mig.validate import check_schedule

    if tasks is None:
        raise InputError("missing TASKS.csv (or --batches DIR)")
    problem = read_tasks_csv(tasks, gpu, gpus)
    schedule = plan_problem(problem, algo)
    check_schedule(schedule, problem)
    return schedule


def _print_schedule(schedule) -> None:
    from rich.console import Console

    rows = []
    for t in sorted(schedule.tasks, key=lambda t: (t.start, t.gpu_index, t.start_slice)):
        slices = f"S{t.start_slice}-S{t.start_slice + t.size - 1}"
        rows.append((t.task, str(t.gpu_index), f"{t.size}g@S{t.start_slice}", slices, f"{t.start:.4f}", f"{t.end:.4f}"))
    console = Console()
    columns = ("task", "gpu", "instance", "slices", "start (s)", "end (s)")
    print_table(console, f"{schedule.algo} on {schedule.gpu} x{schedule.gpus}", columns, rows, right=columns[4:])
    ops = len(schedule.operations)
    console.print(
        f"makespan {schedule.makespan:.4f} s   lower bound {schedule.lower_bound:.4f} s   ratio {schedule.ratio:.4f}   "
        f"reconfigurations {ops} ({schedule.reconfiguration})"
    )
    info = schedule.info
    if "optimal" in info:
        console.print(
            f"exact: optimal={info['optimal']} (one-lifetime class: {info.get('optimal_single_lifetime')}), "
            f"bound {info['bound_s']:.4f} s"
        )
    if "chain_makespan_model" in info:
        console.print(
            f"chained makespan, paper model (junction reconfiguration ignored): {info['chain_makespan_model']:.4f} s"
        )


@app.command("run")
def run(
    schedule_file: Path = typer.Argument(
        ..., metavar="SCHEDULE.json", help="A schedule from `gpuweave mig plan --json`."
    ),
    gpu_index: int = typer.Option(0, "--gpu-index", help="NVML index of the MIG-enabled GPU."),
    tasks: Optional[Path] = typer.Option(
        None, "--tasks", help="TASKS.csv with a command column (else commands from the JSON)."
    ),
    out: Optional[Path] = typer.Option(None, "--out", help="Write planned vs measured times (CSV) here."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the NVML calls the run would make; touch no GPU."),
    check: bool = typer.Option(False, "--check", help="Only the read-only pre-flight of the GPU; create nothing."),
    clean_existing: bool = typer.Option(
        False, "--clean-existing", help="Destroy MIG instances already on the GPU instead of refusing to run."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print planned vs measured times as JSON (with --dry-run: the NVML calls)."
    ),
) -> None:
    """Execute a schedule on a real MIG GPU (Algorithm 3) and compare planned with measured times.

    Each task's command (from the schedule JSON or --tasks) runs as written, through /bin/bash, with your rights:
    a schedule file is a script. Run only schedules you trust; `mig validate` and --dry-run print the commands.

    A pre-flight refuses (exit 2) when MIG mode is off, permissions are missing, instances already exist or the
    GPU's MIG geometry differs from the schedule's; every instance is destroyed on errors, Ctrl-C, SIGTERM and SIGHUP.
    A run in which some task's command exited non-zero exits 3, its last line naming those tasks.
    """
    from gpuweave.mig.nvml_exec import INCOMPLETE_EXIT_CODE, dry_run_calls, execute_schedule, load_nvml
    from gpuweave.mig.schedule import read_schedule_json

    schedule = read_schedule_json(schedule_file)
    commands = None
    if tasks is not None:
        from gpuweave.mig.problem import read_tasks_csv

        prob = read_tasks_csv(tasks, schedule.gpu)
        commands = dict(zip(prob.names, prob.commands or [None] * prob.n))
    if dry_run:
        calls = dry_run_calls(schedule, gpu_index=gpu_index, commands=commands)
        if as_json:
            print_json({"schedule": str(schedule_file), "gpu_index": gpu_index, "calls": calls})
            return
        for line in calls:
            typer.echo(line)
        return
    nvml = load_nvml()
    if check:
        from gpuweave.mig.nvml_preflight import check_gpu

        device = check_gpu(nvml, schedule.gpu, gpu_index)
        typer.echo(
            f"GPU {device.index} ({device.name}): MIG on, {device.geometry.name} placements, no instances: ready"
        )
        return
    result = execute_schedule(schedule, nvml, gpu_index=gpu_index, commands=commands, clean_existing=clean_existing)
    written = result.write_csv(out) if out is not None else None
    if as_json:
        print_json({**timings_json(result), "written": written and str(written)})
    else:
        print_timings(result)
        if written is not None:
            typer.echo(f"wrote {written}")
    unfinished = result.unfinished_line(written)
    if unfinished is not None:
        typer.echo(unfinished, err=True)
        raise typer.Exit(INCOMPLETE_EXIT_CODE)


def timings_json(result) -> dict:
    """Planned vs measured end times of a real run (like FAR Table 3), as ``mig run --json`` prints them."""
    tasks = [
        {
            "task": t.task,
            "instance": f"{t.size}g@S{t.start_slice}",
            "planned_start_s": t.planned_start,
            "planned_end_s": t.planned_end,
            "measured_start_s": t.measured_start,
            "measured_end_s": t.measured_end,
            "deviation_pct": t.deviation_pct,
            "returncode": t.returncode,
        }
        for t in sorted(result.timings, key=lambda t: t.planned_end)
    ]
    return {
        "planned_makespan_s": result.planned_makespan,
        "measured_makespan_s": result.measured_makespan,
        "tasks": tasks,
    }


def print_timings(result) -> None:
    """The planned-vs-measured table of a real run (like FAR Table 3) and the two makespans."""
    from rich.console import Console

    rows = [
        (
            t.task,
            f"{t.size}g@S{t.start_slice}",
            f"{t.planned_end:.3f}",
            f"{t.measured_end:.3f}",
            f"{t.deviation_pct:+.2f}",
            str(t.returncode),
        )
        for t in sorted(result.timings, key=lambda t: t.planned_end)
    ]
    console = Console()
    columns = ("task", "instance", "planned end (s)", "measured end (s)", "deviation (%)", "rc")
    print_table(console, "planned vs measured (like FAR Table 3)", columns, rows, right=columns[2:])
    console.print(f"makespan planned {result.planned_makespan:.3f} s, measured {result.measured_makespan:.3f} s")


@app.command("validate")
def validate(
    schedule_file: Path = typer.Argument(..., metavar="SCHEDULE.json"),
    tasks: Optional[Path] = typer.Option(
        None, "--tasks", help="TASKS.csv: also check that every task runs once for its profiled time."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print what was checked as JSON."),
) -> None:
    """Check a schedule against the MIG model; the first violated rule and its tasks, exit 2.

    Also lists the tasks' commands: `gpuweave mig run` runs them as written, through /bin/bash.
    """
    from gpuweave.mig.problem import read_tasks_csv
    from gpuweave.mig.schedule import read_schedule_json
    from gpuweave.mig.validate import check_schedule

    schedule = read_schedule_json(schedule_file)
    problem = read_tasks_csv(tasks, schedule.gpu, schedule.gpus) if tasks is not None else None
    report = check_schedule(schedule, problem, file=str(schedule_file))
    commands = {t.task: t.command for t in schedule.tasks if t.command}
    if problem is not None and problem.commands:
        commands.update({n: c for n, c in zip(problem.names, problem.commands) if c})
    if as_json:
        facts = {"tasks": report.checked_tasks, "operations": report.checked_operations, "gpu": schedule.gpu}
        print_json(
            {"valid": True, **facts, "gpus": schedule.gpus, "makespan_s": schedule.makespan, "commands": commands}
        )
        return
    typer.echo(
        f"valid: {report.checked_tasks} tasks, {report.checked_operations} operations, "
        f"makespan {schedule.makespan:.4f} s on {schedule.gpu} x{schedule.gpus}"
    )
    if commands:
        typer.echo(f"commands ({len(commands)}): `gpuweave mig run` runs each as given through /bin/bash, as you:")
        for task, command in commands.items():
            typer.echo(f"  {task}: {command}")


@app.command("algos")
def algos(as_json: bool = typer.Option(False, "--json", help=JSON_OPTION_HELP)) -> None:
    """List the registered MIG planners (a name with :PARTITION takes a partition, e.g. fixpart:7)."""
    from gpuweave.mig.registry import PLANNERS

    def shown(entry) -> str:
        return entry.name + (":PARTITION" if entry.meta.get("takes_arg") else "")

    print_listing(PLANNERS, "MIG planners (--algo of `gpuweave mig plan`)", as_json, shown_name=shown)


@app.command("generate")
def generate(
    out: Path = typer.Argument(..., help="TASKS.csv to write."),
    n: int = typer.Option(15, "--n"),
    gpu: str = typer.Option("A100", "--gpu"),
    scaling: str = typer.Option("mixed", "--scaling", help="poor | mixed | good"),
    times: str = typer.Option("wide", "--times", help="wide | narrow"),
    p_sup: float = typer.Option(0.0, "--p-sup", help="Fraction of memory-bound tasks in groups >= 2."),
    preset: str = typer.Option("paper", "--preset", help="paper | authors_code"),
    seed: int = typer.Option(0, "--seed", min=SEED.lo, max=SEED.hi),
) -> None:
    """Write a synthetic batch (FAR paper Sec. 6.3 generator) as TASKS.csv."""
    from gpuweave.files import prepare_output_file
    from gpuweave.limits import check_limit
    from gpuweave.mig.generator import generate as generate_batch
    from gpuweave.mig.generator import scaling as fractions
    from gpuweave.mig.generator import time_range

    prepare_output_file(out, field="out", suffixes=(".csv",))
    check_limit("mig_tasks", n, "--n", field="n")
    problem = generate_batch(
        n, fractions(gpu, scaling), gpu=gpu, p_sup=p_sup, times=time_range(times), seed=seed, preset_name=preset
    )
    lines = ["task," + ",".join(map(str, problem.sizes))]
    lines += [name + "," + ",".join(repr(t) for t in row) for name, row in zip(problem.names, problem.times)]
    out.write_text("\n".join(lines) + "\n")
    typer.echo(f"wrote {out} ({n} tasks, {scaling}/{times}, p_sup={p_sup}, seed {seed})")
