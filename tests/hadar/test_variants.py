"""Named Hadar variants beside the paper's: the exact round optimum, backfill, Q orders, emulation variants."""

from __future__ import annotations

import itertools
import json
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuweave.cluster.policies import make_policy
from gpuweave.cluster.policies.hadar import queue_order
from gpuweave.cluster.simulator import Simulator
from gpuweave.errors import InputError
from gpuweave.hadar import emulation
from gpuweave.hadar.dp import HadarDP, hadar_round
from gpuweave.hadar.exact_round import exact_round
from gpuweave.workload.job import Job

from .conftest import POWER, nodes_of
from .test_dp import problem, qjob

one_gpu_instances = st.tuples(
    st.lists(st.tuples(st.integers(0, 2), st.integers(1, 3)), min_size=1, max_size=3),
    st.lists(st.tuples(st.floats(50.0, 40_000.0), st.booleans()), min_size=1, max_size=5),
    st.integers(0, 4),
)


def marginal_optimum(dp: HadarDP) -> float:
    """Brute force of the exact model: every 1-GPU job skips or takes one free GPU's server; a server with n
    new GPUs pays the first n steps of its price curve."""
    p = dp.p
    H = len(p.free)
    best = 0.0
    for choice in itertools.product(range(-1, H), repeat=len(p.jobs)):
        used = [0] * H
        total = 0.0
        for i, h in enumerate(choice):
            if h < 0:
                continue
            rate = dp.consl[i][dp.stypel[h]]
            if rate <= 0:
                break
            used[h] += 1
            total += dp.payoff(i, ((h, 1),), rate)
        else:
            if all(used[h] <= p.free[h] for h in range(H)):
                total -= sum(dp.P[h][dp.capl[h] - p.free[h] + g] for h in range(H) for g in range(used[h]))
                best = max(best, total)
    return best


@settings(max_examples=30, deadline=None)
@given(one_gpu_instances)
def test_exact_round_is_the_optimum_and_beats_the_dp(inst):
    servers, jobs, now = inst
    q = [qjob(i, 1, rem, total=rem * 2, started=started) for i, (rem, started) in enumerate(jobs)]
    p = problem(servers, q, now_slot=now)
    exact = exact_round(p)
    assert not exact.fallback
    assert exact.value == pytest.approx(marginal_optimum(HadarDP(p)), rel=1e-7, abs=1e-7)
    # with 1-GPU jobs the DP's pre-allocation prices add up to the same totals, so the DP cannot do better
    assert exact.value >= HadarDP(p, max_states=10**9).solve().value - 1e-7
    used = np.zeros(len(servers), dtype=int)
    for alloc in exact.plan.values():
        assert sum(k for _, k in alloc) == 1
        for h, k in alloc:
            used[h] += k
    assert np.all(used <= p.capacity)


def test_exact_round_places_gang_jobs_whole():
    q = [qjob("a", 4, 20_000.0), qjob("b", 2, 5_000.0), qjob("c", 1, 800.0)]
    p = problem([(0, 4), (1, 2), (2, 2)], q)
    res = exact_round(p)
    assert res.plan, "something must be placed"
    for key, alloc in res.plan.items():
        assert sum(k for _, k in alloc) == {"a": 4, "b": 2, "c": 1}[key]


def test_backfill_only_adds_jobs_on_free_gpus():
    # One V100 and one K80 server; job 0 wants the V100 but job 1 is worth more there, so the DP skips job 0
    # outright although the K80 is free; backfill gives job 0 the K80.
    q = [qjob(0, 1, 3_000.0, total=3_000.0), qjob(1, 1, 400_000.0, total=400_000.0)]
    p = problem([(0, 1), (2, 1)], q)
    plain = hadar_round(p)
    filled = hadar_round(p, backfill=True)
    assert set(plain.plan) <= set(filled.plan)
    assert all(filled.plan[k] == v for k, v in plain.plan.items())
    assert filled.value >= plain.value
    if len(plain.plan) < 2:
        assert len(filled.plan) == 2


def fake_view(jobs, remaining, running=()):
    states = {j.job_id: SimpleNamespace(job=j, first_start=0.0 if j.job_id in running else None) for j in jobs}

    class Profiles:
        def rate(self, job_type, model, num_gpus, consolidated):
            return {"V100": 2.0, "K80": 1.0}[model]

    return SimpleNamespace(
        running={k: v for k, v in states.items() if k in running},
        pending={k: v for k, v in states.items() if k not in running},
        models=["V100", "K80"],
        profiles=Profiles(),
        nodes=[SimpleNamespace(num_gpus=2), SimpleNamespace(num_gpus=2)],
        remaining=lambda js: remaining[js.job.job_id],
    )


def test_queue_orders():
    jobs = [Job(f"j{i}", 0.0, 1, 1.0, "m") for i in range(5)]
    # best rate 2 (V100): left = remaining / 2 = 200, 20,000, 2, 2,000 and 8,000 s
    remaining = {"j0": 400.0, "j1": 40_000.0, "j2": 4.0, "j3": 4_000.0, "j4": 16_000.0}
    view = fake_view(jobs, remaining, running=("j3",))

    def ids(order):
        return [js.job.job_id for js in queue_order(view, order)]

    assert ids("fifo") == ["j3", "j0", "j1", "j2", "j4"]  # running first, then by (arrival, id)
    assert ids("srpt") == ["j2", "j0", "j3", "j4", "j1"]
    # H = max(20,000, 30,202 / 4 GPUs) = 20,000 s: only j1 has under one round (360 s) of slack; j4 (8,000 s)
    # can wait although it is above the load bound
    assert ids("slack-srpt") == ["j1", "j2", "j0", "j3", "j4"]
    # with one round left of slack, a second job turns critical, least slack first
    remaining["j4"] = 39_400.0  # left 19,700 s: slack 300 s
    assert ids("slack-srpt") == ["j1", "j4", "j2", "j0", "j3"]


@pytest.mark.parametrize(
    "options", [{"order": "srpt"}, {"order": "slack-srpt"}, {"solver": "exact"}, {"backfill": True}]
)
def test_variants_run_a_small_trace_to_completion(gavel_profiles, options):
    nodes = nodes_of([("V100", 2), ("P100", 2), ("K80", 2)])
    jt = "ResNet-18 (batch size 32)"
    jobs = [Job(f"j{i}", 0.0, 1 + (i % 2), 20_000.0 * (1 + i % 3), jt) for i in range(8)]
    rec = Simulator(nodes, jobs, make_policy("hadar", **options), gavel_profiles, POWER).run()
    assert all(js.end is not None for js in rec.jobs)


def test_unknown_policy_options_are_refused(tmp_path):
    import subprocess
    import sys

    with pytest.raises(InputError, match="order"):
        make_policy("hadar", order="lifo")
    with pytest.raises(InputError, match="solver"):
        make_policy("hadar", solver="magic")
    cfg = tmp_path / "run.yaml"
    cfg.write_text("policy: hadar\npolicy_options: {order: lifo}\njobs: 5\n")
    r = subprocess.run(
        [sys.executable, "-m", "gpuweave.cli", "simulate", str(cfg), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2, r.stderr
    assert "order must be one of" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------- emulation variants
def emulated_round(variant, rem):
    """One HadarE assignment on the lab cluster with exact estimates: node -> job."""
    data = emulation.load_physical()
    mix = ["IC", "LT"]
    nodes, est, _true, steps = emulation.rate_tables(data, "lab", mix, 0, "tflops_over_sqrt_vram")
    Xhat = np.array([est[m] for m in mix])
    total = np.array([steps[m] for m in mix], dtype=float)
    inputs = emulation.RoundInputs(
        [0, 1],
        len(nodes),
        Xhat,
        np.array(rem, dtype=float),
        total,
        360.0,
        0,
        [-1] * len(nodes),
        data["overheads"],
        2,
        variant=variant,
    )
    return emulation.SCHEDULERS["hadare"].assign(inputs), Xhat


def test_beta_variant_keeps_only_the_fastest_nodes_a_remainder_needs():
    usable = 360.0 - 17.0
    _, Xhat = emulated_round("spec", [1.0, 1.0])
    fastest_ic = int(np.argmax(Xhat[0]))
    small = 0.5 * Xhat[0, fastest_ic] * usable  # fits on IC's fastest node alone
    spec, _ = emulated_round("spec", [small, 1e9])
    beta, _ = emulated_round("beta", [small, 1e9])
    assert [i for i, j in beta.items() if j == 0] == [fastest_ic]
    assert sum(1 for j in spec.values() if j == 0) >= sum(1 for j in beta.values() if j == 0)
    # the freed nodes go to the job that still needs them (where its payoff there is positive)
    assert sum(1 for j in beta.values() if j == 1) >= sum(1 for j in spec.values() if j == 1)
    assert sum(1 for j in beta.values() if j == 1) > 0


def test_emulation_variant_names_are_checked():
    with pytest.raises(InputError, match="variant"):
        emulation.emulate("hadare", "aws", "M-1", variant="gamma")
    with pytest.raises(InputError, match="Hadar variant"):
        emulation.emulate("hadar", "aws", "M-1", hadar_variant="lazy")
    with pytest.raises(InputError, match="utility"):
        emulation.emulate("hadar", "aws", "M-1", utility="joy")


def test_sticky_hadar_never_moves_a_running_job():
    r = emulation.emulate("hadar", "aws", "M-5", 360.0, seed=0, hadar_variant="sticky")
    where = {}
    for assign in r.assignments:
        for node, job in assign.items():
            assert where.setdefault(job, node) == node


def test_fluid_makespan_and_forking_bound():
    rates = np.array([[2.0, 1.0]])
    work = np.array([300.0])
    assert emulation.fluid_makespan(rates, work, forked=True) == pytest.approx(100.0)  # both nodes: 3 steps/s
    assert emulation.fluid_makespan(rates, work, forked=False) == pytest.approx(150.0)  # one node at a time
    same = np.array([[1.0, 1.0], [1.0, 1.0]])
    assert emulation.fluid_makespan(same, np.array([100.0, 100.0]), forked=False) == pytest.approx(100.0)
    assert emulation.fluid_makespan(same, np.array([100.0, 100.0]), forked=True) == pytest.approx(100.0)
    # one job on the emulated clusters: the bound is the aggregate rate over the best node's
    data = emulation.load_physical()
    _n, _e, true, _s = emulation.rate_tables(data, "aws", ["MM"], 0, "tflops_over_sqrt_vram")
    assert emulation.forking_speedup_bound("aws", "M-1") == pytest.approx(true["MM"].sum() / true["MM"].max())
    assert 1.0 - 1e-9 <= emulation.forking_speedup_bound("lab", "M-12") < 1.05


def test_queue_orders_use_spread_rates_for_jobs_wider_than_any_server():
    class Profiles:
        def rate(self, job_type, model, num_gpus, consolidated):
            if num_gpus > 2 and consolidated:
                return 0.0  # does not fit one 2-GPU server
            return {"V100": 2.0, "K80": 1.0}[model]

    jobs = [Job("wide", 0.0, 4, 1.0, "m"), Job("narrow", 0.0, 1, 1.0, "m")]
    view = fake_view(jobs, {"wide": 4_000.0, "narrow": 40.0})
    view.profiles = Profiles()
    # wide: 2,000 s at the spread rate (not infinite), so it is the critical job and srpt puts it last
    assert [js.job.job_id for js in queue_order(view, "srpt")] == ["narrow", "wide"]
    assert [js.job.job_id for js in queue_order(view, "slack-srpt")] == ["wide", "narrow"]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"backfill": "no"}, "backfill must be true or false"),
        ({"max_states": 0}, "max_states must be >= 1"),
        ({"kappa": -1.0}, "kappa >= 0"),
    ],
)
def test_option_values_are_checked(options, message):
    with pytest.raises(InputError, match=message):
        make_policy("hadar", **options)


def test_policies_command_lists_options():
    import json
    import os
    import subprocess
    import sys

    from gpuweave.cli.listing import options_text
    from gpuweave.cluster.policies import POLICIES

    text = options_text(POLICIES.get("hadar").options)
    assert "order='fifo'" in text and "solver='dp'" in text and "backfill=False" in text
    r = subprocess.run(
        [sys.executable, "-m", "gpuweave.cli", "policies"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert r.returncode == 0 and "order='fifo'" in r.stdout
    r = subprocess.run([sys.executable, "-m", "gpuweave.cli", "policies", "--json"], capture_output=True, text=True)
    listing = {e["name"]: e for e in json.loads(r.stdout)}
    assert listing["hadar"]["trigger"] == "round 360 s" and listing["fifo"]["trigger"] == "event-driven"
    assert {"name": "order", "type": "str", "default": "fifo", "help": ""} in listing["hadar"]["options"]


def test_bench_round_cli():
    import subprocess
    import sys

    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuweave.cli",
            "bench",
            "round",
            "--jobs",
            "32",
            "--reps",
            "2",
            "--option",
            "order=slack-srpt",
            "--option",
            "backfill=true",
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (
        out["jobs"] == 32 and out["gpus"] == 36 and out["reps"] == 2 and out["min_s"] <= out["seconds"] <= out["max_s"]
    )
    assert out["options"] == {"order": "slack-srpt", "backfill": True} and out["started"] > 0
    r = subprocess.run(
        [sys.executable, "-m", "gpuweave.cli", "bench", "round", "--option", "nokey"], capture_output=True, text=True
    )
    assert r.returncode == 2 and "key=value" in r.stderr and len(r.stderr.strip().splitlines()) == 1
