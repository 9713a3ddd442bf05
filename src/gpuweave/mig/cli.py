"""``gpuweave plan mig``, ``gpuweave run mig`` and ``gpuweave mig validate|algos|generate``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def _print_schedule(schedule, problem_names_order=None) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{schedule.algo} on {schedule.gpu} x{schedule.gpus}")
    for col in ("task", "gpu", "instance", "slices", "start (s)", "end (s)"):
        table.add_column(col)
    for t in sorted(schedule.tasks, key=lambda t: (t.start, t.gpu_index, t.start_slice)):
        table.add_row(
            t.task,
            str(t.gpu_index),
            f"{t.size}g@S{t.start_slice}",
            f"S{t.start_slice}-S{t.start_slice + t.size - 1}",
            f"{t.start:.4f}",
            f"{t.end:.4f}",
        )
    console = Console()
    console.print(table)
    ops = len(schedule.operations)
    console.print(
        f"makespan {schedule.makespan:.4f} s   lower bound {schedule.lower_bound:.4f} s   ratio {schedule.ratio:.4f}   "
        f"reconfigurations {ops} ({schedule.reconfiguration})"
    )
    info = schedule.info
    if "optimal" in info:
        console.print(
            f"exact: optimal={info['optimal']} (one-lifetime class: {info.get('optimal_single_lifetime')}), bound {info['bound_s']:.4f} s"
        )
    if "chain_makespan_model" in info:
        console.print(
            f"chained makespan, paper model (junction reconfiguration ignored): {info['chain_makespan_model']:.4f} s"
        )


# planning time grows about quadratically with the GPU count (100,000 GPUs: half an hour); a typo must not hang
MAX_PLAN_GPUS = 1024


def register(cli) -> None:
    @cli.plan.command("mig")
    def plan_mig(
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
        json_out: Optional[Path] = typer.Option(None, "--json", help="Write the schedule JSON here."),
        gantt: Optional[Path] = typer.Option(None, "--gantt", help="Write a Gantt chart (PNG) here."),
        batches: Optional[Path] = typer.Option(
            None, "--batches", help="Directory of batch CSVs (file-name order) to schedule with FAR and concatenate."
        ),
        out: Optional[Path] = typer.Option(
            None, "--out", help="Write a result directory here (schedule.json, tasks.csv, summary.json)."
        ),
    ) -> None:
        """Plan a batch of moldable tasks on MIG and print the schedule, makespan, lower bound and ratio."""
        from gpuweave.errors import InputError
        from gpuweave.files import IMAGE_SUFFIXES, prepare_output_dir, prepare_output_file
        from gpuweave.mig.problem import read_batches_dir, read_tasks_csv
        from gpuweave.mig.registry import plan
        from gpuweave.mig.validate import check_schedule

        if gpus < 1:
            raise InputError(f"--gpus must be at least 1, got {gpus}", field="gpus")
        if gpus > MAX_PLAN_GPUS:
            raise InputError(
                f"--gpus must be at most {MAX_PLAN_GPUS} (one machine's MIG GPUs), got {gpus}", field="gpus"
            )
        # check the output paths before planning (exact can take minutes)
        if json_out is not None:
            prepare_output_file(json_out, field="json")
        if gantt is not None:
            prepare_output_file(gantt, field="gantt", suffixes=IMAGE_SUFFIXES)
        if out is not None:
            prepare_output_dir(out, field="out", create=False)
        if batches is not None:
            from gpuweave.mig.concat import chain_schedule
            from gpuweave.mig.far import far

            if tasks is not None:
                raise InputError("give either TASKS.csv or --batches DIR, not both")
            if algo != "far":
                raise InputError("--batches concatenates FAR schedules; use --algo far", field="algo")
            problems = read_batches_dir(batches, gpu, gpus)
            labels = [p.stem for p in sorted(Path(batches).glob("*.csv"))]
            schedule = chain_schedule([far(p) for p in problems], problems, labels)
            check_schedule(schedule)
        else:
            if tasks is None:
                raise InputError("missing TASKS.csv (or --batches DIR)")
            problem = read_tasks_csv(tasks, gpu, gpus)
            schedule = plan(problem, algo)
            check_schedule(schedule, problem)
        _print_schedule(schedule)
        if json_out is not None:
            typer.echo(f"wrote {schedule.write_json(json_out)}")
        if gantt is not None:
            from gpuweave.mig.gantt import plot_gantt

            typer.echo(f"wrote {plot_gantt(schedule, gantt)}")
        if out is not None:
            from gpuweave.mig.results import write_mig_result

            source = {"tasks": str(tasks)} if batches is None else {"batches": str(batches)}
            typer.echo(f"wrote {write_mig_result(out, schedule, {**source, 'gpu': gpu, 'gpus': gpus, 'algo': algo})}")

    @cli.run.command("mig")
    def run_mig(
        schedule_file: Path = typer.Argument(
            ..., metavar="SCHEDULE.json", help="A schedule from `gpuweave plan mig --json`."
        ),
        gpu_index: int = typer.Option(0, "--gpu-index", help="NVML index of the MIG-enabled GPU."),
        tasks: Optional[Path] = typer.Option(
            None, "--tasks", help="TASKS.csv with a command column (else commands from the JSON)."
        ),
        out: Optional[Path] = typer.Option(None, "--out", help="Write planned vs measured times (CSV) here."),
    ) -> None:
        """Execute a schedule on a real MIG GPU (Algorithm 3) and compare planned with measured times."""
        from gpuweave.mig.nvml_exec import execute_schedule, load_nvml, print_timings
        from gpuweave.mig.schedule import read_schedule_json

        schedule = read_schedule_json(schedule_file)
        commands = None
        if tasks is not None:
            from gpuweave.mig.problem import read_tasks_csv

            prob = read_tasks_csv(tasks, schedule.gpu)
            commands = dict(zip(prob.names, prob.commands or [None] * prob.n))
        nvml = load_nvml()
        result = execute_schedule(schedule, nvml, gpu_index=gpu_index, commands=commands)
        print_timings(result)
        if out is not None:
            typer.echo(f"wrote {result.write_csv(out)}")

    mig_app = typer.Typer(
        help="MIG schedules: validate, list algorithms, generate synthetic batches.", no_args_is_help=True
    )
    cli.app.add_typer(mig_app, name="mig")

    @mig_app.command("validate")
    def validate_cmd(
        schedule_file: Path = typer.Argument(..., metavar="SCHEDULE.json"),
        tasks: Optional[Path] = typer.Option(
            None, "--tasks", help="TASKS.csv: also check that every task runs once for its profiled time."
        ),
    ) -> None:
        """Check a schedule against the MIG model; the first violated rule and its tasks, exit 2."""
        from gpuweave.mig.problem import read_tasks_csv
        from gpuweave.mig.schedule import read_schedule_json
        from gpuweave.mig.validate import check_schedule

        schedule = read_schedule_json(schedule_file)
        problem = read_tasks_csv(tasks, schedule.gpu, schedule.gpus) if tasks is not None else None
        report = check_schedule(schedule, problem, file=str(schedule_file))
        typer.echo(
            f"valid: {report.checked_tasks} tasks, {report.checked_operations} operations, makespan {schedule.makespan:.4f} s on {schedule.gpu} x{schedule.gpus}"
        )

    @mig_app.command("algos")
    def algos_cmd() -> None:
        """List the registered MIG planners."""
        from gpuweave.mig.registry import planners

        for p in planners().values():
            typer.echo(f"{p.name + (':PARTITION' if p.takes_arg else ''):28s} {p.help}")

    @mig_app.command("generate")
    def generate_cmd(
        out: Path = typer.Argument(..., help="TASKS.csv to write."),
        n: int = typer.Option(15, "--n"),
        gpu: str = typer.Option("A100", "--gpu"),
        scaling: str = typer.Option("mixed", "--scaling", help="poor | mixed | good"),
        times: str = typer.Option("wide", "--times", help="wide | narrow"),
        p_sup: float = typer.Option(0.0, "--p-sup", help="Fraction of memory-bound tasks in groups >= 2."),
        preset: str = typer.Option("paper", "--preset", help="paper | authors_code"),
        seed: int = typer.Option(0, "--seed"),
    ) -> None:
        """Write a synthetic batch (FAR paper Sec. 6.3 generator) as TASKS.csv."""
        from gpuweave.files import prepare_output_file
        from gpuweave.mig.generator import generate, time_range
        from gpuweave.mig.generator import scaling as fractions

        prepare_output_file(out, field="out", suffixes=(".csv",))
        problem = generate(
            n, fractions(gpu, scaling), gpu=gpu, p_sup=p_sup, times=time_range(times), seed=seed, preset_name=preset
        )
        lines = ["task," + ",".join(map(str, problem.sizes))]
        lines += [name + "," + ",".join(repr(t) for t in row) for name, row in zip(problem.names, problem.times)]
        out.write_text("\n".join(lines) + "\n")
        typer.echo(f"wrote {out} ({n} tasks, {scaling}/{times}, p_sup={p_sup}, seed {seed})")
