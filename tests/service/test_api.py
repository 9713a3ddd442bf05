"""The REST API on both databases: tokens, visibility, validation, quotas, cancellation, policy, nodes, events."""

from __future__ import annotations

import json

import pytest

from tests.service.helpers import RESNET, auth, job_spec, token, wait_for


def _job(client, tok, job_id):
    return client.get(f"/api/v1/jobs/{job_id}", headers=auth(tok)).json()


def test_jobs_run_to_done_with_history_and_visibility(db_url, make_service):
    service, client = make_service(db_url)
    alice, bob, admin = token(db_url, "alice"), token(db_url, "bob"), token(db_url, "root", admin=True)
    a = client.post("/api/v1/jobs", json=job_spec("a", steps=400, gpus=2), headers=auth(alice))
    assert a.status_code == 201 and a.json()["state"] == "queued" and a.json()["user"] == "alice"
    b = client.post("/api/v1/jobs", json=job_spec("b", steps=300), headers=auth(bob)).json()
    done = wait_for(lambda: (j := _job(client, alice, a.json()["id"]))["state"] == "done" and j, timeout=30)
    assert done["committed_steps"] == 400 and done["progress"] == 1.0 and done["energy_j"] > 0
    assert [h["kind"] for h in done["history"]] == ["start"] and done["history"][0]["outcome"] == "done"
    assert done["history"][0]["placement"][0]["gpus"] == 2
    # Users see only their own jobs: another user's job is "not found", for reading and for cancelling.
    assert client.get(f"/api/v1/jobs/{b['id']}", headers=auth(alice)).status_code == 404
    assert client.post(f"/api/v1/jobs/{b['id']}/cancel", headers=auth(alice)).status_code == 404
    assert [j["name"] for j in client.get("/api/v1/jobs", headers=auth(alice)).json()["jobs"]] == ["a"]
    everyone = client.get("/api/v1/jobs", headers=auth(admin)).json()
    assert everyone["total"] == 2 and {j["user"] for j in everyone["jobs"]} == {"alice", "bob"}
    only_bob = client.get("/api/v1/jobs", params={"user": "bob"}, headers=auth(admin)).json()
    assert [j["name"] for j in only_bob["jobs"]] == ["b"]
    kinds = [
        e["kind"] for e in client.get("/api/v1/events", params={"job_id": a.json()["id"]}, headers=auth(alice)).json()
    ]
    assert kinds[:3] == ["submitted", "admitted", "start"] and kinds[-1] == "done"
    assert not any(e["user"] == "bob" for e in client.get("/api/v1/events", headers=auth(alice)).json())


def test_tokens_are_required_and_stored_as_hashes(sqlite_url, make_service):
    service, client = make_service(sqlite_url, start=False)
    tok = token(sqlite_url, "alice")
    assert client.get("/api/v1/jobs").status_code == 401
    assert client.get("/api/v1/jobs", headers=auth("gw_" + "x" * 43)).status_code == 401
    assert client.get("/api/v1/jobs", headers={"Authorization": f"Basic {tok}"}).status_code == 401
    assert client.get("/api/v1/me", headers=auth(tok)).json()["name"] == "alice"
    with service.engine.connect() as conn:
        stored = [r[0] for r in conn.exec_driver_sql("SELECT token_hash FROM tokens")]
    assert tok not in stored and len(stored[0]) == 64
    from gpuweave.service.auth import revoke_tokens

    assert revoke_tokens(service.engine, "alice") == 1
    assert client.get("/api/v1/me", headers=auth(tok)).status_code == 401


@pytest.mark.parametrize(
    "body, field",
    [
        ({"gpus": 0}, "gpus"),
        ({"name": "bad name!"}, "name"),
        ({"steps": -5}, "steps"),
        ({"priority": "high"}, "priority"),
        ({"colour": "red"}, "colour"),
        ({"gpu_types": ["V100", "no such"]}, "gpu_types.1"),
        ({"job_type": "NoSuchModel"}, "job_type"),
        ({"gpu_types": ["A100"]}, "gpu_types"),
        ({"gpus": 8}, "gpus"),  # more GPUs than any GPU type of the cluster has: can never fit
        ({"gpus": 4, "gpu_types": ["K80"]}, "gpus"),
        ({"program": "/no/such/program"}, "program"),
    ],
)
def test_bad_submissions_are_422_naming_the_field_and_write_nothing(sqlite_url, make_service, body, field):
    service, client = make_service(sqlite_url, start=False)
    admin = token(sqlite_url, "root", admin=True)
    response = client.post("/api/v1/jobs", json={**job_spec(), **body}, headers=auth(admin))
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field and field in response.json()["detail"] or response.json()["detail"]
    assert client.get("/api/v1/jobs", headers=auth(admin)).json()["total"] == 0


def test_limits_quotas_and_commands(sqlite_url, make_service):
    service, client = make_service(sqlite_url, start=False, default_max_queued_jobs=2)
    alice = token(sqlite_url, "alice", max_running_gpus=2)
    big = client.post("/api/v1/jobs", content=b'{"name": "' + b"x" * 70000 + b'"}', headers=auth(alice))
    assert big.status_code == 413 and big.json()["field"] == "body"
    assert client.post("/api/v1/jobs", json=job_spec(gpus=3), headers=auth(alice)).json()["field"] == "gpus"
    assert client.post("/api/v1/jobs", json=job_spec("one"), headers=auth(alice)).status_code == 201
    assert client.post("/api/v1/jobs", json=job_spec("two"), headers=auth(alice)).status_code == 201
    third = client.post("/api/v1/jobs", json=job_spec("three"), headers=auth(alice))
    assert (
        third.status_code == 429 and third.json()["field"] == "quota" and "max_queued_jobs 2" in third.json()["detail"]
    )
    command = client.post("/api/v1/jobs", json=job_spec(program="/bin/true"), headers=auth(token(sqlite_url, "bob")))
    assert command.status_code == 403 and command.json()["field"] == "program"
    assert client.get("/api/v1/me", headers=auth(alice)).json()["queued_jobs"] == 2


def test_gpu_quota_holds_jobs_back_until_the_users_gpus_free(sqlite_url, make_service):
    service, client = make_service(sqlite_url)
    alice = token(sqlite_url, "alice", max_running_gpus=2)
    first = client.post("/api/v1/jobs", json=job_spec("first", steps=1500, gpus=2), headers=auth(alice)).json()
    second = client.post("/api/v1/jobs", json=job_spec("second", steps=200, gpus=1), headers=auth(alice)).json()
    held = wait_for(lambda: (j := _job(client, alice, second["id"]))["held"] and j)
    assert "quota" in held["held"] and held["state"] == "queued"
    assert _job(client, alice, first["id"])["state"] in ("queued", "running")
    wait_for(lambda: _job(client, alice, second["id"])["state"] == "done", timeout=40)
    first_done = _job(client, alice, first["id"])
    assert first_done["state"] == "done" and first_done["ended_at"] <= _job(client, alice, second["id"])["started_at"]


def test_cancel_waiting_running_and_finished_jobs(db_url, make_service):
    service, client = make_service(db_url)
    alice = token(db_url, "alice")
    spec = job_spec("long", steps=10**6, gpus=2)
    running = [
        client.post("/api/v1/jobs", json={**spec, "name": f"r{i}"}, headers=auth(alice)).json() for i in range(2)
    ]
    waiting = client.post(
        "/api/v1/jobs", json=job_spec("w", steps=10**6, gpus=2, gpu_types=["V100"]), headers=auth(alice)
    ).json()
    wait_for(lambda: all(_job(client, alice, j["id"])["state"] == "running" for j in running))
    answer = client.post(f"/api/v1/jobs/{waiting['id']}/cancel", headers=auth(alice))
    assert answer.status_code == 200 and answer.json()["state"] == "cancelled"
    answer = client.post(f"/api/v1/jobs/{running[0]['id']}/cancel", headers=auth(alice))
    assert answer.status_code == 202 and answer.json()["cancel_requested"]
    # Committed "cancelled" first, then the workers are killed and the attempt closed.
    gone = wait_for(lambda: (j := _job(client, alice, running[0]["id"]))["history"][-1]["outcome"] and j)
    assert gone["state"] == "cancelled" and gone["history"][-1]["outcome"] == "cancelled" and gone["placement"] is None
    assert client.post(f"/api/v1/jobs/{waiting['id']}/cancel", headers=auth(alice)).status_code == 409
    # The cancelled waiting job never started; the runtime forgot both.
    assert _job(client, alice, waiting["id"])["history"] == []
    wait_for(lambda: str(waiting["id"]) not in service.scheduler.runtime.jobs)
    nodes = client.get("/api/v1/nodes", headers=auth(alice)).json()
    assert sum(n["busy"] for n in nodes) == 2 and [j["id"] for n in nodes for j in n["jobs"]] == [running[1]["id"]]


def test_policy_read_and_change_by_admins_only(sqlite_url, make_service):
    service, client = make_service(sqlite_url)
    alice, root = token(sqlite_url, "alice"), token(sqlite_url, "root", admin=True)
    current = client.get("/api/v1/policy", headers=auth(alice)).json()
    assert current["name"] == "fifo" and "hadar" in current["available"]
    assert client.put("/api/v1/policy", json={"name": "sjf"}, headers=auth(alice)).status_code == 403
    bad = client.put("/api/v1/policy", json={"name": "nope"}, headers=auth(root))
    assert bad.status_code == 422 and bad.json()["field"] == "name"
    bad = client.put("/api/v1/policy", json={"name": "optimus"}, headers=auth(root))  # Pollux's job model only
    assert bad.status_code == 422 and bad.json()["field"] == "name" and "optimus" not in current["available"]
    bad = client.put("/api/v1/policy", json={"name": "hadar", "options": {"variant": "zzz"}}, headers=auth(root))
    assert bad.status_code == 422 and bad.json()["field"] == "options"
    changed = client.put(
        "/api/v1/policy", json={"name": "tiresias", "options": {"round_length": 60}}, headers=auth(root)
    )
    assert changed.status_code == 200 and changed.json()["version"] == current["version"] + 1
    wait_for(lambda: service.scheduler.runtime.policy.name == "tiresias")
    assert service.scheduler.runtime.policy.round_length == 60
    job = client.post("/api/v1/jobs", json=job_spec("after", steps=300), headers=auth(alice)).json()
    wait_for(lambda: _job(client, alice, job["id"])["state"] == "done", timeout=30)


def test_metrics_and_json_logs(sqlite_url, make_service):
    service, client = make_service(sqlite_url)
    alice = token(sqlite_url, "alice")
    job = client.post("/api/v1/jobs", json=job_spec("m", steps=300), headers=auth(alice)).json()
    wait_for(lambda: _job(client, alice, job["id"])["state"] == "done", timeout=30)
    text = client.get("/metrics").text
    for name in (
        "gpuweave_queue_length",
        "gpuweave_running_jobs",
        'gpuweave_busy_gpus{gpu_type="V100"}',
        "gpuweave_decision_seconds_count",
        "gpuweave_power_watts",
        "gpuweave_energy_joules",
        'gpuweave_api_request_seconds_count{method="POST",route="/api/v1/jobs",status="201"}',
    ):
        assert name in text, name
    import logging

    from gpuweave.service.logs import JsonFormatter

    record = logging.getLogger("t").makeRecord("gpuweave.service.api", 20, __file__, 1, "request", (), None)
    record.fields = {"status": 201, "route": "/api/v1/jobs"}
    entry = json.loads(JsonFormatter().format(record))
    assert entry["msg"] == "request" and entry["status"] == 201 and entry["level"] == "info" and "ts" in entry


def test_schema_migrations_match_the_tables(db_url):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from gpuweave.service.db import metadata, open_database

    engine = open_database(db_url)
    try:
        with engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), metadata) == []
        open_database(db_url).dispose()  # a second start finds the schema current
    finally:
        engine.dispose()


def test_allowed_gpu_types_are_honoured(sqlite_url, make_service):
    service, client = make_service(sqlite_url)
    alice = token(sqlite_url, "alice")
    job = client.post("/api/v1/jobs", json=job_spec("k", steps=200, gpu_types=["K80"]), headers=auth(alice)).json()
    assert job["gpu_types"] == ["K80"] and job["job_type"] == RESNET
    done = wait_for(lambda: (j := _job(client, alice, job["id"]))["state"] == "done" and j, timeout=30)
    assert {p["gpu_type"] for h in done["history"] for p in h["placement"]} == {"K80"}


def test_dashboard_is_static_files_that_load_nothing_from_the_network(sqlite_url, make_service):
    import re
    from pathlib import Path

    import gpuweave.service

    service, client = make_service(sqlite_url, start=False)
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    static = Path(gpuweave.service.__file__).parent / "static"
    for path in static.iterdir():
        assert client.get(f"/static/{path.name}").status_code == 200
        urls = set(re.findall(r"https?://[^\s\"'`)]+", path.read_text()))
        assert urls <= {"http://www.w3.org/2000/svg"}, (path.name, urls)  # an XML namespace, never fetched
    assert client.get("/docs").status_code == 404  # FastAPI's docs page would load scripts from a CDN
