"""Benchmarks (reported, never asserted): simulator kernel events/s and server decision latency.

``sim_speed`` runs the IV.a-sized two-service simulation (spec §6.3) and counts heap events and
kernels per wall-clock second. ``server_load`` runs the 20 × 1000 loopback load test with the
clients in separate processes (so the server's own latency is not distorted by client threads
sharing its interpreter) and returns the server-side decision latency (receipt of a launch to the
GO being handed to the socket) and the client round trip, median and p99.
"""

from __future__ import annotations

import time

from gpuweave.kernel.client import FikitClient
from gpuweave.kernel.profile import Profile
from gpuweave.kernel.server import ServerThread
from gpuweave.limits import check_limit


def sim_speed(n_a: int = 60, mode: str = "fikit", seed: int = 0) -> dict:
    # imported here: importing gpuweave.kernel.bench does without numpy
    from gpuweave.kernel.sim import Service, SimConfig, Workload, simulate
    from gpuweave.kernel.traces import hi_trace, lo_trace

    launches = n_a * hi_trace().n + (10 * n_a // 3) * lo_trace().n
    check_limit("kernel_launches", launches, f"kernel launches of {n_a:,} tasks of A and their B load", field="tasks")
    svcs = [
        Service("A", hi_trace(), 0, Workload.back_to_back(n_a)),
        Service("B", lo_trace(), 1, Workload.back_to_back(10 * n_a // 3)),
    ]
    cfg = SimConfig(mode=mode, seed=seed)
    simulate([Service("warm", hi_trace())], cfg)  # profile measurement and imports outside the timing
    simulate(svcs[:1] + svcs[1:], SimConfig(mode=mode, seed=seed, stop_when=("A",), horizon=1.0))
    t0 = time.perf_counter()
    r = simulate(svcs, cfg)
    dt = time.perf_counter() - t0
    return {
        "events": r.events,
        "kernels": r.kernels_run,
        "seconds": dt,
        "events_per_s": r.events / dt,
        "kernels_per_s": r.kernels_run / dt,
    }


def _client_proc(addr, key, prio, pid, n, q) -> None:  # runs in a child process

    c = FikitClient(tuple(addr), key, prio, pid=pid, timeout_s=0.5, retries=10)
    ok = c.register()
    done = sum(1 for _ in range(n) if c.launch("k"))
    q.put((pid, ok, done, c.failed_open, c.rtt_ns))
    c.close()


def server_load(n_clients: int = 20, n_req: int = 1000, profile_dir=None) -> dict:
    import multiprocessing as mp
    import tempfile
    from pathlib import Path

    tmp = Path(profile_dir or tempfile.mkdtemp(prefix="fikit-bench-"))
    for i in range(n_clients):
        Profile(f"c{i}", 1, {"k": 0.001}, {"k": 0.0}, {"k": 1}).save(tmp / f"c{i}.json")
    ctx = mp.get_context("spawn")
    with ServerThread(profile_dir=tmp) as st:
        q = ctx.Queue()
        procs = [
            ctx.Process(target=_client_proc, args=(st.address, f"c{i}", i % 10, 5000 + i, n_req, q))
            for i in range(n_clients)
        ]
        t0 = time.perf_counter()
        for p in procs:
            p.start()
        results = [q.get(timeout=300) for _ in procs]
        for p in procs:
            p.join(30)
        elapsed = time.perf_counter() - t0
        assert st.server is not None  # set once the thread has started
        stats = st.call(st.server.stats)
    rtts = sorted(x for r in results for x in r[4])
    return {
        "clients": n_clients,
        "requests": n_req,
        "seconds": elapsed,
        "gos": stats["gos"],
        "all_done": all(r[2] == n_req for r in results),
        "failed_open": sum(r[3] for r in results),
        "decision_us_median": stats["decision_us_median"],
        "decision_us_p99": stats["decision_us_p99"],
        "rtt_us_median": rtts[len(rtts) // 2] / 1000 if rtts else 0.0,
        "rtt_us_p99": rtts[int(0.99 * len(rtts))] / 1000 if rtts else 0.0,
    }


if __name__ == "__main__":
    import json

    print(
        json.dumps(
            {"sim_fikit": sim_speed(), "sim_share": sim_speed(mode="share_timeslice"), "server": server_load()},
            indent=1,
        )
    )
