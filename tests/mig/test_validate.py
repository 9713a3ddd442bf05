"""The independent validator: accepts every produced schedule, names the first broken rule otherwise."""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuweave.errors import InputError
from gpuweave.mig.far import FarOptions, far
from gpuweave.mig.fixpart import fixpart, fixpart_best, whole_partition
from gpuweave.mig.miso import miso_opt
from gpuweave.mig.problem import bundled_dataset
from gpuweave.mig.schedule import schedule_from_dict
from gpuweave.mig.validate import check_schedule, validate_schedule

from .helpers import random_problem


def all_schedules(p):
    yield far(p).schedule
    yield far(p, FarOptions(guard=False)).schedule
    yield miso_opt(p)
    yield miso_opt(p, charge_reconfig=True)
    yield fixpart_best(p)
    yield fixpart(p, whole_partition(p))


def test_seeded_loop_of_2000_small_batches():
    rng = random.Random(2025)
    checked = 0
    for k in range(2000):
        gpu = ("A100", "A30", "H100")[k % 3]
        p = random_problem(rng, gpu, n=rng.randint(1, 7), gpus=1 if k % 5 else 2, inf_prob=0.1)
        s = far(p).schedule
        rep = validate_schedule(s, p)
        assert rep.ok, (k, rep.first)
        checked += 1
        if k % 10 == 0:
            for other in (miso_opt(p), miso_opt(p, charge_reconfig=True)):
                assert validate_schedule(other, p).ok
    assert checked == 2000


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**31 - 1),
    gpu=st.sampled_from(["A100", "A30", "H100"]),
    n=st.integers(1, 16),
    gpus=st.integers(1, 3),
)
def test_property_every_planner_passes(seed, gpu, n, gpus):
    p = random_problem(random.Random(seed), gpu, n=n, gpus=gpus)
    for s in all_schedules(p):
        rep = validate_schedule(s, p)
        assert rep.ok, (s.algo, rep.first)
        assert len(s.tasks) == p.n


@pytest.fixture(scope="module")
def good():
    p = bundled_dataset("rodinia-a100")
    return p, far(p).schedule


def broken(schedule, **changes):
    return dataclasses.replace(schedule, **changes)


def first_rule(schedule, problem=None):
    rep = validate_schedule(schedule, problem)
    assert not rep.ok
    return rep.first


def test_rules_named(good):
    p, s = good
    assert validate_schedule(s, p).ok
    tasks = list(s.tasks)
    # 2. placement: a 3-slice instance at S2 does not exist
    t0 = tasks[0]
    bad = [dataclasses.replace(t0, size=3, start_slice=2)] + tasks[1:]
    v = first_rule(broken(s, tasks=bad))
    assert v.rule == "placement" and t0.task in v.tasks
    # 3. duration differs from the profile
    bad = [dataclasses.replace(t0, end=t0.end + 0.5)] + tasks[1:]
    assert first_rule(broken(s, tasks=bad, makespan=max(t.end for t in bad)), p).rule == "tasks"
    # missing task
    assert first_rule(broken(s, tasks=tasks[1:]), p).rule == "tasks"
    # 4. overlap on a slice: move LU onto S0 where Backprop runs
    lu = next(t for t in tasks if t.task == "LU")
    bad = [dataclasses.replace(lu, start_slice=0) if t is lu else t for t in tasks]
    v = first_rule(broken(s, tasks=bad))
    assert v.rule == "slice-overlap" and "LU" in v.tasks
    # 5. op duration
    ops = list(s.operations)
    bad_ops = [dataclasses.replace(ops[0], end=ops[0].end + 0.1)] + ops[1:]
    assert first_rule(broken(s, operations=bad_ops)).rule == "op-duration"
    # 6. ops overlap: shift the second op back onto the first
    o1 = ops[1]
    shift = o1.start - ops[0].start - 0.01
    bad_ops = [ops[0], dataclasses.replace(o1, start=o1.start - shift, end=o1.end - shift)] + ops[2:]
    assert first_rule(broken(s, operations=bad_ops)).rule in ("op-sequential",)
    # 8. task before its instance exists: drop the root's create
    bad_ops = ops[1:]
    v = first_rule(broken(s, operations=bad_ops))
    assert v.rule in ("op-order", "instance-lifetime")
    # 9. partition: remove the destroy of the root (7-slice instance stays alive under its children)
    bad_ops = [o for o in ops if not (o.op == "destroy" and o.size == 7)]
    v = first_rule(broken(s, operations=bad_ops))
    assert v.rule == "partition" and "ParticleFilter" in v.tasks
    # 10. makespan
    assert first_rule(broken(s, makespan=s.makespan + 1)).rule == "makespan"


def test_unknown_gpu_and_gpu_index(good):
    p, s = good
    assert first_rule(broken(s, gpu="V100")).rule == "gpu"
    bad = [dataclasses.replace(s.tasks[0], gpu_index=3)] + list(s.tasks[1:])
    assert first_rule(broken(s, tasks=bad)).rule == "gpu"


def test_check_schedule_raises_one_line(good):
    p, s = good
    with pytest.raises(InputError, match="rule 'makespan' violated"):
        check_schedule(broken(s, makespan=1.0))


def test_occupancy_of_3_at_s0_blocks_s3():
    data = {
        "gpu": "A100", "gpus": 1, "makespan": 2.0, "lower_bound": 0.0, "reconfiguration": "free",
        "tasks": [
            {"task": "a", "gpu_index": 0, "size": 3, "start_slice": 0, "start": 0.0, "end": 2.0},
            {"task": "b", "gpu_index": 0, "size": 1, "start_slice": 3, "start": 0.0, "end": 1.0},
        ],
        "operations": [
            {"op": "create", "gpu_index": 0, "size": 3, "start_slice": 0, "start": 0.0, "end": 0.0},
            {"op": "create", "gpu_index": 0, "size": 1, "start_slice": 3, "start": 0.0, "end": 0.0},
        ],
    }  # fmt: skip
    v = first_rule(schedule_from_dict(data))
    assert v.rule == "slice-overlap" and set(v.tasks) == {"a", "b"}


def test_schedule_json_roundtrip(tmp_path, good):
    p, s = good
    path = s.write_json(tmp_path / "s.json")
    from gpuweave.mig.schedule import read_schedule_json

    back = read_schedule_json(path)
    assert back.makespan == s.makespan and len(back.tasks) == len(s.tasks) and len(back.operations) == len(s.operations)
    assert validate_schedule(back, p).ok


def test_bad_json_structure():
    with pytest.raises(InputError, match="tasks"):
        schedule_from_dict({"gpu": "A100", "gpus": 1, "makespan": 1.0, "tasks": {}})
    with pytest.raises(InputError, match="op must be"):
        schedule_from_dict({"gpu": "A100", "makespan": 1.0, "tasks": [], "operations": [{"op": "resize"}]})
