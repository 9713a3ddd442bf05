"""Scheduler core: spec §6.1 AC-1…AC-8 (exact), plus properties of the core."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuweave.errors import InputError
from gpuweave.kernel.bestfit import best_prio_fit
from gpuweave.kernel.ids import KernelId, parse_priority, task_key
from gpuweave.kernel.profile import Profile, ProfileBuilder, amortized_jct
from gpuweave.kernel.sched import Go, SchedulerCore, SetTimer, preset
from gpuweave.kernel.script import replay


def prof(key: str, sk: dict[str, float], sg: dict[str, float] | None = None) -> Profile:
    return Profile(key, 1, dict(sk), dict(sg or {}), {k: 1 for k in sk})


# ---------------------------------------------------------------- AC-1
def test_ac1_profile_statistics():
    b = ProfileBuilder()
    b.add_run(["j", "x", "y", "z", "j", "w"], [2, 3, 1, 1, 4, 10], [10, 5, 1, 1, 8])
    b.add_run(["x", "j", "y", "z", "j", "w"], [3, 2.5, 1, 1, 3.5, 10], [4, 6, 1, 1, 7])
    p = b.build("t")
    assert p.sk["j"] == pytest.approx(3.0, rel=1e-9)
    assert p.sg["j"] == pytest.approx(7.75, rel=1e-9)
    assert p.sk["x"] == pytest.approx(3.0, rel=1e-9)
    assert p.sg["x"] == pytest.approx(4.5, rel=1e-9)
    assert p.sk["w"] == pytest.approx(10.0, rel=1e-9)
    assert "w" not in p.sg and p.gap("w") == 0.0
    assert p.unique_ids == 5


def test_profile_times_clamps_overlap_and_roundtrips(tmp_path):
    b = ProfileBuilder()
    b.add_run_times(["a", "b", "c"], [0.0, 0.5, 3.0], [1.0, 2.0, 4.0])  # b overlaps a → gap 0
    p = b.build("key1")
    assert p.sg["a"] == 0.0 and p.sg["b"] == pytest.approx(1.0)
    p.save(tmp_path / "p.json")
    q = Profile.load(tmp_path / "p.json")
    assert q.sk == p.sk and q.sg == p.sg and q.runs == 1


@pytest.mark.parametrize(
    "ids,k,g",
    [
        (["a"], [-1.0], []),
        (["a", "b"], [1.0, 1.0], [-0.5]),
        (["a", "b"], [1.0, 1.0], []),
        (["a"], [1.0, 2.0], []),
        ([], [], []),
    ],
)
def test_profile_rejects_bad_runs(ids, k, g):
    with pytest.raises(InputError):
        ProfileBuilder().add_run(ids, k, g)


# ---------------------------------------------------------------- AC-2
@dataclass
class R:
    name: str
    fill_d: float
    task: str = ""

    def __post_init__(self):
        self.task = self.task or self.name  # one task per request unless stated


def queues(**levels):
    qs = [deque() for _ in range(10)]
    for lvl, items in levels.items():
        qs[int(lvl[1:])].extend(items)
    return qs


def test_ac2_best_prio_fit():
    b1, b2, c1 = R("b1", 0.8), R("b2", 0.5), R("c1", 0.9)
    qs = queues(q1=[b1, b2], q2=[c1])
    r, d = best_prio_fit(qs, 1.0, 0)
    assert r is b1 and d == 0.8
    assert list(qs[1]) == [b2]  # removed from its queue
    assert best_prio_fit(qs, 0.2, 0) == (None, 0.0)
    qs = queues(q1=[R("b1", 0.8), b2], q2=[R("c1", 0.9)])
    assert best_prio_fit(qs, 0.6, 0)[0] is b2
    b, c = R("b", 1.2), R("c", 0.9)
    qs = queues(q1=[b], q2=[c])
    r, d = best_prio_fit(qs, 0.9, 0)
    assert r is c and d == 0.9  # d = g fits
    e1, e2 = R("e1", 0.5), R("e2", 0.5)
    qs = queues(q1=[e1, e2])
    assert best_prio_fit(qs, 1.0, 0)[0] is e1  # tie → earlier


def test_best_prio_fit_keeps_task_order():
    first, later = R("b1", 2.0, task="B"), R("b2", 0.5, task="B")
    assert best_prio_fit(queues(q1=[first, later]), 1.0, 0) == (None, 0.0)  # b2 may not overtake b1


def test_best_prio_fit_first_level_wins_and_zero_duration():
    hi, lo = R("hi", 0.2), R("lo", 0.95)
    assert best_prio_fit(queues(q1=[hi], q2=[lo]), 1.0, 0)[0] is hi
    z = R("z", 0.0)
    assert best_prio_fit(queues(q3=[z]), 0.0, 0)[0] is z
    assert best_prio_fit(queues(q1=[R("u", float("inf"))]), 1e9, 0) == (None, 0.0)  # unknown ID never fits


# ---------------------------------------------------------------- AC-3
@pytest.mark.parametrize("gap,cand,expect", [(0.099, 0.05, 0), (0.100, 0.100, 1)])
def test_ac3_skip_threshold(gap, cand, expect):
    profiles = {"H": prof("H", {"h": 1.0, "h2": 1.0}, {"h": gap}), "L": prof("L", {"l": cand})}
    script = [
        ("register", 0, "H", 0),
        ("register", 0, "L", 1),
        ("request", 0, "H", "h", 1),
        ("request", 0, "L", "l", 1),
    ]
    gos = replay(script, profiles, preset("recommended"))
    fillers = [g for g in gos if g.filler]
    assert len(fillers) == expect
    if expect:
        assert fillers[0].task == "L" and fillers[0].time == pytest.approx(1.0)


# ---------------------------------------------------------------- AC-4
@pytest.mark.parametrize("name", ["recommended", "paper_literal", "no_feedback"])
def test_ac4_fig8_order(name):
    profiles = {
        "A": prof("A", {"ak1": 1.0, "ak2": 1.0}, {"ak1": 5.0}),
        "B": prof("B", {"bk1": 1.0}),
        "C": prof("C", {"ck1": 1.0}),
    }
    script = [
        ("register", 0, "A", 0),
        ("register", 0, "B", 1),
        ("register", 0, "C", 2),
        ("request", 0, "A", "ak1", 1),
        ("request", 0, "B", "bk1", 1),
        ("request", 0, "C", "ck1", 1),
        ("request", 5.0, "A", "ak2", 2),  # 4 ms after Ak1 ends
    ]
    gos = replay(script, profiles, preset(name))
    assert [g.kid for g in gos] == ["ak1", "bk1", "ck1", "ak2"]


# ---------------------------------------------------------------- AC-5
def _h_profile():
    return prof("H", {"h": 1.0}, {"h": 3.0})


def test_ac5_case_a_low_first_then_high_preempts():
    profiles = {"H": _h_profile(), "L": prof("L", {"l": 0.5})}
    script = [("register", 0, "H", 0), ("register", 0, "L", 1)]
    script += [("request", 0.001 * i, "L", "l", i + 1) for i in range(30)]
    h_times = [2.2, 6.0, 10.0]  # each inside the previous predicted gap (before expiry)
    script += [("request", t, "H", "h", i + 1) for i, t in enumerate(h_times)]
    gos = replay(script, profiles, preset("recommended"))
    first_h = next(i for i, g in enumerate(gos) if g.task == "H")
    assert gos[first_h].time == pytest.approx(2.2)
    # the next GO after H's request is H's: no L GO between t=2.2 and H's GO
    assert all(not (g.task == "L" and 2.2 <= g.time and i < first_h) for i, g in enumerate(gos))
    last_h = max(g.time for g in gos if g.task == "H")
    h_expiry = last_h + 0.5 + 1.0 + 3.0 + 0.5  # in-flight L kernel + H kernel + SG + grace
    for g in gos:
        if g.task == "L" and 2.2 <= g.time < h_expiry:
            assert g.filler, g  # only inside H's predicted gaps
    assert sum(1 for g in gos if g.task == "L") == 30


def test_ac5_case_b_high_first():
    profiles = {"H": _h_profile(), "L": prof("L", {"l": 0.5})}
    script = [("register", 0, "H", 0), ("register", 0, "L", 1), ("request", 0, "H", "h", 1)]
    script += [("request", 0.5 + 0.001 * i, "L", "l", i + 1) for i in range(10)]
    script += [("request", 4.0, "H", "h", 2)]
    gos = replay(script, profiles, preset("recommended"))
    assert gos[0].task == "H"
    h2 = next(g for g in gos if g.task == "H" and g.seq == 2)
    assert h2.time == pytest.approx(4.0)
    for g in gos:
        if g.task == "L" and g.time < 4.0 + 1.0 + 3.0 + 0.5:
            assert g.filler
    assert sum(1 for g in gos if g.task == "L") == 10


def test_ac5_case_c_equal_priority_is_arrival_order():
    profiles = {"A": prof("A", {"a": 1.0}, {"a": 5.0}), "B": prof("B", {"b": 0.3}, {"b": 5.0})}
    script = [("register", 0, "A", 3), ("register", 0, "B", 3)]
    arrivals = [(0.0, "A"), (0.1, "B"), (0.2, "B"), (0.3, "A"), (7.0, "B"), (7.5, "A")]
    seqs = {"A": 0, "B": 0}
    for t, who in arrivals:
        seqs[who] += 1
        script.append(("request", t, who, who.lower(), seqs[who]))
    gos = replay(script, profiles, preset("recommended"))
    assert [(g.task, g.time) for g in gos] == [(w, t) for t, w in arrivals]
    assert not any(g.filler for g in gos)


# ---------------------------------------------------------------- AC-6
def _fig12(config):
    profiles = {"H": prof("H", {"h0": 1.0, "h1": 1.0}, {"h0": 6.0}), "L": prof("L", {"l": 1.0})}
    script = [("register", 0, "H", 0), ("register", 0, "L", 1), ("request", 0.0, "H", "h0", 1)]
    script += [("request", 0.0, "L", "l", i + 1) for i in range(20)]
    script += [("request", 3.5, "H", "h1", 2)]  # 2.5 ms after h0 ends
    gos = replay(script, profiles, config)
    # FIFO device: kernels start in GO order at max(GO time, previous end); all durations 1 ms
    end = 0.0
    starts = {}
    for g in gos:
        start = max(g.time, end)
        end = start + 1.0
        starts[(g.task, g.seq)] = start
    h1 = next(i for i, g in enumerate(gos) if g.task == "H" and g.seq == 2)
    fillers_before = sum(1 for g in gos[:h1] if g.task == "L")
    return fillers_before, starts[("H", 2)]


def test_ac6_fig12_feedback():
    assert _fig12(preset("recommended", holder_grace=0.0)) == (3, 4.0)  # overhead 2 = 0.5 ms
    assert _fig12(preset("no_feedback", holder_grace=0.0)) == (6, 7.0)  # overhead 1 = 3.5 ms
    assert _fig12(preset("paper_literal")) == (6, 7.0)
    assert _fig12(preset("paper_literal", feedback=False)) == (6, 7.0)


# ---------------------------------------------------------------- AC-7
@pytest.mark.parametrize("bad", [-1, 10, 99, "x", 1.5, True, None, "10"])
def test_ac7_priority_outside_range_rejected(bad):
    with pytest.raises(InputError):
        SchedulerCore().register("t", bad, prof("t", {"k": 1.0}))
    with pytest.raises(InputError):
        parse_priority(bad)


def test_ac7_lower_number_always_first():
    profiles = {f"T{p}": prof(f"T{p}", {"k": 1.0}) for p in range(10)}
    script = [("register", 0, f"T{p}", p) for p in range(10)]
    script.append(("request", 0.0, "T0", "k", 1))
    script += [("request", 0.1 + 0.01 * (9 - p), f"T{p}", "k", 1) for p in range(9, 0, -1)]
    gos = replay(script, profiles, preset("recommended"))
    assert [g.task for g in gos] == [f"T{p}" for p in range(10)]


# ---------------------------------------------------------------- AC-8
def test_ac8_amortization():
    assert amortized_jct(1.0, 1.7, 1000, 100_000) == pytest.approx(1.007, rel=1e-9)
    with pytest.raises(InputError):
        amortized_jct(1.0, 1.7, 10, 5)


# ---------------------------------------------------------------- ids, errors, measuring admission
def test_kernel_id_canonical_roundtrip():
    k = KernelId("_Z6kernelPf", (256, 1, 1), (80, 2, 1))
    assert k.canonical() == "_Z6kernelPf|b256,1,1|g80,2,1"
    assert KernelId.parse(k.canonical()) == k
    e = KernelId("aten::add.Tensor", (1, 1, 1), (1, 1, 1), "f32[3]")
    assert KernelId.parse(e.canonical()) == e
    for bad in ["x", "a|b1,1|g1,1,1", "a|g1,1,1|b1,1,1", "a|b1,1,1|g1,1,1|y"]:
        with pytest.raises(InputError):
            KernelId.parse(bad)
    with pytest.raises(InputError):
        KernelId("a|b", (1, 1, 1), (1, 1, 1))
    with pytest.raises(InputError):
        KernelId("a", (0, 1, 1), (1, 1, 1))


def test_task_key_is_stable_and_overridable():
    k1 = task_key("/usr/bin/python3", ["serve.py", "--model", "resnet50"], env={})
    assert k1 == task_key("/other/python3", ["serve.py", "--model", "resnet50"], env={})
    assert k1 != task_key("python3", ["serve.py", "--model", "vgg16"], env={})
    assert len(k1) == 64
    assert task_key("x", [], env={"FIKIT_TASK_KEY": "svc-a"}) == "svc-a"
    with pytest.raises(InputError):
        task_key("x", [], env={"FIKIT_TASK_KEY": "bad key/../"})


def test_unknown_task_and_unknown_kernel():
    core = SchedulerCore()
    with pytest.raises(InputError):
        core.request("ghost", "k", 1, 0.0)
    core.register("H", 0, prof("H", {"h": 1.0}, {"h": 5.0}))
    core.register("L", 1, prof("L", {"known": 1.0}))
    acts = core.request("H", "h", 1, 0.0)
    assert any(isinstance(a, Go) for a in acts)
    # L's unknown kernel never fits as a filler; it runs only after H expires (t = 1 + 5 + 0.5)
    gos = [a for a in core.request("L", "mystery", 1, 0.0) if isinstance(a, Go)]
    assert gos == []
    expiry = max(a.time for a in acts if isinstance(a, SetTimer))
    assert expiry == pytest.approx(6.5)
    assert [a for a in core.timer(6.4) if isinstance(a, Go)] == []
    assert [a.request.kid for a in core.timer(expiry) if isinstance(a, Go)] == ["mystery"]


def test_measuring_task_is_admitted_exclusively():
    core = SchedulerCore()
    assert core.register("M", 5, None, "share") == "measure"  # no profile → measure
    core.register("H", 0, prof("H", {"h": 1.0}))
    assert [a for a in core.request("H", "h", 1, 0.0) if isinstance(a, Go)] == []
    assert [a.request.task for a in core.request("M", "m", 1, 0.1) if isinstance(a, Go)] == ["M"]
    acts, dropped = core.unregister("M", 0.2)
    assert dropped == []
    assert [a.request.task for a in acts if isinstance(a, Go)] == ["H"]


def test_unregister_drops_pending_requests():
    core = SchedulerCore()
    core.register("H", 0, prof("H", {"h": 1.0}, {"h": 0.0}))
    core.register("L", 1, prof("L", {"l": 1.0}))
    core.request("H", "h", 1, 0.0)
    core.request("L", "l", 1, 0.0)
    core.request("L", "l", 2, 0.0)
    _, dropped = core.unregister("L", 0.1)
    assert [r.seq for r in dropped] == [1, 2] or [r.seq for r in dropped] == [2]
    assert core.pending() == 0
    assert core.stats.dropped == len(dropped)


# ---------------------------------------------------------------- properties
_kids = st.sampled_from(["a", "b", "c", "zz"])


@st.composite
def scripts(draw):
    n_tasks = draw(st.integers(1, 4))
    prios = [draw(st.integers(0, 9)) for _ in range(n_tasks)]
    profiles = {
        f"T{i}": prof(
            f"T{i}",
            {"a": draw(st.floats(0, 2)), "b": draw(st.floats(0, 2)), "c": 0.5},
            {"a": draw(st.floats(0, 5)), "b": draw(st.floats(0, 5))},
        )
        for i in range(n_tasks)
    }
    script = [("register", 0.0, f"T{i}", p) for i, p in enumerate(prios)]
    for i in range(n_tasks):
        t = 0.0
        for s in range(draw(st.integers(0, 8))):
            t += draw(st.floats(0, 4))
            script.append(("request", t, f"T{i}", draw(_kids), s + 1))
    return script, profiles


@settings(max_examples=60, deadline=None)
@given(scripts(), st.sampled_from(["recommended", "paper_literal", "no_feedback"]))
def test_every_request_released_once_in_task_order(case, name):
    script, profiles = case
    gos = replay(script, profiles, preset(name))
    requests = [(e[2], e[4]) for e in script if e[0] == "request"]
    assert sorted((g.task, g.seq) for g in gos) == sorted(requests)
    for task in profiles:
        seqs = [g.seq for g in gos if g.task == task]
        assert seqs == sorted(seqs)
    assert replay(script, profiles, preset(name)) == gos  # deterministic
