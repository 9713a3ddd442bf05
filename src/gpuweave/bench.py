"""``gpuweave bench``: speed figures measured the same way every time (never asserted in tests)."""

from __future__ import annotations

import json
import resource
import sys
import time

import typer


def bench_sim(jobs: int, gpus: int, policy: str, rate_per_hour: float, seed: int, round_length: float | None) -> dict:
    """Simulate ``jobs`` Philly-like jobs on a ``gpus``-GPU V100/P100/K80 cluster; time the simulation alone."""
    import math

    from gpuweave.cluster.policies import make_policy
    from gpuweave.cluster.simulator import Simulator
    from gpuweave.errors import InputError
    from gpuweave.hardware.catalog import get_gpu
    from gpuweave.hardware.cluster_spec import make_cluster
    from gpuweave.workload.profiles import load_profiles
    from gpuweave.workload.traces.generate import generate_philly_like

    if not (math.isfinite(rate_per_hour) and rate_per_hour > 0):
        raise InputError(f"--rate must be a number > 0 (jobs/hour), got {rate_per_hour}", field="rate")
    if round_length is not None and not (math.isfinite(round_length) and round_length > 0):
        raise InputError(f"--round must be a number > 0 (seconds), got {round_length}", field="round")
    if gpus < 24:
        raise InputError(
            f"--gpus must be at least 24 (one 8-GPU node of each of V100, P100, K80), got {gpus}", field="gpus"
        )
    make_policy(policy)  # an unknown name fails before the trace is generated
    t0 = time.perf_counter()
    spec = make_cluster(gpus, ["V100", "P100", "K80"], gpus_per_node=8)
    nodes = spec.expand()
    profiles = load_profiles()
    trace = generate_philly_like(jobs, rate_per_hour, seed, profiles=profiles)
    power = {}
    for node in nodes:
        g = get_gpu(node.gpu_model)
        power[node.gpu_model] = (g.power_idle_w, g.power_max_w)
    pol = make_policy(policy, round_length=round_length)
    setup_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    sim = Simulator(nodes, trace, pol, profiles, power)
    rec = sim.run()
    wall = time.perf_counter() - t1
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    done = sum(1 for js in rec.jobs if js.end is not None)
    return {
        "bench": "sim",
        "policy": policy,
        "jobs": jobs,
        "completed": done,
        "gpus": sum(n.num_gpus for n in nodes),
        "rate_per_hour": rate_per_hour,
        "round_length": pol.round_length,
        "wall_s": round(wall, 4),
        "setup_s": round(setup_s, 4),
        "jobs_per_s": round(jobs / wall, 1),
        "events": rec.events,
        "events_per_s": round(rec.events / wall, 1),
        "decisions": rec.decisions,
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "python": sys.version.split()[0],
    }


def bench_round(jobs: int, policy: str, reps: int, seed: int, options: dict) -> dict:
    """One scheduling decision with ``jobs`` jobs pending at t = 0 on a cluster grown with them (GPUs = jobs
    rounded up to a multiple of 12, equal V100/P100/K80, 4 per node: Hadar's Fig. 5 setup, spec §5.8)."""
    from gpuweave.cluster.policies import make_policy
    from gpuweave.errors import InputError
    from gpuweave.repro.hadar.scalability import cpu_model, time_policy

    if reps < 1:
        raise InputError(f"--reps must be >= 1, got {reps}", field="reps")
    make_policy(policy, **options)  # bad names and options fail before the workload is built
    result = time_policy(policy, jobs, reps, seed, **options)
    return {"bench": "round", **result, "options": options, "cpu": cpu_model(), "python": sys.version.split()[0]}


def bench_kernel(tasks: int, mode: str, runs: int, seed: int) -> dict:
    """Run the IV.a two-service simulation ``runs`` times; report the median wall time and events/s."""
    from gpuweave.kernel.bench import sim_speed

    samples = sorted((sim_speed(tasks, mode, seed) for _ in range(runs)), key=lambda r: r["seconds"])
    mid = samples[len(samples) // 2]
    return {
        "bench": "kernel",
        "mode": mode,
        "tasks": tasks,
        "runs": runs,
        "events": mid["events"],
        "kernels": mid["kernels"],
        "wall_s": round(mid["seconds"], 4),
        "events_per_s": round(mid["events_per_s"], 1),
        "events_per_s_runs": [round(r["events_per_s"], 1) for r in samples],
        "python": sys.version.split()[0],
    }


def _parse_options(items: list[str]) -> dict:
    import yaml

    from gpuweave.errors import InputError

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"--option wants key=value, got {item!r}", field="option")
        out[key] = yaml.safe_load(value)
    return out


def _print_result(result: dict, title: str, as_json: bool) -> None:
    """One JSON object, or a metric/value table."""
    if as_json:
        typer.echo(json.dumps(result))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value")
    for k, v in result.items():
        table.add_row(k, str(v))
    Console().print(table)


def register(cli) -> None:
    bench_app = typer.Typer(help="Measure speed (jobs/s, events/s, memory).", no_args_is_help=True)
    cli.app.add_typer(bench_app, name="bench")

    @bench_app.command("sim")
    def sim_cmd(
        jobs: int = typer.Option(20000, "--jobs", min=1, help="Number of generated Philly-like jobs."),
        gpus: int = typer.Option(
            1024, "--gpus", min=24, help="Cluster size (V100/P100/K80 nodes of 8 GPUs; at least 24)."
        ),
        policy: str = typer.Option("fifo", "--policy", help="Registered cluster policy."),
        rate: float = typer.Option(30.0, "--rate", help="Arrival rate, jobs/hour."),
        seed: int = typer.Option(0, "--seed"),
        round_length: float = typer.Option(None, "--round", help="Force a round length (s)."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    ) -> None:
        """Time the cluster simulator on a generated trace."""
        result = bench_sim(jobs, gpus, policy, rate, seed, round_length)
        _print_result(result, "bench sim", as_json)

    @bench_app.command("round")
    def round_cmd(
        jobs: int = typer.Option(
            2048, "--jobs", min=1, max=100_000, help="Jobs pending at t = 0 (the cluster grows with them)."
        ),
        policy: str = typer.Option("hadar", "--policy", help="Registered cluster policy."),
        reps: int = typer.Option(5, "--reps", help="Fresh policies timed; the median is reported."),
        seed: int = typer.Option(0, "--seed", help="Seed of the Philly-derived workload."),
        option: list[str] = typer.Option(
            [], "--option", help="Policy option key=value (repeatable), e.g. order=slack-srpt."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    ) -> None:
        """Time one scheduling round (Hadar's Fig. 5 setup) of a policy with N active jobs."""
        result = bench_round(jobs, policy, reps, seed, _parse_options(option))
        _print_result(result, "bench round", as_json)

    @bench_app.command("kernel")
    def kernel_cmd(
        tasks: int = typer.Option(300, "--tasks", min=1, help="HI tasks of service A (B runs 10/3 as many LO tasks)."),
        mode: str = typer.Option("fikit", "--mode", help="Kernel arbitration mode (gpuweave kernel modes)."),
        runs: int = typer.Option(3, "--runs", min=1, help="Timed runs; the median is reported."),
        seed: int = typer.Option(0, "--seed"),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    ) -> None:
        """Time the kernel simulator on the canonical HI + LO pair (experiment IV.a, scaled by --tasks)."""
        result = bench_kernel(tasks, mode, runs, seed)
        _print_result(result, "bench kernel", as_json)
