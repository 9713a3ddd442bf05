"""Benchmarks (pytest-benchmark; disabled by default, so each runs once as a test). Never asserts timings.

Run ``pytest tests/mig/test_bench_mig.py --benchmark-enable`` for the figures.
"""

from __future__ import annotations

import random

import pytest

from gpuweave.mig.far import far
from gpuweave.mig.generator import workload
from gpuweave.mig.problem import bundled_dataset


@pytest.mark.parametrize("n", [15, 100, 1000])
def test_bench_far_mixed_wide(benchmark, n):
    p = workload("A100", "mixed", "wide", n, seed=random.Random(n))
    r = benchmark(far, p)
    assert r.forest.task_count() == n


def test_bench_far_rodinia(benchmark):
    p = bundled_dataset("rodinia-a100")
    r = benchmark(far, p)
    assert r.makespan == pytest.approx(12.6093, abs=1e-4)
