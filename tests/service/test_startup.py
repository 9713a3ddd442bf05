"""Issue 40, item 9: a restarting ``gpuweave serve`` opens its port at once and says what it does.

While it recovers from the last run (stopping the workers a killed service left: seconds per attempt) ``/healthz``
answers 503 ``{"status": "starting"}`` and ``/api/v1`` 503 "starting"; each step is one log line; once the
scheduling loop runs, ``/healthz`` answers 200 ``{"status": "ok"}`` and the log says "ready: listening on ...". A
slow recovery is simulated by a hook (``Ledger.resume`` waits for a file) in a real ``gpuweave serve`` process.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx

from tests.service.helpers import CLUSTER, ENV, auth, log_records, service_config, token, wait_for

# ``gpuweave serve`` with Ledger.resume (the recovery) held until the file GATE exists.
HOOKED = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from gpuweave.service import ledger

    gate = Path(sys.argv.pop(1))
    resume = ledger.Ledger.resume

    def slow_resume(self, runtime, wall_now):
        while not gate.exists():
            time.sleep(0.05)
        return resume(self, runtime, wall_now)

    ledger.Ledger.resume = slow_resume
    from gpuweave.cli import main
    sys.argv[0] = "gpuweave"
    main()
    """
)


class Hooked:
    def __init__(self, tmp_path: Path, db: str) -> None:
        self.gate = tmp_path / "gate"
        self.log = tmp_path / "serve.log"
        script = tmp_path / "hooked_serve.py"
        script.write_text(HOOKED)
        argv = [
            sys.executable, str(script), str(self.gate), "serve", "--db", db, "--data-dir", str(tmp_path / "data"),
            "--port", "0", "--cluster", str(CLUSTER), "--policy", "fifo", "--time-scale", "400",
        ]  # fmt: skip
        with open(self.log, "w") as fh:
            self.proc = subprocess.Popen(argv, env=ENV, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.url = wait_for(self._serving, timeout=60)

    def lines(self) -> list[dict]:
        return log_records(self.log)

    def messages(self) -> list[str]:
        return [e.get("msg", "") for e in self.lines()]

    def _serving(self) -> str | None:
        if self.proc.poll() is not None:
            raise AssertionError(f"gpuweave serve exited {self.proc.returncode}: {self.log.read_text()[-2000:]}")
        for entry in self.lines():
            if entry.get("msg") == "serving":
                return entry["url"].rstrip("/")
        return None

    def stop(self) -> int:
        self.gate.touch()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)


def test_port_answers_starting_while_recovering_then_ok(sqlite_url, tmp_path):
    alice = token(sqlite_url, "alice")
    service = Hooked(tmp_path, sqlite_url)
    try:
        # The recovery is held: the port answers anyway.
        health = httpx.get(f"{service.url}/healthz", timeout=5)
        assert health.status_code == 503
        assert health.json()["status"] == "starting" and health.json()["ok"] is False
        api = httpx.get(f"{service.url}/api/v1/me", headers=auth(alice), timeout=5)
        assert api.status_code == 503 and api.headers["Retry-After"] == "2"
        assert api.json()["detail"].startswith("starting")
        assert httpx.get(f"{service.url}/metrics", timeout=5).status_code == 200
        assert httpx.get(f"{service.url}/", timeout=5).status_code == 200  # the dashboard says "starting" itself
        messages = service.messages()
        assert [m.split(":")[0] for m in messages[:4]] == ["starting", "checked", "built", "serving"], messages
        assert not any(m.startswith("ready") for m in messages)
        assert next(e for e in service.lines() if e.get("msg") == "serving")["status"] == "starting"

        service.gate.touch()  # the recovery runs
        wait_for(lambda: httpx.get(f"{service.url}/healthz", timeout=5).status_code == 200, timeout=30)
        assert httpx.get(f"{service.url}/healthz", timeout=5).json()["status"] == "ok"
        assert httpx.get(f"{service.url}/api/v1/me", headers=auth(alice), timeout=5).status_code == 200
        messages = service.messages()
        port = service.url.rsplit(":", 1)[1]
        ready = [m for m in messages if m.startswith("ready: listening on ")]
        assert ready and f"127.0.0.1:{port}" in ready[0]  # loopback by default
        assert "recovering: nothing left over from the last run" in messages
        order = [m.split(":")[0] for m in messages if m.split(":")[0] in ("serving", "recovering", "resumed", "ready")]
        assert order == ["serving", "recovering", "resumed", "ready"], order
    finally:
        assert service.stop() == 0


def test_stop_while_recovering_exits_cleanly(sqlite_url, tmp_path):
    service = Hooked(tmp_path, sqlite_url)
    try:
        assert httpx.get(f"{service.url}/healthz", timeout=5).json()["status"] == "starting"
        service.proc.send_signal(signal.SIGTERM)
        wait_for(lambda: any(m.startswith("stopping:") for m in service.messages()), timeout=30)
        assert service.proc.poll() is None  # waiting for the recovery under way (it ends the last run's workers)
        service.gate.touch()  # it finishes, the loop it starts checkpoints at once, and the process exits
        assert service.proc.wait(timeout=60) == 0
        assert service.messages()[-1] == "stopped"
    finally:
        if service.proc.poll() is None:
            service.proc.kill()
            service.proc.wait()


def test_healthz_and_gate_in_process(make_service, sqlite_url):
    """The app alone: the phase decides /healthz (code and status) and whether /api/v1 answers."""
    from gpuweave.service.health import READY, STARTING

    alice = token(sqlite_url, "alice")
    service, client = make_service(sqlite_url, start=False)
    state = service.app.state.service
    state.phase = STARTING
    health = client.get("/healthz")
    assert health.status_code == 503 and health.json()["status"] == "starting"
    assert client.get("/api/v1/me", headers=auth(alice)).status_code == 503
    service.scheduler.start()
    state.phase = READY
    health = client.get("/healthz")
    assert health.status_code == 200 and health.json() == {
        "status": "ok",
        "ok": True,
        "scheduler": True,
        "version": health.json()["version"],
    }
    assert client.get("/api/v1/me", headers=auth(alice)).status_code == 200
    service.scheduler.stop()
    health = client.get("/healthz")  # the loop has ended: a supervisor restarts the service
    assert health.status_code == 503 and health.json()["status"] == "failed"


def test_config_binds_loopback_by_default(tmp_path):
    assert service_config("sqlite://", tmp_path).host == "127.0.0.1"
