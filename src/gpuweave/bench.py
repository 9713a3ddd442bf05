"""Speed figures for ``gpuweave bench``, measured the same way every time (never asserted in tests)."""

from __future__ import annotations

import resource
import sys
import time


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
