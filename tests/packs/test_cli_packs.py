"""`gpuweave plan packs` and `gpuweave run packs` as a user types them; every bad input of the issue exits 2."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources

import pytest

from gpuweave.cli import main

HAND_CSV = "task,1,2,3,4\nT1,12,6,4,3\nT2,8,5,4,4\nT3,3,2,2,2\n"


def gw(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["gpuweave", *args])
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def hand_csv(tmp_path):
    path = tmp_path / "hand.csv"
    path.write_text(HAND_CSV)
    return path


def test_plan_exact_prints_packs_and_writes_json_and_chart(monkeypatch, capsys, hand_csv, tmp_path):
    js, png = tmp_path / "plan.json", tmp_path / "g.png"
    code, out, err = gw(
        monkeypatch,
        capsys,
        "plan",
        "packs",
        str(hand_csv),
        "--procs",
        "4",
        "--k",
        "2",
        "--algo",
        "exact",
        "--json",
        str(js),
        "--gantt",
        str(png),
    )
    assert code == 0, err
    assert "proven optimum" in out and "relative cost 0.7778" in out and "packing ratio 0.9643" in out
    data = json.loads(js.read_text())
    assert (data["procs"], data["k"], data["algo"], data["cost"]) == (4, 2, "exact", 7.0)
    assert [[(t["task"], t["procs"], t["time"]) for t in pk["tasks"]] for pk in data["packs"]] == [
        [("T1", 4, 3.0)],
        [("T2", 3, 4.0), ("T3", 1, 3.0)],
    ]
    assert [pk["start"] for pk in data["packs"]] == [0.0, 3.0] and [pk["cost"] for pk in data["packs"]] == [3.0, 4.0]
    assert set(data["metrics"]) == {"relative_cost", "packing_ratio", "relative_response_time", "runtime_ms"}
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("algo", ["pack-approx", "pack-by-pack-9", "random-proc-9", "matching", "exact-ilp"])
def test_plan_other_algorithms(monkeypatch, capsys, hand_csv, algo):
    code, out, err = gw(monkeypatch, capsys, "plan", "packs", str(hand_csv), "--k", "2", "--algo", algo)
    assert code == 0, err
    assert "relative response time" in out


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize(
    "csv_text, extra, message",
    [
        ("task,1,2,4\nT1,3,2,1\n", ["--procs", "4"], "missing processor column(s) 3"),
        ("task,1,2\nT1,3,abc\n", [], "time 'abc' is not a number"),
        ("task,1,2\nT1,3,0\n", [], "positive"),
        ("task,1,2\nT1,-3,2\n", [], "positive"),
        ("task,1,2\nT1,3,2\n", ["--k", "0"], "--k must be at least 1"),
        ("task,1,2\nT1,3,2\n", ["--k", "3"], "--k 3 is larger than the 2 processors"),
        ("task,1,2\nT1,3,2\n", ["--procs", "5"], "--procs 5 is larger than the profile supports"),
        ("task,1,2\nT1,3,2\n", ["--algo", "nope"], "unknown packs algorithm 'nope'"),
        ("task,1,2\nT1,3,2\n", ["--algo", "matching", "--k", "1"], "only k = 2"),
    ],
)
def test_bad_input_is_one_line_exit_2(monkeypatch, capsys, tmp_path, csv_text, extra, message):
    path = tmp_path / "p.csv"
    path.write_text(csv_text)
    code, out, err = gw(monkeypatch, capsys, "plan", "packs", str(path), *extra)
    assert code == 2
    assert message in one_error_line(err)


def test_missing_profile_file(monkeypatch, capsys, tmp_path):
    code, _, err = gw(monkeypatch, capsys, "plan", "packs", str(tmp_path / "none.csv"))
    assert code == 2 and "profile file not found" in one_error_line(err)


def test_exact_too_large_is_refused(monkeypatch, capsys, tmp_path):
    from gpuweave.packs.workloads import syn_ref, write_profile_csv

    path = tmp_path / "w2.csv"
    write_profile_csv(syn_ref(20, 4, 0), path)
    code, _, err = gw(monkeypatch, capsys, "plan", "packs", str(path), "--algo", "exact")
    assert code == 2 and "at most 14 tasks" in one_error_line(err)


def test_monotonicity_repair_warns_and_plans(monkeypatch, capsys, tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("task,1,2,3\nok,6,3.5,2.5\nbumpy,6,3,4\n")
    code, out, err = gw(monkeypatch, capsys, "plan", "packs", str(path), "--k", "2")
    assert code == 0
    assert "warning:" in err and "bumpy" in err and "ok," not in err
    assert "relative cost" in out


def test_run_rejects_bad_schedule_json(monkeypatch, capsys, tmp_path):
    bad = tmp_path / "s.json"
    bad.write_text(json.dumps({"procs": 2, "packs": [{"tasks": [{"task": "a", "procs": 3, "time": 1.0}]}]}))
    code, _, err = gw(monkeypatch, capsys, "run", "packs", str(bad), "--command", "true")
    assert code == 2 and "pack uses 3 processors" in one_error_line(err)
    bad.write_text("{not json")
    code, _, err = gw(monkeypatch, capsys, "run", "packs", str(bad))
    assert code == 2 and "not valid JSON" in one_error_line(err)
    bad.write_text(json.dumps({"procs": 64, "packs": [{"tasks": [{"task": "a", "procs": 64, "time": 1.0}]}]}))
    code, _, err = gw(monkeypatch, capsys, "run", "packs", str(bad), "--command", "true")
    assert code == 2 and "64 CPUs" in one_error_line(err)
    bad.write_text(json.dumps({"procs": 1, "packs": [{"tasks": [{"task": "a", "procs": 1, "time": 1.0}]}]}))
    code, _, err = gw(monkeypatch, capsys, "run", "packs", str(bad))
    assert code == 2 and "has no command" in one_error_line(err)


def test_plan_through_the_installed_entry_point(tmp_path):
    """The command a user types, in a fresh interpreter."""
    path = tmp_path / "p.csv"
    path.write_text("task,1,2\nT1,3,x\n")
    res = subprocess.run(
        [sys.executable, "-m", "gpuweave.cli", "plan", "packs", str(path)], capture_output=True, text=True
    )
    assert res.returncode == 2 and "row 1, field '2'" in one_error_line(res.stderr)
    prof = resources.files("gpuweave.packs.examples").joinpath("burn_profile.csv")
    res = subprocess.run(
        [sys.executable, "-m", "gpuweave.cli", "plan", "packs", str(prof), "--k", "2"], capture_output=True, text=True
    )
    assert res.returncode == 0 and "pack-by-pack-9" in res.stdout
