"""The service's database: tables, engines for SQLite and PostgreSQL, and migrations.

The database is the service's source of truth. Tables (SQLAlchemy Core; the schema's history is in
``migrations/versions``, applied by Alembic at start): ``users`` and their ``tokens`` (SHA-256 hashes only),
``jobs`` (one row per submission, its state and what the runtime committed), ``attempts`` (every launch of a job:
placement, worker ids, steps saved), ``events`` (the event log), ``samples`` (busy GPUs, power, energy over time)
and ``settings`` (the policy in force, the clock's origin).

SQLite (the default, a file in the data directory) runs in WAL mode with ``synchronous=FULL`` (a committed
transition survives a power cut, not only a killed process); every transaction starts with ``BEGIN IMMEDIATE`` so
that two writers never fail on a stale snapshot: they wait (``busy_timeout``) instead. PostgreSQL URLs
(``postgresql://...``) use psycopg 3. Job counts per user are serialised by a row lock on the user (quotas).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    text,
)
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError

from gpuweave.errors import InputError

CONNECT_TIMEOUT_S = 5
SQLITE_BUSY_MS = 30_000

metadata = MetaData()

users = Table(
    "users",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(64), nullable=False, unique=True),
    Column("admin", Boolean, nullable=False, default=False),
    Column("max_running_gpus", Integer, nullable=True),  # None: the service's default
    Column("max_queued_jobs", Integer, nullable=True),
    Column("created_at", Float, nullable=False),
    # the Slurm account its jobs are charged to and their QoS (slurm executor; None: the service's --slurm-*)
    Column("slurm_account", String(64), nullable=True),
    Column("slurm_qos", String(64), nullable=True),
)

tokens = Table(
    "tokens",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("user_id", Integer, ForeignKey("users.id"), nullable=False, index=True),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("created_at", Float, nullable=False),
    Column("revoked", Boolean, nullable=False, default=False),
)

jobs = Table(
    "jobs",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("user_id", Integer, ForeignKey("users.id"), nullable=False, index=True),
    Column("name", String(128), nullable=False),
    Column("state", String(16), nullable=False, index=True),
    Column("program", String(1024), nullable=False),
    Column("job_type", String(128), nullable=False),
    Column("gpus", Integer, nullable=False),
    Column("gpu_types", Text, nullable=True),  # JSON list; None = any
    # a service whose placement is a task placement: the job's share of each GPU, CPU and memory (None: not asked)
    Column("gpu_milli", Integer, nullable=True),
    Column("cpu_milli", Integer, nullable=True),
    Column("memory_mib", Integer, nullable=True),
    # an adaptive job (migration 0004): the batch limits its agent picks within and its most GPUs (None: rigid)
    Column("batch_size", Integer, nullable=True),
    Column("max_batch_size", Integer, nullable=True),
    Column("min_local_bsz", Integer, nullable=True),
    Column("max_local_bsz", Integer, nullable=True),
    Column("max_gpus", Integer, nullable=True),
    Column("steps", Integer, nullable=False),
    Column("priority", Float, nullable=False, default=1.0),
    Column("deadline_s", Float, nullable=True),  # simulated seconds after submission
    Column("submitted_at", Float, nullable=False),  # wall clock
    Column("admitted", Boolean, nullable=False, default=False),  # handed to the scheduling loop
    Column("arrival", Float, nullable=True),  # simulated time it was handed over
    Column("held", String(256), nullable=False, default=""),  # why it waits outside the policy's queue
    Column("placement", Text, nullable=True),  # JSON [[node, gpus], ...] while it holds GPUs
    Column("attempts", Integer, nullable=False, default=0),
    Column("crashes", Integer, nullable=False, default=0),
    Column("committed", Integer, nullable=False, default=0),  # steps saved in checkpoints
    Column("first_start", Float, nullable=True),  # simulated
    Column("restarts", Integer, nullable=False, default=0),
    Column("started_at", Float, nullable=True),  # wall clock of the first launch
    Column("ended_at", Float, nullable=True),  # wall clock of done/failed/cancelled
    Column("end_sim", Float, nullable=True),
    Column("reason", Text, nullable=False, default=""),
    Column("cancel_requested", Boolean, nullable=False, default=False),
    Column("api_rev", Integer, nullable=False, default=1),  # bumped by every API write to the row
    Column("pending_sync", Boolean, nullable=False, default=True, index=True),  # the loop has not seen api_rev
    Column("gpu_seconds", Float, nullable=False, default=0.0),
    Column("energy_j", Float, nullable=False, default=0.0),
    Column("cost", Float, nullable=False, default=0.0),
    Index("ix_jobs_admission", "admitted", "state"),
)

attempts = Table(
    "attempts",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("job_id", Integer, ForeignKey("jobs.id"), nullable=False, index=True),
    Column("number", Integer, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("placement", Text, nullable=False),  # JSON [[node, gpus], ...]
    Column("forked", Boolean, nullable=False, default=False),
    Column("copies", Text, nullable=True),  # JSON: checkpoint, channel, pids per copy (after the launch)
    Column("started_at", Float, nullable=False),
    Column("ended_at", Float, nullable=True),
    Column("saved", Integer, nullable=True),
    Column("outcome", String(16), nullable=True),
    UniqueConstraint("job_id", "number", name="uq_attempt_number"),
)

events = Table(
    "events",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("at", Float, nullable=False),
    Column("sim", Float, nullable=True),
    Column("kind", String(32), nullable=False),
    Column("job_id", Integer, nullable=True, index=True),
    Column("user_id", Integer, nullable=True, index=True),
    Column("detail", Text, nullable=False, default="{}"),
)

samples = Table(
    "samples",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("at", Float, nullable=False),
    Column("sim", Float, nullable=False),
    Column("busy", Text, nullable=False),  # JSON {gpu type: busy GPUs}
    Column("power_w", Float, nullable=False),
    Column("energy_j", Float, nullable=False),
    Column("cost", Float, nullable=False),
    Column("queued", Integer, nullable=False),
    Column("running", Integer, nullable=False),
)

settings = Table(
    "settings",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

ACTIVE_STATES = ("queued", "running", "checkpointing", "preempted")
TERMINAL_STATES = ("done", "failed", "cancelled")


def sqlite_url(data_dir: Path) -> str:
    return f"sqlite:///{Path(data_dir).resolve() / 'gpuweave.db'}"


def redact(url: str) -> str:
    """The URL without its password (for messages and logs)."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


def make_engine(url: str) -> Engine:
    """An engine for ``url``; InputError for a URL that cannot work (unknown scheme, missing SQLite directory)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise InputError(f"cannot parse database URL {redact(url)!r}", field="db") from None
    backend = parsed.get_backend_name()
    if backend == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
        kwargs = {"connect_args": {"connect_timeout": CONNECT_TIMEOUT_S}, "pool_size": 10, "max_overflow": 20}
    elif backend == "sqlite":
        if not parsed.database or parsed.database == ":memory:":
            raise InputError("an SQLite database must be a file (sqlite:///PATH)", field="db")
        folder = Path(parsed.database).parent
        if not folder.is_dir():
            raise InputError(f"directory {folder} of the SQLite database does not exist", field="db")
        kwargs = {"connect_args": {"timeout": SQLITE_BUSY_MS / 1000, "check_same_thread": False}, "pool_size": 10}
    else:
        raise InputError(f"unsupported database {backend!r}: use sqlite:///PATH or postgresql://...", field="db")
    try:
        engine = create_engine(parsed, pool_pre_ping=True, max_overflow=kwargs.pop("max_overflow", 20), **kwargs)
    except (NoSuchModuleError, ImportError) as exc:
        raise InputError(f"no driver for {backend}: {exc}", field="db") from None
    if backend == "sqlite":
        _sqlite_pragmas(engine)
        engine.gw_write_lock = threading.Lock()  # type: ignore[attr-defined]  # ours: SQLite's one writer
    return engine


def _sqlite_pragmas(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN itself (below), not the driver
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_MS}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # Readers (see reading()) take no lock in WAL mode; writers take the write lock at BEGIN, so a writer
        # never has to upgrade a stale read snapshot (SQLITE_BUSY_SNAPSHOT): it waits for the lock instead.
        conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get("gw_read") else "BEGIN IMMEDIATE")


@contextmanager
def writing(engine: Engine) -> Iterator[Connection]:
    """A write transaction (``with writing(engine) as conn``). On SQLite the service's threads queue on a lock
    first: SQLite's own busy handler sleeps in growing steps (up to 100 ms) before it retries, which under load
    costs far more than waiting in line; PostgreSQL needs no such line (row locks)."""
    lock = getattr(engine, "gw_write_lock", None)
    if lock is None:
        with engine.begin() as conn:
            yield conn
        return
    with lock, engine.begin() as conn:
        yield conn


def reading(engine: Engine) -> Connection:
    """A connection for reads only (``with reading(engine) as conn``): on SQLite it does not queue behind writers."""
    return engine.connect().execution_options(gw_read=True)


def check_reachable(engine: Engine) -> None:
    """InputError, before anything is written, when the database cannot be reached or logged into."""
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except OperationalError as exc:
        detail = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc).splitlines()[0]
        raise InputError(f"cannot reach the database at {redact(str(engine.url))}: {detail}", field="db") from None


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision (Alembic, scripts shipped in the package)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "head")


def open_database(url: str) -> Engine:
    """Engine for ``url``, reachable and migrated."""
    engine = make_engine(url)
    check_reachable(engine)
    migrate(engine)
    return engine
