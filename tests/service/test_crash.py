"""Crash safety with real processes: ``kill -9`` of ``gpuweave serve`` mid-run, restart on the same database.

Every job must come back in its right state; the workers the killed service left running are stopped at their
checkpoint and their jobs requeued from it (never run beside a new attempt); no job is lost, none runs twice, none
is done twice, and the steps committed add up exactly to each job's steps. On SQLite and on PostgreSQL.
"""

from __future__ import annotations

import json
import os
import signal
import time

import httpx
from sqlalchemy import create_engine, text

from tests.service.helpers import auth, job_spec, start_service_process, token, wait_for

# 1-GPU jobs on the 4 V100s (7,200 steps per wall second each at time scale 400): the first four run about 11 s,
# so the service is killed and restarted (3 s, up to 8 s on a busy machine) while they run; three short ones wait.
STEPS = [80000] * 4 + [10000] * 3


def _rows(url: str, query: str) -> list:
    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
    try:
        with engine.connect() as conn:
            return conn.execute(text(query)).all()
    finally:
        engine.dispose()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not alive
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def test_kill_9_mid_run_loses_nothing_and_runs_nothing_twice(db_url, tmp_path):
    alice = token(db_url, "alice")
    data = tmp_path / "data"
    first = start_service_process(db_url, data, log_name="first.log")
    specs = [job_spec(f"c{i}", steps=steps, gpu_types=["V100"]) for i, steps in enumerate(STEPS)]
    try:
        with httpx.Client(base_url=first.url, headers=auth(alice), timeout=10) as client:
            ids = [client.post("/api/v1/jobs", json=spec).json()["id"] for spec in specs]

            # Mid-run: the first four have run for a second (checkpoints every 0.3 s), the others wait.
            wait_for(lambda: sum(j["state"] == "running" for j in client.get("/api/v1/jobs").json()["jobs"]) == 4)
            time.sleep(1.0)
            before = {j["id"]: j for j in client.get("/api/v1/jobs").json()["jobs"]}
            assert any(j["state"] == "running" for j in before.values())
    except BaseException:
        first.proc.terminate()  # a failure before the kill must not leave the service running
        first.proc.wait(timeout=60)
        raise
    orphan_pids = [
        pid
        for (copies,) in _rows(db_url, "SELECT copies FROM attempts WHERE ended_at IS NULL")
        for copy in json.loads(copies)
        for pid in copy["pids"]
    ]
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait()
    assert orphan_pids and any(_alive(p) for p in orphan_pids), "the killed service left no worker to re-adopt"

    second = start_service_process(db_url, data, log_name="second.log")
    try:
        assert not any(_alive(p) for p in orphan_pids)  # stopped at their checkpoint before anything relaunched
        with httpx.Client(base_url=second.url, headers=auth(alice), timeout=10) as client:
            after = {j["id"]: j for j in client.get("/api/v1/jobs", params={"limit": 100}).json()["jobs"]}
            assert set(after) == set(ids)
            for job_id, job in after.items():  # nothing went backwards
                assert job["committed_steps"] >= before[job_id]["committed_steps"]
                if before[job_id]["state"] == "done":
                    assert job["state"] == "done"
            wait_for(lambda: all(client.get(f"/api/v1/jobs/{i}").json()["state"] == "done" for i in ids), timeout=60)
            details = [client.get(f"/api/v1/jobs/{i}").json() for i in ids]
    finally:
        second.proc.send_signal(signal.SIGTERM)
        assert second.proc.wait(timeout=60) == 0
    orphaned = resumed_after_orphan = 0
    for job, steps in zip(details, STEPS):
        assert job["committed_steps"] == steps
        history = job["history"]
        assert [h["number"] for h in history] == list(range(1, len(history) + 1))
        assert sum(h["saved_steps"] for h in history) == steps  # every step committed once
        for earlier, later in zip(history, history[1:]):  # never two attempts at once
            assert earlier["ended_at"] <= later["started_at"]
        orphans = [i for i, h in enumerate(history) if h["outcome"] == "orphan"]
        orphaned += len(orphans)
        for i in orphans:  # an orphan stopped short of the job's steps: the job resumed from its checkpoint
            if sum(h["saved_steps"] for h in history[: i + 1]) < steps:
                resumed_after_orphan += 1
                assert (
                    history[i + 1]["kind"] in ("resume", "start")
                    and history[i + 1]["started_at"] >= history[i]["ended_at"]
                )
    assert orphaned >= 1 and resumed_after_orphan >= 1
    done_events = _rows(db_url, "SELECT job_id, COUNT(*) FROM events WHERE kind = 'done' GROUP BY job_id")
    assert sorted(done_events) == sorted((i, 1) for i in ids)
    kinds = {k for (k,) in _rows(db_url, "SELECT DISTINCT kind FROM events")}
    assert {"service-resumed", "orphan-ended", "requeued"} <= kinds
    resumed = [e for e in second.lines() if e.get("msg") == "resumed"]
    assert resumed and resumed[0]["orphan_attempts"] >= 1
