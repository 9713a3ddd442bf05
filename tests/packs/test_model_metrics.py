"""Model, validator and metrics (spec 1, 4.2, 7 B7 and the metric values of 7 C)."""

from __future__ import annotations

import numpy as np
import pytest

from gpuweave.errors import InputError
from gpuweave.packs import evaluate, solve
from gpuweave.packs.metrics import baseline_response
from gpuweave.packs.model import Pack, PackSchedule, Profile, build_schedule, repair, satisfies_assumptions

from .helpers import hand_profile, random_times


def test_baseline_schedule_has_relative_metrics_one():
    prof = Profile(random_times(np.random.default_rng(0), 12, 6), tuple(f"T{i}" for i in range(12)))
    m = evaluate(prof, solve("one-by-one", prof, 1))
    assert m.relative_cost == pytest.approx(1.0, rel=1e-12)
    assert m.relative_response_time == pytest.approx(1.0, rel=1e-12)
    assert m.packing_ratio == pytest.approx(1.0, rel=1e-12)


def test_hand_optimum_metrics():
    prof = hand_profile()
    m = evaluate(prof, solve("exact", prof, 2))
    assert m.relative_cost == pytest.approx(7 / 9)
    assert m.packing_ratio == pytest.approx(27 / 28)
    assert m.relative_response_time == pytest.approx(1.0)
    # baseline R: t_{.,p} = 3, 4, 2 -> shortest first 2, 5, 9 -> mean 16/3
    assert baseline_response(prof) == pytest.approx(16 / 3)


def test_response_time_orders_packs_by_cost_larger_first_on_ties():
    prof = Profile.from_raw([[2, 2], [2, 2], [2, 2]])
    # Packs {0,1} (cost 2) and {2} (cost 2): the 2-task pack first gives (2+2+4)/3.
    sched = build_schedule(prof, [[2], [0, 1]], [2, 1, 1])
    assert [len(pk.tasks) for pk in sched.packs] == [2, 1]
    m = evaluate(prof, sched)
    assert m.relative_response_time == pytest.approx((8 / 3) / ((2 + 4 + 6) / 3))


def test_repair_flattens_rises_and_raises_superlinear_drops():
    raw = np.array([[10.0, 4.0, 3.0, 5.0], [8.0, 6.0, 5.0, 4.0]])
    fixed = repair(raw)
    # 10 -> 4 is super-linear (work 8 < 10): raised to 5; 5 -> 3 (work 9 < 10) raised to 10/3; the rise 5 -> kept 10/3.
    assert fixed[0].tolist() == pytest.approx([10.0, 5.0, 10 / 3, 10 / 3])
    assert fixed[1].tolist() == raw[1].tolist()
    assert satisfies_assumptions(fixed) and not satisfies_assumptions(raw)
    prof = Profile.from_raw(raw, ["a", "b"])
    assert prof.repaired == ("a",)


def test_profile_rejects_bad_values():
    with pytest.raises(InputError):
        Profile.from_raw([[1.0, -2.0]])
    with pytest.raises(InputError):
        Profile.from_raw([[1.0, float("nan")]])
    with pytest.raises(InputError):
        Profile(np.ones((2, 2)), ("a",))


def test_validator_catches_each_broken_rule():
    prof = hand_profile()
    good = solve("exact", prof, 2)
    good.validate(prof, 2)
    with pytest.raises(ValueError, match="tasks > k"):
        good.validate(prof, 1)
    bad_procs = PackSchedule((Pack((0, 1), (3, 2), (4.0, 5.0), 0.0), Pack((2,), (4,), (2.0,), 5.0)), 3, 4)
    with pytest.raises(ValueError, match="processors > p"):
        bad_procs.validate(prof, 4)
    missing = PackSchedule((Pack((0, 1), (2, 2), (6.0, 5.0), 0.0),), 3, 4)
    with pytest.raises(ValueError, match="exactly one"):
        missing.validate(prof, 4)
    wrong_time = PackSchedule((Pack((0, 1, 2), (2, 1, 1), (5.0, 8.0, 3.0), 0.0),), 3, 4)
    with pytest.raises(ValueError, match="time"):
        wrong_time.validate(prof, 4)
    overlap = PackSchedule((Pack((0,), (4,), (3.0,), 0.0), Pack((1, 2), (3, 1), (4.0, 3.0), 1.0)), 3, 4)
    with pytest.raises(ValueError, match="starts at"):
        overlap.validate(prof, 4)
    zero = PackSchedule((Pack((0, 1, 2), (0, 3, 1), (3.0, 4.0, 3.0), 0.0),), 3, 4)
    with pytest.raises(ValueError):
        zero.validate(prof, 4)


def test_schedule_accessors():
    prof = hand_profile()
    sched = solve("exact", prof, 2)
    assert sched.sigma().tolist() == [4, 3, 1]
    iv = sched.task_intervals()
    assert iv[0] == (0.0, 3.0) and iv[1] == (3.0, 7.0) and iv[2] == (3.0, 6.0)  # R14: cheaper pack first
    assert sched.cost == 7.0 and sched.info["runtime_ms"] >= 0
