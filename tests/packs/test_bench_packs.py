"""Running-time benchmarks (Table 1 of the paper, exact optimum for n = 10, p = 16).

Disabled by default (``--benchmark-disable`` in pyproject), so each runs once as a test; run
``pytest tests/packs/test_bench_packs.py --benchmark-enable`` for the figures. Timings are never asserted.
"""

from __future__ import annotations

import pytest

from gpuweave.packs import solve, workload
from gpuweave.packs.exact_dp import exact_all_k, exact_from_costs, one_pack_costs
from gpuweave.packs.experiments import SEVEN
from gpuweave.packs.registry import get_algorithm

K_TABLE1 = {"I": 6, "II": 8, "III": 16}


@pytest.mark.parametrize("wl", ["I", "II", "III"])
@pytest.mark.parametrize("algo", SEVEN)
def test_bench_table1(benchmark, wl, algo):
    prof = workload(wl, seed=0)
    k = K_TABLE1[wl]
    fn = get_algorithm(algo).fn
    import numpy as np

    rng = np.random.default_rng(0)
    sol = benchmark(fn, prof, k, rng)
    assert sorted(i for b in sol.packs for i in b) == list(range(prof.n))


@pytest.mark.parametrize("k", [2, 6, 10, 16])
def test_bench_exact_n10_p16(benchmark, k):
    prof = workload("I", seed=0)

    def run():
        return exact_from_costs(prof, k, one_pack_costs(prof, k))

    res = benchmark(run)
    assert res.cost <= solve("pack-by-pack-9", prof, k).cost * (1 + 1e-9)


def test_bench_exact_n10_p16_all_k(benchmark):
    prof = workload("I", seed=1)
    res = benchmark(exact_all_k, prof, list(range(1, 17)))
    assert len(res) == 16
