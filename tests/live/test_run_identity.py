"""Issue 39, classes 3 and 10: one folder per job id, a finished run is never resumed over, and a run whose jobs
did not all finish exits 3 with the count in its last line."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuweave.cli import run as cli
from gpuweave.live.journal import end_journalled_workers
from gpuweave.live.names import job_folder_name
from gpuweave.live.results import INCOMPLETE_EXIT_CODE, unfinished_line

RESNET = "ResNet-18 (batch size 128)"
CLASHING = ["x/1", "x_1", "x?1", ".", ".."]  # one folder (or the --out root) for all of them before the fix


def _rows(path: Path) -> list[dict]:
    with open(path) as fh:
        return list(csv.DictReader(fh))


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_folder_names_differ_for_every_id_and_stay_inside_their_folder():
    ids = [*CLASHING, "", "a", "A", "x~1", "-x", ".hidden", "é", "a\0b", "a\nb", "x" * 300, "x" * 300 + "y"]
    ids.append(job_folder_name("x/1"))  # a plain-looking id equal to another id's hashed name
    ids.append(job_folder_name("x" * 300))
    names = [job_folder_name(i) for i in ids]
    assert len(set(names)) == len(ids)
    assert len({n.lower() for n in names}) == len(ids)  # a case-insensitive filesystem keeps them apart too
    for name in names:
        assert name not in ("", ".", "..") and "/" not in name and "\0" not in name and not name.startswith(".")
        assert len(name.encode()) <= 100


@pytest.mark.parametrize("job_id", ["a", "k0", "job-1", "t", "application_1506638472019_10238", "7", "v1.2"])
def test_plain_ids_keep_the_folder_earlier_versions_used(job_id):
    """A run killed under an earlier version resumes from ``checkpoints/<id>`` of ordinary ids."""
    assert job_folder_name(job_id) == job_id


def test_clashing_ids_get_their_own_checkpoints(live_config, tmp_path, capsys):
    rows = [f"{job_id},0,1,{RESNET},{200 + 50 * i}" for i, job_id in enumerate(CLASHING)]
    config = live_config(rows, executor={"time_scale": 1000})
    out = tmp_path / "out"
    code, stdout, stderr = _cli(capsys, "cluster", "run", str(config), "--out", str(out), "-q")
    assert code == 0, stderr
    assert "completed: 5" in stdout
    jobs = {r["job_id"]: r for r in _rows(out / "jobs.csv")}
    assert set(jobs) == set(CLASHING)
    folders = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert folders == sorted(job_folder_name(j) for j in CLASHING) and len(folders) == 5
    assert not (out / "model.ckpt").exists() and not (out / "checkpoints" / "model.ckpt").exists()
    assert not (tmp_path / "model.ckpt").exists()
    live = _rows(out / "live.csv")
    for job_id in CLASHING:  # each job did its own steps from scratch, once: none resumed another's state
        ckpt = json.loads((out / "checkpoints" / job_folder_name(job_id) / "model.ckpt").read_text())
        attempts = [r for r in live if r["job_id"] == job_id]
        assert len(attempts) == 1 and attempts[0]["outcome"] == "done"
        assert ckpt["steps"] == int(attempts[0]["steps"]) > 0
    assert len({json.loads(p.read_text())["steps"] for p in (out / "checkpoints").glob("*/model.ckpt")}) == 5

    # A second run on the finished result: one line naming the folder and the flag, the results untouched.
    before = {name: (out / name).read_bytes() for name in ("jobs.csv", "live.csv", "summary.json", "journal.jsonl")}
    code, stdout, stderr = _cli(capsys, "cluster", "run", str(config), "--out", str(out), "-q")
    assert code == 2 and stderr.count("\n") == 1, stderr
    assert stderr.startswith(f"error: {out}, field 'out': holds a finished run") and "--replace" in stderr
    assert {name: (out / name).read_bytes() for name in before} == before
    # --replace: the old run is deleted and the new one starts from scratch
    code, stdout, stderr = _cli(capsys, "cluster", "run", str(config), "--out", str(out), "-q", "--replace")
    assert code == 0, stderr
    assert len(_rows(out / "live.csv")) == 5 and all(float(r["gpu_seconds"]) > 0 for r in _rows(out / "jobs.csv"))
    records = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]
    assert [r["ev"] for r in records].count("run") == 1 and "resumed" not in [r["ev"] for r in records]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]  # nothing left aside


def test_replace_refuses_a_folder_that_is_not_a_run(live_config, tmp_path, capsys):
    out = tmp_path / "thesis"
    out.mkdir()
    (out / "chapter1.tex").write_text("precious")
    config = live_config([f"a,0,1,{RESNET},200"])
    code, _, stderr = _cli(capsys, "cluster", "run", str(config), "--out", str(out), "-q", "--replace")
    assert code == 2 and stderr.count("\n") == 1 and "not a gpuweave run" in stderr
    assert (out / "chapter1.tex").read_text() == "precious"
    (out / "summary.json").write_text("{}")  # a simulator's result is not run over either
    code, _, stderr = _cli(capsys, "cluster", "run", str(config), "--out", str(out), "-q")
    assert code == 2 and "holds a gpuweave result (summary.json); pass --replace" in stderr
    assert sorted(p.name for p in out.iterdir()) == ["chapter1.tex", "summary.json"]


def test_replace_ends_the_workers_an_unfinished_runs_journal_left_running(tmp_path):
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    journal = tmp_path / "journal.jsonl"
    launch = {"ev": "launch", "job": "a", "attempt": 1, "copies": [{"pids": [worker.pid], "channel": "c"}]}
    ended = {"ev": "launch", "job": "b", "attempt": 1, "copies": [{"pids": [2**22 + 1], "channel": "c"}]}
    lines = [{"ev": "run", "wall0": 0.0}, launch, ended, {"ev": "end", "job": "b", "attempt": 1}]
    journal.write_text("".join(json.dumps(r) + "\n" for r in lines))
    try:
        assert end_journalled_workers(journal) == 1
        with pytest.raises(ProcessLookupError):  # ended (and reaped: it was this process's child)
            os.kill(worker.pid, 0)
    finally:
        worker.kill()
        worker.wait()


def test_a_run_whose_only_job_crashes_every_attempt_exits_3(live_config, tmp_path, capsys):
    rows = [f"bad,0,1,{RESNET},300,synthetic --crash-attempts 9"]
    out = tmp_path / "out"
    config = live_config(rows, executor={"max_retries": 2, "time_scale": 1000})
    code, stdout, stderr = _cli(capsys, "cluster", "run", str(config), "--out", str(out), "-q")
    assert code == INCOMPLETE_EXIT_CODE == 3, stderr
    assert "completed: 0" in stdout
    assert stderr.splitlines()[-1] == (
        f"1 of 1 jobs did not finish (see {out / 'live.csv'} and failed_jobs in {out / 'summary.json'})"
    )
    assert [r["outcome"] for r in _rows(out / "live.csv")] == ["crash"] * 3
    # --json: the summary on stdout still parses, the same line and exit status
    code, stdout, stderr = _cli(capsys, "cluster", "run", str(config), "--out", str(out), "--json", "--replace")
    assert code == 3 and json.loads(stdout)["summary"]["completed"] == 0
    assert stderr.splitlines()[-1].startswith("1 of 1 jobs did not finish")


def test_unfinished_line_counts_jobs():
    assert unfinished_line({"jobs": 5, "completed": 5}, Path("o")) is None
    assert unfinished_line({"jobs": 5, "completed": 2}, Path("o")).startswith("3 of 5 jobs did not finish (see o/")
