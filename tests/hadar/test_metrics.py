"""GRU per round, churn and completion times on a hand-made record."""

from __future__ import annotations

import numpy as np
import pytest

from gpuweave.cluster.simulator import Segment, SimulationRecords
from gpuweave.cluster.state import JobState
from gpuweave.repro.hadar import metrics as hm
from gpuweave.workload.job import Job


def record():
    a = JobState(Job("a", 0.0, 2, 1.0, "t"), 0.0, end=540.0)
    b = JobState(Job("b", 0.0, 1, 1.0, "t"), 0.0, end=900.0)
    segs = [
        Segment("a", 0.0, 360.0, ((0, 2),), 1.0, 0.0),
        Segment("a", 360.0, 540.0, ((1, 2),), 1.0, 10.0),  # moved at the round boundary
        Segment("b", 0.0, 900.0, ((0, 1),), 1.0, 0.0),
    ]
    return SimulationRecords([a, b], segs, [], [], ["V100"], 4, {"V100": 4}, 0.0, 0.0, 0.0, 900.0, 0, 0)


def test_gru_per_round_and_cdf():
    rec = record()
    gru = hm.gru_per_round(rec, 360.0)
    assert gru == pytest.approx([3 / 4, (2 * 180 + 360) / (4 * 360), 1 / 4])
    no_restart = hm.gru_per_round(rec, 360.0, include_restart=False)
    assert no_restart[1] == pytest.approx((2 * 170 + 360) / (4 * 360))
    w = hm.round_weights(rec, 360.0)
    assert list(w) == [360.0, 360.0, 180.0]
    x, c = hm.gru_cdf(gru, w)
    assert c[-1] == pytest.approx(1.0) and np.all(np.diff(x) >= 0)


def test_ttd_t50_churn():
    rec = record()
    assert hm.ttd(rec) == 900.0 and hm.time_to_fraction(rec, 0.5) == 540.0
    assert hm.churn(rec, 360.0) == pytest.approx(1 / 3)
    assert hm.mean_jct(rec) == pytest.approx(720.0)


def test_backlog_rounds():
    a = JobState(Job("a", 0.0, 2, 1.0, "t"), 0.0, end=540.0)
    c = JobState(Job("c", 0.0, 1, 1.0, "t"), 0.0, end=1000.0)
    segs = [
        Segment("a", 0.0, 540.0, ((0, 2),), 1.0, 0.0),
        Segment("c", 720.0, 1000.0, ((0, 1),), 1.0, 0.0),  # waits two rounds, starts in the third
    ]
    rec = SimulationRecords([a, c], segs, [], [], ["V100"], 4, {"V100": 4}, 0.0, 0.0, 0.0, 1000.0, 0, 0)
    assert list(hm.backlog_rounds(rec, 360.0)) == [True, True, False]
