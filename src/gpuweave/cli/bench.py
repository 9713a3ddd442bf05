"""``gpuweave bench sim|scale|round|pop|kernel|import-slurm|fill|replay``: speed figures measured the same way.

The logic lives in :mod:`gpuweave.bench`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import typer

from gpuweave.checks import SEED
from gpuweave.cli.output import ProgressBar, print_table, quiet_option, show_progress
from gpuweave.errors import InputError

NAME = "bench"
app = typer.Typer(help="Measure speed (jobs/s, events/s, memory).", no_args_is_help=True)


def _parse_options(items: list[str]) -> dict:
    from gpuweave.files import parse_yaml

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"--option wants key=value, got {item!r}", field="option")
        out[key] = parse_yaml(value, source=f"--option {key}", what="option value")
    return out


def _print_result(result: dict, title: str, as_json: bool) -> None:
    """One JSON object, or a metric/value table."""
    if as_json:
        typer.echo(json.dumps(result))
        return
    from rich.console import Console

    print_table(Console(), title, ("metric", "value"), [(k, v) for k, v in result.items()], right=("value",))


@app.command("sim")
def sim(
    jobs: int = typer.Option(20000, "--jobs", min=1, help="Number of generated Philly-like jobs."),
    gpus: int = typer.Option(1024, "--gpus", min=24, help="Cluster size (V100/P100/K80 nodes of 8 GPUs; at least 24)."),
    policy: str = typer.Option("fifo", "--policy", help="Registered cluster policy."),
    rate: float = typer.Option(30.0, "--rate", help="Arrival rate, jobs/hour."),
    seed: int = typer.Option(0, "--seed", min=SEED.lo, max=SEED.hi),
    round_length: float = typer.Option(None, "--round", help="Force a round length (s)."),
    option: list[str] = typer.Option(
        [], "--option", help="Policy option key=value (repeatable), e.g. lp=warm-simplex for gavel."
    ),
    profile: Path = typer.Option(
        None,
        "--profile",
        help="Run under cProfile: write the statistics to this file (pstats) and list the costliest functions. "
        "Profiled timings are slower and not comparable with unprofiled ones.",
    ),
    quiet: bool = quiet_option(),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Time the cluster simulator on a generated trace."""
    from gpuweave.bench import bench_sim

    options = _parse_options(option)
    with ProgressBar(show_progress(quiet or as_json)) as bar:
        hook = bar.task(f"bench sim {policy}: jobs done", jobs)
        result = bench_sim(jobs, gpus, policy, rate, seed, round_length, hook, options, profile)
    if as_json or "profile_top" not in result:
        _print_result(result, "bench sim", as_json)
        return
    top = result.pop("profile_top")
    _print_result(result, "bench sim (profiled)", as_json)
    from rich.console import Console

    headers = ("function", "calls", "own (s)", "with callees (s)")
    rows = [(row["function"], str(row["calls"]), str(row["own_s"]), str(row["with_callees_s"])) for row in top]
    print_table(Console(), "most time of their own", headers, rows, right=headers[1:])


@app.command("scale")
def scale(
    policy: str = typer.Option("fifo", "--policy", help="Registered cluster policy."),
    full: bool = typer.Option(False, "--full", help="Add 10^6 jobs to 10^3, 10^4 and 10^5."),
    max_jobs: int = typer.Option(None, "--max-jobs", min=1000, help="Largest size (a power of ten; default 10^5)."),
    seed: int = typer.Option(0, "--seed", min=SEED.lo, max=SEED.hi),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar on stderr."),
    quiet: bool = quiet_option(),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Jobs/s of a policy at 10^3..10^5 (10^6 with --full) jobs under backlog and moderate load, against a bare
    heapq event loop timed in the same run; log-log slope and peak RSS."""
    from gpuweave.bench import bench_scale

    top = max_jobs or (1_000_000 if full else 100_000)
    sizes = [n for n in (1_000, 10_000, 100_000, 1_000_000) if n <= top]
    with ProgressBar(progress and show_progress(quiet or as_json)) as bar:
        result = bench_scale(policy, sizes, seed, bar.task if bar.enabled else None)
    if as_json:
        typer.echo(json.dumps(result))
        return
    from rich.console import Console

    keys: tuple[str, ...] = (
        "load",
        "jobs",
        "cpu_s",
        "jobs_per_s",
        "bare_jobs_per_s",
        "ratio_to_bare",
        "mean_waiting_jobs",
    )
    keys += ("peak_rss_mb",)
    headers: tuple[str, ...] = (
        "load",
        "jobs",
        "CPU (s)",
        "jobs/s",
        "bare loop jobs/s",
        "ratio to bare",
        "waiting (mean)",
    )
    headers += ("peak RSS (MB)",)
    rows = [[str(row[c]) for c in keys] for row in result["rows"]]
    title = (
        f"bench scale: {policy} (log-log slope {result['loglog_slope']}; the bare loop's {result['bare_loglog_slope']})"
    )
    print_table(Console(), title, headers, rows, right=headers[1:])


@app.command("round")
def round_(
    jobs: int = typer.Option(
        2048, "--jobs", min=1, max=100_000, help="Jobs pending at t = 0 (the cluster grows with them)."
    ),
    policy: str = typer.Option("hadar", "--policy", help="Registered cluster policy."),
    reps: int = typer.Option(5, "--reps", help="Fresh policies timed; the median is reported."),
    seed: int = typer.Option(0, "--seed", min=SEED.lo, max=SEED.hi, help="Seed of the Philly-derived workload."),
    option: list[str] = typer.Option(
        [], "--option", help="Policy option key=value (repeatable), e.g. order=slack-srpt."
    ),
    quiet: bool = quiet_option(),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Time one scheduling round (Hadar's Fig. 5 setup) of a policy with N active jobs."""
    from gpuweave.bench import bench_round

    with ProgressBar(show_progress(quiet or as_json)) as bar:
        bar.task(f"bench round {policy} ({jobs} jobs, {reps} reps)")
        result = bench_round(jobs, policy, reps, seed, _parse_options(option))
    _print_result(result, "bench round", as_json)


@app.command("pop")
def pop(
    policy: str = typer.Option("gavel", "--policy", help="gavel, gavel-las, hadar or hadare."),
    partitions: str = typer.Option("1,2,4,8", "--partitions", help="Comma-separated numbers of POP sub-problems."),
    jobs: int = typer.Option(2000, "--jobs", min=1, help="Number of generated Philly-like jobs."),
    gpus: int = typer.Option(1024, "--gpus", min=24, help="Cluster size (V100/P100/K80 nodes of 8 GPUs)."),
    rate: float = typer.Option(30.0, "--rate", help="Arrival rate, jobs/hour."),
    seed: int = typer.Option(0, "--seed", min=SEED.lo, max=SEED.hi),
    option: list[str] = typer.Option([], "--option", help="Policy option key=value (repeatable)."),
    quiet: bool = quiet_option(),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """POP partitioning's speed and quality: jobs/s, JCT, makespan and each round's objective against k = 1."""
    from gpuweave.bench import bench_pop

    try:
        ks = [int(v) for v in partitions.split(",") if v.strip()]
    except ValueError:
        msg = f"--partitions wants comma-separated integers, got {partitions!r}"
        raise InputError(msg, field="partitions") from None
    with ProgressBar(show_progress(quiet or as_json)) as bar:
        bar.task(f"bench pop {policy} (k = {partitions})")
        result = bench_pop(policy, ks, jobs, gpus, rate, seed, _parse_options(option))
    if as_json:
        typer.echo(json.dumps(result))
        return
    from rich.console import Console

    rows = result["rows"]
    headers = ("metric", *(f"k = {row['partitions']}" for row in rows))
    keys = dict.fromkeys(k for row in rows for k in row if k != "partitions")
    table = [(key, *(str(row.get(key, "")) for row in rows)) for key in keys]
    title = f"bench pop: {policy}, {jobs} jobs, {gpus} GPUs, {rate:g} jobs/h"
    print_table(Console(), title, headers, table, right=headers[1:])


@app.command("kernel")
def kernel(
    tasks: int = typer.Option(300, "--tasks", min=1, help="HI tasks of service A (B runs 10/3 as many LO tasks)."),
    mode: str = typer.Option("fikit", "--mode", help="Kernel arbitration mode (gpuweave kernel modes)."),
    runs: int = typer.Option(3, "--runs", min=1, help="Timed runs; the median is reported."),
    seed: int = typer.Option(0, "--seed", min=SEED.lo, max=SEED.hi),
    quiet: bool = quiet_option(),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Time the kernel simulator on the canonical HI + LO pair (experiment IV.a, scaled by --tasks)."""
    from gpuweave.bench import bench_kernel

    with ProgressBar(show_progress(quiet or as_json)) as bar:
        bar.task(f"bench kernel {mode} ({runs} runs)")
        result = bench_kernel(tasks, mode, runs, seed)
    _print_result(result, "bench kernel", as_json)


@app.command("import-slurm")
def import_slurm(
    lines: int = typer.Option(100_000, "--lines", min=2, help="Lines of the generated sacct file (header included)."),
    seed: int = typer.Option(0, "--seed", min=SEED.lo, max=SEED.hi),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Time `gpuweave trace import-slurm` on a generated sacct file against splitting its lines; peak memory."""
    from gpuweave.bench import bench_import_slurm

    _print_result(bench_import_slurm(lines, seed), "bench import-slurm", as_json)


FGD_DATA = Path("../shared/data/fgd/csv")


@app.command("fill")
def fill(
    nodes: Path = typer.Option(
        FGD_DATA / "openb_node_list_gpu_node.csv", "--nodes", help="Node list (openb_node_list_*.csv)."
    ),
    pods: Path = typer.Option(
        FGD_DATA / "openb_pod_list_default.csv", "--pods", help="Pod list (openb_pod_list_*.csv)."
    ),
    placements: str = typer.Option(
        "random,dotprod,gpu-clustering,gpu-packing,best-fit,fgd", "--placements", help="Comma list of task placements."
    ),
    seed: int = typer.Option(42, "--seed", min=SEED.lo, max=SEED.hi),
    quiet: bool = quiet_option(),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Time FGD's experiment (gpuweave cluster fill) per placement; CPU time as a multiple of best-fit's."""
    from gpuweave.bench import bench_fill

    columns = [("placement", "placement"), ("CPU s", "cpu_s"), ("wall s", "wall_s"), ("tasks", "tasks")]
    columns += [("tasks/CPU s", "tasks_per_cpu_s"), ("x best-fit", "ratio_to_best_fit")]
    columns += [("allocation at 130 %", "allocation_at_130")]
    _bench_placements(
        "bench fill",
        placements,
        lambda names, progress: bench_fill(nodes, pods, names, seed, progress=progress),
        columns,
        lambda result: f"bench fill: {result['gpus']} GPUs, {Path(result['pods']).name}",
        quiet or as_json,
        as_json,
    )


def _bench_placements(
    what: str,
    placements: str,
    run: Callable[[list[str], Callable[[str], None] | None], dict],
    columns: list[tuple[str, str]],
    title: Callable[[dict], str],
    quiet: bool,
    as_json: bool,
) -> None:
    """``bench fill`` and ``bench replay``: ``run`` the comma list of placements (progress per placement), then
    print the result as JSON or a table of ``columns`` (header, key of each run) under ``title(result)``."""
    names = [p.strip() for p in placements.split(",") if p.strip()]
    if not names:
        raise InputError("--placements names no placement", field="placements")
    with ProgressBar(show_progress(quiet)) as bar:
        hook = bar.task(what)
        result = run(names, (lambda name: hook(0)) if hook else None)
    if as_json:
        print(json.dumps(result, indent=2))
        return
    from rich.console import Console

    headers = tuple(header for header, _ in columns)
    rows = [tuple(str(run[key]) for _, key in columns) for run in result["runs"]]
    print_table(Console(), title(result), headers, rows, right=headers[1:])


@app.command("replay")
def replay(
    trace: Path = typer.Option(..., "--trace", help="Trace with shares (trace convert --from alibaba-pods of openb)."),
    cluster: str = typer.Option(..., "--cluster", help="Cluster YAML whose groups share GPUs (trace cluster)."),
    placements: str = typer.Option(
        "random,dotprod,gpu-clustering,gpu-packing,best-fit,fgd", "--placements", help="Comma list of task placements."
    ),
    policy: str = typer.Option("fifo", "--policy", help="Queue policy (fifo, sjf, yarn-cs, tiresias, gavel's family)."),
    quiet: bool = quiet_option(),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Time a shared run over time (cluster simulate --profiles traced --placement-rule NAME) per task placement; CPU
    time as a multiple of best-fit's."""
    from gpuweave.bench import bench_replay

    columns = [("placement", "placement"), ("CPU s", "cpu_s"), ("wall s", "wall_s"), ("jobs", "jobs")]
    columns += [("jobs/CPU s", "jobs_per_cpu_s"), ("x best-fit", "ratio_to_best_fit"), ("mean JCT s", "avg_jct_s")]
    columns += [("fragmentation %", "mean_fragment_ratio_pct")]
    _bench_placements(
        "bench replay",
        placements,
        lambda names, progress: bench_replay(trace, cluster, names, policy, progress=progress),
        columns,
        lambda result: f"bench replay: {result['policy']}, {result['gpus']} GPUs, {Path(result['trace']).name}",
        quiet or as_json,
        as_json,
    )
