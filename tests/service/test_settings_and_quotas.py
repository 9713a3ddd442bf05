"""Issue 39: one model per setting with one set of bounds (class 4), and a host quota for users' jobs (class 8).

Class 4: ``gpuweave serve`` takes each setting it shares with a live run from the live config's own field, so
``inf``, ``1e300`` or ``100000`` is one ``error:`` line and exit 2, never a pydantic traceback from the second
check; policy options given without ``--policy`` are refused, never dropped; a policy option of Infinity or NaN
(Python's json reads both) is a 422, never stored as null.

Class 8: a job of a user who is not an admin runs under the service's host quota (memory and CPU time per worker,
local executor); one that allocates past it fails with a reason naming the quota, and the service survives.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuweave.cli import main
from gpuweave.cluster.config import SimulationConfig
from gpuweave.live.config import ExecutorSection
from gpuweave.service.config import ServiceConfig
from tests.service.helpers import CLUSTER, auth, free_port, job_spec, token, wait_for

SHARED = {
    "time_scale": ExecutorSection,
    "checkpoint_every": ExecutorSection,
    "max_retries": ExecutorSection,
    "report_timeout": ExecutorSection,
    "stop_timeout": ExecutorSection,
    "poll_interval": ExecutorSection,
    "restart_delay": SimulationConfig,
    "seed": SimulationConfig,
    "cluster": SimulationConfig,
    "policy_options": SimulationConfig,
}


@pytest.mark.parametrize("name, model", SHARED.items())
def test_shared_settings_have_the_live_configs_bounds(name, model):
    ours, theirs = ServiceConfig.model_fields[name], model.model_fields[name]
    assert (ours.metadata, ours.default, ours.description) == (theirs.metadata, theirs.default, theirs.description)
    assert ServiceConfig.model_config.get("allow_inf_nan") is False


def _serve(tmp_path, monkeypatch, capsys, *args: str) -> tuple[int, str]:
    data = tmp_path / "data"
    argv = ["gpuweave", "serve", "--data-dir", str(data), "--port", str(free_port()), "--cluster", str(CLUSTER), *args]
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.setattr("gpuweave.service.logs.configure", lambda *a, **k: None)
    with pytest.raises(SystemExit) as exit_:
        main()
    assert not data.exists()  # refused before anything was written
    return int(exit_.value.code or 0), capsys.readouterr().err


@pytest.mark.parametrize(
    "args, words",
    [
        (["--time-scale", "inf"], ["field 'time-scale'", "finite", "inf"]),
        (["--time-scale", "1e300"], ["field 'time-scale'", "1e+300"]),
        (["--restart-delay", "1e300"], ["field 'restart-delay'", "1e+300"]),
        (["--checkpoint-every", "100000"], ["field 'checkpoint-every'", "100000"]),
        (["--report-timeout", "nan"], ["field 'report-timeout'", "finite"]),
        (["--stop-timeout", "100000"], ["field 'stop-timeout'", "100000"]),
        (["--max-retries", "100000"], ["field 'max-retries'", "100000"]),
        (["--max-running-gpus", "0"], ["field 'max-running-gpus'"]),
        (["--job-memory", "inf"], ["field 'job-memory'", "finite"]),
        (["-O", "strict=false"], ["field 'policy-option'", "--policy"]),
        (["--policy", "fifo", "-O", "seed="], ["field 'policy-option'", "'seed' is a run setting", "--seed"]),
        (["--policy", "gavel", "-O", "reset_interval=.inf"], ["field 'policy-option'", "reset_interval", "finite"]),
        (["--policy", "edf", "-O", "rho=.nan"], ["field 'policy-option'", "rho", "finite"]),
        (["--slurm-account", "ml"], ["field 'slurm-account'", "--executor slurm"]),
    ],
)
def test_serve_settings_are_one_line_exit_2(tmp_path, monkeypatch, capsys, args, words):
    code, err = _serve(tmp_path, monkeypatch, capsys, *args)
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), err
    assert "Traceback" not in err and "validation error" not in err
    for word in words:
        assert word in err, err


def test_the_slurm_executor_of_the_service_submits_to_its_partition_account_and_qos(tmp_path):
    from gpuweave.live.slurm import SlurmExecutor
    from gpuweave.service.server import open_executor

    config = ServiceConfig(db="sqlite://", data_dir=tmp_path, executor="slurm", slurm_partition="gpu",
                           slurm_account="ml", slurm_qos="short")  # fmt: skip
    executor = open_executor(config, tmp_path / "executor")
    assert isinstance(executor, SlurmExecutor)
    assert (executor.options.partition, executor.options.account, executor.options.qos) == ("gpu", "ml", "short")
    assert config.live_config("fifo", {}).executor.slurm.account == "ml"


def test_simulate_refuses_non_finite_policy_options(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "gpuweave.cli", "cluster", "simulate", "--policy", "gavel", "-O", "reset_interval=.inf",
         "--jobs", "5", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "reset_interval" in proc.stderr and "finite" in proc.stderr


@pytest.mark.parametrize("value", ["Infinity", "-Infinity", "NaN", "[1, Infinity]"])
def test_api_refuses_a_non_finite_policy_option(sqlite_url, make_service, value):
    service, client = make_service(sqlite_url, start=False)
    root = token(sqlite_url, "root", admin=True)
    before = client.get("/api/v1/policy", headers=auth(root)).json()
    body = '{"name": "gavel", "options": {"reset_interval": %s}}' % value  # what Python's json.loads accepts
    bad = client.put("/api/v1/policy", content=body, headers={**auth(root), "Content-Type": "application/json"})
    assert bad.status_code == 422, bad.text
    assert bad.json()["field"] == "options" and "finite" in bad.json()["detail"]
    assert client.get("/api/v1/policy", headers=auth(root)).json() == before  # nothing stored


# ------------------------------------------------------------------------------------------ class 8
HOG = """\
import sys
from gpuweave.live import api
block = bytearray(int(sys.argv[1]) * 2**20)  # the "huge model"
steps = 0
while steps < api.target_steps():
    steps += 1
    api.report(steps)
    if api.should_checkpoint():
        api.checkpoint_path().write_text(str(steps))
        api.checkpointed(steps)
"""


def _job(client, tok, job_id):
    return client.get(f"/api/v1/jobs/{job_id}", headers=auth(tok)).json()


def test_a_users_job_past_the_host_quota_fails_naming_it(sqlite_url, make_service, tmp_path):
    hog = tmp_path / "hog.py"
    hog.write_text(HOG)
    service, client = make_service(
        sqlite_url, job_memory_gib=1 / 16, job_cpu_seconds=600, allow_commands=True, max_retries=0
    )
    alice, root = token(sqlite_url, "alice"), token(sqlite_url, "root", admin=True)
    me = client.get("/api/v1/me", headers=auth(alice)).json()
    assert (me["job_memory_bytes"], me["job_cpu_seconds"]) == (64 * 2**20, 600)
    assert client.get("/api/v1/me", headers=auth(root)).json()["job_memory_bytes"] is None
    program = f"{hog} 160"
    hers = client.post("/api/v1/jobs", json=job_spec("hog", steps=50, program=program), headers=auth(alice)).json()
    failed = wait_for(lambda: (j := _job(client, alice, hers["id"]))["state"] == "failed" and j, timeout=30)
    assert "memory limit 64 MiB (service quota) exceeded" in failed["reason"], failed["reason"]
    assert service.scheduler.alive  # the service survived its user's job
    # an admin's job is not bound by the users' quota
    mine = client.post("/api/v1/jobs", json=job_spec("big", steps=50, program=program), headers=auth(root)).json()
    done = wait_for(lambda: (j := _job(client, root, mine["id"]))["state"] in ("done", "failed") and j, timeout=30)
    assert done["state"] == "done", done["reason"]


def test_the_quota_reaches_the_workers_of_builtin_programs(sqlite_url, make_service):
    service, client = make_service(sqlite_url, job_memory_gib=0.5, job_cpu_seconds=100)
    alice = token(sqlite_url, "alice")
    job = client.post("/api/v1/jobs", json=job_spec("s", steps=300), headers=auth(alice)).json()
    live = wait_for(lambda: service.scheduler.runtime.jobs.get(str(job["id"])))
    limits = live.js.job.attrs["worker_limits"]
    assert (limits.memory_bytes, limits.cpu_seconds) == (2**29, 100)
    wait_for(lambda: _job(client, alice, job["id"])["state"] == "done", timeout=30)


def test_no_quota_when_set_to_zero(tmp_path):
    config = ServiceConfig(db="sqlite://", data_dir=Path(tmp_path), job_memory_gib=0, job_cpu_seconds=0)
    assert config.worker_limits() is None


def test_a_users_slurm_account_and_qos_reach_sbatch_before_the_services(sqlite_url, monkeypatch, tmp_path):
    """`token create --slurm-account/--slurm-qos` set them on the user; the scheduler reads them with each job's row
    (the same join as its quota) and the slurm executor submits with them, over the service's --slurm-*."""
    from types import SimpleNamespace

    from gpuweave.errors import InputError
    from gpuweave.live import slurm as slurm_module
    from gpuweave.live.slurm import SlurmExecutor, SlurmOptions
    from gpuweave.service.auth import create_token, list_users
    from gpuweave.service.db import open_database
    from gpuweave.service.jobs import runtime_job

    engine = open_database(sqlite_url)
    create_token(engine, "ana", slurm_account="ml", slurm_qos="short")
    create_token(engine, "bo")
    create_token(engine, "bo", slurm_account="vision")  # an existing user gets it on the next token
    shown = {u["name"]: (u["slurm_account"], u["slurm_qos"]) for u in list_users(engine)}
    assert shown == {"ana": ("ml", "short"), "bo": ("vision", None)}
    with pytest.raises(InputError, match="a Slurm name"):
        create_token(engine, "cy", slurm_account="ml; rm -rf /")
    row = SimpleNamespace(id=1, gpu_types=None, submitted_at=0.0, deadline_s=None, arrival=0.0, gpus=1, steps=10,
                          job_type="ResNet-18 (batch size 32)", priority=1.0, user_id=1, name="j", gpu_milli=None,
                          cpu_milli=None, memory_mib=None, slurm_account="ml", slurm_qos="short")  # fmt: skip
    job = runtime_job(row, 0.0, 1.0)  # type: ignore[arg-type]  # a row's attributes are all it reads
    assert (job.attrs["slurm_account"], job.attrs["slurm_qos"]) == ("ml", "short")
    calls = []
    monkeypatch.setattr(slurm_module, "run_slurm", lambda args, **_: calls.append(args) or "42")
    executor = SlurmExecutor(Path("."), SlurmOptions(account="lab", qos="normal", partition="gpu"))
    spec = SimpleNamespace(  # the fields of a LaunchSpec that _submit reads
        job_id="1", attempt=1, copy=0, label="1/a1", attrs=job.attrs
    )
    executor._submit(spec, tmp_path, "gw0", "gpu:v100:1")  # type: ignore[arg-type]
    assert {"--account=ml", "--qos=short", "--partition=gpu"} <= set(calls[0]) and "--account=lab" not in calls[0]
    engine.dispose()
