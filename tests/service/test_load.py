"""Load on loopback, bounded and self-stopping: many clients submit at once while the policy runs.

Each client submits its share of jobs (unique names) one after another; every answer's latency is recorded.
Afterwards the database must hold exactly the accepted jobs (none lost, none duplicated) and every job must finish.
The small version runs in ``make test``; the full one (1,000 submissions from 50 clients, on SQLite and
PostgreSQL) is ``make load-test`` (marker ``load``), which prints p50/p99 latency and throughput and writes them to
``$GPUWEAVE_LOAD_REPORT`` (JSON) when set.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import time

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.service.helpers import auth, job_spec, start_service_process, token, wait_for

DEADLINE_S = 300  # the whole load phase stops by itself after this


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


async def _submit_all(url: str, tok: str, jobs: int, clients: int) -> tuple[dict[str, int], list[float], int]:
    """``clients`` concurrent clients submit ``jobs`` jobs in all; returns accepted name -> id, latencies, refusals."""
    accepted: dict[str, int] = {}
    latencies: list[float] = []
    refused = 0
    stop_at = time.monotonic() + DEADLINE_S
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async with httpx.AsyncClient(base_url=url, headers=auth(tok), timeout=60, limits=limits) as client:

        async def one_client(index: int) -> None:
            nonlocal refused
            for seq in range(index, jobs, clients):
                if time.monotonic() > stop_at:
                    return
                name = f"load-{seq:05d}"
                start = time.perf_counter()
                response = await client.post("/api/v1/jobs", json=job_spec(name, steps=200, gpu_types=["V100"]))
                latencies.append(time.perf_counter() - start)
                if response.status_code == 201:
                    assert name not in accepted
                    accepted[name] = response.json()["id"]
                else:
                    refused += 1

        await asyncio.gather(*(one_client(i) for i in range(clients)))
    return accepted, latencies, refused


def run_load(db_url: str, tmp_path, jobs: int, clients: int) -> dict:
    tok = token(db_url, "load")
    service = start_service_process(db_url, tmp_path / "data", "--time-scale", "2000", "--checkpoint-every", "5")
    try:
        wall = time.perf_counter()
        accepted, latencies, refused = asyncio.run(_submit_all(service.url, tok, jobs, clients))
        submit_s = time.perf_counter() - wall
        engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://"))
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT id, name FROM jobs")).all()
        assert refused == 0 and len(accepted) == jobs
        assert len(rows) == len(accepted)  # none lost, none extra
        assert sorted(r.name for r in rows) == sorted(accepted)  # none duplicated
        assert {r.name: r.id for r in rows} == accepted

        def all_done():
            with engine.connect() as conn:
                return conn.execute(text("SELECT COUNT(*) FROM jobs WHERE state = 'done'")).scalar_one() == jobs

        wait_for(all_done, timeout=DEADLINE_S, every=0.5)
        total_s = time.perf_counter() - wall
        with engine.connect() as conn:
            starts = conn.execute(text("SELECT COUNT(*) FROM attempts")).scalar_one()
        engine.dispose()
    finally:
        service.proc.send_signal(signal.SIGTERM)
        service.proc.wait(timeout=120)
    return {
        "database": db_url.split(":", 1)[0],
        "submissions": jobs,
        "clients": clients,
        "accepted": len(accepted),
        "lost": jobs - len(rows),
        "duplicated": len(rows) - len({r.name for r in rows}),
        "latency_p50_ms": round(1000 * _percentile(latencies, 50), 2),
        "latency_p99_ms": round(1000 * _percentile(latencies, 99), 2),
        "latency_mean_ms": round(1000 * statistics.fmean(latencies), 2),
        "submissions_per_s": round(jobs / submit_s, 1),
        "all_done_s": round(total_s, 1),
        "launches": starts,
    }


def _report(result: dict) -> None:
    print("\nload:", json.dumps(result))
    path = os.environ.get("GPUWEAVE_LOAD_REPORT")
    if path:
        with open(path, "a") as fh:
            fh.write(json.dumps(result) + "\n")


def test_small_load_loses_nothing(sqlite_url, tmp_path):
    result = run_load(sqlite_url, tmp_path, jobs=120, clients=12)
    assert result["lost"] == 0 and result["duplicated"] == 0
    _report(result)


@pytest.mark.load
def test_full_load_1000_submissions_50_clients(db_url, tmp_path):
    result = run_load(db_url, tmp_path, jobs=1000, clients=50)
    assert result["lost"] == 0 and result["duplicated"] == 0
    _report(result)
