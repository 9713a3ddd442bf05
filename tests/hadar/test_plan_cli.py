"""``gpuweave plan hadar``: one round on a snapshot equals the simulator's Hadar in that state; bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuweave.cluster.hadar_plan import plan_snapshot
from tests.cli_harness import run_cli

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hadar" / "snapshot.json"
JOBS = [
    {"id": "a", "job_type": "ResNet-50 (batch size 64)", "gpus": 4, "work": 200000.0},
    {"id": "b", "job_type": "LM (batch size 20)", "gpus": 1, "work": 500000.0},
    {"id": "c", "job_type": "Transformer (batch size 64)", "gpus": 2, "work": 400000.0},
    {"id": "d", "job_type": "CycleGAN", "gpus": 1, "work": 30000.0},
    {"id": "e", "job_type": "ResNet-18 (batch size 128)", "gpus": 8, "work": 900000.0},
]


def cli(*args):
    return run_cli("plan", "hadar", *args)


@pytest.mark.parametrize("options", [{}, {"order": "slack-srpt"}, {"solver": "exact"}])
def test_first_round_equals_the_simulators(tmp_path, gavel_profiles, options):
    from gpuweave.cluster.policies import make_policy
    from gpuweave.cluster.simulator import Simulator
    from gpuweave.hardware.catalog import get_gpu
    from gpuweave.hardware.cluster_spec import load_cluster
    from gpuweave.workload.job import Job

    state = tmp_path / "s.json"
    state.write_text(json.dumps({"cluster": "gavel-60", "jobs": JOBS}))
    planned = {r["job"]: r for r in plan_snapshot(state, **options)["jobs"]}
    nodes = load_cluster("gavel-60").expand()
    power = {n.gpu_model: (get_gpu(n.gpu_model).power_idle_w, get_gpu(n.gpu_model).power_max_w) for n in nodes}
    jobs = [Job(j["id"], 0.0, j["gpus"], j["work"], j["job_type"]) for j in JOBS]
    rec = Simulator(nodes, jobs, make_policy("hadar", **options), gavel_profiles, power).run()
    first = {s.job_id: sorted((nodes[h].name, g) for h, g in s.placement) for s in rec.segments if s.start == 0.0}
    assert {
        j: sorted((p["node"], p["gpus"]) for p in r["placement"]) for j, r in planned.items() if r["placement"]
    } == first
    assert all(r["decision"] in ("start", "wait") for r in planned.values())


def test_example_snapshot_plans(tmp_path):
    r = cli(EXAMPLE, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert {j["job"] for j in out["jobs"]} == {"resnet50", "lm", "transformer", "cyclegan", "resnet18"}
    assert {j["decision"] for j in out["jobs"]} <= {"start", "keep", "move", "stop", "wait"}
    for j in out["jobs"]:
        assert sum(p["gpus"] for p in j["placement"]) in (0, j["gpus"])
    r = cli(EXAMPLE)
    assert r.returncode == 0 and "Hadar round at t=3600 s" in r.stdout


@pytest.mark.parametrize(
    "change, message",
    [
        ({"jobs": [{**JOBS[0], "running": [["v100-99", 4]]}]}, "bad placement entry"),
        ({"jobs": [{**JOBS[0], "running": [["v100-0", 2]]}]}, "placement holds 2 GPUs, the job needs 4"),
        (
            {"jobs": [{**JOBS[0], "running": [["v100-0", 4]]}, {**JOBS[1], "running": [["v100-0", 1]]}]},
            "has 4 GPUs, the running jobs hold 5",
        ),
        ({"jobs": [{**JOBS[0], "job_type": "AlexNet"}]}, "unknown job_type"),
        ({"jobs": [{**JOBS[0], "remaining": 3e5}]}, "exceeds work"),
        ({"jobs": [JOBS[0], JOBS[0]]}, "duplicate id"),
        ({"jobs": [{**JOBS[0], "gpus": 0}]}, "expected a whole number of GPUs from 1"),
        ({"jobs": [{**JOBS[0], "arrival": 10}]}, "after now"),
        ({"cluster": "no-such-cluster"}, "no-such-cluster"),
        ({"jobs": []}, "'jobs' must be a non-empty list"),
    ],
)
def test_bad_snapshots_are_one_line_exit_2(tmp_path, change, message):
    state = tmp_path / "s.json"
    state.write_text(json.dumps({"cluster": "gavel-60", "jobs": JOBS, **change}))
    r = cli(state)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_not_json_and_bad_options(tmp_path):
    state = tmp_path / "s.json"
    state.write_text("{nope")
    r = cli(state)
    assert r.returncode == 2 and "not valid JSON" in r.stderr
    state.write_text(json.dumps({"cluster": "gavel-60", "jobs": JOBS}))
    r = cli(state, "--order", "lifo")
    assert r.returncode == 2 and "order must be one of" in r.stderr and len(r.stderr.strip().splitlines()) == 1
