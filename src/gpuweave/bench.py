"""Speed figures for ``gpuweave bench``, measured the same way every time (never asserted in tests)."""

from __future__ import annotations

import gc
import heapq
import math
import os
import random
import resource
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable

from gpuweave.checks import ROUND_LENGTH, number
from gpuweave.cluster.policies import make_policy
from gpuweave.cluster.simulator import Simulator
from gpuweave.engine.gc_pause import old_objects_left_alone
from gpuweave.errors import InputError
from gpuweave.files import prepare_output_file
from gpuweave.hardware.catalog import get_gpu
from gpuweave.hardware.cluster_spec import make_cluster
from gpuweave.limits import check_limit
from gpuweave.workload.profiles import load_profiles
from gpuweave.workload.traces.generate import generate_philly_like


def bench_sim(
    jobs: int,
    gpus: int,
    policy: str,
    rate_per_hour: float,
    seed: int,
    round_length: float | None,
    progress: Callable[[int], None] | None = None,
    options: dict | None = None,
    profile: str | Path | None = None,
) -> dict:
    """Simulate ``jobs`` Philly-like jobs on a ``gpus``-GPU V100/P100/K80 cluster; time the simulation alone
    (``progress(done)`` gets the finished jobs about every 1%; the same hook is timed in every run). ``options``
    are the policy's.

    Where the time went: ``policy_s`` is the wall time inside the policy's ``schedule`` calls, every policy's, timed
    here around each call (:class:`CallTimer`; about 0.1 us per call on top) and ``policy_share`` its share of
    ``wall_s``; the rest is the simulator's (validating and applying decisions, events, records). ``restarts``
    counts the jobs' restarts (a policy that time-shares moves each job many times).

    ``profile``: run the simulation under cProfile, write its statistics there (pstats format: ``python -m pstats``,
    snakeviz) and add the functions with the most time of their own as ``profile_top``. The profiler slows Python
    code several times over and C code not at all, so the timings of such a run are not comparable with others."""
    profiler = None
    if profile is not None:
        prepare_output_file(profile, field="profile")  # before the run: not a folder, its folders made
        import cProfile

        profiler = cProfile.Profile()
    timer = CallTimer()
    run = timed_sim(
        jobs, gpus, policy, rate_per_hour, seed, round_length, progress, options, wrap=timer.wrap, profiler=profiler
    )
    rec = run["records"]
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    policy_s = timer.seconds
    return {
        "bench": "sim",
        "policy": policy,
        "options": options or {},
        "jobs": jobs,
        "completed": sum(1 for js in rec.jobs if js.end is not None),
        "gpus": rec.total_gpus,
        "rate_per_hour": rate_per_hour,
        "round_length": run["round_length"],
        "wall_s": round(run["wall_s"], 4),
        "cpu_s": round(run["cpu_s"], 4),
        "setup_s": round(run["setup_s"], 4),
        "jobs_per_s": round(jobs / run["wall_s"], 1),
        "jobs_per_cpu_s": round(jobs / max(run["cpu_s"], 1e-9), 1),
        "events": rec.events,
        "events_per_s": round(rec.events / run["wall_s"], 1),
        "decisions": rec.decisions,
        "policy_s": round(policy_s, 4),
        "policy_share": round(policy_s / max(run["wall_s"], 1e-9), 3),
        "restarts": sum(js.restarts for js in rec.jobs),
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "python": sys.version.split()[0],
        **({} if profiler is None or profile is None else _profile_summary(profiler, Path(profile))),
    }


class CallTimer:
    """Wall seconds a policy spends in its ``schedule`` calls, whatever the policy: :meth:`wrap` puts a timer around
    the built policy's method (the simulator calls it through the instance, so the wrapper sees every call)."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def wrap(self, policy):
        schedule, clock = policy.schedule, time.perf_counter

        def timed(view):
            start = clock()
            try:
                return schedule(view)
            finally:
                self.seconds += clock() - start

        policy.schedule = timed
        return policy


def _profile_summary(profiler, path: Path, top: int = 12) -> dict:
    """Write the profile to ``path`` (whole or not at all) and name the functions with the most time of their own."""
    import pstats

    part = path.with_name(path.name + ".part")
    profiler.dump_stats(str(part))
    os.replace(part, path)
    stats = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]  # undocumented, not in typeshed
    rows = sorted(stats.items(), key=lambda item: -item[1][2])[:top]
    return {
        "profile": str(path),
        "profile_top": [
            {
                "function": f"{'/'.join(Path(file).parts[-2:])}:{line}({name})" if line else name,
                "calls": calls,
                "own_s": round(own, 4),
                "with_callees_s": round(total, 4),
            }
            for (file, line, name), (_, calls, own, total, _) in rows
        ],
    }


class DroppedRecords:
    """A :class:`~gpuweave.cluster.simulator.RecordSink` that drops what it is handed: bench scale's runs hand their
    records over in chunks as a simulation run does to its files (so memory is the jobs'), without the disk."""

    def allocations(self, rows) -> None:
        return None

    def timeseries(self, rows) -> None:
        return None

    def adaptations(self, rows) -> None:
        return None


def timed_sim(
    jobs: int,
    gpus: int,
    policy: str,
    rate_per_hour: float,
    seed: int,
    round_length: float | None,
    progress: Callable[[int], None] | None = None,
    options: dict | None = None,
    wrap: Callable | None = None,
    sink=None,
    profiler=None,
) -> dict:
    """Generate the trace and cluster, then run and time the simulation alone (wall and CPU seconds). ``options``
    are the policy's; ``wrap(policy)`` may adjust the built policy (bench pop's audit); ``sink`` takes the records
    as they come (default: all kept in memory)."""
    if not (math.isfinite(rate_per_hour) and rate_per_hour > 0):
        raise InputError(f"--rate must be a number > 0 (jobs/hour), got {rate_per_hour}", field="rate")
    if round_length is not None:
        number(round_length, ROUND_LENGTH, field="round")
    if gpus < 24:
        raise InputError(
            f"--gpus must be at least 24 (one 8-GPU node of each of V100, P100, K80), got {gpus}", field="gpus"
        )
    make_policy(policy, **(options or {}))  # an unknown name or option fails before the trace is generated
    t0 = time.perf_counter()
    nodes = make_cluster(gpus, ["V100", "P100", "K80"], gpus_per_node=8).expand()
    profiles = load_profiles()
    trace = generate_philly_like(jobs, rate_per_hour, seed, profiles=profiles)
    power = {}
    for node in nodes:
        g = get_gpu(node.gpu_model)
        power[node.gpu_model] = (g.power_idle_w, g.power_max_w)
    pol = make_policy(policy, round_length=round_length, **(options or {}))
    if wrap is not None:
        pol = wrap(pol)
    setup_s = time.perf_counter() - t0
    gc.collect()  # garbage of an earlier run (the simulator holds reference cycles) is not charged to this one
    t1, c1 = time.perf_counter(), time.process_time()
    sim = Simulator(nodes, trace, pol, profiles, power, progress=progress, sink=sink)
    if profiler is not None:
        profiler.enable()
    try:
        rec = sim.run()
    finally:
        if profiler is not None:
            profiler.disable()
    return {
        "records": rec,
        "policy": pol,
        "round_length": pol.round_length,
        "wall_s": time.perf_counter() - t1,
        "cpu_s": time.process_time() - c1,
        "setup_s": setup_s,
    }


# bench scale's two loads: arrivals well above what 64 GPUs serve (the queue grows all run), and bench sim's default.
SCALE_LOADS = {"backlog": (64, 600.0), "moderate": (1024, 30.0)}


def bare_event_loop(jobs: int, servers: int, load: float, seed: int) -> float:
    """Seconds for a bare heapq M/M/c FIFO event loop over ``jobs`` jobs at utilisation ``load`` (the reference
    that bench scale divides by: what any discrete-event simulator in CPython costs per job)."""
    with old_objects_left_alone():  # the collector treats it as it treats the simulator's loop
        return _bare_event_loop(jobs, servers, load, seed)


def _bare_event_loop(jobs: int, servers: int, load: float, seed: int) -> float:
    rng = random.Random(seed)
    t0 = time.process_time()
    heap: list[tuple[float, int, int]] = []
    t = 0.0
    for i in range(jobs):
        t += rng.expovariate(load * servers)
        heap.append((t, 1, i))
    heapq.heapify(heap)
    queue: deque[int] = deque()
    idle = servers
    while heap:
        now, kind, _i = heapq.heappop(heap)
        if kind == 1:
            queue.append(_i)
        else:
            idle += 1
        while idle and queue:
            idle -= 1
            heapq.heappush(heap, (now + rng.expovariate(1.0), 0, queue.popleft()))
    return time.process_time() - t0


def mean_waiting_jobs(rec) -> float:
    """Time-average number of jobs waiting for their first start (Little's law: total first waits over the run's
    span). Tells the load a run was under: at "moderate" load the queue still grows with the trace's length."""
    span = rec.end_time - rec.start_time
    waits = sum(js.first_start - js.job.arrival for js in rec.jobs if js.first_start is not None)
    return waits / span if span > 0 else 0.0


def bench_scale(
    policy: str, sizes: list[int], seed: int, progress: Callable[[str, int], Callable[[int], None] | None] | None
) -> dict:
    """Jobs/s of ``policy`` at each trace size under both :data:`SCALE_LOADS`, the bare loop's jobs/s at the same
    sizes (timed in the same run), their ratio, the log-log slope of seconds vs jobs and the peak RSS. Speeds are
    in CPU seconds of this process (the machine may be shared); wall seconds are reported beside them.

    ``progress(label, total)`` returns the ``progress(done)`` callback of one simulation (or None)."""
    from gpuweave.repro.hadar.scalability import loglog_slope

    if not sizes or min(sizes) < 1:
        raise InputError(f"bench scale needs sizes >= 1, got {sizes}", field="sizes")
    make_policy(policy)
    rows = []
    for load, (gpus, rate) in SCALE_LOADS.items():
        timed_sim(200, gpus, policy, rate, seed, None)  # warm-up: profile tables and caches load outside the timing
        for n in sorted(sizes):
            hook = progress(f"{policy} {load} {n}", n) if progress is not None else None
            # The reference first, with no earlier run's records alive: timed after a simulation, it paid for the
            # collector walking that run's objects (about 2x at 10^5 jobs) and flattered the ratio.
            gc.collect()
            bare = bare_event_loop(n, gpus, 1.2 if load == "backlog" else 0.5, seed)
            run = timed_sim(n, gpus, policy, rate, seed, None, hook, sink=DroppedRecords())
            peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            rows.append(
                {
                    "load": load,
                    "jobs": n,
                    "gpus": gpus,
                    "rate_per_hour": rate,
                    "wall_s": round(run["wall_s"], 4),
                    "cpu_s": round(run["cpu_s"], 4),
                    "jobs_per_s": round(n / max(run["cpu_s"], 1e-9), 1),
                    "bare_cpu_s": round(bare, 4),
                    "bare_jobs_per_s": round(n / max(bare, 1e-9), 1),
                    "ratio_to_bare": round(bare / max(run["cpu_s"], 1e-9), 3),
                    "decisions": run["records"].decisions,
                    "mean_waiting_jobs": round(mean_waiting_jobs(run["records"]), 1),
                    "peak_rss_mb": round(peak_kb / 1024, 1),  # high-water mark of the process so far
                }
            )
            del run
    slopes, bare_slopes = {}, {}
    for load in SCALE_LOADS:
        mine = [r for r in rows if r["load"] == load]
        if len(mine) > 1:
            jobs = [r["jobs"] for r in mine]
            slopes[load] = round(loglog_slope(jobs, [r["cpu_s"] for r in mine]), 3)
            bare_slopes[load] = round(loglog_slope(jobs, [r["bare_cpu_s"] for r in mine]), 3)
    return {
        "bench": "scale",
        "policy": policy,
        "seed": seed,
        "rows": rows,
        "loglog_slope": slopes,
        "bare_loglog_slope": bare_slopes,  # the reference's own: its heap of arrivals costs O(log N) per event
        "python": sys.version.split()[0],
    }


def bench_round(jobs: int, policy: str, reps: int, seed: int, options: dict) -> dict:
    """One scheduling decision with ``jobs`` jobs pending at t = 0 on a cluster grown with them (GPUs = jobs
    rounded up to a multiple of 12, equal V100/P100/K80, 4 per node: Hadar's Fig. 5 setup, spec §5.8).

    ``reps`` fresh policies decide on the same view after one untimed warm-up round on a small view (imports,
    profile tables); the medians of wall and CPU seconds (``time.process_time``) are reported."""
    import statistics

    from gpuweave.cluster.policies.hadar import HadarPolicy
    from gpuweave.repro.hadar.scalability import cpu_model, prepared_view

    if reps < 1:
        raise InputError(f"--reps must be >= 1, got {reps}", field="reps")
    check_limit("reps", reps, "--reps", field="reps")
    make_policy(policy, **options)  # bad names and options fail before the workload is built
    sim = _round_view(jobs, seed, prepared_view)
    make_policy(policy, **options).schedule(prepared_view(min(jobs, 48), seed).view)
    wall, cpu = [], []
    decision = pol = None
    for _ in range(reps):
        pol = make_policy(policy, **options)
        t0, c0 = time.perf_counter(), time.process_time()
        decision = pol.schedule(sim.view)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
    return {
        "bench": "round",
        "policy": policy,
        "jobs": jobs,
        "gpus": sim.book.total_gpus,
        "seconds": statistics.median(wall),
        "min_s": min(wall),
        "max_s": max(wall),
        "cpu_s": statistics.median(cpu),
        "cpu_min_s": min(cpu),
        "reps": reps,
        "started": len(decision.assign),  # type: ignore[union-attr]  # reps >= 1: a decision was made
        "fallback": int(pol.fallback_rounds) if isinstance(pol, HadarPolicy) else 0,
        "options": options,
        "cpu": cpu_model(),
        "python": sys.version.split()[0],
    }


def _round_view(jobs: int, seed: int, prepared_view):
    """Hadar's Fig. 5 view with ``jobs`` pending jobs. The Philly pool has 2,155 jobs; a larger N (e.g. 4,096) joins
    independent samples of at most the pool's size (seeds seed, seed + 1, ...) on the cluster grown for N."""
    from gpuweave.hadar.trace import build_jobs, load_pool
    from gpuweave.repro.hadar.scalability import scaled_cluster

    pool = load_pool()
    size = len(pool["row"])
    if jobs <= size:
        return prepared_view(jobs, seed)
    sim = prepared_view(size, seed)  # the simulator shell; its jobs are replaced below
    profiles = sim.book.profiles
    picked = []
    for k, start in enumerate(range(0, jobs, size)):
        for job in build_jobs(pool, min(size, jobs - start), seed + k, profiles):
            job.job_id = f"s{k}-{job.job_id}"
            picked.append(job)
    power = {m: (0.0, 0.0) for m in ("V100", "P100", "K80")}
    sim = Simulator(scaled_cluster(jobs), picked, sim.policy, profiles, power)
    for js in sim.book.states:
        sim.book.arrive(js)
    return sim


def bench_pop(
    policy: str, partitions: list[int], jobs: int, gpus: int, rate_per_hour: float, seed: int, options: dict
) -> dict:
    """POP's price and gain for a round policy with a ``partitions`` option (gavel, gavel-las, hadar, hadare): per
    k, the simulation's CPU seconds and jobs/s, its mean JCT and makespan against k = 1 on the same trace, and,
    for k > 1, the objective of every partitioned round against the whole round's (Gavel: the LP's smallest
    normalised throughput; Hadar: Eq. 8 of the plan under the whole round's prices). The objectives come from a
    second run that also solves each round whole (same decisions; its time is not reported)."""
    if not partitions or min(partitions) < 1:
        raise InputError(f"--partitions wants integers >= 1, got {partitions}", field="partitions")
    make_policy(policy, partitions=max(partitions), **options)
    rows = []
    base = None
    for k in sorted(set(partitions)):
        run = timed_sim(jobs, gpus, policy, rate_per_hour, seed, None, options={**options, "partitions": k})
        rec = run["records"]
        jct = [js.end - js.job.arrival for js in rec.jobs if js.end is not None]
        row = {
            "partitions": k,
            "cpu_s": round(run["cpu_s"], 3),
            "jobs_per_s": round(jobs / max(run["cpu_s"], 1e-9), 1),
            "mean_jct_s": round(sum(jct) / max(len(jct), 1), 1),
            "makespan_s": round(rec.end_time - rec.start_time, 1),
            "decisions": rec.decisions,
        }
        if base is None:
            base = row
        row["jct_vs_k1"] = round(row["mean_jct_s"] / max(base["mean_jct_s"], 1e-9), 4)
        row["makespan_vs_k1"] = round(row["makespan_s"] / max(base["makespan_s"], 1e-9), 4)
        if k > 1:
            row.update(_pop_objectives(policy, k, jobs, gpus, rate_per_hour, seed, options))
        rows.append(row)
    return {"bench": "pop", "policy": policy, "jobs": jobs, "gpus": gpus, "rate_per_hour": rate_per_hour, "rows": rows}


def _pop_objectives(policy: str, k: int, jobs: int, gpus: int, rate: float, seed: int, options: dict) -> dict:
    """Partitioned / whole objective over the rounds of an audited run (see :func:`bench_pop`)."""
    pol = {}

    def audited(p):
        p.audit_pop = True
        pol["p"] = p
        return p

    timed_sim(jobs, gpus, policy, rate, seed, None, options={**options, "partitions": k}, wrap=audited)
    p = pol["p"]
    pairs = getattr(p, "pop_objectives", None) or getattr(p, "pop_values", [])
    ratios = sorted(part / whole for _, part, whole in pairs if whole > 0)
    if not ratios:
        return {"rounds_compared": 0}
    return {
        "rounds_compared": len(ratios),
        "objective_ratio_min": round(ratios[0], 4),
        "objective_ratio_median": round(ratios[len(ratios) // 2], 4),
        "objective_ratio_mean": round(sum(ratios) / len(ratios), 4),
        "largest_queue": max(q for q, _, _ in pairs),
    }


def bench_kernel(tasks: int, mode: str, runs: int, seed: int) -> dict:
    """Run the IV.a two-service simulation ``runs`` times; report the median wall time and events/s."""
    from gpuweave.kernel.bench import sim_speed

    check_limit("reps", runs, "--runs", field="runs")
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


SACCT_TYPES = (("v100", 0.4), ("k80", 0.25), ("p100", 0.2), ("a6000", 0.05), ("", 0.1))  # "" = a CPU-only job


def generate_sacct(lines: int, seed: int) -> str:
    """``lines`` lines of sacct --parsable2 output (header included) shaped like a busy GPU partition: each job has
    a batch step line, 5% are requeued (a REQUEUED run line first), every 50th is a 4-task array, 2% still run,
    1% never started; GPU types as :data:`SACCT_TYPES` (an unknown ``a6000`` among them)."""
    from datetime import datetime, timedelta

    from gpuweave.workload.traces.slurm import SACCT_FIELDS

    rng = random.Random(seed)
    origin = datetime(2024, 3, 1)
    out = ["|".join(SACCT_FIELDS)]
    kinds = [kind for kind, _ in SACCT_TYPES]
    weights = [weight for _, weight in SACCT_TYPES]
    job, clock = 1000, 0.0

    def stamp(seconds: float) -> str:
        return (origin + timedelta(seconds=int(seconds))).strftime("%Y-%m-%dT%H:%M:%S")

    while len(out) < lines:
        job += 1
        clock += rng.expovariate(1 / 20)
        kind = rng.choices(kinds, weights)[0]
        gpus = rng.choice((1, 1, 1, 2, 4, 8)) if kind else 0
        tres = f"billing=1,cpu=4,gres/gpu:{kind}={gpus},gres/gpu={gpus},mem=16G,node=1" if kind else "cpu=4,node=1"
        start = clock + rng.expovariate(1 / 300)
        run = rng.randint(60, 36_000)
        tasks = [f"{job}_{t}" for t in range(4)] if job % 50 == 0 else [str(job)]
        for task in tasks:
            roll = rng.random()
            if roll < 0.01:
                state, begin, end, elapsed = "PENDING", "Unknown", "Unknown", 0
            elif roll < 0.03:
                state, begin, end, elapsed = "RUNNING", stamp(start), "Unknown", run
            else:
                state, begin, end, elapsed = "COMPLETED", stamp(start), stamp(start + run), run
            fields = [task, str(job), f"job{job}", f"user{job % 97}", "ml", "gpu", state, stamp(clock), begin, end]
            if roll > 0.95 and state == "COMPLETED":
                first = [
                    task,
                    str(job),
                    f"job{job}",
                    f"user{job % 97}",
                    "ml",
                    "gpu",
                    "REQUEUED",
                    stamp(clock),
                    stamp(start - 600),
                    stamp(start - 60),
                    "540",
                    tres,
                    tres,
                    "n01",
                ]
                out.append("|".join(first))
            out.append("|".join([*fields, str(elapsed), tres, tres if begin != "Unknown" else "", "n01"]))
            if begin != "Unknown":
                out.append(
                    "|".join(
                        [
                            f"{task}.batch",
                            f"{task}.batch",
                            "batch",
                            "",
                            "ml",
                            "",
                            state,
                            begin,
                            begin,
                            end,
                            str(elapsed),
                            "",
                            tres,
                            "n01",
                        ]
                    )
                )
    return "\n".join(out[:lines]) + "\n"


def bench_import_slurm(lines: int, seed: int) -> dict:
    """Import a generated ``lines``-line sacct file as ``gpuweave trace import-slurm`` does (parse, merge runs,
    job types, work, schema checks), against the floor of any reader timed in the same run: splitting every line
    on ``|``. Peak memory: the import's Python allocations (tracemalloc, an untimed second run) and the process's
    peak RSS."""
    import tracemalloc

    from gpuweave.workload.traces.schema import validate_frame
    from gpuweave.workload.traces.slurm import sacct_frame

    if lines < 2:
        raise InputError(f"--lines must be >= 2, got {lines}", field="lines")
    # the import refuses more lines than limit trace_jobs: refused here before gigabytes of text are generated
    check_limit("trace_jobs", lines - 1, "lines of the generated sacct file after its header (--lines)", field="lines")
    text = generate_sacct(lines, seed)
    store = load_profiles()

    def run_import():
        raw = sacct_frame(text, source="generated", seed=seed, profiles=store)
        return validate_frame(raw, file="generated", profiles=store)

    gc.collect()
    t0 = time.perf_counter()
    split = [line.split("|") for line in text.splitlines()]
    reference_s = time.perf_counter() - t0
    del split
    gc.collect()
    t0 = time.perf_counter()
    frame = run_import()
    import_s = time.perf_counter() - t0
    jobs = len(frame)
    del frame
    gc.collect()
    tracemalloc.start()
    run_import()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "bench": "import-slurm",
        "lines": lines,
        "jobs": jobs,
        "input_mb": round(len(text.encode()) / 1e6, 2),
        "import_s": round(import_s, 3),
        "lines_per_s": round(lines / import_s),
        "reference_split_s": round(reference_s, 4),
        "ratio_to_split": round(import_s / reference_s, 1),
        "peak_python_mb": round(peak / 2**20, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "python": sys.version.split()[0],
    }


def bench_replay(
    trace: str | Path,
    cluster: str,
    placements: list[str],
    policy: str = "fifo",
    progress: Callable[[str], None] | None = None,
) -> dict:
    """A trace of tasks sharing GPUs (``cluster simulate --profiles traced --placement-rule NAME``, openb's pods over
    time) under each of ``placements`` and one queue policy: CPU and wall seconds of the simulation alone (trace and
    cluster read once, before the clock starts), jobs per CPU second, and each placement's CPU time as a multiple of
    ``best-fit``'s (timed in the same run; added when not asked for)."""
    from gpuweave.cluster.config import parse_config
    from gpuweave.cluster.metrics import summarize
    from gpuweave.cluster.placements import make_task_placement
    from gpuweave.cluster.run import prepare, simulate

    for name in placements:
        make_task_placement(name)  # an unknown name or a gang rule: one line before the files are read
    order = ["best-fit"] + [p for p in placements if p != "best-fit"]
    base = {"policy": policy, "trace": str(trace), "cluster": cluster, "profiles": "traced"}
    prepared = prepare(parse_config({**base, "placement_rule": "best-fit"}))
    runs: list[dict[str, Any]] = []
    for name in order:
        if progress is not None:
            progress(name)
        config = parse_config({**base, "placement_rule": name})
        gc.collect()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        rec = simulate(config, prepared, record_segments=False)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        metrics = summarize(rec)
        runs.append(
            {
                "placement": name,
                "cpu_s": round(cpu, 3),
                "wall_s": round(wall, 3),
                "jobs": len(rec.jobs),
                "jobs_per_cpu_s": round(len(rec.jobs) / max(cpu, 1e-9)),
                "avg_jct_s": round(float(metrics["avg_jct_s"]), 1),
                "mean_fragment_ratio_pct": round(float(metrics.get("mean_fragment_ratio_pct", 0.0)), 3),
            }
        )
    reference = float(runs[0]["cpu_s"])
    for run in runs:
        run["ratio_to_best_fit"] = round(run["cpu_s"] / max(reference, 1e-9), 2)
    return {
        "trace": str(trace),
        "cluster": cluster,
        "policy": policy,
        "gpus": sum(n.num_gpus for n in prepared.nodes),
        "runs": [r for r in runs if r["placement"] in placements or r["placement"] == "best-fit"],
    }


def bench_fill(
    nodes: str | Path,
    pods: str | Path,
    placements: list[str],
    seed: int = 42,
    tune: float = 1.3,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """FGD's experiment (``gpuweave cluster fill``) under each of ``placements`` on one node and pod list: CPU and
    wall seconds of the experiment alone (files read before the clock starts), tasks per CPU second, and each
    placement's CPU time as a multiple of ``best-fit``'s (the cheapest scoring rule, timed in the same run; it is
    added when not asked for)."""
    from gpuweave.cluster.placements import make_task_placement
    from gpuweave.cluster.sharing.experiment import run_fill
    from gpuweave.workload.traces.openb import read_openb_node_table, read_openb_tasks

    for name in placements:
        make_task_placement(name)  # an unknown name: one line before the files are read
    node_table, tasks = read_openb_node_table(nodes), read_openb_tasks(pods)
    order = ["best-fit"] + [p for p in placements if p != "best-fit"]
    runs: list[dict[str, Any]] = []
    for name in order:
        if progress is not None:
            progress(name)
        gc.collect()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        result = run_fill(node_table, tasks, name, seed=seed, tune=tune)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        runs.append(
            {
                "placement": name,
                "cpu_s": round(cpu, 3),
                "wall_s": round(wall, 3),
                "tasks": result.submitted,
                "tasks_per_cpu_s": round(result.submitted / max(cpu, 1e-9)),
                "allocation_at_130": result.curves["allocation"][-1],  # the last load point: 130 % by default
            }
        )
    reference = float(runs[0]["cpu_s"])
    for run in runs:
        run["ratio_to_best_fit"] = round(run["cpu_s"] / max(reference, 1e-9), 2)
    return {
        "nodes": str(nodes),
        "pods": str(pods),
        "gpus": node_table.total_gpus,
        "seed": seed,
        "to": tune,
        "runs": [r for r in runs if r["placement"] in placements or r["placement"] == "best-fit"],
    }
