"""The real path: the bundled CPU-bound example run as packs on 2 processors with CPU affinity."""

from __future__ import annotations

import json
import sys
from importlib import resources

import pytest

from gpuweave.cli import main
from gpuweave.packs import evaluate, load_profile_csv, solve
from gpuweave.packs.plan_io import Plan, PlannedPack, PlannedTask, plan_to_dict, read_plan
from gpuweave.packs.runner import available_cpus, cpu_blocks, run_plan

pytestmark = pytest.mark.skipif(len(available_cpus()) < 2, reason="needs 2 CPUs")


def burn_plan(tmp_path, k: int = 2):
    prof = load_profile_csv(resources.files("gpuweave.packs.examples").joinpath("burn_profile.csv"))
    sched = solve("exact", prof, k)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan_to_dict(prof, sched, k, evaluate(prof, sched))))
    return path, sched


def test_cpu_blocks_are_disjoint_inside_a_pack():
    plan = Plan(4, (PlannedPack(2.0, (PlannedTask("a", 1, 2.0, "x"), PlannedTask("b", 3, 1.0, "x"))),))
    assert cpu_blocks(plan, 1, cpus=[0, 1, 2, 3]) == [[[0], [1, 2, 3]]]
    assert cpu_blocks(plan, 2, cpus=list(range(8))) == [[[0, 1], [2, 3, 4, 5, 6, 7]]]


def test_example_program_runs_as_packs_pinned_to_disjoint_cpus(tmp_path):
    path, sched = burn_plan(tmp_path)
    plan = read_plan(path)
    assert plan.procs == 2 and len(plan.packs) == len(sched.packs)
    rep = run_plan(plan, timeout=60)
    assert rep.ok and len(rep.packs) == len(plan.packs)
    cpus = available_cpus()[:2]
    for pk, planned in zip(rep.packs, plan.packs):
        assert [t.task for t in pk.tasks] == [t.name for t in planned.tasks]
        sets = [set(t.cpus) for t in pk.tasks]
        assert sum(len(s) for s in sets) == len(set().union(*sets)) <= 2  # disjoint
        for tr in pk.tasks:
            assert tr.returncode == 0
            seen = json.loads(tr.output.strip().splitlines()[-1])
            assert seen["cpus"] == tr.cpus and set(tr.cpus) <= set(cpus)  # the program ran where it was pinned
            assert seen["procs"] == tr.procs
            assert pk.start <= tr.start and tr.end <= pk.end
            assert tr.planned > 0 and tr.measured > 0
    for a, b in zip(rep.packs, rep.packs[1:]):
        assert b.start >= a.end  # the next pack starts after the last task of the previous one
    assert rep.planned_cost == pytest.approx(sched.cost)


def test_run_packs_cli_writes_report(tmp_path, monkeypatch, capsys):
    burn = "{python} -m gpuweave.packs.examples.burn --work 0.5 --procs {procs}"
    plan = {
        "procs": 2,
        "packs": [
            {"tasks": [{"task": "wide", "procs": 2, "time": 0.2, "command": burn}]},
            {
                "tasks": [
                    {"task": "left", "procs": 1, "time": 0.2, "command": burn},
                    {"task": "right", "procs": 1, "time": 0.2, "command": burn},
                ]
            },
        ],
    }
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    report = tmp_path / "report.json"
    monkeypatch.setattr(sys, "argv", ["gpuweave", "run", "packs", str(path), "--report", str(report)])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code in (0, None)
    out = capsys.readouterr().out
    assert "planned cost" in out and "measured" in out
    data = json.loads(report.read_text())
    two = available_cpus()[:2]
    assert data["ok"] and len(data["packs"]) == 2
    assert data["packs"][0]["tasks"][0]["cpus"] == two  # one task on both processors
    assert [t["cpus"] for t in data["packs"][1]["tasks"]] == [[two[0]], [two[1]]]
    assert all(
        json.loads(t["output"].splitlines()[-1])["cpus"] == t["cpus"] for pk in data["packs"] for t in pk["tasks"]
    )


def test_failing_task_stops_the_run(tmp_path, monkeypatch, capsys):
    plan = {
        "procs": 2,
        "packs": [
            {
                "tasks": [
                    {"task": "bad", "procs": 1, "time": 0.1, "command": "{python} -c 'import sys; sys.exit(3)'"},
                    {"task": "good", "procs": 1, "time": 0.1, "command": "{python} -c 'pass'"},
                ]
            },
            {"tasks": [{"task": "never", "procs": 2, "time": 0.1, "command": "{python} -c 'pass'"}]},
        ],
    }
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    rep = run_plan(read_plan(path))
    assert not rep.ok and len(rep.packs) == 1
    assert [t.returncode for t in rep.packs[0].tasks] == [3, 0]
    monkeypatch.setattr(sys, "argv", ["gpuweave", "run", "packs", str(path)])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 1
    assert "task(s) failed: bad" in capsys.readouterr().err
