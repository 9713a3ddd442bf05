"""``gpuweave serve`` and its clients as a user runs them: bad input is one line and exit 2 with nothing written;
``token create`` prints a token once; ``submit|jobs|cancel|nodes`` work against a real service, with ``--json``."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys

import httpx
import pytest
from typer.testing import CliRunner

from gpuweave.cli import app, main
from gpuweave.errors import InputError
from tests.service.helpers import CLUSTER, ENV, RESNET, free_port, service_config, start_service_process, wait_for


def gpuweave(*args: str, env: dict | None = None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpuweave.cli", *args],
        capture_output=True,
        text=True,
        env=env or ENV,
        cwd=cwd,
        timeout=120,
    )


def _one_line_exit_2(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: "), proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    "args, words",
    [
        (["--policy", "nope"], ["policy", "unknown cluster policy 'nope'"]),
        (["--policy", "hadar", "-O", "variant=zzz"], ["policy-option", "variant"]),
        (["--cluster", "nope"], ["cluster", "unknown cluster 'nope'"]),
        (["--db", "postgresql://nobody@127.0.0.1:1/none"], ["field 'db'", "cannot reach the database"]),
        (["--db", "mysql://x@localhost/y"], ["field 'db'", "unsupported database"]),
        (["--executor", "slurm"], ["scontrol"]),  # no Slurm to ask for its nodes (SLURM_CONF is empty)
        (["--executor", "kubernetes"], ["executor"]),
        (["--time-scale", "0"], ["time-scale"]),
        (["--stop-timeout", "0"], ["stop-timeout", "greater than 0"]),
    ],
)
def test_serve_bad_input_is_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys, args, words):
    """The console entry point in this process (an interpreter start per case is slow); the port test below runs
    the real command."""
    data = tmp_path / "data"
    argv = ["gpuweave", "serve", "--data-dir", str(data), "--port", str(free_port()), "--cluster", str(CLUSTER), *args]
    monkeypatch.setattr(sys, "argv", argv)
    # never a test Slurm started elsewhere; an empty file, not a missing one: without a config scontrol looks for a
    # controller in DNS (configless Slurm) and answers after a minute of resolver timeouts
    empty = tmp_path / "no-slurm.conf"
    empty.write_text("")
    monkeypatch.setenv("SLURM_CONF", str(empty))
    monkeypatch.setattr("gpuweave.service.logs.configure", lambda *a, **k: None)  # keep this process's logging
    with pytest.raises(SystemExit) as exit_:
        main()
    err = capsys.readouterr().err
    _one_line_exit_2(subprocess.CompletedProcess(argv, exit_.value.code, "", err), *words)
    assert not data.exists()  # no database, no directory: nothing half-written


def test_serve_refuses_a_port_in_use(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        proc = gpuweave("serve", "--data-dir", str(tmp_path / "d"), "--port", str(port), "--cluster", str(CLUSTER))
    _one_line_exit_2(proc, "field 'port'", "in use")
    assert not (tmp_path / "d").exists()


def test_token_create_prints_once_and_clients_work(tmp_path):
    data = tmp_path / "data"
    db = f"sqlite:///{tmp_path / 'svc.db'}"
    made = gpuweave("serve", "--db", db, "--data-dir", str(data), "token", "create", "alice", "--max-running-gpus", "2")
    assert made.returncode == 0 and made.stdout.startswith("gw_") and made.stdout.count("\n") == 1
    tok = made.stdout.strip()
    listed = json.loads(gpuweave("serve", "--db", db, "token", "list", "--json").stdout)
    assert listed[0]["name"] == "alice" and listed[0]["tokens"] == 1 and tok not in json.dumps(listed)
    _one_line_exit_2(gpuweave("serve", "--db", db, "token", "create", "bad name"), "NAME")
    service = start_service_process(db, data)
    env = dict(ENV, GPUWEAVE_TOKEN=tok, GPUWEAVE_SERVER=service.url)
    api = httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {tok}"}, timeout=10)

    def cli(*args: str) -> str:  # in this process (an interpreter start per call is slow); exit codes below
        result = CliRunner().invoke(app, list(args), env={"GPUWEAVE_TOKEN": tok, "GPUWEAVE_SERVER": service.url})
        assert result.exit_code == 0, (args, result.output, result.exception)
        return result.stdout

    try:
        job = json.loads(cli("submit", "cli-job", "--steps", "300", "--gpus", "2", "--json"))
        assert job["name"] == "cli-job" and job["gpus"] == 2 and job["job_type"] == RESNET
        long = cli("submit", "long", "--steps", "100000000", "--gpu-type", "K80")
        assert long.startswith("submitted job ")
        long_id = int(long.split()[2])
        wait_for(lambda: api.get(f"/api/v1/jobs/{job['id']}").json()["state"] == "done", 60)
        assert json.loads(cli("jobs", "--id", str(job["id"]), "--json"))["history"]
        listing = json.loads(cli("jobs", "--json"))
        assert {j["name"] for j in listing["jobs"]} == {"cli-job", "long"}
        assert "cli-job" in cli("jobs")
        wait_for(lambda: api.get(f"/api/v1/jobs/{long_id}").json()["state"] == "running", 30)
        nodes = json.loads(cli("nodes", "--json"))
        assert [j["id"] for n in nodes if n["name"] == "k80-0" for j in n["jobs"]] == [long_id]
        assert "k80-0" in cli("nodes")
        assert json.loads(cli("cancel", str(long_id), "--json"))["cancel_requested"]
        for args, words in (
            (["cancel", "999"], ["404", "job_id"]),
            (["submit", "x", "--steps", "10", "--gpus", "4"], ["quota of 2", "gpus"]),
            # the flags reach the API: a service that places whole GPUs refuses a share, naming it
            (["submit", "s", "--steps", "10", "--gpu-milli", "300"], ["this service places whole GPUs", "gpu_milli"]),
        ):
            refused = CliRunner().invoke(app, args, env={"GPUWEAVE_TOKEN": tok, "GPUWEAVE_SERVER": service.url})
            assert isinstance(refused.exception, InputError) and all(w in refused.exception.one_line() for w in words)
        # What a user sees when a request is refused: the real command, one line, exit 2.
        _one_line_exit_2(gpuweave("submit", "huge", "--steps", "10", "--gpus", "64", env=env), "422", "gpus")
        _one_line_exit_2(gpuweave("jobs", env=dict(env, GPUWEAVE_TOKEN="gw_wrong")), "401")
        _one_line_exit_2(gpuweave("jobs", env=dict(env, GPUWEAVE_TOKEN="")), "GPUWEAVE_TOKEN")
        _one_line_exit_2(gpuweave("nodes", "--server", f"http://127.0.0.1:{free_port()}", env=env), "cannot reach")
    finally:
        api.close()
        service.proc.send_signal(signal.SIGTERM)
        assert service.proc.wait(timeout=60) == 0


def test_the_service_passes_its_worker_timeouts_to_the_live_runtime(tmp_path):
    config = service_config("sqlite:///" + str(tmp_path / "db.sqlite"), tmp_path, report_timeout=12, stop_timeout=7)
    section = config.live_config("fifo", {}).executor
    assert (section.report_timeout, section.stop_timeout) == (12, 7)
