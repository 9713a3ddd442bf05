"""Digest everything the cluster simulator records, per policy, to prove a hot-path change altered no result.

Runs every registered cluster policy on generated Philly-like traces (a backlog on 64 GPUs and bench sim's
moderate load on 1,024) and prints one SHA-256 per run over the jobs' outcomes, the segments, the allocation
changes, the time series, energy, cost, events and decisions (floats written with ``repr``: bit-exact). Save
the output before a change and diff it after:

    .venv/bin/python tools/sim_digest.py > /tmp/before.txt   # on the old code
    .venv/bin/python tools/sim_digest.py | diff /tmp/before.txt -
"""

from __future__ import annotations

import hashlib
import sys

from gpuweave.bench import timed_sim
from gpuweave.cluster.policies import policy_names

# (label, jobs, GPUs, jobs/hour): the two loads of bench scale, at sizes every policy runs in seconds.
RUNS = [("backlog", 400, 64, 600.0), ("moderate", 600, 1024, 30.0)]


def digest(rec) -> str:
    h = hashlib.sha256()
    for js in rec.jobs:
        h.update(
            repr(
                (
                    js.job.job_id,
                    js.first_start,
                    js.end,
                    js.restarts,
                    js.attained_gpu_seconds,
                    js.energy_j,
                    js.cost,
                    sorted(js.gpu_seconds_by_model.items()),
                )
            ).encode()
        )
    for s in rec.segments:
        h.update(repr((s.job_id, s.start, s.end, s.placement, s.rate, s.delay)).encode())
    for a in rec.allocations:
        h.update(repr((a.time, a.job_id, a.node, a.gpus)).encode())
    for row in rec.timeseries:
        h.update(repr(row).encode())
    h.update(repr((rec.energy_j, rec.cost, rec.start_time, rec.end_time, rec.events, rec.decisions)).encode())
    return h.hexdigest()[:16]


def main(names: list[str]) -> None:
    for policy in names or policy_names():
        for label, jobs, gpus, rate in RUNS:
            run = timed_sim(jobs, gpus, policy, rate, 0, None)
            print(f"{policy:10s} {label:9s} {digest(run['records'])}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
