"""Live runs on the local executor with synthetic workers: results, preemption/moves, faults, bad input."""

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuweave.errors import InputError
from gpuweave.live.launch import run_live
from gpuweave.live.results import compare_jct

RESNET = "ResNet-18 (batch size 128)"
SMALL = [
    f"a,0,1,{RESNET},400",
    f"b,0,2,{RESNET},600",
    "c,50,1,A3C,300",
    f"d,100,1,{RESNET},300",
    f"e,150,2,{RESNET},400",
    "f,200,1,A3C,200",
]


def _rows(path: Path) -> list[dict]:
    with open(path) as fh:
        return list(csv.DictReader(fh))


def test_fifo_run_writes_simulator_results_and_live_csv(live_config, tmp_path):
    out = tmp_path / "out"
    summary = run_live(live_config(SMALL, executor={"time_scale": 1000}), "local", None, out)
    assert summary["completed"] == 6
    for name in ("jobs.csv", "allocations.csv", "timeseries.csv", "summary.json", "live.csv"):
        assert (out / name).is_file()
    meta = json.loads((out / "summary.json").read_text())
    assert meta["live"] is True and meta["executor"] == "local" and meta["emulated_gpus"] is True
    live = _rows(out / "live.csv")
    assert {r["job_id"] for r in live} == set("abcdef")
    assert all(float(r["launch_latency_wall_s"]) < 5 for r in live)
    jobs = _rows(out / "jobs.csv")
    assert all(float(r["jct"]) > 0 for r in jobs)
    ratios = compare_jct(out, out)
    assert all(ratio == 1.0 for _, _, _, ratio in ratios)


def test_round_policy_preempts_and_resumes_from_checkpoints(live_config, tmp_path):
    out = tmp_path / "out"
    summary = run_live(live_config(SMALL, policy="tiresias", round_length=60), "local", None, out)
    assert summary["completed"] == 6
    live = _rows(out / "live.csv")
    # The first round tick falls at the first arrival (t=0), as in the simulator, not a round later: the
    # runtime's first poll comes after the arrival, and ceil(now / L) once put the tick at L.
    firsts = [float(r["planned_start"]) for r in live if r["job_id"] in ("a", "b") and r["attempt"] == "1"]
    assert firsts and min(firsts) < 60
    resumed = [r for r in live if r["kind"] in ("resume", "move")]
    for r in resumed:  # a resumed attempt never redoes the whole job
        first = next(x for x in live if x["job_id"] == r["job_id"] and x["attempt"] == "1")
        assert int(r["steps"]) < int(first["steps"]) + int(r["steps"])


def test_user_script_example_runs(live_config, tmp_path):
    script = Path(__file__).resolve().parents[2] / "examples" / "live" / "my_training.py"
    out = tmp_path / "out"
    config = live_config(SMALL[:2], executor={"program": str(script)})
    assert run_live(config, "local", None, out)["completed"] == 2
    state = json.loads((out / "checkpoints" / "a" / "model.ckpt").read_text())
    assert state["steps"] > 0


def test_crash_is_retried_from_checkpoint_then_fails_with_reason(live_config, tmp_path):
    rows = [f"ok,0,1,{RESNET},300,synthetic --crash-attempts 1", f"bad,0,1,{RESNET},300,synthetic --crash-attempts 9"]
    out = tmp_path / "out"
    summary = run_live(live_config(rows, executor={"max_retries": 2}), "local", None, out)
    assert summary["completed"] == 1
    meta = json.loads((out / "summary.json").read_text())
    assert "exited with status 3" in meta["failed_jobs"]["bad"]
    live = _rows(out / "live.csv")
    assert [r["kind"] for r in live if r["job_id"] == "ok"] == ["start", "retry"]
    assert len([r for r in live if r["job_id"] == "bad"]) == 3


def test_silent_program_fails_and_the_run_goes_on(live_config, tmp_path):
    rows = [f"quiet,0,1,{RESNET},300,synthetic --silent", f"fine,0,1,{RESNET},300"]
    out = tmp_path / "out"
    config = live_config(rows, executor={"max_retries": 0, "report_timeout": 1.5})
    assert run_live(config, "local", None, out)["completed"] == 1
    assert "no report" in json.loads((out / "summary.json").read_text())["failed_jobs"]["quiet"]


@pytest.mark.parametrize("program, message", [("missing.py", "does not exist"), ("run.yaml", "not executable")])
def test_bad_program_is_an_input_error_before_anything_starts(live_config, tmp_path, program, message):
    config = live_config(SMALL, executor={"program": program})
    with pytest.raises(InputError, match=message):
        run_live(config, "local", None, tmp_path / "out")
    assert not (tmp_path / "out" / "journal.jsonl").exists()


def test_cli_bad_input_is_one_line_exit_2(live_config, tmp_path):
    config = live_config(SMALL, executor={"program": "nope"})
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    proc = subprocess.run(
        [sys.executable, "-m", "gpuweave.cli", "cluster", "run", str(config), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "does not exist" in proc.stderr


def test_runtime_killed_with_sigkill_resumes_from_its_journal(live_config, tmp_path):
    rows = [f"k{i},{i * 40},1,{RESNET},{500 + 100 * i}" for i in range(6)]
    config = live_config(rows, executor={"time_scale": 600, "checkpoint_every": 0.3})
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    argv = [sys.executable, "-m", "gpuweave.cli", "cluster", "run", str(config), "--out", str(out)]
    first = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline and '"ev": "end"' not in _text(out / "journal.jsonl"):
        time.sleep(0.1)
    time.sleep(0.5)
    first.send_signal(signal.SIGKILL)
    first.wait()
    before = [json.loads(line) for line in _text(out / "journal.jsonl").splitlines()]
    committed_before = {r["job"]: r["committed"] for r in before if r["ev"] == "end"}
    assert subprocess.run(argv, env=env, capture_output=True).returncode == 0
    records = [json.loads(line) for line in _text(out / "journal.jsonl").splitlines()]
    resumed_at = next(i for i, r in enumerate(records) if r["ev"] == "resumed")
    open_attempts: dict[str, int] = {}
    for r in records:  # never two live attempts of one job
        if r["ev"] == "launch":
            assert r["job"] not in open_attempts
            open_attempts[r["job"]] = r["attempt"]
        elif r["ev"] == "end":
            open_attempts.pop(r["job"], None)
    for r in records[resumed_at:]:  # none from scratch after the restart
        if r["ev"] == "launch" and committed_before.get(r["job"], 0) > 0:
            assert r["committed"] >= committed_before[r["job"]]
    jobs = _rows(out / "jobs.csv")
    assert len(jobs) == 6 and all(r["end"] for r in jobs)
    assert sum(1 for r in records if r["ev"] == "done") == 6


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


ONE_GPU = "name: one\ndescription: one V100\nprice_per_kwh: 0.1\npue: 1.2\nnodes:\n" + (
    "  - {gpu: V100, gpus_per_node: 1, count: 1, name_prefix: gpu-}\n"
)


def _most_attempts_open_at_once(out: Path) -> int:
    """The journal's largest number of attempts launched and not yet ended, over the whole run."""
    open_now, most = set(), 0
    for r in map(json.loads, _text(out / "journal.jsonl").splitlines()):
        if r["ev"] == "launch":
            open_now.add((r["job"], r["attempt"]))
        elif r["ev"] == "end":
            open_now.discard((r["job"], r["attempt"]))
        most = max(most, len(open_now))
    return most


def test_a_job_given_a_stopped_jobs_gpu_waits_until_that_worker_has_exited(live_config, tmp_path):
    """Tiresias on one GPU: j4's arrival preempts j1, and j4 starts only once j1's worker has checkpointed and exited.
    Before, j4 was launched at once; the local executor had no GPU left for it, and on an H200 it trained on the
    CPU at half speed (tools/real_gpu/check.py, 2026-11-27)."""
    rows = [f"j1,0,1,{RESNET},2000", f"j4,120,1,{RESNET},300"]
    config = live_config(rows, policy="tiresias", round_length=60, policy_options={"thresholds": [100]})
    (tmp_path / "cluster.yaml").write_text(ONE_GPU)
    out = tmp_path / "out"
    assert run_live(config, "local", None, out)["completed"] == 2
    live = _rows(out / "live.csv")
    assert [r["outcome"] for r in live if r["job_id"] == "j1"][0] == "stopped"  # the preemption happened
    assert _most_attempts_open_at_once(out) == 1


def test_a_stopped_worker_that_ignores_sigterm_is_killed_after_stop_timeout(live_config, tmp_path):
    """A program that swallows SIGTERM would hold its GPU for good: past ``stop_timeout`` it is killed, its job
    keeps what its last checkpoint holds, and the job waiting for the GPU starts."""
    rows = [f"j1,0,1,{RESNET},2000,synthetic --ignore-sigterm", f"j4,120,1,{RESNET},300"]
    options = {"thresholds": [100]}
    config = live_config(
        rows, policy="tiresias", round_length=60, policy_options=options, executor={"stop_timeout": 0.5}
    )
    (tmp_path / "cluster.yaml").write_text(ONE_GPU)
    out = tmp_path / "out"
    assert run_live(config, "local", None, out)["completed"] == 2
    live = _rows(out / "live.csv")
    outcomes = [r["outcome"] for r in live if r["job_id"] == "j1"]
    assert outcomes[0] == "stopped" and outcomes[-1] == "done"  # killed, then resumed
    waited = next(r for r in live if r["job_id"] == "j4")  # for the GPU: stop_timeout, then the kill
    assert float(waited["launch_latency_wall_s"]) >= 0.5
    assert _most_attempts_open_at_once(out) == 1


def test_simulate_reads_a_live_config_so_the_readme_comparison_runs_as_written(tmp_path, monkeypatch):
    """README: `cluster simulate` on the live example (executor section ignored, files found beside it) then
    `cluster compare` against a live run; here the simulated run is compared with itself."""
    from typer.testing import CliRunner

    from gpuweave.cli import app

    monkeypatch.chdir(tmp_path)  # the example's trace and cluster are found beside it, not in the cwd
    example = Path(__file__).resolve().parents[2] / "examples" / "live" / "synthetic.yaml"
    res = CliRunner().invoke(app, ["cluster", "simulate", str(example), "--out", "sim-run"])
    assert res.exit_code == 0, res.output
    assert {r["job_id"] for r in _rows(tmp_path / "sim-run" / "jobs.csv")} == {f"j{i}" for i in range(1, 9)}
    res = CliRunner().invoke(app, ["cluster", "compare", "sim-run", "sim-run"])
    assert res.exit_code == 0 and "j8" in res.output


def test_a_run_writes_the_rates_it_measured_as_a_profile_table_the_simulator_reads(live_config, tmp_path):
    from gpuweave.cluster.config import load_config
    from gpuweave.cluster.run import prepare
    from gpuweave.live.rates import MEASURED_PROFILES
    from gpuweave.workload.profiles import load_profiles

    out = tmp_path / "out"
    config = live_config(SMALL[:2], executor={"time_scale": 1000})
    run_live(config, "local", None, out)
    meta = json.loads((out / "summary.json").read_text())
    assert meta["measured_profiles"] == {"file": MEASURED_PROFILES, "measured_entries": 2}  # 1 and 2 GPUs
    base = {(r.job_type, r.gpu_model, r.num_gpus, r.consolidated): r.throughput for r in load_profiles().rows()}
    measured = {
        (r.job_type, r.gpu_model, r.num_gpus, r.consolidated): r.throughput
        for r in load_profiles(out / MEASURED_PROFILES).rows()
    }
    assert measured.keys() == base.keys()
    changed = {key for key in base if measured[key] != base[key]}
    assert {key[0] for key in changed} == {RESNET} and len(changed) == 2
    for key in changed:  # the paced workers ran at about the profile's rate
        assert measured[key] == pytest.approx(base[key], rel=0.2)
    sim = config.parent / "replay.yaml"  # the same run simulated at the measured rates
    sim.write_text(config.read_text() + f"profiles: {out / MEASURED_PROFILES}\n")
    assert prepare(load_config(sim)).profiles.rate(*sorted(changed)[0]) == measured[sorted(changed)[0]]
