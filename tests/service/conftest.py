"""Fixtures of the service tests: a throwaway PostgreSQL 15, databases of both kinds, services in-process and as
real processes, tokens.

PostgreSQL: one server per test session (``initdb`` + ``pg_ctl`` from /usr/lib/postgresql/15/bin), listening on
127.0.0.1 and a unix socket in a fresh temporary directory, trust authentication, ``fsync=off`` (the tests kill
processes, not machines). PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` user
(Debian's server package creates it; otherwise a system user ``gpuweave-pg`` is created). Each test gets a database
of its own. Every service test runs in one xdist worker (group ``service``), so only one server is ever up.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.service.helpers import PG_BIN, free_port, service_config

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/service/" in item.nodeid:
            item.add_marker(pytest.mark.xdist_group("service"))
            item.add_marker(pytest.mark.service)


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
