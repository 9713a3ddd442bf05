"""``gpuweave serve``: check everything, then run the API, the scheduling loop and the executor in one process.

Order (so a refused start leaves nothing behind): the cluster and the policy are checked, the port is bound
(refused if in use), the database is reached (refused if not), and only then is anything written: the data
directory, the schema (Alembic), the policy setting. Then the API answers at once, while the loop restores what the
database holds in a thread of its own (workers a killed service left are stopped at their checkpoint and their jobs
requeued; seconds per orphaned attempt): meanwhile ``/healthz`` answers 503 ``{"status": "starting"}`` and
``/api/v1`` 503 "starting"; once the loop runs, ``/healthz`` answers 200 ``{"status": "ok"}``. Each step is one log
line. SIGINT/SIGTERM stop the API, then the loop asks every worker to checkpoint and commits; a loop that fails (or
a recovery that fails) stops the API and the process exits 1.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from gpuweave.cluster.policies import check_runs_anywhere, make_policy
from gpuweave.errors import InputError
from gpuweave.hardware.cluster_spec import load_cluster
from gpuweave.service.config import ServiceConfig
from gpuweave.service.db import check_reachable, make_engine, migrate, redact, sqlite_url, writing
from gpuweave.service.health import FAILED, READY, STARTING
from gpuweave.service.ledger import add_event, get_setting, put_setting
from gpuweave.service.metrics import ServiceMetrics
from gpuweave.service.store import Limits, Store

if TYPE_CHECKING:
    import uvicorn
    from fastapi import FastAPI
    from sqlalchemy.engine import Engine

    from gpuweave.live.executor import Executor
    from gpuweave.service.scheduler import Scheduler

log = logging.getLogger("gpuweave.service.server")


@dataclass
class Service:
    config: ServiceConfig
    engine: Engine
    scheduler: Scheduler
    app: FastAPI
    metrics: ServiceMetrics


def resolve_policy(config: ServiceConfig) -> dict[str, Any] | None:
    """The policy to start with (flag, else the database's, else fifo); InputError naming the option if bad."""
    if config.policy is None:
        return None
    options = dict(config.policy_options)
    round_length = options.pop("round_length", None)
    try:
        check_runs_anywhere(config.policy, "the service", adaptive=True)  # jobs: adaptive ones only (store.submit)
        make_policy(config.policy, round_length=round_length, seed=config.seed, **options)
    except InputError as exc:
        raise InputError(exc.message, field="policy" if exc.field == "policy" else "policy-option") from None
    return {"name": config.policy, "options": options, "round_length": round_length}


def check_cluster(config: ServiceConfig) -> None:
    load_cluster(config.cluster)


def open_executor(config: ServiceConfig, work_dir: Path) -> Executor[Any]:
    """The executor the service drives (``work_dir`` holds what the executor writes, e.g. Slurm's batch scripts;
    the slurm executor submits to the service's partition, account and QoS)."""
    # imported here: importing gpuweave.service.server does without numpy
    from gpuweave.live.launch import make_executor

    settings = config.live_config("fifo", {})  # only its executor section is read here; the policy comes later
    return make_executor(config.executor, config.address, settings, out=work_dir)


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound now so that a port in use is refused before anything is written."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        what = "is in use" if exc.errno == 98 else f"cannot be bound: {exc.strerror}"
        raise InputError(f"port {port} on {host} {what}", field="port") from None
    sock.listen(2048)
    return sock


def build_service(config: ServiceConfig) -> Service:
    """Check, open the database, build the loop and the app (nothing runs yet)."""
    # imported here: importing gpuweave.service.server does without fastapi and numpy and starlette
    from gpuweave.service.app import ServiceState, create_app
    from gpuweave.service.scheduler import Scheduler

    check_cluster(config)
    wanted = resolve_policy(config)
    created = not config.data_dir.exists()
    if config.db == sqlite_url(config.data_dir):  # the default database lives in the data directory
        config.data_dir.mkdir(parents=True, exist_ok=True)
    try:
        engine = make_engine(config.db)
        check_reachable(engine)
        executor = open_executor(config, config.data_dir / "executor")
        config.data_dir.mkdir(parents=True, exist_ok=True)
        migrate(engine)
        store_policy(engine, wanted)
        metrics = ServiceMetrics()
        scheduler = Scheduler(engine, config, executor, metrics)  # the executor checks the cluster here
    except BaseException:
        if created:  # a refused start leaves no directory or database behind
            shutil.rmtree(config.data_dir, ignore_errors=True)
        raise
    limits = Limits(
        config.default_max_running_gpus, config.default_max_queued_jobs, config.allow_commands, config.worker_limits()
    )
    runtime = scheduler.runtime
    store = Store(
        engine,
        scheduler.nodes,
        runtime.base_profiles,
        limits,
        lambda: scheduler.live_steps,
        ideal_placement=runtime.ideal_placement,
        live_energy=lambda: scheduler.live_energy,
        live_totals=lambda: scheduler.live_totals,
        currency=load_cluster(config.cluster).currency,
        shared=scheduler.runtime.shared,
    )
    state = ServiceState(store, metrics, scheduler, seed=config.seed, max_body_bytes=config.max_body_bytes)
    return Service(config, engine, scheduler, create_app(state), metrics)


def store_policy(engine: Engine, wanted: dict[str, Any] | None) -> None:
    with writing(engine) as conn:
        current = get_setting(conn, "policy")
        if current is None and wanted is None:
            wanted = {"name": "fifo", "options": {}, "round_length": None}
        if wanted is not None:
            same = current is not None and all(current.get(k) == wanted[k] for k in wanted)
            if not same:
                value = {**wanted, "version": (current or {"version": 0})["version"] + 1}
                put_setting(conn, "policy", value)
                add_event(
                    conn, "policy-changed", name=value["name"], options=value["options"], version=value["version"]
                )


def serve(config: ServiceConfig) -> int:
    """Run until SIGINT/SIGTERM; returns the exit status."""
    import uvicorn

    from gpuweave import __version__

    # looked up when called: tests replace gpuweave.service.logs.configure
    from gpuweave.service.logs import configure

    configure()
    check_cluster(config)
    resolve_policy(config)
    sock = bind(config.host, config.port)
    host, port = sock.getsockname()[:2]
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        service = build_service(config)
    except BaseException:
        sock.close()
        raise
    # Logged once the checks have passed: a refused start is its one error line alone.
    _log_start(service, address, __version__)
    state = service.app.state.service
    state.phase = STARTING
    uv = uvicorn.Server(uvicorn.Config(service.app, log_config=None, access_log=False, lifespan="off"))
    url = f"http://{address}/"
    # "serving" (a line tools wait for) comes first: the port answers from now on, /healthz with "starting".
    log.info(
        "serving",
        extra={"fields": {"url": url, "db": _redacted(config.db), "status": STARTING, "healthz": f"{url}healthz"}},
    )
    startup = threading.Thread(target=_start_loop, args=(service, uv, address), name="gpuweave-startup", daemon=True)
    # uvicorn re-raises the signal that stopped it once it is done; with these handlers that is a no-op, so the
    # loop below still checkpoints every job (the default handlers would end the process first).
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _stopping)
    startup.start()
    try:
        uv.run(sockets=[sock])
    finally:
        # A recovery under way finishes first (it cannot be cut short: it is ending the last run's workers); a loop
        # it then starts sees the stop at once and checkpoints every job, like a running one.
        service.scheduler.stop_event.set()
        startup.join()
        service.scheduler.stop()
        service.engine.dispose()
    if state.phase == FAILED:
        log.error("stopped: the recovery failed", extra={"fields": {"error": service.scheduler.error}})
        return 1
    if service.scheduler.error:
        log.error("stopped: the scheduling loop failed", extra={"fields": {"error": service.scheduler.error}})
        return 1
    log.info("stopped")
    return 0


def _log_start(service: Service, address: str, version: str) -> None:
    config, scheduler = service.config, service.scheduler
    log.info(f"starting: gpuweave {version}, pid {os.getpid()}", extra={"fields": {"pid": os.getpid()}})
    log.info(
        f"checked: cluster, policy and database (reached, schema up to date); port {address} bound",
        extra={"fields": {"cluster": config.cluster, "db": _redacted(config.db)}},
    )
    gpus = sum(n.num_gpus for n in scheduler.nodes)
    policy = scheduler.runtime.config.policy
    log.info(
        f"built: {config.executor} executor, {len(scheduler.nodes)} nodes with {gpus} GPUs, policy {policy}",
        extra={"fields": {"executor": config.executor, "nodes": len(scheduler.nodes), "gpus": gpus, "policy": policy}},
    )


def _start_loop(service: Service, uv: uvicorn.Server, address: str) -> None:
    """Recover from the last run and start the scheduling loop (the API answers meanwhile); then stop the API
    when the loop ends on its own (an error): a service that cannot schedule exits."""
    state = service.app.state.service
    scheduler = service.scheduler
    began = time.monotonic()
    try:
        scheduler.start()
    except Exception as exc:
        scheduler.error = f"{type(exc).__name__}: {exc}"
        state.phase = FAILED
        log.exception("recovery failed", extra={"fields": {"error": scheduler.error}})
        uv.should_exit = True
        try:
            scheduler.runtime.executor.close()
        except Exception:
            log.exception("recovery failed: could not close the executor")
        return
    seconds = round(time.monotonic() - began, 3)
    state.phase = READY
    if scheduler.stop_event.is_set():  # stopped while recovering: the loop checkpoints and ends at once
        return
    log.info(
        f"ready: listening on {address} (recovery took {seconds} s)",
        extra={"fields": {"url": f"http://{address}/", "recovery_s": seconds, "status": READY}},
    )
    assert scheduler.thread is not None  # start() started it
    scheduler.thread.join()
    uv.should_exit = True


def _stopping(_signum: int, _frame: FrameType | None) -> None:
    log.info("stopping: checkpointing every running job")


def _redacted(url: str) -> str:
    return redact(url)
