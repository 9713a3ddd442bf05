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


@pytest.fixture
def profiles():
    return TableProfiles()
