"""ARMIDA instances of spec §12 (AC3-AC5) built by hand from the bundled tables."""

from __future__ import annotations

import pytest

from gpuweave.andreas.catalog import load_costs, load_profile_table
from gpuweave.andreas.model import NodeSpec, QueueJob, build_instance

ARMIDA_NODES = [NodeSpec("armida-05", "V100", 1), NodeSpec("armida-06", "V100", 2), NodeSpec("armida-07", "T4", 1)]


def times(app: str, epochs: float) -> dict:
    return {k: epochs * s for k, s in load_profile_table().configs(app).items()}


def armida_t0(h_wc: float = 300.0):
    """T = 0: only J6 (EfficientNet, 80 epochs, d = 3600, omega = 4)."""
    return build_instance(
        0.0, ARMIDA_NODES, [QueueJob("J6", 0.0, 3600.0, 4.0, times("efficientNet", 80))], load_costs(), h_wc=h_wc
    )


def armida_t1200(h_wc: float = 300.0):
    """T = 1200: J6 ran 1200 s on TESLA x2, J9 (ConvNet, 160 epochs, d = 1200 + 2600, omega = 2) arrives."""
    rem = 80 - 1200 / 41.2372
    j6 = QueueJob("J6", 0.0, 3600.0, 4.0, times("efficientNet", rem), running=(1, ("V100", 2)))
    j9 = QueueJob("J9", 1200.0, 3800.0, 2.0, times("convolutionNet", 160))
    return build_instance(1200.0, ARMIDA_NODES, [j6, j9], load_costs(), h_wc=h_wc)


@pytest.fixture
def inst0():
    return armida_t0()


@pytest.fixture
def inst1200():
    return armida_t1200()
