"""Fixtures of the service tests: a throwaway PostgreSQL 15, databases of both kinds, services in-process and as
real processes, tokens.

PostgreSQL: one server per test session (``initdb`` + ``pg_ctl`` from /usr/lib/postgresql/15/bin), listening on
127.0.0.1 and a unix socket in a fresh temporary directory, trust authentication, ``fsync=off`` (the tests kill
processes, not machines). PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` user
(Debian's server package creates it; otherwise a system user ``gpuweave-pg`` is created). Each test gets a database
of its own. Every service test runs in one xdist worker (group ``service``), so only one server is ever up.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")

PG_BIN = Path("/usr/lib/postgresql/15/bin")
ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "examples" / "live" / "cluster.yaml"  # 3 nodes: 2 x 2 V100, 1 x 2 K80
RESNET = "ResNet-18 (batch size 128)"
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"))


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/service/" in item.nodeid:
            item.add_marker(pytest.mark.xdist_group("service"))
            item.add_marker(pytest.mark.service)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------------------ PostgreSQL
@dataclass
class PgServer:
    port: int
    root: Path
    user: str
    counter: int = 0

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        import psycopg

        self.counter += 1
        name = f"t{os.getpid()}_{self.counter}"
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres", autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _pg_user() -> str | None:
    """The user the server runs as: None when not root (run as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "gpuweave-pg"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    subprocess.run(["useradd", "--system", "--no-create-home", "gpuweave-pg"], check=True)
    return "gpuweave-pg"


def _as(user: str | None, argv: list[str]) -> list[str]:
    return argv if user is None else ["runuser", "-u", user, "--", *argv]


@pytest.fixture(scope="session")
def postgres():
    if not (PG_BIN / "initdb").exists():
        pytest.skip("PostgreSQL 15 server binaries are not installed (/usr/lib/postgresql/15/bin)")
    pytest.importorskip("psycopg")
    user = _pg_user()
    root = Path(tempfile.mkdtemp(prefix="gpuweave-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if user is not None:
        shutil.chown(root, user)
        shutil.chown(sock, user)
    port = free_port()
    init = [str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]
    subprocess.run(_as(user, init), check=True, capture_output=True)
    options = f"-k {sock} -p {port} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    start = [str(PG_BIN / "pg_ctl"), "-D", str(data), "-o", options, "-w", "-t", "60", "-l", str(root / "log"), "start"]
    subprocess.run(_as(user, start), check=True, capture_output=True)
    try:
        yield PgServer(port, root, user or "")
    finally:
        stop = [str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]
        subprocess.run(_as(user, stop), capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request, tmp_path):
    """A fresh, empty database of each kind."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'service.db'}"
    return request.getfixturevalue("postgres").new_database()


@pytest.fixture
def sqlite_url(tmp_path):
    return f"sqlite:///{tmp_path / 'service.db'}"


# ------------------------------------------------------------------------------------------ services
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


@pytest.fixture
def make_service(tmp_path):
    """Build a service in this process (API + scheduling loop, no HTTP server): returns (service, TestClient)."""
    from fastapi.testclient import TestClient

    from gpuweave.service.server import build_service

    built = []

    def make(db: str, start: bool = True, **overrides):
        service = build_service(service_config(db, tmp_path / f"data{len(built)}", **overrides))
        if start:
            service.scheduler.start()
        built.append(service)
        return service, TestClient(service.app)

    yield make
    for service in built:
        if service.scheduler.thread is not None:
            service.scheduler.stop()
        service.engine.dispose()


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
        out = []
        for line in self.log.read_text().splitlines():
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

    holder.url = wait_for(serving, timeout=60)
    wait_for(lambda: httpx.get(f"{holder.url}/healthz", timeout=2).status_code == 200, timeout=30)
    return holder
