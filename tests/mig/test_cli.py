"""`gpuweave plan mig`, `gpuweave mig validate`, `gpuweave run mig`: output and exit code 2 on bad input."""

from __future__ import annotations

import json
import sys

import pytest

from gpuweave import cli as gcli

RODINIA_ROWS = """task,1,2,3,4,7
Backprop,0.4384427,0.60725756,0.60983426,0.6088194,0.60865112
BFS,0.2940401,0.2016588,0.0720898,0.09920386,0.0510713
CFD,7.11968572,2.4335218,2.07121992,1.1895961,1.23817106
Gaussian,20.662602,14.3977281,6.9274661,8.84804494,8.59736374
"""


def run(monkeypatch, capsys, *args):
    monkeypatch.setattr(sys, "argv", ["gpuweave", *map(str, args)])
    with pytest.raises(SystemExit) as exc:
        gcli.main()
    out = capsys.readouterr()
    return exc.value.code or 0, out.out, out.err


@pytest.fixture
def tasks_csv(tmp_path):
    path = tmp_path / "tasks.csv"
    path.write_text(RODINIA_ROWS)
    return path


def test_plan_far_json_gantt_and_validate(monkeypatch, capsys, tmp_path, tasks_csv):
    out_json, png = tmp_path / "s.json", tmp_path / "g.png"
    code, out, err = run(
        monkeypatch, capsys, "plan", "mig", tasks_csv, "--gpu", "A100", "--json", out_json, "--gantt", png
    )
    assert code == 0, err
    assert "makespan" in out and "lower bound" in out and "ratio" in out and "Gaussian" in out
    data = json.loads(out_json.read_text())
    assert data["gpu"] == "A100" and len(data["tasks"]) == 4 and data["operations"][0]["op"] == "create"
    assert png.stat().st_size > 1000
    code, out, _ = run(monkeypatch, capsys, "mig", "validate", out_json, "--tasks", tasks_csv)
    assert code == 0 and out.startswith("valid: 4 tasks")
    # break a rule: overlap two tasks on one slice
    data["tasks"][1].update(
        size=data["tasks"][0]["size"], start_slice=data["tasks"][0]["start_slice"], start=data["tasks"][0]["start"]
    )
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    code, out, err = run(monkeypatch, capsys, "mig", "validate", bad)
    assert code == 2 and err.count("\n") == 1 and "rule '" in err and "tasks:" in err


@pytest.mark.parametrize("algo", ["miso-opt", "fixpart-best", "fixpart:1-1-1-1-1-1-1", "fixpart:7", "fixpart:4-2-1"])
def test_plan_baselines(monkeypatch, capsys, tasks_csv, algo):
    code, out, err = run(monkeypatch, capsys, "plan", "mig", tasks_csv, "--algo", algo)
    assert code == 0, err
    assert "makespan" in out


def test_plan_exact_and_multi_gpu(monkeypatch, capsys, tasks_csv):
    code, out, err = run(monkeypatch, capsys, "plan", "mig", tasks_csv, "--algo", "exact")
    assert code == 0, err
    assert "exact: optimal=" in out
    code, out, err = run(monkeypatch, capsys, "plan", "mig", tasks_csv, "--gpus", "2")
    assert code == 0, err


def test_plan_batches_dir(monkeypatch, capsys, tmp_path):
    d = tmp_path / "batches"
    d.mkdir()
    (d / "01.csv").write_text(RODINIA_ROWS)
    (d / "02.csv").write_text(RODINIA_ROWS)
    out_json = tmp_path / "chain.json"
    code, out, err = run(monkeypatch, capsys, "plan", "mig", "--batches", d, "--json", out_json)
    assert code == 0, err
    assert "paper model" in out
    code, out, _ = run(monkeypatch, capsys, "mig", "validate", out_json)
    assert code == 0


@pytest.mark.parametrize(
    "content,args,needle",
    [
        ("task,1,2,3,4\nA,1,1,1,1\n", (), "missing size column(s) 7"),
        ("task,1,2,3,4,7\nA,1,0,1,1,1\n", (), "must be > 0"),
        ("task,1,2,3,4,7\nA,1,-2,1,1,1\n", (), "must be > 0"),
        ("task,1,2,3,4,7\nA,1,2,1,1,1\n", ("--gpu", "V100"), "has no MIG"),
        ("task,1,2,3,4,7\nA,1,2,1,1,1\n", ("--gpu", "Z9000"), "unknown GPU model"),
        ("task,1,2,3,4\nA,1,2,1,1\n", ("--gpu", "A30"), "A30 has no instance of size 3"),
        ("task,1,2,3,4,7\nA,1,2,1,1,1\n", ("--algo", "magic"), "unknown MIG algorithm"),
        ("task,1,2,3,4,7\nA,1,2,1,1,1\n", ("--algo", "fixpart:5-2"), "no MIG partition"),
        ("task,1,2,3,4,7\nA,1,x,1,1,1\n", (), "is not a number"),
    ],
)
def test_bad_input_one_line_exit_2(monkeypatch, capsys, tmp_path, content, args, needle):
    path = tmp_path / "t.csv"
    path.write_text(content)
    code, out, err = run(monkeypatch, capsys, "plan", "mig", path, *args)
    assert code == 2
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_validate_bad_json_and_unknown_gpu(monkeypatch, capsys, tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{not json")
    code, _, err = run(monkeypatch, capsys, "mig", "validate", p)
    assert code == 2 and "not valid JSON" in err
    p.write_text(json.dumps({"gpu": "K80", "gpus": 1, "makespan": 1.0, "tasks": []}))
    code, _, err = run(monkeypatch, capsys, "mig", "validate", p)
    assert code == 2 and "rule 'gpu'" in err


def test_run_mig_refuses_without_pynvml(monkeypatch, capsys, tmp_path, tasks_csv):
    out_json = tmp_path / "s.json"
    assert run(monkeypatch, capsys, "plan", "mig", tasks_csv, "--json", out_json)[0] == 0
    monkeypatch.setitem(sys.modules, "pynvml", None)
    code, _, err = run(monkeypatch, capsys, "run", "mig", out_json, "--gpu-index", "0")
    assert code == 2 and "nvidia-ml-py is not installed" in err


def test_algos_and_generate(monkeypatch, capsys, tmp_path):
    code, out, _ = run(monkeypatch, capsys, "mig", "algos")
    assert code == 0 and all(a in out for a in ("far", "miso-opt", "fixpart-best", "fixpart:PARTITION", "exact"))
    path = tmp_path / "gen.csv"
    code, out, _ = run(
        monkeypatch, capsys, "mig", "generate", path, "--n", "12", "--scaling", "good", "--times", "narrow"
    )
    assert code == 0 and len(path.read_text().splitlines()) == 13
    assert run(monkeypatch, capsys, "plan", "mig", path)[0] == 0
