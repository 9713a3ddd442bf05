"""Decision time per round vs number of jobs (paper Fig. 5; spec hadar.md §5.8, check B6).

Setup: N in {32, ..., 2048} jobs, all active at t = 0, sampled from the bundled Philly pool (§5.2 rules);
cluster GPUs = N rounded up to a multiple of 12, split equally over V100/P100/K80, 4 GPUs per node. One
call of the policy's ``schedule`` (Hadar: price constants + DP; Gavel: LP + mechanism) is timed with
``time.perf_counter``, median over ``reps`` fresh policies. Complexity of the measurement: that of the
policies.
"""

from __future__ import annotations

import math
import platform
import statistics
import time

import numpy as np

from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.policies import make_policy
from gpuweave.cluster.policies.hadar import HadarPolicy
from gpuweave.cluster.simulator import Simulator
from gpuweave.hadar.trace import build_jobs, load_pool
from gpuweave.hardware.cluster_spec import Node
from gpuweave.workload.profiles import load_profiles


def scaled_cluster(num_jobs: int) -> list[Node]:
    gpus = 12 * math.ceil(num_jobs / 12)
    per_type = gpus // 3
    nodes: list[Node] = []
    for model in ("V100", "P100", "K80"):
        for k in range(math.ceil(per_type / 4)):
            nodes.append(Node(len(nodes), f"{model.lower()}-{k}", model, min(4, per_type - 4 * k), 0.0, 1.0))
    return nodes


def prepared_view(num_jobs: int, seed: int = 0):
    """A simulator with all N jobs pending at t = 0 (its ``view`` is what a policy sees)."""

    profiles = load_profiles()
    jobs = build_jobs(load_pool(), num_jobs, seed, profiles)
    nodes = scaled_cluster(num_jobs)
    power = {m: (0.0, 0.0) for m in ("V100", "P100", "K80")}

    class _Idle(ClusterPolicy):
        default_round_length = 360.0

        def schedule(self, view):  # pragma: no cover - never called
            raise AssertionError

    sim = Simulator(nodes, jobs, _Idle(), profiles, power)
    for js in sim.book.states:
        sim.book.arrive(js)
    return sim


def time_policy(name: str, num_jobs: int, reps: int = 3, seed: int = 0, **options) -> dict:
    sim = prepared_view(num_jobs, seed)
    times = []
    extra = {}
    for _ in range(reps):
        policy = make_policy(name, **options)
        t0 = time.perf_counter()
        decision = policy.schedule(sim.view)
        times.append(time.perf_counter() - t0)
        fallback = policy.fallback_rounds if isinstance(policy, HadarPolicy) else 0
        extra = {"started": len(decision.assign), "fallback": int(fallback)}
    return {
        "policy": name,
        "jobs": num_jobs,
        "gpus": sim.book.total_gpus,
        "seconds": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
        "reps": reps,
        **extra,
    }


def curve(policies=("hadar", "gavel"), sizes=(32, 64, 128, 256, 512, 1024, 2048), reps: int = 3) -> list[dict]:
    return [time_policy(p, n, reps) for n in sizes for p in policies]


def loglog_slope(sizes, seconds) -> float:
    x = np.log(np.asarray(sizes, dtype=float))
    y = np.log(np.maximum(np.asarray(seconds, dtype=float), 1e-9))
    return float(np.polyfit(x, y, 1)[0])


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
