"""Helpers of the service tests (fixtures are in conftest.py): tokens, job specs, waiting, service processes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PG_BIN = Path("/usr/lib/postgresql/15/bin")
ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "examples" / "live" / "cluster.yaml"  # 3 nodes: 2 x 2 V100, 1 x 2 K80
RESNET = "ResNet-18 (batch size 128)"
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def service_config(db: str, data_dir: Path, **overrides):
    from gpuweave.service.config import ServiceConfig

    settings = {
        "db": db,
        "data_dir": data_dir,
        "port": 0,
        "cluster": str(CLUSTER),
        "policy": "fifo",
        "time_scale": 400.0,
        "checkpoint_every": 0.3,
        "poll_interval": 0.02,
        "sync_interval": 0.05,
        "sample_interval": 0.2,
        "restart_delay": 10.0,
    }
    settings.update(overrides)
    return ServiceConfig(**settings)


def token(db: str, name: str, admin: bool = False, **quotas) -> str:
    from gpuweave.service.auth import create_token
    from gpuweave.service.db import open_database

    engine = open_database(db)
    try:
        return create_token(engine, name, admin=admin, **quotas)
    finally:
        engine.dispose()


def auth(tok: str) -> dict:
    return {"Authorization": f"Bearer {tok}"}


def job_spec(name: str = "j", steps: int = 300, gpus: int = 1, **extra) -> dict:
    return {"name": name, "steps": steps, "gpus": gpus, "job_type": RESNET, **extra}


def wait_for(predicate, timeout: float = 20.0, every: float = 0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"condition not met within {timeout} s")


@dataclass
class ServiceProcess:
    proc: subprocess.Popen
    url: str
    log: Path

    def lines(self) -> list[dict]:
        return log_records(self.log)


def log_records(log: Path) -> list[dict]:
    """The JSON records of a service log (lines that are not JSON, such as a traceback, left out)."""
    out = []
    for line in log.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def start_service_process(db: str, data_dir: Path, *extra: str, log_name: str = "serve.log") -> ServiceProcess:
    """``gpuweave serve`` as a real process on a free port; returns once it answers /healthz."""
    import httpx

    log = data_dir.parent / log_name
    argv = [
        sys.executable, "-m", "gpuweave.cli", "serve", "--db", db, "--data-dir", str(data_dir), "--port", "0",
        "--cluster", str(CLUSTER), "--policy", "fifo", "--time-scale", "400", "--checkpoint-every", "0.3", *extra,
    ]  # fmt: skip
    with open(log, "w") as fh:
        proc = subprocess.Popen(argv, env=ENV, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    holder = ServiceProcess(proc, "", log)

    def serving():
        if proc.poll() is not None:
            raise AssertionError(f"gpuweave serve exited {proc.returncode}: {log.read_text()[-2000:]}")
        for entry in holder.lines():
            if entry.get("msg") == "serving":
                return entry["url"].rstrip("/")
        return None

    try:
        holder.url = wait_for(serving, timeout=60)
        wait_for(lambda: httpx.get(f"{holder.url}/healthz", timeout=2).status_code == 200, timeout=30)
    except BaseException:
        proc.kill()  # never leave a half-started service behind
        proc.wait()
        raise
    return holder
