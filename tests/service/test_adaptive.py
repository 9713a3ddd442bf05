"""Adaptive jobs through the service (issue 38, item 4): a job submitted with its batch limits (the trace schema's
batch_size, max_batch_size, min_local_bsz, max_local_bsz; max_gpus its most GPUs, migration 0004) gets an agent in
the runtime, so a service may run a policy that decides on the jobs' agents alone (pollux, sia); such a policy takes
adaptive jobs only, and a bad set of limits is a 422 naming the field."""

from __future__ import annotations

import pytest

from tests.service.helpers import auth, job_spec, token, wait_for

ADAPTIVE = {"batch_size": 32, "max_batch_size": 256, "min_local_bsz": 8, "max_local_bsz": 64}


def test_adaptive_fields_are_checked_kept_and_required_by_a_policy_of_agents(sqlite_url, make_service):
    service, client = make_service(sqlite_url, start=False)
    alice, root = token(sqlite_url, "alice"), token(sqlite_url, "root", admin=True)

    def submit(name, **fields):
        return client.post("/api/v1/jobs", json=job_spec(name, **fields), headers=auth(alice))

    partial = submit("p", batch_size=32, max_batch_size=256)
    assert partial.status_code == 422 and "min_local_bsz" in partial.text
    backwards = submit("b", **dict(ADAPTIVE, batch_size=512))
    assert backwards.status_code == 422 and "batch_size <= max_batch_size" in backwards.text
    alone = submit("m", max_gpus=4)
    assert alone.status_code == 422 and "only an adaptive job may grow" in alone.text
    narrow = submit("n", gpus=2, max_gpus=1, **ADAPTIVE)
    assert narrow.status_code == 422 and "below the job's 2 GPUs" in narrow.text
    rigid = submit("rigid")
    assert rigid.status_code == 201, rigid.text
    elastic = submit("elastic", max_gpus=4, **ADAPTIVE)
    assert elastic.status_code == 201 and elastic.json()["max_gpus"] == 4 and elastic.json()["batch_size"] == 32
    shown = client.get(f"/api/v1/jobs/{elastic.json()['id']}", headers=auth(alice)).json()
    assert {k: shown[k] for k in ADAPTIVE} == ADAPTIVE  # read back from the database
    refused = client.put("/api/v1/policy", json={"name": "pollux"}, headers=auth(root))
    assert refused.status_code == 422 and f"job {rigid.json()['id']} (rigid) is not one" in refused.text
    client.post(f"/api/v1/jobs/{rigid.json()['id']}/cancel", headers=auth(alice))
    assert client.put("/api/v1/policy", json={"name": "pollux"}, headers=auth(root)).status_code == 200
    late = submit("late")
    assert late.status_code == 422 and "decides on adaptive jobs only" in late.text
    assert client.put("/api/v1/policy", json={"name": "hadar"}, headers=auth(root)).status_code == 200


def test_a_pollux_service_grows_an_adaptive_torch_job_on_its_measurements(sqlite_url, make_service):
    """Started with pollux: the job's workers (the bundled torch worker) measure its step times and gradient noise,
    its agent fits them, and pollux gives it more GPUs than its first one; it runs to done."""
    pytest.importorskip("torch")
    service, client = make_service(
        sqlite_url, policy="pollux", time_scale=40.0, checkpoint_every=0.5, restart_delay=30.0
    )
    alice = token(sqlite_url, "alice")
    spec = job_spec("elastic", steps=1500, program="torch --adascale", max_gpus=4, **ADAPTIVE)
    job = client.post("/api/v1/jobs", json=spec, headers=auth(alice))
    assert job.status_code == 201, job.text
    job_id = job.json()["id"]
    read = lambda: client.get(f"/api/v1/jobs/{job_id}", headers=auth(alice)).json()  # noqa: E731
    done = wait_for(lambda: read()["state"] in ("done", "failed") and read(), timeout=240, every=0.5)
    assert done["state"] == "done", done
    gpus = [sum(part["gpus"] for part in a["placement"]) for a in done["history"]]
    print("GPUs per attempt", gpus)
    assert gpus[0] == 1 and max(gpus) > 1, gpus  # unmeasured one GPU, then grown on what it measured
    runtime = service.scheduler.runtime
    agent = runtime.agents.agent(next(js for js in runtime.book.states if js.job.job_id == str(job_id)), 0.0)
    assert agent is not None and agent.perf is not None  # fitted to the workers' measurements
