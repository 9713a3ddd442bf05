"""Shared helpers for the Hadar tests: tiny clusters built from the bundled Gavel profiles."""

from __future__ import annotations

import pytest

from gpuweave.hardware.cluster_spec import Node
from gpuweave.workload.profiles import load_profiles

POWER = {m: (10.0, 100.0) for m in ("V100", "P100", "K80")}


def nodes_of(spec):
    """spec: list of (model, gpus)."""
    return [Node(i, f"{m.lower()}-{i}", m, g, 0.0, 1.0) for i, (m, g) in enumerate(spec)]


@pytest.fixture(scope="session")
def gavel_profiles():
    return load_profiles()
