"""Benchmark of the exact solver (pytest-benchmark; disabled by default, so it runs once as a test).

``pytest tests/mig/test_exact_bench.py --benchmark-enable`` times it; timings are never asserted.
For the n = 10 figures run ``python tests/mig/test_exact_bench.py 10 0,1,2,3,4``.
"""

from __future__ import annotations

import sys

from gpuweave.mig.exact import exact
from gpuweave.mig.far import far
from gpuweave.mig.generator import workload
from gpuweave.mig.problem import lower_bound
from gpuweave.mig.validate import validate_schedule


def test_bench_exact_a100_mixed_wide_n8(benchmark):
    p = workload("A100", "mixed", "wide", 8, seed=2)
    e = benchmark.pedantic(exact, args=(p,), kwargs={"time_limit_s": 60.0}, rounds=3, iterations=1)
    assert e.optimal
    assert validate_schedule(e.schedule, p).ok
    assert e.schedule.makespan >= lower_bound(p) - 1e-9


def main(argv: list[str]) -> None:
    """Print, per seed: proved or not, seconds, optimum, FAR's makespan and gap to the optimum."""
    n = int(argv[1]) if len(argv) > 1 else 10
    seeds = [int(s) for s in argv[2].split(",")] if len(argv) > 2 else list(range(5))
    limit = float(argv[3]) if len(argv) > 3 else 60.0
    for seed in seeds:
        p = workload("A100", "mixed", "wide", n, seed=seed)
        f = far(p).makespan
        e = exact(p, time_limit_s=limit)
        assert validate_schedule(e.schedule, p).ok
        print(
            f"n={n} seed={seed} proved={e.optimal} wall={e.wall_s:.1f}s optimum={e.schedule.makespan:.3f} "
            f"bound={e.bound:.3f} "
            f"LB={lower_bound(p):.3f} FAR={f:.3f} FAR_gap={100 * (f / e.schedule.makespan - 1):.2f}%",
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv)
