"""Jobs that share GPUs through the service: a service started with a task placement takes gpu_milli, cpu_milli
and memory_mib (database columns of migration 0002), its book's ledger places them (several on one GPU), and what
cannot be held is a 422 naming the field."""

from __future__ import annotations

import pytest

from tests.service.helpers import auth, job_spec, token, wait_for

SHARED = (
    "name: one-v100\nnodes:\n  - {gpu: V100, gpus_per_node: 1, cpu_milli: 8000, memory_mib: 65536, sharing: fraction}\n"
)


def _shared_service(tmp_path, db, make_service, **overrides):
    (tmp_path / "shared.yaml").write_text(SHARED)
    return make_service(db, cluster=str(tmp_path / "shared.yaml"), placement_rule="best-fit", **overrides)


@pytest.mark.parametrize("policy", ["fifo", "gavel"])  # Gavel's round counts shares too
def test_halves_of_one_gpu_run_together(sqlite_url, make_service, tmp_path, policy):
    service, client = _shared_service(tmp_path, sqlite_url, make_service, policy=policy)
    alice = token(sqlite_url, "alice")
    half = {"gpu_milli": 500, "cpu_milli": 2000, "memory_mib": 4096}
    ids = [client.post("/api/v1/jobs", json=job_spec(f"h{i}", steps=200000, **half), headers=auth(alice)).json()["id"]
           for i in range(2)]  # fmt: skip
    jobs = lambda: [client.get(f"/api/v1/jobs/{i}", headers=auth(alice)).json() for i in ids]  # noqa: E731
    both = wait_for(lambda: all(j["state"] == "running" for j in jobs()) and jobs(), timeout=30)
    assert [j["gpu_milli"] for j in both] == [500, 500] and both[0]["cpu_milli"] == 2000  # one GPU, two tasks
    (node,) = client.get("/api/v1/dashboard", headers=auth(alice)).json()["nodes"]
    assert node["gpus"] == 1 and node["busy"] == 1.0 and [j["share"] for j in node["jobs"]] == [0.5, 0.5]


def test_a_half_gpu_task_counts_half_a_gpu_busy_in_the_nodes_view_the_metrics_and_the_samples(
    sqlite_url, make_service, tmp_path
):
    service, client = _shared_service(tmp_path, sqlite_url, make_service)
    alice = token(sqlite_url, "alice")
    spec = job_spec("h", steps=200000, gpu_milli=500, cpu_milli=2000, memory_mib=4096)
    job = client.post("/api/v1/jobs", json=spec, headers=auth(alice)).json()
    wait_for(lambda: client.get(f"/api/v1/jobs/{job['id']}", headers=auth(alice)).json()["state"] == "running")
    (node,) = client.get("/api/v1/nodes", headers=auth(alice)).json()
    assert node["busy"] == 0.5 and node["jobs"][0]["share"] == 0.5  # the GPU is half taken, not taken
    gauge = 'gpuweave_busy_gpus{gpu_type="V100"} '

    def busy() -> list[float]:
        lines = client.get("/metrics").text.splitlines()
        return [float(line.split()[-1]) for line in lines if line.startswith(gauge)]

    assert wait_for(lambda: busy() == [0.5], timeout=30)
    history = lambda: client.get("/api/v1/dashboard", headers=auth(alice)).json()["series"]  # noqa: E731
    assert wait_for(lambda: any(s["busy"] == {"V100": 0.5} for s in history()), timeout=30)  # the dashboard's chart


def test_what_cannot_be_held_is_a_422(sqlite_url, make_service, tmp_path):
    service, client = _shared_service(tmp_path, sqlite_url, make_service, start=False)
    alice, root = token(sqlite_url, "alice"), token(sqlite_url, "root", admin=True)
    big = client.post("/api/v1/jobs", json=job_spec("big", cpu_milli=9000), headers=auth(alice))
    assert big.status_code == 422 and "fits on no node" in big.text
    wide = client.post("/api/v1/jobs", json=job_spec("wide", gpus=2, gpu_milli=500), headers=auth(alice))
    assert wide.status_code == 422 and "1-GPU jobs only" in wide.text
    refused = client.put("/api/v1/policy", json={"name": "hadar"}, headers=auth(root))
    assert refused.status_code == 422 and "places jobs by its own rule" in refused.text
    assert client.put("/api/v1/policy", json={"name": "gavel"}, headers=auth(root)).status_code == 200  # by shares


def test_a_whole_gpu_service_refuses_shares(sqlite_url, make_service):
    service, client = make_service(sqlite_url, start=False)
    alice = token(sqlite_url, "alice")
    answer = client.post("/api/v1/jobs", json=job_spec("s", gpu_milli=300), headers=auth(alice))
    assert answer.status_code == 422 and "this service places whole GPUs" in answer.text
