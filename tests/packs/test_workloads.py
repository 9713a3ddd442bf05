"""Workloads (SYN-REF, spec 4.1), the profile CSV reader, and the seed-0 regression values of spec 7 E."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from gpuweave.errors import InputError
from gpuweave.packs import evaluate, solve, syn_ref, workload
from gpuweave.packs.exact_dp import exact_all_k
from gpuweave.packs.model import satisfies_assumptions
from gpuweave.packs.workloads import ProfileRepairWarning, load_profile_csv, workload_ks, write_profile_csv


def test_workload_sizes_and_determinism():
    for name, n, p in (("I", 10, 16), ("II", 65, 16), ("III", 260, 32)):
        prof = workload(name, seed=3)
        assert (prof.n, prof.p) == (n, p)
        assert satisfies_assumptions(prof.times)
        assert np.array_equal(prof.times, workload(name, seed=3).times)
    assert not np.array_equal(syn_ref(10, 16, 0).times, syn_ref(10, 16, 1).times)
    assert workload_ks("I") == [2, 4, 6, 8, 10] and workload_ks("III")[-1] == 32
    with pytest.raises(InputError):
        workload("IV")


def test_workload_one_from_csv(tmp_path):
    prof = syn_ref(10, 16, 4)
    path = tmp_path / "w1.csv"
    write_profile_csv(prof, path)
    back = workload("I", csv_path=path)
    assert back.names == prof.names and np.allclose(back.times, prof.times, rtol=1e-15)


E_W1 = {  # spec 7 E, syn_ref(10, 16, 0), relative cost
    2: (0.5731, 0.5852, 0.9403, 0.5848, 0.5736),
    4: (0.4996, 0.5001, 0.6331, 0.5361, 0.5093),
    6: (0.4674, 0.4692, 0.5504, 0.5288, 0.4692),
    8: (0.4575, 0.4575, 0.4962, 0.5273, 0.4575),
    10: (0.4575, 0.4575, 0.4622, 0.5273, 0.4575),
}


def test_regression_seed0_workload_one():
    prof = syn_ref(10, 16, 0)
    c1 = prof.baseline_cost()
    opt = exact_all_k(prof, list(E_W1))
    for k, (o, pa, raw, pbp1, pbp9) in E_W1.items():
        got = (
            opt[k].cost / c1,
            solve("pack-approx", prof, k).cost / c1,
            solve("pack-approx-raw", prof, k).cost / c1,
            solve("pack-by-pack-1", prof, k).cost / c1,
            solve("pack-by-pack-9", prof, k).cost / c1,
        )
        assert got == pytest.approx((o, pa, raw, pbp1, pbp9), abs=1e-3), k


@pytest.mark.parametrize(
    "n, p, k, algo, expected",
    [
        (65, 16, 2, "pack-approx", (0.6452, 0.9823, 0.6862)),
        (65, 16, 2, "pack-by-pack-9", (0.6197, 0.9912, 0.6595)),
        (65, 16, 16, "pack-approx", (0.2099, 0.6389, 0.2483)),
        (65, 16, 16, "pack-by-pack-1", (0.2049, 0.7660, 0.2565)),
        (65, 16, 16, "pack-by-pack-9", (0.2019, 0.7345, 0.2589)),
        (260, 32, 16, "pack-approx", (0.1163, 0.848, 0.1516)),
        (260, 32, 16, "pack-by-pack-1", (0.1163, 0.848, 0.1516)),
        (260, 32, 16, "pack-by-pack-9", (0.1163, 0.848, 0.1516)),
        (260, 32, 32, "pack-approx", (0.1006, 0.6167, 0.1076)),
        (260, 32, 32, "pack-by-pack-1", (0.0818, 0.8243, 0.1072)),
        (260, 32, 32, "pack-by-pack-9", (0.0818, 0.8243, 0.1072)),
    ],
)
def test_regression_seed0_workloads_two_three(n, p, k, algo, expected):
    m = evaluate(syn_ref(n, p, 0), solve(algo, syn_ref(n, p, 0), k))
    assert (m.relative_cost, m.packing_ratio, m.relative_response_time) == pytest.approx(expected, abs=1e-3)


def write(tmp_path, text: str):
    path = tmp_path / "prof.csv"
    path.write_text(text)
    return path


def test_csv_reader_accepts_a_good_profile_and_procs_subset(tmp_path):
    path = write(tmp_path, "task,1,2,3\na,6,3,2\nb,4,2.5,2\n")
    prof = load_profile_csv(path)
    assert (prof.n, prof.p, prof.names) == (2, 3, ("a", "b"))
    assert load_profile_csv(path, procs=2).p == 2


@pytest.mark.parametrize(
    "text, procs, match",
    [
        ("task,1,2,4\na,6,3,2\n", 4, "missing processor column"),
        ("task,1,2\na,6,x\n", None, "not a number"),
        ("task,1,2\na,6,0\n", None, "positive"),
        ("task,1,2\na,6,-1\n", None, "positive"),
        ("task,1,2\na,6,3\n", 3, "larger than the profile supports"),
        ("name,1,2\na,6,3\n", None, "no 'task' column"),
        ("task,1,two\na,6,3\n", None, "not a processor count"),
        ("task,1,2\na,6,3\na,5,3\n", None, "duplicate task"),
        ("task,1,2\n", None, "no task rows"),
        ("", None, "empty"),
        ("task,1,2\na,6\n", None, "fields"),
    ],
)
def test_csv_reader_errors_are_one_clear_line(tmp_path, text, procs, match):
    path = write(tmp_path, text)
    with pytest.raises(InputError, match=match) as exc:
        load_profile_csv(path, procs=procs)
    assert "\n" not in exc.value.one_line() and str(path) in exc.value.one_line()


def test_csv_reader_repairs_monotonicity_with_a_warning_naming_tasks(tmp_path):
    path = write(tmp_path, "task,1,2,3\ngood,6,3.5,2.5\nrises,6,3,4\nsuper,6,2,2\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prof = load_profile_csv(path)
    msgs = [str(w.message) for w in caught if issubclass(w.category, ProfileRepairWarning)]
    assert len(msgs) == 1 and "rises" in msgs[0] and "super" in msgs[0] and "good" not in msgs[0]
    assert prof.repaired == ("rises", "super")
    assert prof.times[1].tolist() == [6, 3, 3] and prof.times[2].tolist() == [6, 3, 2]
