"""FAR on the Rodinia A100 batch (spec §8.B), the A30 Table-3 profile (§6) and structural checks (§8.A)."""

from __future__ import annotations

import math
import random

import pytest

from gpuweave.mig.far import FarOptions, far
from gpuweave.mig.fixpart import fixpart, fixpart_best, ones_partition, whole_partition
from gpuweave.mig.miso import miso_opt
from gpuweave.mig.phase1 import family, min_work_allocation
from gpuweave.mig.phase2 import best_allocation, schedule_allocation
from gpuweave.mig.problem import bundled_dataset, lower_bound, make_problem
from gpuweave.mig.tree import build_forest, recompute_times

from .helpers import random_problem


@pytest.fixture(scope="module")
def rodinia():
    return bundled_dataset("rodinia-a100")


@pytest.fixture(scope="module")
def rodinia_far(rodinia):
    return far(rodinia)


def sizes_of(problem, alloc):
    return {problem.names[i]: problem.sizes[k] for i, k in enumerate(alloc)}


def test_phase1_family_only_gaussian_grows(rodinia):
    fam = family(rodinia)
    assert len(fam) == 4
    assert [sizes_of(rodinia, a)["Gaussian"] for a in fam] == [1, 3, 4, 7]
    a0 = sizes_of(rodinia, fam[0])
    assert {n for n, s in a0.items() if s == 3} == {"BFS", "SRAD_V1", "StreamCluster"}
    assert {n for n, s in a0.items() if s == 4} == {"CFD", "LavaMD"}
    assert {n for n, s in a0.items() if s == 7} == {"ParticleFilter"}
    assert sum(1 for s in a0.values() if s == 1) == 10


def test_phase2_makespans_and_best(rodinia):
    p2 = best_allocation(rodinia, prune=False)
    assert p2.makespans == pytest.approx([27.8025, 12.6853, 17.3715, 17.1208], abs=1e-4)
    assert p2.best_index == 1
    pruned = best_allocation(rodinia)
    assert pruned.makespan == p2.makespan and pruned.best_index == 1 and pruned.evaluated <= 4


def test_phase2_timeline(rodinia):
    r = far(rodinia, FarOptions(refine=False))
    got = {}
    for n in r.forest.nodes:
        for t, s, d in zip(n.tasks, n.starts, n.times):
            got[rodinia.names[t]] = (n.size, n.start_slice, s, s + d)
    expect = {
        "ParticleFilter": (7, 0, 0.24, 3.4487), "LavaMD": (4, 0, 3.8787, 7.3339), "CFD": (4, 0, 7.3339, 8.5235),
        "Gaussian": (3, 4, 4.0787, 11.0062), "BFS": (3, 4, 11.0062, 11.0783), "SRAD_V1": (3, 0, 8.9335, 10.4451),
        "StreamCluster": (3, 0, 10.4451, 11.5526), "HeartWall": (1, 6, 11.4483, 12.3365),
        "SRAD_v2": (1, 4, 11.6083, 12.1008),
        "Myocyte": (1, 5, 11.7683, 12.2140), "Backprop": (1, 0, 12.1383, 12.5767), "NW": (1, 1, 12.2983, 12.5835),
        "LU": (1, 2, 12.4583, 12.6093), "HotSpot": (1, 3, 12.6183, 12.6853),
    }  # fmt: skip
    for name, (size, slc, s, e) in expect.items():
        assert got[name][:2] == (size, slc), name
        assert got[name][2:] == pytest.approx((s, e), abs=1e-4), name
    assert got["PathFinder"][3] == pytest.approx(12.1091, abs=1e-4)


def test_refinement_and_ratios(rodinia, rodinia_far):
    r = rodinia_far
    assert (r.stats.iterations, r.stats.moves, r.stats.swaps) == (2, 1, 0)
    hot = next(t for t in r.schedule.tasks if t.task == "HotSpot")
    assert (hot.size, hot.start_slice) == (1, 4)
    assert r.makespan == pytest.approx(12.6093, abs=1e-4)
    assert r.lower_bound == pytest.approx(10.3647, abs=1e-4)
    assert r.rho == pytest.approx(1.22, abs=0.01)
    assert r.makespan_noref / r.lower_bound == pytest.approx(1.2239, abs=1e-4)
    w = r.makespan
    assert fixpart(rodinia, ones_partition(rodinia)).makespan / w == pytest.approx(2.18, abs=0.02)
    best = fixpart_best(rodinia)
    assert best.info["partition"] == "4-2-1" and best.makespan / w == pytest.approx(1.16, abs=0.01)
    assert abs(miso_opt(rodinia).makespan / w - 2.10) <= 0.15
    fix7 = fixpart(rodinia, whole_partition(rodinia)).makespan
    assert fix7 == pytest.approx(sum(rodinia.time(i, 7) for i in range(rodinia.n)))


def test_a30_table3_profile_with_inf():
    p = bundled_dataset("table3-a30")
    assert math.isinf(p.time(p.names.index("lavaMD"), 1))
    r = far(p)
    assert r.makespan == pytest.approx(29.4915, abs=1e-4)
    assert r.lower_bound == pytest.approx(24.6241, abs=1e-4)
    assert r.stats.moves == 0
    lu = next(t for t in r.schedule.tasks if t.task == "lu")
    assert (lu.size, lu.start_slice, round(lu.end, 2)) == (1, 3, 29.49)


def test_recompute_equals_phase2_exactly():
    rng = random.Random(5)
    for _ in range(200):
        p = random_problem(rng, rng.choice(["A100", "A30", "H100"]), gpus=rng.choice([1, 1, 2]))
        forest = schedule_allocation(p, min_work_allocation(p))
        before = [(n.starts[:], n.end) for n in forest.nodes]
        ops = list(forest.ops)
        recompute_times(forest, p)
        assert [n.starts for n in forest.nodes] == [b[0] for b in before]
        assert forest.ops == ops


def test_every_task_placed_at_its_allocation():
    rng = random.Random(9)
    for _ in range(100):
        p = random_problem(rng, "A100", n=rng.randint(1, 25), gpus=rng.choice([1, 2, 3]))
        r = far(p, FarOptions(refine=False))
        alloc = r.phase2.alloc
        placed = {p.names[t]: n.size for n in r.forest.nodes for t in n.tasks}
        assert len(placed) == p.n == r.forest.task_count()
        assert all(placed[p.names[i]] == p.sizes[k] for i, k in enumerate(alloc))


def test_multi_gpu_forest_uses_every_gpu_and_is_not_worse():
    rng = random.Random(2)
    p = random_problem(rng, "A100", n=30)
    one = far(p).makespan
    two = far(p.with_gpus(2))
    assert {t.gpu_index for t in two.schedule.tasks} == {0, 1}
    assert two.makespan < one
    assert two.lower_bound == pytest.approx(lower_bound(p) / 2)


def test_guard_restores_phase2_when_refinement_regresses():
    rng = random.Random(11)
    seen = 0
    for _ in range(400):
        p = random_problem(rng, "A100", n=rng.randint(8, 20))
        off = far(p, FarOptions(guard=False))
        on = far(p)
        assert on.makespan <= on.makespan_noref + 1e-12
        if off.regressed:
            seen += 1
            assert on.guard_fired and on.makespan == on.makespan_noref
    # regressions are rare (spec §8.E: about 1 in 2700); the invariants inside the loop are the check


def test_build_forest_shapes():
    from gpuweave.hardware.catalog import get_mig_geometry

    f = build_forest(get_mig_geometry("A100"), 2, (1, 2, 3, 4, 7))
    assert len(f.nodes) == 28 and len(f.roots) == 2
    assert f.nodes[16].occ == tuple(7 + s for s in (0, 1, 2, 3))  # GPU1's 4-slice node


def test_make_problem_and_far_tiny():
    p = make_problem(["a"], [[4.0, 2.0, 1.5, 1.0, 0.6]], "A100")
    assert [p.sizes[a[0]] for a in family(p)] == [1, 2, 4, 7]  # min work 1 (ties -> smallest), then next min work
    r = far(p)
    assert r.makespan == pytest.approx(0.24 + 0.6)  # the whole GPU wins: created (0.24 s), then 0.6 s
