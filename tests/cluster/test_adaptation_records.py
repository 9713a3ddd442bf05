"""Adaptive jobs' records (cluster/adaptive_clock.py: Adaptation; adaptation.csv): each interval a Pollux or Sia
job ran, with its GPUs, batch, throughput and statistical efficiency, agreeing with the allocations and the job
model."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from gpuweave.cluster.config import SimulationConfig
from gpuweave.cluster.results import ADAPTATION_COLUMNS, ADAPTATION_FILE
from gpuweave.cluster.run import run_simulation, simulate
from gpuweave.workload.pollux import load_pollux_job_model

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "pollux"
pytestmark = pytest.mark.skipif(not (DATA / "traces").is_dir(), reason="Pollux's shared data is not here")


def _config(tmp_path: Path, policy: str, rows: int = 6, **options) -> SimulationConfig:
    from gpuweave.repro.crosscheck.pollux import Counterpart, run_ours

    lines = (DATA / "workloads" / "workload-1.csv").read_text().splitlines()
    workload = tmp_path / "small.csv"
    workload.write_text("\n".join(lines[: rows + 1]) + "\n")
    run_ours(workload, DATA, Counterpart(policy, options, elastic=True, adaptive=True), tmp_path)
    return SimulationConfig(
        policy=policy,
        policy_options=options,
        cluster="pollux-64",
        trace=str(tmp_path / "small.trace.csv"),
        profiles=str(DATA / "traces"),
        restart_delay=30.0,
        start_delay=30.0,
    )


def test_pollux_jobs_record_every_interval_they_ran(tmp_path):
    config = _config(tmp_path, "pollux", generations=8, population=30)
    records = simulate(config)
    rows = records.adaptations
    model = load_pollux_job_model(DATA / "traces")
    assert {a.job_id for a in rows} == {js.job.job_id for js in records.jobs}
    held = {js.job.job_id: 0.0 for js in records.jobs}
    for seg in records.segments:
        held[seg.job_id] += seg.end - seg.start
    for js in records.jobs:
        mine = sorted((a for a in rows if a.job_id == js.job.job_id), key=lambda a: a.start)
        assert sum(a.end - a.start for a in mine) == pytest.approx(held[js.job.job_id])  # every second it held
        assert mine[0].idle == 30.0 and mine[-1].end == js.end  # the first start's delay; up to its completion
        app, _ = model.app_of(js.job.job_type)
        for a in mine:
            assert a.batch_size == a.gpus * a.atomic_bsz * (a.accum_steps + 1) <= app.max_batch_size
            assert 0 < a.efficiency <= 1 + 1e-12 and a.throughput > 0
            assert a.goodput == pytest.approx(a.throughput * a.efficiency)
            if a.batch_size == app.init_batch_size:
                assert a.efficiency == pytest.approx(1.0)
    # the GPUs recorded are the placement's at the interval's start
    for seg in records.segments:
        inside = [a for a in rows if a.job_id == seg.job_id and seg.start <= a.start < seg.end]
        assert inside and {a.gpus for a in inside} == {sum(k for _, k in seg.placement)}


def test_the_result_directory_holds_adaptation_csv_and_rigid_runs_do_not(tmp_path):
    config = _config(tmp_path, "optimus")
    run_simulation(config, tmp_path / "optimus")
    assert not (tmp_path / "optimus" / ADAPTATION_FILE).exists()  # Optimus' jobs keep their batches
    config = _config(tmp_path, "pollux", generations=8, population=30)
    run_simulation(config, tmp_path / "pollux")
    with open(tmp_path / "pollux" / ADAPTATION_FILE, newline="") as fh:
        table = list(csv.DictReader(fh))
    assert tuple(table[0]) == ADAPTATION_COLUMNS
    in_memory = simulate(config).adaptations
    assert len(table) == len(in_memory)
    assert sorted((r["job_id"], float(r["start"]), int(r["batch_size"])) for r in table) == sorted(
        (a.job_id, a.start, a.batch_size) for a in in_memory
    )
