"""Small hand-built clusters and profile tables for simulator tests (no bundled data needed)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class FakeNode:
    index: int
    name: str
    gpu_model: str
    num_gpus: int
    price_per_kwh: float = 0.1
    pue: float = 1.0


class TableProfiles:
    """rate = base[model] * n (consolidated) or 0.8 * that (spread); 'big' cannot run on K80."""

    def __init__(self, base=None):
        self.base = base or {"V100": 3.0, "K80": 1.0}

    def rate(self, job_type, gpu_model, num_gpus, consolidated):
        from gpuweave.errors import MissingProfileError

        if gpu_model not in self.base:
            raise MissingProfileError(f"no profile for {job_type} on {gpu_model}")
        if job_type == "big" and gpu_model == "K80":
            return 0.0
        r = self.base[gpu_model] * num_gpus
        return r if consolidated else 0.8 * r


def make_nodes(spec):
    """spec: list of (model, gpus) per node."""
    return [FakeNode(i, f"n{i}", m, g) for i, (m, g) in enumerate(spec)]


POWER = {"V100": (50.0, 300.0), "K80": (25.0, 150.0)}


def random_trace(spec, jobs):
    """Nodes from ``spec``, TableProfiles, and the jobs ``(arrival, GPUs, work, type)`` that can run somewhere."""
    from gpuweave.workload.job import Job

    nodes = make_nodes(spec)
    profiles = TableProfiles()
    room: dict[str, int] = {}
    for nd in nodes:
        room[nd.gpu_model] = room.get(nd.gpu_model, 0) + nd.num_gpus
    trace = []
    for i, (arrival, n, work, jtype) in enumerate(jobs):
        if any(room[m] >= n and profiles.rate(jtype, m, n, True) > 0 for m in room):
            trace.append(Job(f"j{i}", arrival, n, work, jtype))
    return nodes, profiles, trace


def decision_history(nodes, trace, policy, profiles, power):
    """What a run decided: segments, each job's (id, first start, end, restarts), and the number of decisions."""
    from gpuweave.cluster.simulator import Simulator

    rec = Simulator(nodes, trace, policy, profiles, power).run()
    segments = [(s.job_id, s.start, s.end, s.placement) for s in rec.segments]
    return segments, [(js.job.job_id, js.first_start, js.end, js.restarts) for js in rec.jobs], rec.decisions


@pytest.fixture
def profiles():
    return TableProfiles()
