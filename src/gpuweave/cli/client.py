"""``gpuweave submit|jobs|cancel|nodes``: the service's command-line client.

``--server`` (or ``GPUWEAVE_SERVER``) names the service, ``GPUWEAVE_TOKEN`` holds the token; ``--json`` prints the
API's answer as it came. A refused request is one line on stderr and exit 2, naming the field the server named.
"""

from __future__ import annotations

import json
from typing import Callable, Optional

import typer

SERVER_HELP = "Service URL (default: $GPUWEAVE_SERVER or http://127.0.0.1:8765); the token is $GPUWEAVE_TOKEN."
JSON_HELP = "Print the API's JSON answer."
DEFAULT_JOB_TYPE = "ResNet-18 (batch size 128)"


def _client(server: Optional[str]):
    from gpuweave.service.client import Client

    return Client(server)


def _placement(parts) -> str:
    return ";".join(f"{p['node']}:{p['gpus']}" for p in parts or []) or "-"


def _print_jobs(rows: list[dict], title: str) -> None:
    from rich.console import Console

    from gpuweave.cli.output import print_table

    table_rows = []
    for j in rows:
        note = j["held"] or (j["reason"] if j["state"] in ("failed", "cancelled") else "")
        table_rows.append(
            [str(j["id"]), j["name"], j["user"], j["state"], str(j["gpus"]), f"{100 * j['progress']:.0f}%",
             _placement(j["placement"]), note]
        )  # fmt: skip
    columns = ("id", "name", "user", "state", "gpus", "progress", "placement", "held/reason")
    print_table(Console(), title, columns, table_rows)


def submit(
    name: str = typer.Argument(..., help="Job name (letters, digits, '.', '_', '-')."),
    steps: int = typer.Option(..., "--steps", help="Training steps to run."),
    gpus: int = typer.Option(1, "--gpus", "-g", help="GPUs (all or none)."),
    job_type: str = typer.Option(DEFAULT_JOB_TYPE, "--job-type", help="Job type of the profile store."),
    program: str = typer.Option("synthetic", "--program", help="synthetic, torch, or a command (admins)."),
    gpu_type: list[str] = typer.Option([], "--gpu-type", help="Allowed GPU type (repeat; default any)."),
    deadline: Optional[float] = typer.Option(None, "--deadline", help="Seconds after submission."),
    priority: float = typer.Option(1.0, "--priority", help="Weight (> 0)."),
    gpu_milli: Optional[int] = typer.Option(None, "--gpu-milli", help="Share of each GPU, 1..1000 (shared service)."),
    cpu_milli: Optional[int] = typer.Option(None, "--cpu-milli", help="CPU in milli-cores (shared service)."),
    memory_mib: Optional[int] = typer.Option(None, "--memory-mib", help="Memory in MiB (shared service)."),
    batch_size: Optional[int] = typer.Option(
        None, "--batch-size", help="An adaptive job's initial global batch (with the three below; pollux, sia)."
    ),
    max_batch_size: Optional[int] = typer.Option(None, "--max-batch-size", help="An adaptive job's largest batch."),
    min_local_bsz: Optional[int] = typer.Option(None, "--min-local-bsz", help="An adaptive job's least per GPU."),
    max_local_bsz: Optional[int] = typer.Option(None, "--max-local-bsz", help="An adaptive job's most per GPU."),
    max_gpus: Optional[int] = typer.Option(None, "--max-gpus", help="The most GPUs an adaptive job may grow to."),
    server: Optional[str] = typer.Option(None, "--server", help=SERVER_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Submit a job to the service (shares of GPUs, CPU and memory on a service with a task placement; an adaptive
    job's batch limits, whose agent picks its batch under pollux or sia)."""
    spec = {"name": name, "steps": steps, "gpus": gpus, "job_type": job_type, "program": program, "priority": priority}
    if gpu_type:
        spec["gpu_types"] = gpu_type
    if deadline is not None:
        spec["deadline_s"] = deadline
    extra = {"gpu_milli": gpu_milli, "cpu_milli": cpu_milli, "memory_mib": memory_mib, "batch_size": batch_size,
             "max_batch_size": max_batch_size, "min_local_bsz": min_local_bsz, "max_local_bsz": max_local_bsz,
             "max_gpus": max_gpus}  # fmt: skip
    spec.update({key: value for key, value in extra.items() if value is not None})
    job = _client(server).submit(spec)
    typer.echo(json.dumps(job, indent=2) if as_json else f"submitted job {job['id']} ({job['name']}): {job['state']}")


def jobs(
    state: list[str] = typer.Option([], "--state", help="Only jobs in this state (repeat)."),
    user: Optional[str] = typer.Option(None, "--user", help="Only this user's jobs (admins)."),
    name: Optional[str] = typer.Option(None, "--name", help="Only jobs of this name."),
    limit: int = typer.Option(100, "--limit", help="At most this many (newest first)."),
    job_id: Optional[int] = typer.Option(None, "--id", help="One job with its history of placements."),
    server: Optional[str] = typer.Option(None, "--server", help=SERVER_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """List your jobs (every job for an admin), or one job with --id."""
    client = _client(server)
    if job_id is not None:
        job = client.job(job_id)
        if as_json:
            typer.echo(json.dumps(job, indent=2))
            return
        _print_jobs([job], f"job {job_id}")
        for a in job["history"]:
            typer.echo(
                f"  attempt {a['number']} {a['kind']} on {_placement(a['placement'])}: {a['outcome'] or 'running'}"
            )
        return
    answer = client.jobs(state=state or None, user=user, name=name, limit=limit)
    if as_json:
        typer.echo(json.dumps(answer, indent=2))
        return
    _print_jobs(answer["jobs"], f"jobs ({len(answer['jobs'])} of {answer['total']})")


def cancel(
    job_id: int = typer.Argument(..., help="Job id."),
    server: Optional[str] = typer.Option(None, "--server", help=SERVER_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Cancel a job (yours; any job for an admin)."""
    job = _client(server).cancel(job_id)
    if as_json:
        typer.echo(json.dumps(job, indent=2))
        return
    state = (
        "cancelling (its workers are being stopped)" if job["state"] in ("running", "checkpointing") else job["state"]
    )
    typer.echo(f"job {job['id']} ({job['name']}): {state}")


def nodes(
    server: Optional[str] = typer.Option(None, "--server", help=SERVER_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Nodes of the service's cluster, their GPUs and what runs on them."""
    rows = _client(server).nodes()
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console

    from gpuweave.cli.output import print_table

    table_rows = []
    for n in rows:
        jobs_text = ", ".join(f"{j['id'] if j['id'] is not None else '(other)'}:{j['gpus']}" for j in n["jobs"]) or "-"
        table_rows.append([n["name"], n["gpu_type"], f"{n['busy']}/{n['gpus']}", jobs_text])
    print_table(Console(), "nodes", ("node", "gpu type", "busy", "jobs"), table_rows)


COMMANDS: dict[str, Callable[..., None]] = {"submit": submit, "jobs": jobs, "cancel": cancel, "nodes": nodes}
