"""``gpuweave serve`` (the scheduling service) and ``gpuweave serve token create|list|revoke`` (its users).

The service needs the ``service`` extra (FastAPI, uvicorn, SQLAlchemy, Alembic, prometheus-client, psycopg).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from gpuweave.checks import SEED
from gpuweave.errors import InputError
from gpuweave.executors import executor_names, known_executor, spoken

NAME = "serve"
DB_HELP = "Database URL: sqlite:///PATH or postgresql://USER[:PASSWORD]@HOST[:PORT]/DB (default: DATA_DIR/gpuweave.db)."
app = typer.Typer(
    help="Run the scheduling service: REST API, database, tokens, dashboard and metrics in one process.",
    invoke_without_command=True,
)
token_app = typer.Typer(help="Users and their API tokens (only a hash is stored).", no_args_is_help=True)
app.add_typer(token_app, name="token")


def _need_extra() -> None:
    try:
        import fastapi  # noqa: F401
        import sqlalchemy  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise InputError(f"the service needs the 'service' extra (pip install 'gpuweave[service]'): {exc}") from None


def _db_url(db: Optional[str], data_dir: Path) -> str:
    from gpuweave.service.db import sqlite_url

    return db or sqlite_url(data_dir)


@app.callback()
def serve(
    ctx: typer.Context,
    db: Optional[str] = typer.Option(None, "--db", envvar="GPUWEAVE_DB", help=DB_HELP),
    data_dir: Path = typer.Option(
        Path("gpuweave-data"), "--data-dir", help="Checkpoints, worker channels, the SQLite file."
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback unless you say otherwise)."),
    port: int = typer.Option(8765, "--port", help="TCP port (0 = any free port)."),
    executor: str = typer.Option("local", "--executor", help=f"Where workers run: {spoken(executor_names())}."),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address (ray executor)."),
    slurm_partition: Optional[str] = typer.Option(
        None, "--slurm-partition", help="Slurm partition of every job (slurm executor; default: Slurm's)."
    ),
    slurm_account: Optional[str] = typer.Option(
        None, "--slurm-account", help="Slurm account charged for every job (slurm executor)."
    ),
    slurm_qos: Optional[str] = typer.Option(None, "--slurm-qos", help="Slurm QoS of every job (slurm executor)."),
    cluster: str = typer.Option("gavel-60", "--cluster", "-c", help="Bundled cluster name or cluster YAML."),
    policy: Optional[str] = typer.Option(
        None, "--policy", "-p", help="Cluster policy (default: the one in the database, else fifo)."
    ),
    policy_option: list[str] = typer.Option([], "--policy-option", "-O", help="Policy option KEY=VALUE (repeat)."),
    placement_rule: Optional[str] = typer.Option(None, "--placement-rule", help="Task placement: jobs share GPUs."),
    time_scale: float = typer.Option(1.0, "--time-scale", help="Emulated seconds per wall second (GPU-less demos)."),
    checkpoint_every: float = typer.Option(5.0, "--checkpoint-every", help="Wall seconds between checkpoints."),
    max_retries: int = typer.Option(2, "--max-retries", help="Restarts of a crashed job before it fails."),
    report_timeout: float = typer.Option(30.0, "--report-timeout", help="Wall seconds a worker may stay silent."),
    stop_timeout: float = typer.Option(
        30.0, "--stop-timeout", help="Wall seconds a stopped worker may take to exit before it is killed."
    ),
    restart_delay: float = typer.Option(10.0, "--restart-delay", help="Seconds a resumed job is charged."),
    seed: int = typer.Option(0, "--seed", min=SEED.lo, max=SEED.hi, help="Seed of randomised policies."),
    max_running_gpus: Optional[int] = typer.Option(None, "--max-running-gpus", help="Default per-user GPU quota."),
    max_queued_jobs: Optional[int] = typer.Option(None, "--max-queued-jobs", help="Default per-user waiting jobs."),
    job_memory: float = typer.Option(
        2.0, "--job-memory", help="GiB of host memory a non-admin user's worker may allocate (local executor; 0: none)."
    ),
    job_cpu_seconds: int = typer.Option(
        86400, "--job-cpu-seconds", help="CPU seconds a non-admin user's worker may use (local executor; 0: none)."
    ),
    allow_commands: bool = typer.Option(False, "--allow-commands", help="Users (not only admins) may submit commands."),
) -> None:
    """Start the service (without a subcommand): `gpuweave serve --db URL --cluster NAME --policy NAME`.

    Long because every flag of the command is a parameter of this function (typer reads them from it)."""
    from pydantic import ValidationError

    from gpuweave.checks import validation_error
    from gpuweave.cli.cluster import parse_policy_options

    ctx.obj = {"db": db, "data_dir": data_dir}
    if ctx.invoked_subcommand is not None:
        return
    _need_extra()
    from gpuweave.service.config import ServiceConfig
    from gpuweave.service.server import serve as run_service

    known_executor(executor)
    try:
        config = ServiceConfig(
            db=_db_url(db, data_dir),
            data_dir=data_dir.resolve(),
            host=host,
            port=port,
            executor=executor,
            address=address,
            slurm_partition=slurm_partition,
            slurm_account=slurm_account,
            slurm_qos=slurm_qos,
            cluster=cluster,
            policy=policy,
            policy_options=parse_policy_options(policy_option),
            placement_rule=placement_rule,
            seed=seed,
            restart_delay=restart_delay,
            time_scale=time_scale,
            checkpoint_every=checkpoint_every,
            max_retries=max_retries,
            report_timeout=report_timeout,
            stop_timeout=stop_timeout,
            default_max_running_gpus=max_running_gpus,
            default_max_queued_jobs=max_queued_jobs,
            job_memory_gib=job_memory,
            job_cpu_seconds=job_cpu_seconds,
            allow_commands=allow_commands,
        )
    except ValidationError as exc:  # one line naming the option (the bounds are the live config's: service.config)
        error = validation_error(exc)
        name = (error.field or "").split(".")[0]
        raise InputError(error.message, field=OPTION_OF.get(name, name.replace("_", "-")) or None) from None
    raise typer.Exit(run_service(config))


#: ServiceConfig fields whose option is not the field's name
OPTION_OF = {
    "policy_options": "policy-option",
    "default_max_running_gpus": "max-running-gpus",
    "default_max_queued_jobs": "max-queued-jobs",
    "job_memory_gib": "job-memory",
}


def _engine(ctx: typer.Context):
    _need_extra()
    from gpuweave.service.db import open_database

    data_dir = ctx.obj["data_dir"]
    if ctx.obj["db"] is None:
        data_dir.mkdir(parents=True, exist_ok=True)
    return open_database(_db_url(ctx.obj["db"], data_dir))


@token_app.command("create")
def token_create(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="User name (created if new)."),
    admin: bool = typer.Option(False, "--admin", help="The user may see every job and change the policy."),
    max_running_gpus: Optional[int] = typer.Option(None, "--max-running-gpus", help="The user's GPU quota."),
    max_queued_jobs: Optional[int] = typer.Option(None, "--max-queued-jobs", help="The user's waiting-job quota."),
    slurm_account: Optional[str] = typer.Option(
        None, "--slurm-account", help="Slurm account the user's jobs are charged to (slurm executor)."
    ),
    slurm_qos: Optional[str] = typer.Option(None, "--slurm-qos", help="Slurm QoS of the user's jobs (slurm executor)."),
) -> None:
    """Create a token for NAME and print it once (only its hash is stored)."""
    from gpuweave.service.auth import create_token

    engine = _engine(ctx)
    token = create_token(
        engine,
        name,
        admin=admin,
        max_running_gpus=max_running_gpus,
        max_queued_jobs=max_queued_jobs,
        slurm_account=slurm_account,
        slurm_qos=slurm_qos,
    )
    typer.echo(token)


@token_app.command("list")
def token_list(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Users with their quotas and number of live tokens (tokens themselves are never shown again)."""
    from gpuweave.service.auth import list_users

    rows = list_users(_engine(ctx))
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console

    from gpuweave.cli.output import print_table

    columns = ("name", "admin", "tokens", "max_running_gpus", "max_queued_jobs", "slurm_account", "slurm_qos")
    table_rows = [
        [r["name"], str(bool(r["admin"])), str(r["tokens"]), str(r["max_running_gpus"] or "-"),
         str(r["max_queued_jobs"] or "-"), r["slurm_account"] or "-", r["slurm_qos"] or "-"]
        for r in rows
    ]  # fmt: skip
    print_table(Console(), "users", columns, table_rows)


@token_app.command("revoke")
def token_revoke(ctx: typer.Context, name: str = typer.Argument(..., help="User whose tokens are revoked.")) -> None:
    """Revoke every token of NAME (their API calls get 401 from now on)."""
    from gpuweave.service.auth import revoke_tokens

    count = revoke_tokens(_engine(ctx), name)
    typer.echo(f"revoked {count} token(s) of {name}")
