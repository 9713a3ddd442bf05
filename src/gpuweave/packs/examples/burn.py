"""A small moldable CPU-bound program for ``gpuweave run packs``.

``python -m gpuweave.packs.examples.burn --work W [--procs N]`` splits ``W`` units of integer arithmetic
(one unit is ``UNIT`` loop iterations) over ``N`` worker processes (default: ``$GPUWEAVE_PROCS``, else 1)
and prints one JSON line: the processor count, the CPU set it was allowed to use, the work and its wall time.
With ``N`` CPUs its time is about ``W / N`` units, so it behaves like a perfectly parallel task on a
profile with ``t_j = t_1 / j``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import time

UNIT = 1_000_000


def _spin(iterations: int) -> int:
    acc = 0
    for x in range(iterations):
        acc = (acc + x * x) % 1_000_003
    return acc


def burn(work: float, procs: int) -> float:
    """Run ``work`` units over ``procs`` processes; return the wall time in seconds."""
    total = int(work * UNIT)
    shares = [total // procs + (1 if r < total % procs else 0) for r in range(procs)]
    t0 = time.perf_counter()
    if procs == 1:
        _spin(shares[0])
    else:
        with mp.get_context("fork").Pool(procs) as pool:
            pool.map(_spin, shares)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=float, required=True, help="work units (one unit = UNIT loop iterations)")
    ap.add_argument("--procs", type=int, default=int(os.environ.get("GPUWEAVE_PROCS", "1")))
    args = ap.parse_args(argv)
    if args.procs < 1 or args.work <= 0:
        ap.error("--procs must be >= 1 and --work > 0")
    seconds = burn(args.work, args.procs)
    print(
        json.dumps(
            {"procs": args.procs, "cpus": sorted(os.sched_getaffinity(0)), "work": args.work, "seconds": seconds}
        )
    )


if __name__ == "__main__":
    main()
