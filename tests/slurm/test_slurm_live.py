"""Live runs with the slurm executor on the session's real Slurm (tests/slurm/conftest.py): every worker is a
Slurm batch job; the results are checked against the files and against what Slurm itself (squeue, sacct) says."""

import csv
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gpuweave.errors import InputError
from gpuweave.live.launch import run_live
from tests.checkpoints import has_checkpoint

RESNET = "ResNet-18 (batch size 128)"
ROOT = Path(__file__).resolve().parents[2]


def _rows(path: Path) -> list[dict]:
    with open(path) as fh:
        return list(csv.DictReader(fh))


def _sacct(*job_ids: str, duplicates: bool = False) -> list[dict]:
    args = ["sacct", "-X", "--parsable2", "--format=JobID,State,AllocTRES,QOS", f"--jobs={','.join(job_ids)}"]
    proc = subprocess.run([*args, *(["--duplicates"] if duplicates else [])], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return list(csv.DictReader(proc.stdout.splitlines(), delimiter="|"))


def test_fifo_runs_synthetic_and_torch_jobs_as_slurm_jobs_and_a_rejected_job_fails(slurm, slurm_config, tmp_path):
    rows = [
        f"a,0,1,{RESNET},300",
        f"b,0,2,{RESNET},400",
        f"t,0,1,{RESNET},200,torch",
        f"bad,0,1,{RESNET},100,,--partition=nowhere",
        "c,40,1,A3C,200",
    ]
    out = tmp_path / "out"
    slurm = {"poll_interval": 0.1, "gpus": "emulated", "qos": "normal"}  # the QoS passes through to every job
    summary = run_live(slurm_config(rows, cluster="imported", executor={"slurm": slurm}), None, None, out)
    assert summary["completed"] == 4
    meta = json.loads((out / "summary.json").read_text())
    assert meta["executor"] == "slurm" and meta["emulated_gpus"] is True
    assert "slurm rejected the job: sbatch: error: invalid partition specified: nowhere" in meta["failed_jobs"]["bad"]
    assert meta["executor_stats"]["slurm_launch_to_running_p50_s"] > 0
    jobs = {r["job_id"]: r for r in _rows(out / "jobs.csv")}
    assert all(jobs[j]["end"] and float(jobs[j]["jct"]) > 0 for j in "abtc") and not jobs["bad"]["end"]
    launches = _rows(out / "slurm.csv")
    rejected = [r for r in launches if r["job_id"] == "bad"]
    assert [r["action"] for r in rejected] == ["rejected", "rejected"]  # max_retries 1: two tries, both refused
    ran = {r["job_id"]: r for r in launches if r["job_id"] != "bad"}
    assert set(ran) == set("abtc") and all(r["state"] == "COMPLETED" and r["exit_code"] == "0" for r in ran.values())
    assert ran["b"]["gres"] == "gpu:v100:2" and ran["b"]["node"] == "gw0"
    accounted = {r["JobID"]: r for r in _sacct(*[r["slurm_job_id"] for r in ran.values()])}
    for job, row in ran.items():  # Slurm's own record agrees: it ran, on the GPUs the policy chose
        kind, count = row["gres"].split(":")[1:]
        assert accounted[row["slurm_job_id"]]["State"] == "COMPLETED"
        assert accounted[row["slurm_job_id"]]["QOS"] == "normal"
        assert f"gres/gpu:{kind}={count}" in accounted[row["slurm_job_id"]]["AllocTRES"]
    torch_log = next((out / "channels" / "t").glob("a1-c0-r0")) / "worker.log"
    assert "slurm: job" in torch_log.read_text()
    assert (out / "checkpoints" / "t" / "model.ckpt").stat().st_size > 0  # torch.save of the real model


def test_gavel_preempts_and_requeues_slurm_jobs(slurm, slurm_config, tmp_path):
    """Nine GPUs of demand on six: Gavel time-shares, so workers are stopped (checkpoint, requeue-held in Slurm)
    and started again by releasing the same Slurm job, or moved to the other GPU type as a new job."""
    rows = [
        f"a,0,2,{RESNET},500",
        f"b,0,2,{RESNET},500",
        "c,0,1,A3C,400",
        f"d,0,2,{RESNET},400",
        "e,30,1,A3C,300",
    ]
    out = tmp_path / "out"
    summary = run_live(slurm_config(rows, policy="gavel", round_length=120), None, None, out)
    live = _rows(out / "live.csv")
    attempts = [(r["job_id"], r["attempt"], r["kind"], r["steps"], r["outcome"]) for r in live]
    assert summary["completed"] == 5, (summary.get("failed_jobs"), attempts)
    stopped = [r for r in live if r["outcome"] == "stopped"]
    resumed = [r for r in live if r["kind"] in ("resume", "move")]
    assert stopped and resumed, attempts  # preempted, then started again (a stop may also catch a job at its last step)
    launches = _rows(out / "slurm.csv")
    requeued = [r for r in launches if r["action"] == "requeue"]
    assert requeued, "no worker was started again by releasing its held Slurm job"
    for row in requeued:  # Slurm's accounting has the job's earlier runs as REQUEUED records of the same job id
        states = [h["State"] for h in _sacct(row["slurm_job_id"], duplicates=True)]
        assert len(states) >= 2 and states[0] == "REQUEUED", states
    jobs = _rows(out / "jobs.csv")
    finished = {r["job_id"]: bool(r["end"]) for r in jobs}
    ended = {r["job_id"]: r["outcome"] for r in live}  # rows in attempt order: each job's last attempt
    last = {r["job_id"]: r for r in launches}  # rows are in attempt order: each job's last launch ran to the end,
    for job_id, r in last.items():  # or a stop caught it at its last step and its checkpoint held every step
        ran_out = r["state"] == "COMPLETED" and r["exit_code"] == "0"
        assert ran_out or (finished[job_id] and ended[job_id] == "done"), (job_id, r)
    assert sum(int(r["restarts"]) for r in jobs) >= len(stopped)


def test_hadar_finishes_synthetic_jobs_on_slurm(slurm, slurm_config, tmp_path):
    rows = [f"a,0,1,{RESNET},300", f"b,0,2,{RESNET},400", "c,40,1,A3C,200", f"d,80,1,{RESNET},200"]
    out = tmp_path / "out"
    summary = run_live(slurm_config(rows, policy="hadar", round_length=120), None, None, out)
    assert summary["completed"] == 4
    launches = _rows(out / "slurm.csv")
    assert {r["job_id"] for r in launches} == set("abcd")
    assert all(r["state"] == "COMPLETED" for r in launches)
    squeue = subprocess.run(["squeue", "-h", "-o", "%i|%k"], capture_output=True, text=True).stdout
    assert str(out.resolve()) not in squeue  # nothing of the run is left in Slurm's queue


def test_cluster_asking_for_a_gpu_type_slurm_lacks_fails_before_anything_starts(slurm, slurm_config, tmp_path):
    (tmp_path / "p100-cluster.yaml").write_text("name: p100\nnodes:\n  - {gpu: P100, gpus_per_node: 1}\n")
    config = slurm_config([f"a,0,1,{RESNET},100"], cluster="p100")
    with pytest.raises(InputError, match=r"no Slurm GPUs left .*gw0: v100 x4 \(V100\), gw0: k80 x2 \(K80\)"):
        run_live(config, None, None, tmp_path / "out")
    assert not (tmp_path / "out" / "journal.jsonl").exists()


def test_unreachable_controller_is_one_line_exit_2(slurm, slurm_config, tmp_path):
    conf = tmp_path / "down.conf"
    text = slurm.conf.read_text().replace("MessageTimeout=5", "MessageTimeout=1")
    lines = [line if not line.startswith("SlurmctldPort=") else "SlurmctldPort=9" for line in text.splitlines()]
    conf.write_text("\n".join(lines) + "\n")
    env = dict(os.environ, SLURM_CONF=str(conf), PYTHONPATH=str(ROOT / "src"))
    config = slurm_config([f"a,0,1,{RESNET},100"])
    argv = [sys.executable, "-m", "gpuweave.cli", "cluster", "run", str(config), "--out", str(tmp_path / "o")]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert (
        "`scontrol show node --oneliner` failed" in proc.stderr and "Unable to contact slurm controller" in proc.stderr
    )


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def test_runtime_killed_with_sigkill_ends_its_slurm_jobs_and_resumes(slurm, slurm_config, tmp_path):
    """kill -9 leaves the runtime's Slurm jobs running: the next runtime on the same --out asks them to
    checkpoint, cancels them, commits what they saved (journal) and finishes every job, none from scratch."""
    rows = [f"k{i},{i * 40},1,{RESNET},{600 + 100 * i}" for i in range(4)]
    config = slurm_config(rows, executor={"time_scale": 150, "checkpoint_every": 0.3})
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    argv = [sys.executable, "-m", "gpuweave.cli", "cluster", "run", str(config), "--out", str(out)]
    first = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and _text(out / "journal.jsonl").count('"ev": "launch"') < 2:
        time.sleep(0.1)
    time.sleep(1.5)  # the workers step and checkpoint
    first.kill()
    first.wait()
    tag = f"gpuweave:{out.resolve()}"
    queued = subprocess.run(["squeue", "-h", "-o", "%i|%T|%k"], capture_output=True, text=True).stdout
    assert any(line.endswith(tag) for line in queued.splitlines()), "the killed runtime's Slurm jobs should outlive it"
    assert subprocess.run(argv, env=env, capture_output=True, timeout=300).returncode == 0
    records = [json.loads(line) for line in _text(out / "journal.jsonl").splitlines()]
    orphans = [r for r in records if r.get("orphan")]
    assert orphans and any(r["saved"] > 0 for r in orphans)  # what the orphans checkpointed was kept
    resumed_at = next(i for i, r in enumerate(records) if r["ev"] == "resumed")
    committed = {r["job"]: r["committed"] for r in records[:resumed_at] if r["ev"] == "end"}
    committed.update({r["job"]: r["committed"] for r in orphans})
    for r in records[resumed_at:]:
        if r["ev"] == "launch" and committed.get(r["job"], 0) > 0:
            assert r["committed"] >= committed[r["job"]]  # none from scratch
    assert sum(1 for r in records if r["ev"] == "done") == 4
    queued = subprocess.run(["squeue", "-h", "-o", "%i|%T|%k"], capture_output=True, text=True).stdout
    assert not any(line.endswith(tag) for line in queued.splitlines())


def test_a_job_slurm_keeps_waiting_fails_with_slurms_reason_and_the_rest_go_on(slurm, slurm_config, tmp_path):
    rows = [f"late,0,1,{RESNET},100,,--begin=now+3600", f"ok,0,1,{RESNET},200"]
    out = tmp_path / "out"
    config = slurm_config(rows, executor={"max_retries": 0, "report_timeout": 4})
    assert run_live(config, None, None, out)["completed"] == 1
    meta = json.loads((out / "summary.json").read_text())
    assert "no report from the workers for 4 s" in meta["failed_jobs"]["late"]
    log = (out / "channels" / "late" / "a1-c0-r0" / "worker.log").read_text()
    assert "was still PENDING (Reason=BeginTime) when gpuweave cancelled it" in log
    launch = next(r for r in _rows(out / "slurm.csv") if r["job_id"] == "late")
    assert launch["launch_to_running_s"] == "" and launch["exit_code"] == "-9"


def test_a_job_slurm_requeues_by_itself_runs_again_from_its_checkpoint_without_counting_a_crash(
    slurm, slurm_config, tmp_path
):
    """``scontrol requeue`` is what Slurm does to a job whose node failed: the runtime starts it again, as a new
    Slurm job, from its last checkpoint, live.csv says ``requeued`` with Slurm's word, and no crash is counted
    (max_retries 0). (Relaunching the requeued job id instead failed in three of about fifteen CI runs: its retry
    never started within 30 s.)"""
    out = tmp_path / "out"
    # 20 simulated seconds: about 360 steps, 10 wall seconds at time scale 2
    config = slurm_config([f"a,0,1,{RESNET},20"], executor={"time_scale": 2, "max_retries": 0})
    requeued: list[str] = []

    def requeue_once_saved() -> None:
        status = out / "channels" / "a" / "a1-c0-r0" / "status.json"
        deadline = time.time() + 60
        while time.time() < deadline:
            if has_checkpoint(status):
                ids = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i|%k"], capture_output=True, text=True)
                mine = [i for i, _, k in (line.partition("|") for line in ids.stdout.split()) if k.endswith(str(out))]
                if mine:
                    subprocess.run(["scontrol", "requeue", mine[0]], check=True, capture_output=True)
                    requeued.append(mine[0])
                    return
            time.sleep(0.1)

    thread = threading.Thread(target=requeue_once_saved, daemon=True)
    thread.start()
    summary = run_live(config, None, None, out)
    thread.join(timeout=5)
    assert requeued, "the job was never seen running with a checkpoint"
    assert summary["completed"] == 1
    live = _rows(out / "live.csv")
    assert [r["outcome"] for r in live] == ["requeued", "done"]
    assert live[0]["cause"].startswith(f"slurm requeued job {requeued[0]} by itself")
    assert int(live[0]["steps"]) > 0 and sum(1 for r in live if r["kind"] == "retry") == 1
    launches = _rows(out / "slurm.csv")
    assert [r["action"] for r in launches] == ["submit", "submit"] and launches[1]["slurm_job_id"] != requeued[0]
