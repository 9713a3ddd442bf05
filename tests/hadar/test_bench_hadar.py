"""Decision time of one round at 2,048 active jobs (Hadar and Gavel). pytest-benchmark is disabled by default
(addopts), so these run once as tests; `pytest --benchmark-enable tests/hadar/test_bench_hadar.py` measures."""

from __future__ import annotations

import pytest

from gpuweave.cluster.policies import make_policy
from gpuweave.repro.hadar.scalability import prepared_view


@pytest.fixture(scope="module")
def sim2048():
    return prepared_view(2048)


@pytest.mark.parametrize("name", ["hadar", "gavel"])
def test_bench_round_2048_jobs(benchmark, sim2048, name):
    decision = benchmark(lambda: make_policy(name).schedule(sim2048.view))
    gpus = sim2048.book.total_gpus
    used = sum(k for p in decision.assign.values() for _, k in p)
    assert 0 < used <= gpus and len(decision.assign) > 1000
