"""`gpuweave plan andreas STATE.json`, its bad-input lines (exit 2), and `gpuweave repro andreas` (quick)."""

from __future__ import annotations

import copy
import csv
import json

import pytest

from tests.cli_harness import run_cli

STATE = {
    "now": 1200,
    "period": 300,
    "nodes": [
        {"name": "armida-05", "gpu": "TESLA", "gpus": 1},
        {"name": "armida-06", "gpu": "TESLA", "gpus": 2},
        {"name": "armida-07", "gpu": "TURING", "gpus": 1},
    ],
    "jobs": [
        {
            "id": "J6",
            "application": "efficientNet",
            "epochs": 80,
            "remaining_epochs": 80 - 1200 / 41.2372,
            "submission": 0,
            "due": 3600,
            "due_relative": True,
            "weight": 4,
            "running": {"node": "armida-06", "gpus": 2},
        },
        {
            "id": "J9",
            "application": "convolutionNet",
            "epochs": 160,
            "submission": 1200,
            "due": 2600,
            "due_relative": True,
            "weight": 2,
        },
    ],
}


def gpuweave(*args):
    return run_cli(*args, timeout=120)


def write(tmp_path, data, name="state.json"):
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return p


def test_plan_prints_the_ac4_plan(tmp_path):
    r = gpuweave("plan", "andreas", write(tmp_path, STATE), "--json", "--exact")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    plan = {j["job"]: (j["node"], j["gpus"]) for j in out["jobs"]}
    assert plan == {"J6": ("armida-06", 2), "J9": ("armida-05", 1)}
    assert out["f_obj"] == pytest.approx(0.163753, abs=1e-6) and out["f_greedy"] == pytest.approx(965.6133, abs=1e-3)
    assert out["f_opt"] <= out["f_obj"] and out["gap"] >= 0
    r = gpuweave("plan", "andreas", write(tmp_path, STATE), "--method", "edf")
    assert r.returncode == 0 and "armida-06 × 2" in r.stdout and "f_OBJ" in r.stdout


def _bad(mutate):
    data = copy.deepcopy(STATE)
    mutate(data)
    return data


BAD = {
    "zero GPUs": (
        _bad(lambda d: d["nodes"][0].update(gpus=0)),
        "node armida-05: expected a whole number of GPUs from 1",
    ),
    "unknown GPU type": (_bad(lambda d: d["nodes"][2].update(gpu="VOODOO")), "unknown GPU type 'VOODOO'"),
    "negative epochs": (
        _bad(lambda d: d["jobs"][1].update(epochs=-5)),
        "expected a number of epochs from 0 to 1e+09, got -5",
    ),
    "due before submission": (
        _bad(lambda d: d["jobs"][1].update(due_relative=False, due=1000)),
        "before its submission",
    ),
    "missing profile": (_bad(lambda d: d["nodes"][2].update(gpu="A100")), "no energy cost for GPU type"),
    "unknown application": (_bad(lambda d: d["jobs"][0].update(application="bert")), "unknown application"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_one_line_exit_2(tmp_path, case):
    data, message = BAD[case]
    r = gpuweave("plan", "andreas", write(tmp_path, data))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in r.stderr


def test_profiles_missing_a_configuration_a_node_offers(tmp_path):
    prof = tmp_path / "prof.csv"
    prof.write_text(
        "application,gpu_type,num_gpus,time_per_epoch_s\nconvolutionNet,TESLA,1,20.5\nconvolutionNet,TESLA,2,17.8\n"
    )
    data = _bad(lambda d: d.update(profiles=str(prof), jobs=[d["jobs"][1]]))
    r = gpuweave("plan", "andreas", write(tmp_path, data))
    assert r.returncode == 2 and "no per-epoch time of convolutionNet on T4x1, which node armida-07 offers" in r.stderr
    r = gpuweave("plan", "andreas", tmp_path / "absent.json")
    assert r.returncode == 2 and "not found" in r.stderr


def test_repro_quick_writes_comparison(tmp_path):
    out = tmp_path / "rep"
    r = gpuweave("repro", "andreas", "--out", out, "--armida-seeds", 3)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = list(csv.DictReader(open(out / "comparison.csv")))
    assert list(rows[0]) == ["experiment", "metric", "paper", "ours", "unit", "note"]
    pred = next(r for r in rows if r["metric"] == "predicted energy cost, RG mean")
    assert float(pred["paper"]) == 1.08438 and 1.03 <= float(pred["ours"]) <= 1.139
    for f in ("fig_scenario1.png", "fig_scenario2.png", "armida_trace.png", "runs.csv", "armida_calls.csv"):
        assert (out / f).stat().st_size > 0
    r = gpuweave("repro", "andreas", "--out", tmp_path / "x", "--n-max", 5)
    assert r.returncode == 2 and "--n-max" in r.stderr


def test_demo_section_charges_energy_and_tardiness_to_every_policy(tmp_path):
    from gpuweave.demo.andreas import POLICIES, andreas_section
    from gpuweave.demo.sections import DemoContext, demo_sections

    sec = andreas_section(DemoContext(out_dir=tmp_path, quick=True))
    assert [r["policy"] for r in sec.table] == list(POLICIES)
    assert all(r["energy €"] > 0 and r["tardiness €"] >= 0 for r in sec.table)
    assert "andreas" in dict(demo_sections())
    assert (tmp_path / "andreas_cross_paper.csv").exists()
